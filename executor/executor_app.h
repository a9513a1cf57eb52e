// hpc-batch-executor's main, as a function.
#ifndef HPCB_EXECUTOR_EXECUTOR_APP_H_
#define HPCB_EXECUTOR_EXECUTOR_APP_H_

namespace hpcb::executor {
int ExecutorMain(int argc, char** argv);
}  // namespace hpcb::executor

#endif  // HPCB_EXECUTOR_EXECUTOR_APP_H_
