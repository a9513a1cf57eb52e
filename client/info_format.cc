#include "client/info_format.h"

#include <cstdio>
#include <vector>

#include "client/format.h"

namespace hpcb::client {
namespace {

std::string Gib(double gib) {
  char buffer[32];
  (void)std::snprintf(buffer, sizeof buffer, "%.4gG", gib);
  return buffer;
}

std::vector<std::string> CountRow(const std::string& node, const char* what,
                                  const protocol::Amounts<std::int64_t>& a) {
  return {node,
          what,
          std::to_string(a.total),
          std::to_string(a.reserved),
          std::to_string(a.in_use),
          std::to_string(a.free)};
}

std::vector<std::string> MemRow(const std::string& node, const protocol::Amounts<double>& a) {
  return {node, "mem", Gib(a.total), Gib(a.reserved), Gib(a.in_use), Gib(a.free)};
}

}  // namespace

std::string RenderInfo(const protocol::InfoReply& reply,
                       const std::vector<std::string>& node_names) {
  std::string out =
      "policy " + EscapeControl(reply.policy) + ", " + std::to_string(reply.queued) + " queued";
  if (reply.waiting > 0) {
    out += " (" + std::to_string(reply.waiting) + " waiting for dependencies)";
  }
  out += ", " + std::to_string(reply.running) + " running\n";
  if (reply.draining) {
    out += "draining: queued jobs are not started until an admin runs `dispatch resume`\n";
  }
  std::vector<std::vector<std::string>> table = {
      {"NODE", "RESOURCE", "TOTAL", "RESERVED", "IN-USE", "FREE"}};
  bool any_gpu = false;
  for (const protocol::NodeInfo& node : reply.nodes)
    any_gpu = any_gpu || node.gpus.total > 0;
  for (std::size_t i = 0; i < reply.nodes.size(); ++i) {
    const protocol::NodeInfo& node = reply.nodes[i];
    const std::string name =
        i < node_names.size() ? EscapeControl(node_names[i]) : std::to_string(node.node);
    table.push_back(CountRow(name, "cpus", node.cpus));
    if (node.mem_gib) table.push_back(MemRow(name, *node.mem_gib));
    if (any_gpu) table.push_back(CountRow(name, "gpus", node.gpus));
  }
  if (reply.mem_gib) table.push_back(MemRow("all", *reply.mem_gib));
  return out + "\n" + FormatTable(table);
}

}  // namespace hpcb::client
