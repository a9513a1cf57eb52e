#include "executor/launcher_app.h"

int main(int argc, char** argv) { return hpcb::executor::LauncherMain(argc, argv); }
