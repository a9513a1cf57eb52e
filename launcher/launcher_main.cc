#include "launcher/launcher_app.h"

int main(int argc, char** argv) {
  return hpcb::launcher::LauncherMain(argc, argv);
}
