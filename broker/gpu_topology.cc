#include "broker/gpu_topology.h"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <functional>
#include <numeric>
#include <sstream>
#include <tuple>
#include <utility>

#include "common/units.h"

namespace hpcb::broker {
namespace {

std::vector<std::string> Tokens(std::string_view line) {
  std::vector<std::string> out;
  std::istringstream in{std::string(line)};
  std::string token;
  while (in >> token)
    out.push_back(token);
  return out;
}

bool AllDigits(std::string_view text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); });
}

// "GPU3" -> 3; anything else (NIC columns, "GPU") -> nullopt.
std::optional<int> GpuToken(std::string_view token) {
  if (token.size() < 4 || token.substr(0, 3) != "GPU") return std::nullopt;
  std::string_view digits = token.substr(3);
  if (!AllDigits(digits) || digits.size() > 6) return std::nullopt;
  return std::stoi(std::string(digits));
}

int NvLanes(std::string_view label) {
  if (label.size() > 2 && label.substr(0, 2) == "NV" && AllDigits(label.substr(2)) &&
      label.size() < 9) {
    return std::stoi(std::string(label.substr(2)));
  }
  return 0;
}

double Choose(int n, int k) {
  double result = 1;
  for (int i = 1; i <= k; ++i)
    result = result * (n - k + i) / i;
  return result;
}

// Quality first, then the smaller (more broken) island, then ids: best-fit
// keeps whole islands for the jobs that need them.
using Candidate = std::tuple<SetQuality, std::size_t, std::vector<int>>;

std::vector<int> ExhaustiveBest(const GpuInfo& info, const std::vector<int>& island, int count) {
  std::vector<int> best;
  SetQuality best_quality;
  std::vector<int> pick;
  std::function<void(std::size_t)> walk = [&](std::size_t from) {
    if (static_cast<int>(pick.size()) == count) {
      SetQuality quality = QualityOf(info, pick);
      if (best.empty() || std::tie(quality, pick) < std::tie(best_quality, best)) {
        best = pick;
        best_quality = quality;
      }
      return;
    }
    std::size_t needed = static_cast<std::size_t>(count) - pick.size();
    for (std::size_t i = from; i + needed <= island.size(); ++i) {
      pick.push_back(island[i]);
      walk(i + 1);
      pick.pop_back();
    }
  };
  walk(0);
  return best;
}

// Too many combinations to scan: take whole finer islands biggest-first and
// fill the remainder from the tightest island that can hold it.
std::vector<int> GreedyBest(const GpuInfo& info, const std::vector<int>& set, int count,
                            int level) {
  if (count >= static_cast<int>(set.size())) return set;
  if (level < 0) return std::vector<int>(set.begin(), set.begin() + count);
  std::vector<std::vector<int>> subs = Islands(info, set, level - 1);
  std::stable_sort(subs.begin(), subs.end(),
                   [](const auto& a, const auto& b) { return a.size() > b.size(); });
  std::vector<int> taken;
  std::vector<const std::vector<int>*> left;
  int remaining = count;
  for (const auto& sub : subs) {
    if (static_cast<int>(sub.size()) <= remaining) {
      taken.insert(taken.end(), sub.begin(), sub.end());
      remaining -= static_cast<int>(sub.size());
    } else {
      left.push_back(&sub);
    }
  }
  if (remaining > 0 && !left.empty()) {
    const std::vector<int>* tightest = left.back();  // smallest that is still too big
    for (const auto* sub : left) {
      if (sub->size() < tightest->size() ||
          (sub->size() == tightest->size() && sub->front() < tightest->front())) {
        tightest = sub;
      }
    }
    std::vector<int> rest = GreedyBest(info, *tightest, remaining, level - 1);
    taken.insert(taken.end(), rest.begin(), rest.end());
  }
  std::sort(taken.begin(), taken.end());
  return taken;
}

