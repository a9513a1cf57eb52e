// The kernel's cpu lists ("0-3,5,7-8", sysfs and cgroupfs) and the strict
// integers they are made of: the only text forms the root side parses.
#ifndef HPCB_COMMON_BASE_CPU_LIST_H_
#define HPCB_COMMON_BASE_CPU_LIST_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "common/base/result.h"

namespace hpcb {

// "0-3,8,10-11" -> {0,1,2,3,8,10,11}, sorted and de-duplicated. Empty text
// is an empty list; bad syntax, reversed ranges or ids > 1<<20 are errors.
Result<std::vector<int>> ParseCpuList(std::string_view raw);

// `text` without the white space (std::isspace) around it.
std::string_view Trim(std::string_view text);

// Strict decimal integer in [min, max]; no sign unless min < 0, no spaces.
Result<std::int64_t> ParseInteger(std::string_view text, std::int64_t min, std::int64_t max);

}  // namespace hpcb

#endif  // HPCB_COMMON_BASE_CPU_LIST_H_
