// How `dispatch list` shows job arrays: an element as ARRAY_INDEX, and,
// unless --long, an array's elements folded into one row with counts.
#ifndef HPCB_CLIENT_ARRAY_ROWS_H_
#define HPCB_CLIENT_ARRAY_ROWS_H_

#include <optional>
#include <string>
#include <vector>

#include "protocol/client_messages.h"

namespace hpcb::client {

// "12_3" for element 3 of array 12 ("12_[*]" for Slurm's row of its
// pending elements), else the job's own id.
std::string JobIdText(const protocol::JobRow& row);

// One row of the table: a job, or the first listed element of an array
// standing for all its listed elements.
struct ListLine {
  const protocol::JobRow* row = nullptr;
  std::string id;                      // "12", "12_3" or "12_[1-4,9]"
  std::optional<std::string> summary;  // folded: "2 running, 5 queued, 1 done"
};

// The rows in order; with `fold`, each array's elements (listed one after
// another, in id order) become one line.
std::vector<ListLine> ListLines(const std::vector<protocol::JobRow>& rows, bool fold);

}  // namespace hpcb::client

#endif  // HPCB_CLIENT_ARRAY_ROWS_H_
