// Pool: the live books. Every comparison on memory carries kSlack so that
// budgets computed in floating point (e.g. 0.1 + 0.2) still fit exactly.
#include <algorithm>
#include <cstdio>
#include <set>
#include <string>
#include <tuple>

#include "broker/gpu_topology.h"
#include "broker/placement.h"
#include "common/units.h"

namespace hpcb::broker {
namespace {

// The flag that keeps an exclusive job on one node, as it was likely given
// (--numa-local sets both of the others).
std::string NumaLocalFlag(const JobDemand& demand) {
  if (demand.numa_local_mem && demand.numa_local_gpu) return "--numa-local";
  return demand.numa_local_mem ? "--numa-local-mem" : "--numa-local-gpu";
}

constexpr double kSlack = 1e-9;

std::string G(double value) {
  char buffer[64];
  (void)std::snprintf(buffer, sizeof buffer, "%g", value);  // %g fits in 64 bytes
  return buffer;
}

std::string F0(double value) {
  char buffer[64];
  (void)std::snprintf(buffer, sizeof buffer, "%.0f", value);  // truncation is still a string
  return buffer;
}

void InsertSorted(std::vector<int>& list, int value) {
  auto it = std::lower_bound(list.begin(), list.end(), value);
  if (it == list.end() || *it != value) list.insert(it, value);
}

bool EraseSorted(std::vector<int>& list, int value) {
  auto it = std::lower_bound(list.begin(), list.end(), value);
  if (it == list.end() || *it != value) return false;
  list.erase(it);
  return true;
}

// The node's sibling groups cut down to its cpus, every cpu in exactly one
// group (a cpu no group names is a core of its own), skipping cpus another
// node already claimed.
std::vector<std::vector<int>> Partition(const NumaNode& node, const std::set<int>& claimed) {
  std::set<int> left;
  for (int cpu : node.cpus) {
    if (!claimed.count(cpu)) left.insert(cpu);
  }
  std::vector<std::vector<int>> cores;
  for (const std::vector<int>& group : node.cores) {
    std::vector<int> core;
    for (int cpu : group) {
      if (left.erase(cpu)) core.push_back(cpu);
    }
    std::sort(core.begin(), core.end());
    if (!core.empty()) cores.push_back(std::move(core));
  }
  for (int cpu : left)
    cores.push_back({cpu});
  std::sort(cores.begin(), cores.end());
  return cores;
}

}  // namespace

Pool::Pool(const Machine& machine) : machine_(std::make_shared<const Machine>(machine)) {
  std::vector<NumaNode> sorted = machine_->nodes;
  std::sort(sorted.begin(), sorted.end(),
            [](const NumaNode& a, const NumaNode& b) { return a.id < b.id; });
  std::set<int> claimed;
  for (const NumaNode& node : sorted) {
    NodeBooks books;
    books.id = node.id;
    books.domain = machine_->per_node_memory ? node.id : -1;
    books.cores = Partition(node, claimed);
    books.taken.assign(books.cores.size(), 0);
    for (std::size_t k = 0; k < books.cores.size(); ++k) {
      for (int cpu : books.cores[k]) {
        slots_[cpu] = CpuSlot{nodes_.size(), k, false};
        claimed.insert(cpu);
      }
      books.total_cpus += static_cast<int>(books.cores[k].size());
    }
    books.free_cpus = books.total_cpus;
    free_cpu_count_ += books.total_cpus;
    if (machine_->per_node_memory) capacity_[node.id] = std::max(0.0, node.mem_gib);
    nodes_.push_back(std::move(books));
  }
  if (!machine_->per_node_memory) capacity_[-1] = std::max(0.0, machine_->machine_mem_gib);
  for (const auto& [domain, gib] : capacity_)
    total_free_mem_ += gib;
  tracks_memory_ = total_free_mem_ > 0;
  free_mem_ = capacity_;
  free_gpus_ = machine_->gpus.ids;
  std::sort(free_gpus_.begin(), free_gpus_.end());
}

int Pool::TotalCpus() const {
  int total = 0;
  for (const NodeBooks& node : nodes_)
    total += node.total_cpus;
  return total;
}

int Pool::LargestNodeCpus() const {
  int largest = 0;
  for (const NodeBooks& node : nodes_)
    largest = std::max(largest, node.total_cpus);
  return largest;
}

int Pool::ExclusiveCpus(const JobDemand& demand) const {
  return MaxNodes(demand) > 1 ? TotalCpus() : LargestNodeCpus();
}

int Pool::TotalCores() const {
  int total = 0;
  for (const NodeBooks& node : nodes_)
    total += static_cast<int>(node.cores.size());
  return total;
}

// Greedy: while cpus are wanted, the smallest core that covers the rest, or
// failing that the largest. With equal cores (every SMT machine but hybrid
// ones) that is simply the lowest free cores, and no more of them than
// rounding up needs.
std::optional<std::vector<std::size_t>> Pool::PickCores(const NodeBooks& node, int want,
                                                        bool idle) {
  std::vector<std::size_t> open;
  for (std::size_t k = 0; k < node.cores.size(); ++k) {
    if (idle || node.taken[k] == 0) open.push_back(k);
  }
  std::vector<std::size_t> picked;
  int left = want;
  while (left > 0) {
    if (open.empty()) return std::nullopt;
    std::size_t best = 0;
    for (std::size_t i = 1; i < open.size(); ++i) {
      int size = static_cast<int>(node.cores[open[i]].size());
      int best_size = static_cast<int>(node.cores[open[best]].size());
      bool covers = size >= left;
      bool best_covers = best_size >= left;
      if (covers != best_covers ? covers : (covers ? size < best_size : size > best_size)) {
        best = i;
      }
    }
    left -= static_cast<int>(node.cores[open[best]].size());
    picked.push_back(open[best]);
    open.erase(open.begin() + static_cast<std::ptrdiff_t>(best));
  }
  std::sort(picked.begin(), picked.end());
  return picked;
}

std::optional<Pool::CorePicks> Pool::SpanCores(int want, bool idle) const {
  CorePicks picks;
  int left = want;
  for (std::size_t i = 0; i < nodes_.size() && left > 0; ++i) {
    const NodeBooks& node = nodes_[i];
    int n = std::min(left, idle ? node.total_cpus : node.free_cpus);
    if (n == 0) continue;
    std::optional<std::vector<std::size_t>> cores = PickCores(node, n, idle);
    if (!cores) return std::nullopt;
    left -= Count(node, *cores).cpus;
    picks.emplace_back(i, std::move(*cores));
  }
  if (left > 0) return std::nullopt;
  return picks;
}

CpuGrant Pool::Count(const NodeBooks& node, const std::vector<std::size_t>& cores) {
  CpuGrant grant;
  for (std::size_t k : cores)
    grant.cpus += static_cast<int>(node.cores[k].size());
  grant.cores = static_cast<int>(cores.size());
  return grant;
}

CpuGrant Pool::Grant(const JobDemand& demand) const {
  CpuGrant grant;
  if (MaxNodes(demand) > 1) {
    if (std::optional<CorePicks> picks = SpanCores(demand.cpu, /*idle=*/true)) {
      for (const auto& [index, cores] : *picks) {
        CpuGrant part = Count(nodes_[index], cores);
        grant.cpus += part.cpus;
        grant.cores += part.cores;
      }
    }
    return grant;
  }
  // The node that would round up most: a user is told no less than they get.
  for (const NodeBooks& node : nodes_) {
    if (node.total_cpus < demand.cpu) continue;
    std::optional<std::vector<std::size_t>> cores = PickCores(node, demand.cpu, /*idle=*/true);
    if (!cores) continue;
    CpuGrant mine = Count(node, *cores);
    if (mine.cpus > grant.cpus || (mine.cpus == grant.cpus && mine.cores > grant.cores)) {
      grant = mine;
    }
  }
  return grant;
}

bool Pool::tracks_memory() const {
  return tracks_memory_;
}

bool Pool::machine_has_gpus() const {
  return !machine_->gpus.ids.empty();
}

// Exclusive jobs may span nodes, unless a numa-local flag that matters
// keeps them on one.
int Pool::MaxNodes(const JobDemand& demand) const {
  bool pinned = demand.numa_local_mem || (demand.numa_local_gpu && demand.gpus > 0);
  return demand.exclusive && !pinned ? static_cast<int>(nodes_.size()) : 1;
}

double Pool::FreeMem(int domain) const {
  auto it = free_mem_.find(domain);
  return it == free_mem_.end() ? 0 : it->second;
}

Result<void> Pool::Validate(const JobDemand& demand) const {
  if (demand.cpu < 1) return InvalidArgument("--cpu must be at least 1");
  if (demand.gpus < 0) return InvalidArgument("--gpu-cores must not be negative");
  int total = TotalCpus();
  const int largest = LargestNodeCpus();
  // The node's size first: on a machine of several nodes it is the limit
  // that matters to a job kept on one, however many cpus it asked for.
  if (MaxNodes(demand) == 1 && nodes_.size() > 1 && demand.cpu > largest) {
    return InvalidArgument(
        "--cpu " + std::to_string(demand.cpu) + " exceeds the largest NUMA node (" +
        std::to_string(largest) + " cpus); " +
        (demand.exclusive ? NumaLocalFlag(demand) + " keeps this exclusive job on one node"
                          : "jobs are always confined to a single node"));
  }
  if (demand.cpu > total) {
    int cores = TotalCores();
    std::string available =
        cores == total ? std::to_string(total) + " cores"
                       : std::to_string(total) + " cpus (" + std::to_string(cores) + " cores)";
    return InvalidArgument("--cpu " + std::to_string(demand.cpu) + " exceeds the " + available +
                           " available to jobs");
  }
  const GpuInfo& gpus = machine_->gpus;
  std::string count = std::to_string(demand.gpus);
  if (demand.gpus > static_cast<int>(gpus.ids.size())) {
    return InvalidArgument("--gpu-cores " + count + " exceeds the " +
                           std::to_string(gpus.ids.size()) + " gpus on this machine");
  }
  if (demand.min_gpu_link && demand.gpus > 1) {
    const std::string& floor = *demand.min_gpu_link;
    if (gpus.links.empty()) {
      return InvalidArgument("--gpu-link " + floor +
                             " needs the wiring that `nvidia-smi topo -m` reports, and this "
                             "machine does not give it");
    }
    std::size_t widest = 0;
    for (const auto& island : Islands(gpus, gpus.ids, LinkRank(floor))) {
      widest = std::max(widest, island.size());
    }
    if (demand.gpus > static_cast<int>(widest)) {
      return InvalidArgument("--gpu-cores " + count + " exceeds the " + std::to_string(widest) +
                             " gpus this machine connects at " + floor + " or better");
    }
  }
  if (demand.numa_local_gpu && demand.gpus > 0) {
    std::map<int, int> per_node;
    for (int gpu : gpus.ids) {
      auto it = gpus.node_of.find(gpu);
      if (it != gpus.node_of.end()) ++per_node[it->second];
    }
    if (per_node.empty()) {
      return InvalidArgument(
          "--numa-local-gpu needs to know which NUMA node each gpu hangs off, and `nvidia-smi "
          "topo -m` does not say on this machine");
    }
    int most = 0;
    for (const auto& [node, n] : per_node)
      most = std::max(most, n);
    if (demand.gpus > most) {
      return InvalidArgument("--gpu-cores " + count + " exceeds the " + std::to_string(most) +
                             " gpus on one NUMA node, and --numa-local-gpu keeps a job's gpus "
                             "on one node; drop it to let them span nodes");
    }
  }
  if (!tracks_memory_) return Ok();
  double usable = 0;
  double largest_mem = 0;
  for (const auto& [domain, gib] : capacity_) {
    usable += gib;
    largest_mem = std::max(largest_mem, gib);
  }
  if (demand.numa_local_mem && demand.mem_gib > largest_mem + kSlack) {
    return InvalidArgument("--max-mem " + G(demand.mem_gib) + " exceeds the largest NUMA node (" +
                           F0(largest_mem) +
                           " GiB) and --numa-local-mem keeps a job on one node; drop it to let "
                           "the budget span nodes, or use --exclusive");
  }
  if (demand.mem_gib > usable + kSlack) {
    return InvalidArgument("--max-mem " + G(demand.mem_gib) + " exceeds the " + GiBWords(usable) +
                           " available to jobs");
  }
  return Ok();
}

std::optional<double> Pool::DefaultBudget(int cpu, bool exclusive, double min_job_mem) const {
  if (!tracks_memory_) return std::nullopt;
  double usable = 0;
  double largest = 0;
  for (const auto& [domain, gib] : capacity_) {
    usable += gib;
    largest = std::max(largest, gib);
  }
  if (exclusive) return FloorTo2(usable);
  // Shares are of the cpus granted (whole cores), so that the jobs filling
  // a node between them are budgeted its whole memory.
  auto granted = [&](const NodeBooks& node) {
    std::optional<std::vector<std::size_t>> cores =
        PickCores(node, std::min(cpu, node.total_cpus), /*idle=*/true);
    return cores ? Count(node, *cores).cpus : std::min(cpu, node.total_cpus);
  };
  std::optional<double> share;
  if (machine_->per_node_memory) {
    // The stingiest node decides: the job may land on any of them.
    for (const NodeBooks& node : nodes_) {
      if (node.total_cpus == 0) continue;
      double n = node.total_cpus;
      double mine = capacity_.at(node.id) * granted(node) / n;
      share = share ? std::min(*share, mine) : mine;
    }
  } else {
    int total = TotalCpus();
    int most = 0;
    for (const NodeBooks& node : nodes_) {
      if (node.total_cpus >= cpu) most = std::max(most, granted(node));
    }
    if (most == 0) most = cpu;
    if (total > 0) share = capacity_.at(-1) * std::min(most, total) / total;
  }
  return FloorTo2(std::min(std::max(min_job_mem, share.value_or(0)), largest));
}

// Best fit among nodes whose memory holds the whole budget (GPU-near
// first); failing that, the node with the most free memory, from which the
// budget spills over to the others.
std::optional<std::size_t> Pool::PickNode(const JobDemand& demand, double mem,
                                          const std::vector<int>& near,
                                          std::optional<int> forced_home) const {
  using LocalKey = std::tuple<bool, int, double, int>;  // far, cpus, mem, id
  using SpillKey = std::tuple<double, int, int>;        // -mem, cpus, id
  std::optional<std::pair<LocalKey, std::size_t>> best_local;
  std::optional<std::pair<SpillKey, std::size_t>> best_other;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    const NodeBooks& node = nodes_[i];
    if (forced_home && node.id != *forced_home) continue;
    int free_cpus = node.free_cpus;
    if (free_cpus < demand.cpu) continue;
    double free_mem = FreeMem(node.domain);
    if (mem <= free_mem + kSlack) {
      bool far = std::find(near.begin(), near.end(), node.id) == near.end();
      LocalKey key{far, free_cpus, free_mem, node.id};
      if (!best_local || key < best_local->first) best_local = {key, i};
    } else {
      SpillKey key{-free_mem, free_cpus, node.id};
      if (!best_other || key < best_other->first) best_other = {key, i};
    }
  }
  if (best_local) return best_local->second;
  if (demand.numa_local_mem || !best_other) return std::nullopt;
  return best_other->second;
}