std::vector<int> BestSetIn(const GpuInfo& info, const std::vector<int>& island, int count,
                           int level, double scan_limit) {
  int n = static_cast<int>(island.size());
  if (count >= n) return island;
  double work = Choose(n, count) * Choose(count, 2);
  if (work <= scan_limit) return ExhaustiveBest(info, island, count);
  return GreedyBest(info, island, count, level);
}

std::optional<std::vector<int>> BestInPool(const GpuInfo& info, const std::vector<int>& pool,
                                           int count, double scan_limit) {
  if (count >= static_cast<int>(pool.size())) return pool;
  for (int level = 0; level <= kUnknownLinkRank; ++level) {
    std::optional<Candidate> best;
    for (const auto& island : Islands(info, pool, level)) {
      if (static_cast<int>(island.size()) < count) continue;
      std::vector<int> set = BestSetIn(info, island, count, level, scan_limit);
      Candidate candidate{QualityOf(info, set), island.size(), set};
      if (!best || candidate < *best) best = std::move(candidate);
    }
    if (best && std::get<0>(*best).worst <= level) return std::get<2>(*best);
  }
  return std::nullopt;
}

std::vector<std::vector<int>> Pools(const GpuInfo& info, const std::vector<int>& free_gpus,
                                    bool numa_local) {
  if (!numa_local) return {free_gpus};
  std::map<int, std::vector<int>> by_node;
  for (int gpu : free_gpus) {
    auto it = info.node_of.find(gpu);
    if (it != info.node_of.end()) by_node[it->second].push_back(gpu);
  }
  std::vector<std::vector<int>> pools;
  for (auto& [node, gpus] : by_node)
    pools.push_back(std::move(gpus));
  return pools;
}

}  // namespace

std::vector<int> ParseGpuList(std::string_view text) {
  std::vector<int> ids;
  for (std::string_view line : SplitLines(text)) {
    if (line.substr(0, 4) != "GPU ") continue;
    std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view digits = line.substr(4, colon - 4);
    if (AllDigits(digits) && digits.size() < 7) ids.push_back(std::stoi(std::string(digits)));
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

std::string StripAnsi(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\x1b' && i + 1 < text.size() && text[i + 1] == '[') {
      std::size_t j = i + 2;
      while (j < text.size() && !std::isalpha(static_cast<unsigned char>(text[j])))
        ++j;
      i = j;  // skips the final letter too
      continue;
    }
    out.push_back(text[i]);
  }
  return out;
}

void ParseTopology(std::string_view raw, GpuInfo& info) {
  std::string text = StripAnsi(raw);
  std::vector<std::string> columns;
  bool have_header = false;
  for (std::string_view line : SplitLines(text)) {
    if (line.empty()) continue;
    bool indented = line[0] == ' ' || line[0] == '\t';
    std::vector<std::string> tokens = Tokens(line);
    if (tokens.empty()) continue;
    if (!have_header) {
      if (!indented || tokens[0].substr(0, 3) != "GPU") continue;
      for (const auto& token : tokens) {
        if (token.substr(0, 3) == "CPU") break;
        columns.push_back(token);
      }
      have_header = true;
      continue;
    }
    if (indented) continue;
    std::optional<int> self = GpuToken(tokens[0]);
    if (!self) continue;
    for (std::size_t k = 0; k < columns.size() && k + 1 < tokens.size(); ++k) {
      std::optional<int> other = GpuToken(columns[k]);
      if (!other || *other == *self) continue;
      info.links[{std::min(*self, *other), std::max(*self, *other)}] = tokens[k + 1];
    }
    std::size_t numa_at = columns.size() + 2;
    if (numa_at < tokens.size() && AllDigits(tokens[numa_at]) && tokens[numa_at].size() < 7) {
      info.node_of[*self] = std::stoi(tokens[numa_at]);
    }
  }
}

int LinkRank(std::string_view label) {
  std::string upper(label);
  for (char& c : upper)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (upper == "NV" ||
      (upper.size() > 2 && upper.substr(0, 2) == "NV" && AllDigits(upper.substr(2)))) {
    return 0;
  }
  if (upper == "PIX") return 1;
  if (upper == "PXB") return 2;
  if (upper == "PHB") return 3;
  if (upper == "NODE") return 4;
  if (upper == "SYS") return 5;
  return kUnknownLinkRank;
}

std::optional<std::string> LinkLabel(const GpuInfo& info, int a, int b) {
  auto it = info.links.find({std::min(a, b), std::max(a, b)});
  if (it == info.links.end()) return std::nullopt;
  return it->second;
}

SetQuality QualityOf(const GpuInfo& info, const std::vector<int>& gpus) {
  SetQuality quality;
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    for (std::size_t j = i + 1; j < gpus.size(); ++j) {
      std::optional<std::string> label = LinkLabel(info, gpus[i], gpus[j]);
      int rank = label ? LinkRank(*label) : kUnknownLinkRank;
      quality.worst = std::max(quality.worst, rank);
      quality.sum += rank;
      if (label) quality.neg_lanes -= NvLanes(*label);
    }
  }
  return quality;
}

