// DiscoverMachine: sysfs NUMA layout and SMT siblings, nvidia-smi GPUs,
// then the reserve.
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <numeric>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "broker/gpu_topology.h"
#include "broker/placement.h"
#include "common/base/exec_path.h"
#include "common/base/log.h"
#include "common/host/host_files.h"
#include "common/subprocess.h"
#include "common/units.h"

namespace hpcb::broker {
namespace {

namespace fs = std::filesystem;

constexpr std::chrono::seconds kNvidiaSmiTimeout{15};

// "1 cpu", "2 cpus".
std::string Count(std::int64_t n, const std::string& what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

// `program` as the exec found it: the first executable candidate on our
// PATH, so a warning names the very file it ran.
std::string FoundOnPath(const std::string& program) {
  const char* path = std::getenv("PATH");
  for (const std::string& candidate :
       ExecCandidates(program, path != nullptr ? path : kCleanPath)) {
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return program + ", not found on PATH";
}

std::optional<std::string> ReadFile(const fs::path& path) {
  Result<std::string> text = host::ReadSmallFile(path.string(), std::size_t{1} << 20);
  if (!text) return std::nullopt;
  return std::move(*text);
}

// "Node 0 MemTotal:  33554432 kB" -> GiB.
std::optional<double> ParseMemTotal(const std::string& meminfo) {
  std::istringstream lines(meminfo);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string node, id, key;
    double kb = 0;
    if (words >> node >> id >> key >> kb && node == "Node" && key == "MemTotal:" && kb > 0) {
      return kb * 1024.0 / (1024.0 * 1024.0 * 1024.0);
    }
  }
  return std::nullopt;
}

struct RawNode {
  NumaNode node;
  std::optional<double> mem;
};

std::vector<RawNode> ReadNodes(const std::string& sys_root) {
  std::vector<RawNode> nodes;
  std::error_code error;
  fs::path dir = fs::path(sys_root) / "devices/system/node";
  for (const auto& entry : fs::directory_iterator(dir, error)) {
    std::string name = entry.path().filename().string();
    if (name.size() < 5 || name.substr(0, 4) != "node") continue;
    Result<std::int64_t> id = ParseInteger(name.substr(4), 0, 1 << 20);
    if (!id) continue;
    std::optional<std::string> cpulist = ReadFile(entry.path() / "cpulist");
    if (!cpulist) continue;
    std::string trimmed = *cpulist;
    while (!trimmed.empty() && std::isspace(static_cast<unsigned char>(trimmed.back()))) {
      trimmed.pop_back();
    }
    Result<std::vector<int>> cpus = ParseCpuList(trimmed);
    if (!cpus || cpus->empty()) continue;  // memory-only nodes hold no jobs
    RawNode raw;
    raw.node.id = static_cast<int>(*id);
    raw.node.cpus = *cpus;
    std::optional<std::string> meminfo = ReadFile(entry.path() / "meminfo");
    if (meminfo) raw.mem = ParseMemTotal(*meminfo);
    nodes.push_back(std::move(raw));
  }
  std::sort(nodes.begin(), nodes.end(),
            [](const RawNode& a, const RawNode& b) { return a.node.id < b.node.id; });
  return nodes;
}

std::optional<std::vector<int>> ReadCpuList(const fs::path& path) {
  std::optional<std::string> text = ReadFile(path);
  if (!text) return std::nullopt;
  while (!text->empty() && std::isspace(static_cast<unsigned char>(text->back()))) {
    text->pop_back();
  }
  Result<std::vector<int>> cpus = ParseCpuList(*text);
  if (!cpus || cpus->empty()) return std::nullopt;
  return *cpus;
}

// Each cpu's siblings: core_cpus_list where the kernel has it, else the
// older thread_siblings_list (the same set). A cpu whose list is missing or
// unreadable is a core of its own; sets `complete` false then. Groups are cut
// down to `cpus` (the node's), so a sibling elsewhere never joins a core.
std::vector<std::vector<int>> ReadCores(const std::string& sys_root, const std::vector<int>& cpus,
                                        bool& complete) {
  fs::path dir = fs::path(sys_root) / "devices/system/cpu";
  std::set<int> left(cpus.begin(), cpus.end());
  std::vector<std::vector<int>> cores;
  for (int cpu : cpus) {
    if (!left.count(cpu)) continue;
    fs::path topology = dir / ("cpu" + std::to_string(cpu)) / "topology";
    std::optional<std::vector<int>> siblings = ReadCpuList(topology / "core_cpus_list");
    if (!siblings) siblings = ReadCpuList(topology / "thread_siblings_list");
    if (!siblings) complete = false;
    std::vector<int> core = {cpu};
    left.erase(cpu);
    for (int sibling : siblings.value_or(std::vector<int>{})) {
      if (left.erase(sibling)) core.push_back(sibling);
    }
    std::sort(core.begin(), core.end());
    cores.push_back(std::move(core));
  }
  std::sort(cores.begin(), cores.end());
  return cores;
}

double PhysicalMemoryGiB() {
  long pages = sysconf(_SC_PHYS_PAGES);
  long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return 0;
  return static_cast<double>(pages) * static_cast<double>(page_size) / (1024.0 * 1024.0 * 1024.0);
}

// Whole cores, lowest node first, lowest cores first, until `reserve` cpus
// are covered; a node always keeps one core. Returns the cpus held back.
std::int64_t ReserveCpus(std::vector<NumaNode>& nodes, std::int64_t reserve) {
  std::int64_t held = 0;
  for (NumaNode& node : nodes) {
    while (held < reserve && node.cores.size() > 1) {
      for (int cpu : node.cores.front()) {
        node.cpus.erase(std::remove(node.cpus.begin(), node.cpus.end(), cpu), node.cpus.end());
      }
      held += static_cast<std::int64_t>(node.cores.front().size());
      node.reserved_cpus += static_cast<int>(node.cores.front().size());
      node.cores.erase(node.cores.begin());
    }
  }
  return held;
}

// Lowest domain first, never more than half of any one. Each domain's
// `held` (same order) gets what was taken from it.
void ReserveMemory(const std::vector<double*>& domains, const std::vector<double*>& held,
                   double reserve) {
  for (std::size_t i = 0; i < domains.size(); ++i) {
    if (reserve <= 0) break;
    double take = std::min(reserve, *domains[i] / 2);
    *domains[i] -= take;
    *held[i] += take;
    reserve -= take;
  }
}

// nvidia-smi's output, when it exits 0 within the timeout: a missing or
// failing binary is simply no GPUs.
std::optional<std::string> RunCapture(const std::string& program, std::vector<std::string> args) {
  ProcessSpec spec;
  spec.program = program;
  spec.args = std::move(args);
  spec.timeout = kNvidiaSmiTimeout;
  Result<ProcessOutcome> outcome = RunProcess(spec);
  if (!outcome || !outcome->succeeded()) return std::nullopt;
  return std::move(outcome->out);
}

GpuInfo DiscoverGpus(const std::string& nvidia_smi) {
  GpuInfo info;
  std::optional<std::string> list = RunCapture(nvidia_smi, {"-L"});
  if (!list) return info;
  info.ids = ParseGpuList(*list);
  if (info.ids.empty()) return info;
  std::optional<std::string> topo = RunCapture(nvidia_smi, {"topo", "-m"});
  if (topo) {
    ParseTopology(*topo, info);
  } else if (info.ids.size() >= 2) {
    LogWarning("gpu topology unavailable (" + FoundOnPath(nvidia_smi) +
               " topo -m); multi-gpu jobs will get the lowest free indices, which can straddle "
               "the interconnect");
  }
  return info;
}

std::string Describe(const Machine& machine) {
  int cpus = 0;
  int cores = 0;
  for (const NumaNode& node : machine.nodes) {
    cpus += static_cast<int>(node.cpus.size());
    cores += static_cast<int>(node.cores.size());
  }
  double mem = machine.machine_mem_gib;
  if (machine.per_node_memory) {
    mem = 0;
    for (const NumaNode& node : machine.nodes)
      mem += node.mem_gib;
  }
  // What was held back, which rounding to whole cores and the per-node
  // limits can make differ from the flags (--reserve-cpu, --reserve-mem).
  int reserved_cpus = 0;
  double reserved_mem = machine.machine_reserved_mem_gib;
  // Memory is held back per node wherever nodes report theirs, whether
  // or not jobs are held to them; only one of the two kinds is ever set.
  for (const NumaNode& node : machine.nodes) {
    reserved_cpus += node.reserved_cpus;
    reserved_mem += node.reserved_mem_gib;
  }
  std::string unit = cores == cpus ? "" : " in " + Count(cores, "whole core");
  return "resources available to jobs: " + Count(cpus, "cpu") + unit + " over " +
         std::to_string(machine.nodes.size()) + " NUMA node(s), " +
         std::to_string(machine.gpus.ids.size()) + " gpu(s), " + GiBWords(FloorTo2(mem)) +
         " memory (" + (machine.per_node_memory ? "per-node" : "machine-wide") +
         "); reserved for the system: " + Count(reserved_cpus, "cpu") + ", " +
         GiBWords(reserved_mem);
}

}  // namespace

Result<Machine> DiscoverMachine(const DaemonConfig& config, bool confine_memory) {
  std::vector<RawNode> raw = ReadNodes(config.sys_root);
  Machine machine;
  bool per_node_data = !raw.empty();
  for (const RawNode& node : raw)
    per_node_data = per_node_data && node.mem.has_value();
  if (raw.empty()) {
    long count = sysconf(_SC_NPROCESSORS_CONF);
    NumaNode only;
    only.cpus.resize(static_cast<std::size_t>(std::max(1L, count)));
    std::iota(only.cpus.begin(), only.cpus.end(), 0);
    machine.nodes.push_back(std::move(only));
  } else {
    for (const RawNode& node : raw) {
      machine.nodes.push_back(node.node);
      if (per_node_data) machine.nodes.back().mem_gib = *node.mem;
    }
  }
  if (!raw.empty() && !per_node_data) {
    LogWarning("NUMA nodes without a readable MemTotal; memory is booked machine-wide");
  }
  machine.per_node_memory = per_node_data && confine_memory;
  bool by_core = config.cpu_unit != "thread";
  bool complete = true;
  for (NumaNode& node : machine.nodes) {
    if (by_core) {
      node.cores = ReadCores(config.sys_root, node.cpus, complete);
    } else {
      for (int cpu : node.cpus)
        node.cores.push_back({cpu});
    }
  }
  if (!complete) {
    LogWarning("no sibling list for some cpus under " + config.sys_root +
               "/devices/system/cpu; each of those counts as a core of its own");
  }
  std::int64_t held = ReserveCpus(machine.nodes, config.reserve_cpu);
  if (held != config.reserve_cpu) {
    LogInfo("--reserve-cpu " + std::to_string(config.reserve_cpu) + " holds back " +
            Count(held, "cpu") + " (whole cores, and every node keeps one)");
  }
  if (per_node_data) {
    std::vector<double*> domains;
    std::vector<double*> held_mem;
    for (NumaNode& node : machine.nodes) {
      domains.push_back(&node.mem_gib);
      held_mem.push_back(&node.reserved_mem_gib);
    }
    ReserveMemory(domains, held_mem, config.reserve_mem_gib);
    for (const NumaNode& node : machine.nodes)
      machine.machine_mem_gib += node.mem_gib;
  } else {
    machine.machine_mem_gib = PhysicalMemoryGiB();
    ReserveMemory({&machine.machine_mem_gib}, {&machine.machine_reserved_mem_gib},
                  config.reserve_mem_gib);
  }
  machine.gpus = DiscoverGpus(config.nvidia_smi);
  LogInfo(Describe(machine));
  return machine;
}

}  // namespace hpcb::broker
