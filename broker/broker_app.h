// RunBroker: start-up of the broker process (fd 3 = executor channel,
// fd 4 = listening client socket), confinement, then the poll loop.
// Returns the process exit status.
#ifndef HPCB_BROKER_BROKER_APP_H_
#define HPCB_BROKER_BROKER_APP_H_

#include "broker/daemon_config.h"

namespace hpcb::broker {

inline constexpr int kExecutorFd = 3;
inline constexpr int kListenFd = 4;

int RunBroker(const DaemonConfig& config);

}  // namespace hpcb::broker

#endif  // HPCB_BROKER_BROKER_APP_H_