// Home domain first, then (unless local_only) the others in id order, each
// drained fully before the next.
std::optional<std::map<int, double>> Pool::ChargeMemory(int home_domain, double mem,
                                                        bool local_only) const {
  std::map<int, double> charge;
  double left = mem;
  auto take = [&](int domain) {
    double amount = std::min(left, FreeMem(domain));
    if (amount > 0) {
      charge[domain] = amount;
      left -= amount;
    }
  };
  take(home_domain);
  if (!local_only) {
    for (const auto& [domain, gib] : free_mem_) {
      if (left <= kSlack) break;
      if (domain != home_domain) take(domain);
    }
  }
  if (left > kSlack) return std::nullopt;
  return charge;
}

std::optional<Placement> Pool::TryPlace(const JobDemand& demand) const {
  // Cheap refusals first: backfill passes ask this of every queued job.
  if (exclusive_active_ || (demand.exclusive && active_jobs_ > 0)) return std::nullopt;
  if (demand.gpus > static_cast<int>(free_gpus_.size())) return std::nullopt;
  if (demand.cpu > free_cpu_count_ || demand.cpu < 0) return std::nullopt;
  double mem = tracks_memory_ ? demand.mem_gib : 0;
  if (mem > total_free_mem_ + kSlack) return std::nullopt;
  bool spans = MaxNodes(demand) > 1;
  if (!spans) {
    int most = 0;
    for (const NodeBooks& node : nodes_)
      most = std::max(most, node.free_cpus);
    if (demand.cpu > most) return std::nullopt;
  }

  const GpuInfo& info = machine_->gpus;
  GpuRequest request{demand.gpus, demand.numa_local_gpu, std::nullopt};
  if (demand.min_gpu_link) request.floor_rank = LinkRank(*demand.min_gpu_link);
  std::optional<std::vector<int>> gpus = ChooseGpus(info, free_gpus_, request);
  if (!gpus) return std::nullopt;
  std::vector<int> near;
  for (int gpu : *gpus) {
    auto it = info.node_of.find(gpu);
    if (it != info.node_of.end()) InsertSorted(near, it->second);
  }
  std::optional<int> forced_home;
  if (demand.numa_local_gpu && !near.empty()) forced_home = near.front();

  Placement placement;
  std::vector<int> cpu_nodes;
  auto take = [&](std::size_t index, const std::vector<std::size_t>& cores) {
    const NodeBooks& node = nodes_[index];
    for (std::size_t k : cores) {
      placement.cpus.insert(placement.cpus.end(), node.cores[k].begin(), node.cores[k].end());
    }
    placement.cores += static_cast<int>(cores.size());
    cpu_nodes.push_back(node.id);
  };
  if (spans) {
    std::optional<CorePicks> picks = SpanCores(demand.cpu, /*idle=*/false);
    if (!picks) return std::nullopt;
    for (const auto& [index, cores] : *picks)
      take(index, cores);
  } else {
    std::optional<std::size_t> index = PickNode(demand, mem, near, forced_home);
    if (!index) return std::nullopt;
    std::optional<std::vector<std::size_t>> cores =
        PickCores(nodes_[*index], demand.cpu, /*idle=*/false);
    if (!cores) return std::nullopt;
    take(*index, *cores);
  }
  std::sort(placement.cpus.begin(), placement.cpus.end());

  int home_domain = machine_->per_node_memory ? cpu_nodes.front() : -1;
  if (mem > 0) {
    std::optional<std::map<int, double>> charge =
        ChargeMemory(home_domain, mem, demand.numa_local_mem);
    if (!charge) return std::nullopt;
    placement.mem_by_node = std::move(*charge);
  }
  if (machine_->per_node_memory && !placement.mem_by_node.empty()) {
    for (const auto& [domain, gib] : placement.mem_by_node)
      placement.mems.push_back(domain);
  } else {
    placement.mems = cpu_nodes;
  }
  std::sort(placement.mems.begin(), placement.mems.end());
  int real_nodes = 0;
  for (const auto& [domain, gib] : placement.mem_by_node)
    real_nodes += domain >= 0 ? 1 : 0;
  placement.spans_nodes = real_nodes > 1;
  placement.gpus = std::move(*gpus);
  placement.gpu_link = WorstLink(info, placement.gpus);
  placement.exclusive = demand.exclusive;
  return placement;
}

