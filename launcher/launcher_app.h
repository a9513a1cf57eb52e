// hpc-batchd's main, as a function (the *_main.cc file stays thin).
#ifndef HPCB_LAUNCHER_LAUNCHER_APP_H_
#define HPCB_LAUNCHER_LAUNCHER_APP_H_

namespace hpcb::launcher {
int LauncherMain(int argc, char** argv);
}  // namespace hpcb::launcher

#endif  // HPCB_LAUNCHER_LAUNCHER_APP_H_
