// Text forms shared by the client, the daemon flags and the state files:
// durations, memory sizes, cpu and id lists. Pure functions, table-tested.
// Never linked into a root binary; the root side parses only cpu lists
// (common/base/cpu_list.h, included here for the other users).
#ifndef HPCB_COMMON_UNITS_H_
#define HPCB_COMMON_UNITS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/cpu_list.h"
#include "common/base/result.h"

namespace hpcb {

// Plain seconds ("3600") or a gap-free run of <digits><s|m|h|d> in any order
// ("1h30m", "30m1h"); surrounding spaces and case are ignored. Rejects "",
// "1x", "h1", "1h30", "-5", "1.5h" and anything that overflows.
Result<std::int64_t> ParseDuration(std::string_view raw);

// "1d2h3m4s" omitting zero parts; "0s" for zero or negative; "-" for none.
std::string FormatDuration(std::optional<std::int64_t> seconds);

// A memory size in GiB: a plain number ("2", "0.5") is GiB; a K/M/G/T
// suffix (optionally followed by "i" and/or "B") scales it. Must be >= 0.
Result<double> ParseMemoryGiB(std::string_view raw);

// "%g" of the GiB figure followed by "G": 16 -> "16G", 2.08 -> "2.08G".
std::string FormatGiB(std::optional<double> gib);

// A GiB figure in words, to at most two decimals: 21.5403 -> "21.54 GiB",
// 64 -> "64 GiB" (log lines and refusals; tables use FormatGiB).
std::string GiBWords(double gib);

// Rounds down to two decimals (the budget shown to users).
double FloorTo2(double value);

// {0,1,2,3,8} -> "0-3,8" (the kernel's cpulist form).
std::string FormatCpuRanges(const std::vector<int>& unsorted);

// {0,1,2} -> "0,1,2": the only form CUDA_VISIBLE_DEVICES understands, and
// what the executor writes to cpuset files.
std::string FormatCommaList(const std::vector<int>& ids);

// The lines of `text` without their '\n'; a last line without one counts,
// an empty text has none.
std::vector<std::string_view> SplitLines(std::string_view text);

}  // namespace hpcb

#endif  // HPCB_COMMON_UNITS_H_
