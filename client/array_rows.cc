#include "client/array_rows.h"

#include <cstdint>

#include "protocol/array_spec.h"

namespace hpcb::client {
namespace {

std::string Counts(const std::vector<const protocol::JobRow*>& elements) {
  std::size_t running = 0, queued = 0, held = 0, done = 0;
  for (const protocol::JobRow* row : elements) {
    switch (row->state) {
      case protocol::JobState::kRunning:
        ++running;
        break;
      case protocol::JobState::kQueued:
        ++(row->held ? held : queued);
        break;
      case protocol::JobState::kDone:
        ++done;
        break;
    }
  }
  std::string text;
  for (const auto& [count, what] : {std::pair{running, "running"}, std::pair{queued, "queued"},
                                    std::pair{held, "held"}, std::pair{done, "done"}}) {
    if (count == 0) continue;
    text += (text.empty() ? "" : ", ") + std::to_string(count) + " " + what;
  }
  return text;
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
                     std::to_string(*row.array_id) + "_[" + (indices.empty() ? "*" : protocol::FormatIndices(indices)) + "]",
                     Counts(elements)});
    i = end;
  }
  return lines;
}

}  // namespace hpcb::client
