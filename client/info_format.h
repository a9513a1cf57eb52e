// Text for `dispatch info`: the daemon's state line and, per NUMA node,
// one row per resource (cpus, memory, gpus) with what is held back for
// the system, held by jobs and free.
#ifndef HPCB_CLIENT_INFO_FORMAT_H_
#define HPCB_CLIENT_INFO_FORMAT_H_

#include <string>

#include "protocol/client_messages.h"

namespace hpcb::client {

std::string RenderInfo(const protocol::InfoReply& reply);

}  // namespace hpcb::client

#endif  // HPCB_CLIENT_INFO_FORMAT_H_
