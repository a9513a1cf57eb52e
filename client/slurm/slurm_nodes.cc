#include "client/slurm/slurm_nodes.h"

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <map>

#include "client/format.h"
#include "client/info_format.h"
#include "client/slurm/slurm_parse.h"
#include "common/base/cpu_list.h"
#include "common/units.h"

namespace hpcb::client::slurm {
namespace {

std::string FieldOf(const std::map<std::string, std::string>& fields, const char* key) {
  auto it = fields.find(key);
  return it == fields.end() ? std::string() : it->second;
}

std::int64_t Count(const std::string& text) {
  auto value = ParseInteger(text, 0, std::int64_t{1} << 40);
  return value ? *value : 0;
}

// GPUs in a Gres or GresUsed value: "gpu:2", "gpu:a100:2(S:0-1)",
// "gpu:0(IDX:N/A)", "(null)"; other resources are skipped.
std::int64_t GpusIn(const std::string& text) {
  // Drop the "(...)" groups first: they may hold commas of their own.
  std::string plain;
  int depth = 0;
  for (char c : text) {
    if (c == '(') ++depth;
    if (depth == 0) plain += c;
    if (c == ')' && depth > 0) --depth;
  }
  std::int64_t total = 0;
  std::size_t start = 0;
  while (start <= plain.size()) {
    std::size_t end = plain.find(',', start);
    if (end == std::string::npos) end = plain.size();
    std::string entry = plain.substr(start, end - start);
    if (entry.rfind("gpu", 0) == 0) {
      std::size_t colon = entry.rfind(':');
      total += colon == std::string::npos ? 1 : Count(entry.substr(colon + 1));
    }
    start = end + 1;
  }
  return total;
}

template <class T>
protocol::Amounts<T> AmountsOf(T total, T reserved, T in_use) {
  return {total, reserved, in_use, std::max(T{}, total - reserved - in_use)};
}

}  // namespace

std::vector<SlurmNode> ParseScontrolNodes(std::string_view text) {
  std::vector<SlurmNode> nodes;
  for (std::string_view line : SplitLines(text)) {
    if (line.rfind("NodeName=", 0) != 0) continue;
    // Reason is last on the line (22.05) and free text: an admin's
    // "fan=broken" would read as a field of its own.
    std::string_view reason;
    if (std::size_t at = line.find(" Reason="); at != std::string_view::npos) {
      reason = line.substr(at + 8);
      line = line.substr(0, at);
    }
    while (!reason.empty() && (reason.back() == ' ' || reason.back() == '\r'))
      reason.remove_suffix(1);
    const std::map<std::string, std::string> f = ParseScontrolRecord(line);
    SlurmNode node;
    node.name = FieldOf(f, "NodeName");
    node.state = FieldOf(f, "State");
    node.reason = std::string(reason);
    const std::int64_t cpus = Count(FieldOf(f, "CPUTot"));
    // CPUEfctv (Slurm 22.05 and later): the cpus left once CoreSpecCount
    // and CpuSpecList have kept theirs for the system.
    const std::string usable = FieldOf(f, "CPUEfctv");
    const std::int64_t reserved =
        usable.empty() ? 0 : std::max<std::int64_t>(0, cpus - Count(usable));
    node.info.node = static_cast<std::int64_t>(nodes.size());
    node.info.cpus = AmountsOf<std::int64_t>(cpus, reserved, Count(FieldOf(f, "CPUAlloc")));
    auto gib = [&f](const char* key) {
      return static_cast<double>(Count(FieldOf(f, key))) / 1024.0;
    };
    node.info.mem_gib = AmountsOf<double>(gib("RealMemory"), gib("MemSpecLimit"), gib("AllocMem"));
    node.info.gpus =
        AmountsOf<std::int64_t>(GpusIn(FieldOf(f, "Gres")), 0, GpusIn(FieldOf(f, "GresUsed")));
    nodes.push_back(std::move(node));
  }
  return nodes;
}

namespace {

// Whether one of the '+'-joined parts of `state` is among `names`.
bool HasPart(std::string_view state, std::initializer_list<std::string_view> names) {
  std::size_t start = 0;
  while (start <= state.size()) {
    std::size_t end = state.find('+', start);
    if (end == std::string_view::npos) end = state.size();
    std::string_view part = state.substr(start, end - start);
    for (std::string_view name : names) {
      if (part == name) return true;
    }
    start = end + 1;
  }
  return false;
}

}  // namespace

bool IsDraining(std::string_view state) {
  return HasPart(state, {"DRAIN", "DRAINED", "DRAINING"});
}

bool IsDownOrFailed(std::string_view state) {
  return HasPart(state, {"DOWN", "FAIL", "FAILING"});
}

bool IsDispatchReason(std::string_view reason) {
  const std::string_view ours = kDrainReason;
  if (reason.substr(0, ours.size()) != ours) return false;
  std::string_view rest = reason.substr(ours.size());
  return rest.empty() || rest.substr(0, 2) == " [";
}

bool DrainedByDispatch(const SlurmNode& node) {
  return IsDraining(node.state) && !IsDownOrFailed(node.state) && IsDispatchReason(node.reason);
}

bool DrainableByDispatch(const SlurmNode& node) {
  return !IsDraining(node.state) && !IsDownOrFailed(node.state) && node.reason.empty();
}

std::string SchedulerTypeOf(std::string_view config_text) {
  for (std::string_view line : SplitLines(config_text)) {
    std::size_t eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view key = line.substr(0, eq);
    while (!key.empty() && key.back() == ' ')
      key.remove_suffix(1);
    if (key != "SchedulerType") continue;
    std::string_view value = line.substr(eq + 1);
    while (!value.empty() && value.front() == ' ')
      value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\r'))
      value.remove_suffix(1);
    return std::string(value);
  }
  return "";
}

void CountQueue(std::string_view squeue_text, protocol::InfoReply* reply) {
  for (std::string_view line : SplitLines(squeue_text)) {
    std::size_t space = line.find(' ');
    std::string_view state = line.substr(0, space);
    std::string_view reason = space == std::string_view::npos ? "" : line.substr(space + 1);
    if (state.empty() || IsTerminalState(state)) continue;
    if (MapJobState(state).state == protocol::JobState::kQueued) {
      ++reply->queued;
      if (reason.rfind("Dependency", 0) == 0) ++reply->waiting;
    } else {
      ++reply->running;
    }
  }
}

protocol::InfoReply InfoFrom(const std::vector<SlurmNode>& nodes, const std::string& policy) {
  protocol::InfoReply reply;
  reply.policy = policy;
  reply.draining =
      !nodes.empty() && std::all_of(nodes.begin(), nodes.end(),
                                    [](const SlurmNode& n) { return IsDraining(n.state); });
  for (const SlurmNode& node : nodes)
    reply.nodes.push_back(node.info);
  return reply;
}

std::string RenderSlurmInfo(const protocol::InfoReply& reply, const std::vector<SlurmNode>& nodes) {
  std::vector<std::string> names;
  for (const SlurmNode& node : nodes)
    names.push_back(node.name);
  std::string text = RenderInfo(reply, names);
  for (const SlurmNode& node : nodes) {
    const bool draining = IsDraining(node.state);
    const bool down = node.state.rfind("DOWN", 0) == 0;
    if ((draining && reply.draining) || (!draining && !down)) continue;
    std::string state = node.state;
    std::transform(state.begin(), state.end(), state.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    text += "node " + EscapeControl(node.name) + ": " + EscapeControl(state);
    if (!node.reason.empty()) text += " (" + EscapeControl(node.reason) + ")";
    text += "\n";
  }
  return text;
}

std::string NodeNames(const std::vector<SlurmNode>& nodes) {
  std::string names;
  for (const SlurmNode& node : nodes)
    names += (names.empty() ? "" : ",") + node.name;
  return names;
}

}  // namespace hpcb::client::slurm
