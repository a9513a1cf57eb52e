// Placement: the broker's pure model of the machine and its scheduling.
//
// Machine is what discovery found (after --reserve-cpu/--reserve-mem); Pool
// is the live books (free cores, per-NUMA-node memory, gpus); Policy picks
// which queued jobs start now.
//
// CPUs are handed out in whole cores: a core is a group of sibling cpus
// (SMT threads), and a job gets every cpu of each core it is given, so two
// jobs never share a physical core. `--cpu N` counts logical cpus and is
// rounded up to whole cores. Under --cpu-unit thread each cpu is a core of
// its own, which is also what a machine without SMT looks like.
//
// Nothing here does I/O except DiscoverMachine, which reads a sysfs root and
// runs nvidia-smi. Thread-compatible.
#ifndef HPCB_BROKER_PLACEMENT_H_
#define HPCB_BROKER_PLACEMENT_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "broker/daemon_config.h"
#include "common/base/result.h"
#include "protocol/executor_messages.h"

namespace hpcb::broker {

struct NumaNode {
  int id = 0;
  std::vector<int> cpus;
  // Sibling groups partitioning `cpus`, each sorted, ordered by first cpu.
  // Empty means every cpu is a core of its own.
  std::vector<std::vector<int>> cores;
  double mem_gib = 0;  // 0 when per-node memory is unknown
  // Held back by --reserve-cpu / --reserve-mem (not in cpus or mem_gib).
  int reserved_cpus = 0;
  double reserved_mem_gib = 0;
};

struct GpuInfo {
  std::vector<int> ids;                              // from nvidia-smi -L
  std::map<std::pair<int, int>, std::string> links;  // (lo, hi) -> raw label
  std::map<int, int> node_of;                        // gpu -> NUMA node
};

struct Machine {
  std::vector<NumaNode> nodes;
  // true: memory books per NUMA node (cgroups confine mems); false: one
  // machine-wide pool (--no-cgroups), keyed -1.
  bool per_node_memory = false;
  double machine_mem_gib = 0;           // used when !per_node_memory
  double machine_reserved_mem_gib = 0;  // its --reserve-mem share
  GpuInfo gpus;
};

// Reads `config.sys_root`/devices/system/node and, unless --cpu-unit is
// thread, each cpu's sibling list under devices/system/cpu; runs
// `config.nvidia_smi -L` and `topo -m`; applies the reserve (whole cores).
// `confine_memory` is true when cgroups are in force.
Result<Machine> DiscoverMachine(const DaemonConfig& config, bool confine_memory);

// One job's resource demand, as the broker stores it (memory already
// defaulted; 0 means untracked).
struct JobDemand {
  int cpu = 1;
  int gpus = 0;
  double mem_gib = 0;
  bool exclusive = false;
  bool numa_local_mem = false;
  bool numa_local_gpu = false;
  std::optional<std::string> min_gpu_link;
};

// What `--cpu N` becomes: logical cpus in whole cores.
struct CpuGrant {
  int cpus = 0;
  int cores = 0;
  bool operator==(const CpuGrant&) const = default;
};

// What the root side is told and keeps (cpus, mems = the charged nodes,
// mem_by_node with -1 the machine-wide domain, gpus, the worst pair's raw
// gpu_link, spans_nodes = memory charged to > 1 real node), plus what only
// the broker books.
struct Placement : protocol::PlacementRecord {
  int cores = 0;  // whole cores in `cpus`; 0 if not known
  bool exclusive = false;
};

class Pool {
 public:
  explicit Pool(const Machine& machine);

  // Refuses requests that could never fit (docs/user-guide.md, "Refusals
  // at submission"); merely busy ones pass. Messages name the flag, e.g. "--cpu 5 exceeds
  // the largest NUMA node (4 cpus); ...".
  Result<void> Validate(const JobDemand& demand) const;

