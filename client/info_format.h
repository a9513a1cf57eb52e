// Text for `dispatch info`: the daemon's state line and, per NUMA node,
// one row per resource (cpus, memory, gpus) with what is held back for
// the system, held by jobs and free.
#ifndef HPCB_CLIENT_INFO_FORMAT_H_
#define HPCB_CLIENT_INFO_FORMAT_H_

#include <string>
#include <vector>

#include "protocol/client_messages.h"

namespace hpcb::client {

// `node_names[i]`, where given, labels reply.nodes[i] instead of its
// number (Slurm's nodes are machines with names).
std::string RenderInfo(const protocol::InfoReply& reply,
                       const std::vector<std::string>& node_names = {});

}  // namespace hpcb::client

#endif  // HPCB_CLIENT_INFO_FORMAT_H_
