// hpc-batchd's main, as a function (the *_main.cc file stays thin).
#ifndef HPCB_EXECUTOR_LAUNCHER_APP_H_
#define HPCB_EXECUTOR_LAUNCHER_APP_H_

namespace hpcb::executor {
int LauncherMain(int argc, char** argv);
}  // namespace hpcb::executor

#endif  // HPCB_EXECUTOR_LAUNCHER_APP_H_
