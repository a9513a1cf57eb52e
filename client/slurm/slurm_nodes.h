// The pure half of `dispatch info`, `drain` and `resume` under Slurm:
// reading `scontrol --oneliner show node`, `scontrol show config` and a
// squeue state list into the local backend's InfoReply, and choosing which
// nodes a drain or a resume touches. Nothing here runs a program.
#ifndef HPCB_CLIENT_SLURM_SLURM_NODES_H_
#define HPCB_CLIENT_SLURM_SLURM_NODES_H_

#include <string>
#include <string_view>
#include <vector>

#include "protocol/client_messages.h"

namespace hpcb::client::slurm {

// The Reason `dispatch drain` gives Slurm; `resume` undoes only drains
// whose reason is it (IsDispatchReason).
inline constexpr const char* kDrainReason = "dispatch drain";

struct SlurmNode {
  std::string name;
  std::string state;   // Slurm's State, e.g. "IDLE+DRAIN"
  std::string reason;  // why it is drained or down, as Slurm shows it; may be empty
  // Its cpus, memory (GiB) and GPUs; `info.node` is its position in the
  // list, since NodeInfo numbers nodes.
  protocol::NodeInfo info;
};

// One node a line, as `scontrol --oneliner show node` prints them.
std::vector<SlurmNode> ParseScontrolNodes(std::string_view text);

// Whether Slurm's node `state` carries the DRAIN flag (draining or drained).
bool IsDraining(std::string_view state);

// Whether `state` says the node is down or failed: an administrator's or
// slurmctld's doing, which neither drain nor resume touches.
bool IsDownOrFailed(std::string_view state);

// Whether `reason` is kDrainReason, alone or with the " [user@time]" that
// scontrol appends; "dispatch drained for repairs" is someone else's.
bool IsDispatchReason(std::string_view reason);

// Whether `resume` may resume `node`: drained by `dispatch drain` (its
// reason says so) and neither down nor failed.
bool DrainedByDispatch(const SlurmNode& node);

// Whether `drain` may drain `node`: not draining, down or failed, and
// carrying no Reason (someone else's, which a drain would overwrite).
bool DrainableByDispatch(const SlurmNode& node);

// SchedulerType from `scontrol show config` ("sched/backfill"); empty if
// absent.
std::string SchedulerTypeOf(std::string_view config_text);

// The queue counts of InfoReply from squeue's "%T %r" lines (state, then
// reason): pending jobs are queued, those whose reason starts with
// "Dependency" also waiting; jobs that hold a node are running.
void CountQueue(std::string_view squeue_text, protocol::InfoReply* reply);

// InfoReply from the nodes: `draining` when every node is.
protocol::InfoReply InfoFrom(const std::vector<SlurmNode>& nodes, const std::string& policy);

// `dispatch info`'s text: the local rendering with the nodes' names, then
// a line for each node that is drained or down while others are not.
std::string RenderSlurmInfo(const protocol::InfoReply& reply, const std::vector<SlurmNode>& nodes);

// "a,b,c": node names as scontrol's NodeName= takes them.
std::string NodeNames(const std::vector<SlurmNode>& nodes);

}  // namespace hpcb::client::slurm

#endif  // HPCB_CLIENT_SLURM_SLURM_NODES_H_
