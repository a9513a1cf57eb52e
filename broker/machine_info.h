// What `dispatch info` shows of the machine: per NUMA node the cpus,
// memory and gpus in total, held back for the system, held by jobs and
// free. Pure: built from the discovered Machine and the placements jobs
// hold, never from the pool's books, so it cannot disagree with `list`.
#ifndef HPCB_BROKER_MACHINE_INFO_H_
#define HPCB_BROKER_MACHINE_INFO_H_

#include <vector>

#include "broker/placement.h"
#include "protocol/client_messages.h"

namespace hpcb::broker {

// Fills `reply.nodes` and `reply.mem_gib` (the rest is the caller's).
void DescribeMachine(const Machine& machine, const std::vector<const Placement*>& held,
                     protocol::InfoReply& reply);

}  // namespace hpcb::broker

#endif  // HPCB_BROKER_MACHINE_INFO_H_
