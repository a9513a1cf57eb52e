#include "executor/executor_app.h"

int main(int argc, char** argv) {
  return hpcb::executor::ExecutorMain(argc, argv);
}
