// `dispatch new --array SPEC`: which elements a job array has, and how many
// of them may run at once. Parsed by the client, checked again by the
// broker on the index list the submission carries (the root side keeps
// that list and starts only elements in it).
#ifndef HPCB_PROTOCOL_ARRAY_SPEC_H_
#define HPCB_PROTOCOL_ARRAY_SPEC_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/result.h"

namespace hpcb::protocol {

// Bounds on every array: the element count keeps one submission's index
// list (and so its frame and launch spec) under about 70 KiB; indices
// have at most 6 digits, as Slurm's default MaxArraySize keeps them short.
inline constexpr std::size_t kMaxArrayElements = 10000;
inline constexpr std::uint32_t kMaxArrayIndex = 999999;
inline constexpr std::size_t kMaxArraySpecBytes = 4096;

struct ArraySpec {
  std::vector<std::uint32_t> indices;     // strictly increasing, never empty
  std::optional<std::uint32_t> throttle;  // `%N`: at most N running at once
};

// SPEC is a comma-separated list of items, each `N` or `N-M` or `N-M:S`
// (every S-th index from N up to M), then optionally `%T` (T >= 1). Items
// may not overlap or repeat an index. Errors quote no more than the item.
Result<ArraySpec> ParseArraySpec(std::string_view spec);

// What the broker checks of a submission's array fields: the bounds above,
// strictly increasing indices, a throttle of at least 1.
Result<void> CheckArray(const std::vector<std::uint32_t>& indices,
                        const std::optional<std::uint32_t>& throttle);

// "1-3,7" for {1, 2, 3, 7}: runs of consecutive indices folded.
std::string FormatIndices(const std::vector<std::uint32_t>& indices);

}  // namespace hpcb::protocol

#endif  // HPCB_PROTOCOL_ARRAY_SPEC_H_