// Charges keyed by a domain this layout lacks (reload across a layout
// change) are booked against the home node's domain.
int Pool::HomeDomain(const Placement& placement) const {
  if (!machine_->per_node_memory) return -1;
  if (!placement.cpus.empty()) {
    auto it = slots_.find(placement.cpus.front());
    if (it != slots_.end()) return nodes_[it->second.node].id;
  }
  return nodes_.empty() ? -1 : nodes_.front().id;
}

// A placement made before the cpu unit changed (adopted after a restart)
// may hold part of a core: the rest of that core is then not free either.
void Pool::Reserve(const Placement& placement) {
  for (int cpu : placement.cpus) {
    auto it = slots_.find(cpu);
    if (it == slots_.end() || it->second.busy) continue;
    it->second.busy = true;
    NodeBooks& node = nodes_[it->second.node];
    if (node.taken[it->second.core]++ == 0) {
      int size = static_cast<int>(node.cores[it->second.core].size());
      node.free_cpus -= size;
      free_cpu_count_ -= size;
    }
  }
  for (int gpu : placement.gpus)
    EraseSorted(free_gpus_, gpu);
  int home = HomeDomain(placement);
  for (const auto& [domain, gib] : placement.mem_by_node) {
    int key = free_mem_.count(domain) ? domain : home;
    if (!free_mem_.count(key)) continue;
    double taken = std::min(gib, free_mem_[key]);
    free_mem_[key] -= taken;
    total_free_mem_ -= taken;
  }
  ++active_jobs_;
  if (placement.exclusive) exclusive_active_ = true;
}

void Pool::Release(const Placement& placement) {
  for (int cpu : placement.cpus) {
    auto it = slots_.find(cpu);
    if (it == slots_.end() || !it->second.busy) continue;
    it->second.busy = false;
    NodeBooks& node = nodes_[it->second.node];
    if (--node.taken[it->second.core] == 0) {
      int size = static_cast<int>(node.cores[it->second.core].size());
      node.free_cpus += size;
      free_cpu_count_ += size;
    }
  }
  const std::vector<int>& owned = machine_->gpus.ids;
  for (int gpu : placement.gpus) {
    if (std::find(owned.begin(), owned.end(), gpu) != owned.end()) InsertSorted(free_gpus_, gpu);
  }
  int home = HomeDomain(placement);
  for (const auto& [domain, gib] : placement.mem_by_node) {
    int key = free_mem_.count(domain) ? domain : home;
    if (!free_mem_.count(key)) continue;
    double after = std::min(capacity_.at(key), free_mem_[key] + gib);
    total_free_mem_ += after - free_mem_[key];
    free_mem_[key] = after;
  }
  active_jobs_ = std::max(0, active_jobs_ - 1);
  if (placement.exclusive) exclusive_active_ = false;
}

}  // namespace hpcb::broker
