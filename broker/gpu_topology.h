// GPU wiring: parsing `nvidia-smi -L` / `topo -m`, ranking links, and
// choosing which free GPUs a job gets. Pure functions over GpuInfo.
#ifndef HPCB_BROKER_GPU_TOPOLOGY_H_
#define HPCB_BROKER_GPU_TOPOLOGY_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "broker/placement.h"

namespace hpcb::broker {

inline constexpr int kUnknownLinkRank = 6;

// Indices from `nvidia-smi -L` lines "GPU <n>: ...".
std::vector<int> ParseGpuList(std::string_view text);

// Removes ANSI CSI escapes (driver 580 underlines the header).
std::string StripAnsi(std::string_view text);

// Fills links and node_of from `nvidia-smi topo -m`; ids untouched. Text
// without a matrix header gives an empty topology.
void ParseTopology(std::string_view raw, GpuInfo& info);

// NV<n> 0, PIX 1, PXB 2, PHB 3, NODE 4, SYS 5, anything else 6.
int LinkRank(std::string_view label);

// The raw label linking a and b, or nullopt when unknown.
std::optional<std::string> LinkLabel(const GpuInfo& info, int a, int b);

// Ordered best-first: (worst rank, sum of ranks, -NVLink lanes).
struct SetQuality {
  int worst = 0;
  int sum = 0;
  int neg_lanes = 0;
  // NOLINTNEXTLINE(modernize-use-nullptr): clang-tidy 14 misreads the defaulted <=>'s 0.
  auto operator<=>(const SetQuality&) const = default;
};
SetQuality QualityOf(const GpuInfo& info, const std::vector<int>& gpus);

// Raw label of the worst known pair; nullopt for < 2 GPUs or no links.
std::optional<std::string> WorstLink(const GpuInfo& info, const std::vector<int>& gpus);

// Connected groups of `gpus` where links rank <= level, each sorted,
// ordered by smallest member.
std::vector<std::vector<int>> Islands(const GpuInfo& info, const std::vector<int>& gpus, int level);

struct GpuRequest {
  int count = 0;
  bool numa_local = false;
  std::optional<int> floor_rank;  // from --gpu-link; ignored for one GPU
};

// Picks `request.count` of the sorted `free_gpus`, or nullopt to wait.
// `scan_limit` bounds the exhaustive search (combinations x pairs); above
// it whole finer islands are taken biggest-first.
std::optional<std::vector<int>> ChooseGpus(const GpuInfo& info, const std::vector<int>& free_gpus,
                                           const GpuRequest& request, double scan_limit = 20000);

}  // namespace hpcb::broker

#endif  // HPCB_BROKER_GPU_TOPOLOGY_H_
