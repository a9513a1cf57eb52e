#include "client/array_rows.h"

#include <cstdint>
#include <map>

#include "protocol/array_spec.h"

namespace hpcb::client {
namespace {

// "2 running, 5 queued, 1 done", in that order.
std::string CountsText(const std::map<std::string, std::uint32_t>& counts) {
  std::string text;
  for (const char* what : {"running", "queued", "held", "done"}) {
    auto count = counts.find(what);
    if (count == counts.end() || count->second == 0) continue;
    text += (text.empty() ? "" : ", ") + std::to_string(count->second) + " " + what;
  }
  return text;
}

std::string Counts(const std::vector<const protocol::JobRow*>& elements) {
  std::map<std::string, std::uint32_t> counts;
  for (const protocol::JobRow* row : elements) {
    switch (row->state) {
      case protocol::JobState::kRunning:
        ++counts["running"];
        break;
      case protocol::JobState::kQueued:
        ++counts[row->held ? "held" : "queued"];
        break;
      case protocol::JobState::kDone:
        ++counts["done"];
        break;
    }
  }
  return CountsText(counts);
}

}  // namespace

std::string JobIdText(const protocol::JobRow& row) {
  if (!row.array_id) return std::to_string(row.id);
  // Without an index: Slurm's row for an array's pending elements.
  const std::string index = row.array_index ? std::to_string(*row.array_index) : "[*]";
  return std::to_string(*row.array_id) + "_" + index;
}

std::vector<ListLine> ListLines(const std::vector<protocol::JobRow>& rows, bool fold) {
  std::vector<ListLine> lines;
  for (std::size_t i = 0; i < rows.size();) {
    const protocol::JobRow& row = rows[i];
    if (row.array_id && row.array_indices) {  // folded by the daemon
      lines.push_back({&row, std::to_string(*row.array_id) + "_[" + *row.array_indices + "]",
                       CountsText(row.array_counts)});
      ++i;
      continue;
    }
    std::size_t end = i + 1;
    if (fold && row.array_id) {
      while (end < rows.size() && rows[end].array_id == row.array_id)
        ++end;
    }
    if (end == i + 1 && (!row.array_id || row.array_index)) {
      lines.push_back({&row, JobIdText(row), std::nullopt});
      i = end;
      continue;
    }
    std::vector<const protocol::JobRow*> elements;
    std::vector<std::uint32_t> indices;
    for (std::size_t j = i; j < end; ++j) {
      elements.push_back(&rows[j]);
      if (rows[j].array_index) indices.push_back(*rows[j].array_index);
    }
    lines.push_back({&row,
                     std::to_string(*row.array_id) + "_[" +
                         (indices.empty() ? "*" : protocol::FormatIndices(indices)) + "]",
                     Counts(elements)});
    i = end;
  }
  return lines;
}

}  // namespace hpcb::client