  // The budget for a job without --max-mem (GiB, floored to 2 decimals),
  // or nullopt when memory is untracked. It is the node's memory share of
  // the cpus the job is granted (whole cores), not of the `cpu` it asked.
  std::optional<double> DefaultBudget(int cpu, bool exclusive, double min_job_mem) const;

  // What `demand` would be given on an idle machine. Where the cores of a
  // node differ in size the live placement may come out smaller.
  CpuGrant Grant(const JobDemand& demand) const;

  int TotalCpus() const;
  int LargestNodeCpus() const;
  // The cpus an exclusive job without --cpu is given: the machine's, or
  // the largest node's when a --numa-local flag keeps it on one.
  int ExclusiveCpus(const JobDemand& demand) const;
  int TotalCores() const;
  bool tracks_memory() const;
  bool machine_has_gpus() const;

  std::optional<Placement> TryPlace(const JobDemand& demand) const;
  void Reserve(const Placement& placement);
  void Release(const Placement& placement);

 private:
  struct NodeBooks {
    int id = 0;
    int domain = -1;                      // memory domain: the node id, or -1
    std::vector<std::vector<int>> cores;  // sibling groups, by first cpu
    std::vector<int> taken;               // per core: how many of its cpus are busy
    int free_cpus = 0;                    // cpus of the wholly free cores
    int total_cpus = 0;
  };
  struct CpuSlot {
    std::size_t node = 0;  // index into nodes_
    std::size_t core = 0;  // index into that node's cores
    bool busy = false;
  };

  // (node index, core indices) pairs.
  using CorePicks = std::vector<std::pair<std::size_t, std::vector<std::size_t>>>;

  // Cores of `node` (indices, sorted) holding at least `want` cpus: wholly
  // free ones, or any when `idle`; nullopt when they do not add up.
  static std::optional<std::vector<std::size_t>> PickCores(const NodeBooks& node, int want,
                                                           bool idle);
  // The same across nodes in id order, each drained before the next.
  std::optional<CorePicks> SpanCores(int want, bool idle) const;
  static CpuGrant Count(const NodeBooks& node, const std::vector<std::size_t>& cores);
  int MaxNodes(const JobDemand& demand) const;
  double FreeMem(int domain) const;
  int HomeDomain(const Placement& placement) const;
  std::optional<std::size_t> PickNode(const JobDemand& demand, double mem,
                                      const std::vector<int>& near,
                                      std::optional<int> forced_home) const;
  std::optional<std::map<int, double>> ChargeMemory(int home_domain, double mem,
                                                    bool local_only) const;

  std::shared_ptr<const Machine> machine_;
  std::vector<NodeBooks> nodes_;    // in id order
  std::map<int, CpuSlot> slots_;    // every cpu the books know
  std::map<int, double> capacity_;  // memory domain -> GiB
  std::map<int, double> free_mem_;
  double total_free_mem_ = 0;
  bool tracks_memory_ = false;
  std::vector<int> free_gpus_;  // sorted
  int free_cpu_count_ = 0;
  int active_jobs_ = 0;
  bool exclusive_active_ = false;
};

struct QueuedJob {
  std::uint64_t id = 0;
  JobDemand demand;
  std::int64_t max_time_s = 0;
};

struct RunningJob {
  std::uint64_t id = 0;
  Placement placement;
  double deadline = 0;  // start + max_time
};

struct Start {
  std::uint64_t id = 0;
  Placement placement;
};

// Policies never reorder the queue (it is passed in id order). Schedule()
// reserves each returned placement in `live` itself.
class Policy {
 public:
  virtual ~Policy() = default;
  virtual std::vector<Start> Schedule(const std::vector<QueuedJob>& queue,
                                      const std::vector<RunningJob>& running, Pool& live,
                                      double now) = 0;
};

// "fifo-strict", "easy-backfill" or "strict-backfill"; nullptr otherwise.
std::unique_ptr<Policy> MakePolicy(const std::string& name);

}  // namespace hpcb::broker

#endif  // HPCB_BROKER_PLACEMENT_H_
