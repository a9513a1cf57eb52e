// Fixtures shared by the broker tests: machines built in memory and the
// `nvidia-smi topo -m` texts they come from.
#ifndef HPCB_TESTS_BROKER_FAKE_MACHINE_H_
#define HPCB_TESTS_BROKER_FAKE_MACHINE_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "broker/gpu_topology.h"
#include "broker/placement.h"

namespace hpcb::broker::testing {

// NV2 pairs {0,1} and {2,3}, SYS between, a NIC column, NUMA 0,0,1,1; the
// header underlined the way driver 580 prints it.
inline const char* kTopo4 =
    "\t\x1b[4mGPU0\tGPU1\tGPU2\tGPU3\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m\n"
    "GPU0\t X \tNV2\tSYS\tSYS\tPHB\t0-3\t0\t\tN/A\n"
    "GPU1\tNV2\t X \tSYS\tSYS\tPHB\t0-3\t0\t\tN/A\n"
    "GPU2\tSYS\tSYS\t X \tNV2\tSYS\t4-7\t1\t\tN/A\n"
    "GPU3\tSYS\tSYS\tNV2\t X \tSYS\t4-7\t1\t\tN/A\n"
    "NIC0\tPHB\tPHB\tSYS\tSYS\t X \t\t\t\t\n"
    "\n"
    "Legend:\n"
    "\n"
    "  X    = Self\n"
    "  SYS  = Connection traversing PCIe as well as the SMP interconnect\n"
    "  NV#  = Connection traversing a bonded set of # NVLinks\n"
    "\n"
    "NIC Legend:\n"
    "\n"
    "  NIC0: mlx5_0\n";

inline const char* kList4 =
    "GPU 0: NVIDIA H100 (UUID: GPU-0)\nGPU 1: NVIDIA H100 (UUID: GPU-1)\n"
    "GPU 2: NVIDIA H100 (UUID: GPU-2)\nGPU 3: NVIDIA H100 (UUID: GPU-3)\n";

// Two NV12 quads {0-3} (NUMA 0) and {4-7} (NUMA 1), SYS between.
inline std::string Topo8() {
  std::string text = " ";
  for (int g = 0; g < 8; ++g)
    text += "\tGPU" + std::to_string(g);
  text += "\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n";
  for (int g = 0; g < 8; ++g) {
    text += "GPU" + std::to_string(g);
    for (int o = 0; o < 8; ++o) {
      text += o == g ? "\t X " : (o / 4 == g / 4 ? "\tNV12" : "\tSYS");
    }
    text += g < 4 ? "\t0-3\t0\t\tN/A\n" : "\t4-7\t1\t\tN/A\n";
  }
  return text;
}

inline std::string List8() {
  std::string text;
  for (int g = 0; g < 8; ++g)
    text += "GPU " + std::to_string(g) + ": NVIDIA H100 (UUID: x)\n";
  return text;
}

inline GpuInfo Gpus(int count, const std::string& topo) {
  GpuInfo info;
  info.ids.resize(static_cast<std::size_t>(count));
  std::iota(info.ids.begin(), info.ids.end(), 0);
  ParseTopology(topo, info);
  return info;
}

// `nodes` nodes of `cpus_per_node` consecutive cpus, `mem_gib` each
// (per-node books), with the given GPUs.
inline Machine MakeMachine(int nodes, int cpus_per_node, double mem_gib, GpuInfo gpus = {}) {
  Machine machine;
  for (int n = 0; n < nodes; ++n) {
    NumaNode node;
    node.id = n;
    for (int c = 0; c < cpus_per_node; ++c)
      node.cpus.push_back(n * cpus_per_node + c);
    node.mem_gib = mem_gib;
    machine.nodes.push_back(node);
  }
  machine.per_node_memory = mem_gib > 0;
  machine.machine_mem_gib = mem_gib * nodes;
  machine.gpus = std::move(gpus);
  return machine;
}

// `nodes` nodes of `cores_per_node` cores of `threads` SMT siblings each,
// numbered as x86 Linux numbers them: the first thread of every core, then
// the second, so core k is {k, k + cores, k + 2 * cores, ...} and siblings
// are never adjacent.
inline Machine MakeSmtMachine(int nodes, int cores_per_node, int threads, double mem_gib,
                              GpuInfo gpus = {}) {
  Machine machine = MakeMachine(nodes, 0, mem_gib, std::move(gpus));
  int cores = nodes * cores_per_node;
  for (NumaNode& node : machine.nodes) {
    for (int c = 0; c < cores_per_node; ++c) {
      std::vector<int> core;
      for (int t = 0; t < threads; ++t)
        core.push_back(node.id * cores_per_node + c + t * cores);
      node.cpus.insert(node.cpus.end(), core.begin(), core.end());
      node.cores.push_back(std::move(core));
    }
    std::sort(node.cpus.begin(), node.cpus.end());
  }
  return machine;
}

// Fails the test unless every placement holds whole cores of `machine` and
// no two of them share a cpu (so no two share a physical core either). A
// machine without sibling groups has one core per cpu.
inline void ExpectOwnCores(const Machine& machine, const std::vector<const Placement*>& running) {
  std::map<int, std::vector<int>> siblings;
  for (const NumaNode& node : machine.nodes) {
    for (const std::vector<int>& core : node.cores) {
      for (int cpu : core)
        siblings[cpu] = core;
    }
  }
  std::map<int, std::size_t> owner;
  for (std::size_t i = 0; i < running.size(); ++i) {
    const std::vector<int>& cpus = running[i]->cpus;
    std::set<int> mine(cpus.begin(), cpus.end());
    for (int cpu : cpus) {
      auto [it, fresh] = owner.emplace(cpu, i);
      EXPECT_TRUE(fresh) << "cpu " << cpu << " is in running placements " << it->second << " and "
                         << i;
      for (int sibling : siblings[cpu]) {
        EXPECT_TRUE(mine.count(sibling))
            << "placement " << i << " holds cpu " << cpu << " but not its sibling " << sibling;
      }
    }
  }
}

inline JobDemand Cpu(int cpu, double mem = 0) {
  JobDemand demand;
  demand.cpu = cpu;
  demand.mem_gib = mem;
  return demand;
}

inline JobDemand Gpu(int gpus) {
  JobDemand demand;
  demand.gpus = gpus;
  return demand;
}

}  // namespace hpcb::broker::testing

#endif  // HPCB_TESTS_BROKER_FAKE_MACHINE_H_
