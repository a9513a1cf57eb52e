// libFuzzer target: every decoder a less-trusted peer can reach. The first
// input byte picks the decoder, the rest is the frame body. A decoder may
// return an error for anything; it must never crash, hang or leak.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "protocol/client_messages.h"
#include "protocol/codec.h"
#include "protocol/executor_messages.h"

namespace {
using namespace hpcb::protocol;

template <class T>
void Try(std::string_view text) {
  auto decoded = Decode<T>(text);
  if (decoded) {
    // Whatever decodes must re-encode and decode to the same verdict.
    auto again = Decode<T>(Encode(*decoded));
    if (!again) __builtin_trap();
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 14) {
    case 0: Try<SubmitRequest>(text); break;
    case 1: Try<ListRequest>(text); break;
    case 2: Try<JobIdRequest>(text); break;
    case 3: Try<JobFieldRequest>(text); break;
    case 4: Try<ListReply>(text); break;
    case 5: Try<SubmitReply>(text); break;
    case 6: Try<Hello>(text); break;
    case 7: Try<RegisterJob>(text); break;
    case 8: Try<StartJob>(text); break;
    case 9: Try<SignalJob>(text); break;
    case 10: Try<JobExited>(text); break;
    case 11: Try<RegisterReply>(text); break;
    case 12: (void)PeekTag(text, "type"); break;
    default: (void)PeekOk(text); break;
  }
  return 0;
}
