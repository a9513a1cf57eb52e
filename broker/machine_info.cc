#include "broker/machine_info.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace hpcb::broker {
namespace {

// GiB rounded to 2 decimals, so the JSON does not show float noise.
double Round(double gib) {
  return std::round(gib * 100.0) / 100.0;
}

protocol::Amounts<double> MemAmounts(double offered, double reserved, double in_use) {
  protocol::Amounts<double> mem;
  mem.total = Round(offered + reserved);
  mem.reserved = Round(reserved);
  mem.in_use = Round(in_use);
  mem.free = Round(std::max(0.0, offered - in_use));
  return mem;
}

}  // namespace

void DescribeMachine(const Machine& machine, const std::vector<const Placement*>& held,
                     protocol::InfoReply& reply) {
  std::map<int, int> node_of_cpu;
  for (const NumaNode& node : machine.nodes) {
    for (int cpu : node.cpus)
      node_of_cpu[cpu] = node.id;
  }
  std::map<int, std::int64_t> cpus_used;
  std::map<int, std::int64_t> gpus_used;
  std::map<int, double> mem_used;  // by memory domain (-1: machine-wide)
  for (const Placement* placement : held) {
    for (int cpu : placement->cpus) {
      auto it = node_of_cpu.find(cpu);
      if (it != node_of_cpu.end()) ++cpus_used[it->second];
    }
    for (int gpu : placement->gpus) {
      auto it = machine.gpus.node_of.find(gpu);
      ++gpus_used[it == machine.gpus.node_of.end() ? -1 : it->second];
    }
    for (const auto& [domain, gib] : placement->mem_by_node)
      mem_used[domain] += gib;
  }
  std::map<int, std::int64_t> gpus_total;
  for (int gpu : machine.gpus.ids) {
    auto it = machine.gpus.node_of.find(gpu);
    ++gpus_total[it == machine.gpus.node_of.end() ? -1 : it->second];
  }
  double reserved_mem = machine.machine_reserved_mem_gib;
  for (const NumaNode& node : machine.nodes) {
    protocol::NodeInfo row;
    row.node = node.id;
    const auto offered = static_cast<std::int64_t>(node.cpus.size());
    row.cpus.reserved = node.reserved_cpus;
    row.cpus.total = offered + node.reserved_cpus;
    row.cpus.in_use = cpus_used[node.id];
    row.cpus.free = std::max<std::int64_t>(0, offered - row.cpus.in_use);
    row.gpus.total = gpus_total[node.id];
    row.gpus.in_use = gpus_used[node.id];
    row.gpus.free = std::max<std::int64_t>(0, row.gpus.total - row.gpus.in_use);
    if (machine.per_node_memory) {
      row.mem_gib = MemAmounts(node.mem_gib, node.reserved_mem_gib, mem_used[node.id]);
    } else {
      reserved_mem += node.reserved_mem_gib;
    }
    reply.nodes.push_back(row);
  }
  if (!machine.per_node_memory) {
    reply.mem_gib = MemAmounts(machine.machine_mem_gib, reserved_mem, mem_used[-1]);
  }
}

}  // namespace hpcb::broker
