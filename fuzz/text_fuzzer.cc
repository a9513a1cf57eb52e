// libFuzzer target: the text parsers fed by flags, sysfs and frames.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/units.h"
#include "protocol/array_spec.h"
#include "protocol/client_framing.h"
#include "protocol/framing.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto d = hpcb::ParseDuration(text); d && *d >= 0) {
    auto again = hpcb::ParseDuration(hpcb::FormatDuration(*d));
    if (!again || *again != *d) __builtin_trap();
  }
  if (auto cpus = hpcb::ParseCpuList(text)) {
    auto again = hpcb::ParseCpuList(hpcb::FormatCpuRanges(*cpus));
    if (!again || *again != *cpus) __builtin_trap();
  }
  (void)hpcb::ParseMemoryGiB(text);
  if (auto array = hpcb::protocol::ParseArraySpec(text)) {
    if (!hpcb::protocol::CheckArray(array->indices, array->throttle)) __builtin_trap();
    // Folded back into a spec, the same indices (when that spec fits).
    const std::string folded = hpcb::protocol::FormatIndices(array->indices);
    auto again = hpcb::protocol::ParseArraySpec(folded);
    if (folded.size() <= hpcb::protocol::kMaxArraySpecBytes &&
        (!again || again->indices != array->indices)) {
      __builtin_trap();
    }
  }
  hpcb::protocol::FrameDecoder decoder(4096);
  decoder.Feed(text);
  for (int i = 0; i < 64; ++i) {
    auto next = decoder.Next();
    if (!next || !next->has_value()) break;
  }
  return 0;
}