std::optional<std::string> WorstLink(const GpuInfo& info, const std::vector<int>& gpus) {
  std::optional<std::string> worst;
  int worst_rank = -1;
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    for (std::size_t j = i + 1; j < gpus.size(); ++j) {
      std::optional<std::string> label = LinkLabel(info, gpus[i], gpus[j]);
      if (!label) continue;
      int rank = LinkRank(*label);
      if (rank > worst_rank) {
        worst_rank = rank;
        worst = label;
      }
    }
  }
  return worst;
}

std::vector<std::vector<int>> Islands(const GpuInfo& info, const std::vector<int>& gpus,
                                      int level) {
  std::vector<int> sorted = gpus;
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::size_t> parent(sorted.size());
  std::iota(parent.begin(), parent.end(), 0);
  std::function<std::size_t(std::size_t)> root = [&](std::size_t x) {
    return parent[x] == x ? x : parent[x] = root(parent[x]);
  };
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    for (std::size_t j = i + 1; j < sorted.size(); ++j) {
      std::optional<std::string> label = LinkLabel(info, sorted[i], sorted[j]);
      int rank = label ? LinkRank(*label) : kUnknownLinkRank;
      if (rank <= level) parent[root(j)] = root(i);
    }
  }
  std::map<std::size_t, std::vector<int>> groups;
  for (std::size_t i = 0; i < sorted.size(); ++i)
    groups[root(i)].push_back(sorted[i]);
  std::vector<std::vector<int>> out;
  for (auto& [key, group] : groups)
    out.push_back(std::move(group));
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<std::vector<int>> ChooseGpus(const GpuInfo& info, const std::vector<int>& free_gpus,
                                           const GpuRequest& request, double scan_limit) {
  // A 0-GPU job must never wait on GPU topology (docs/user-guide.md, "GPUs and NUMA locality").
  if (request.count <= 0) return std::vector<int>{};
  std::vector<std::vector<int>> pools;
  for (auto& pool : Pools(info, free_gpus, request.numa_local)) {
    if (static_cast<int>(pool.size()) >= request.count) pools.push_back(std::move(pool));
  }
  if (pools.empty()) return std::nullopt;
  std::optional<std::vector<int>> chosen;
  if (info.links.empty()) {
    chosen = std::vector<int>(pools[0].begin(), pools[0].begin() + request.count);
  } else {
    std::optional<std::pair<SetQuality, std::vector<int>>> best;
    for (const auto& pool : pools) {
      std::optional<std::vector<int>> set = BestInPool(info, pool, request.count, scan_limit);
      if (!set) continue;
      std::pair<SetQuality, std::vector<int>> candidate{QualityOf(info, *set), *set};
      if (!best || candidate < *best) best = std::move(candidate);
    }
    if (best) chosen = std::move(best->second);
  }
  if (chosen && request.floor_rank && request.count > 1 &&
      QualityOf(info, *chosen).worst > *request.floor_rank) {
    return std::nullopt;
  }
  return chosen;
}

}  // namespace hpcb::broker
