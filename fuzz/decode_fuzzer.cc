// libFuzzer target: every decoder a less-trusted peer can reach. The first
// input byte picks the decoder, the rest is the frame body. A decoder may
// return an error for anything; it must never crash, hang or leak.
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "protocol/client_framing.h"
#include "protocol/client_messages.h"
#include "protocol/codec.h"
#include "protocol/executor_messages.h"
#include "protocol/launcher_messages.h"
#include "protocol/queued_frame.h"

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
// The executor takes a submission straight off the user's socket: the
// bytes are queued on a socketpair, peeked as the broker does, then taken.
void QueuedFrame(std::string_view bytes) {
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) return;
  if (::send(pair[0], bytes.data(), bytes.size(), MSG_DONTWAIT) >= 0) {
    ::shutdown(pair[0], SHUT_WR);
    (void)PeekQueuedFrame(pair[1], 4096);
    (void)TakeQueuedFrame(pair[1], 4096);
  }
  ::close(pair[0]);
  ::close(pair[1]);
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 45) {
    // client -> broker, and the replies a client decodes
    case 0:
      Try<SubmitRequest>(text);
      break;
    case 1:
      Try<ListRequest>(text);
      break;
    case 2:
      Try<JobIdRequest>(text);
      break;
    case 3:
      Try<JobFieldRequest>(text);
      break;
    case 4:
      Try<ListReply>(text);
      break;
    case 5:
      Try<SubmitReply>(text);
      break;
    case 6:
      Try<KillReply>(text);
      break;
    case 7:
      Try<AttachReply>(text);
      break;
    case 8:
      Try<JobFieldReply>(text);
      break;
    case 9:
      Try<ErrorReply>(text);
      break;
    case 10:
      Try<JobRow>(text);
      break;
    // broker -> executor, and the executor's answers the broker decodes
    case 11:
      Try<Hello>(text);
      break;
    case 12:
      Try<RegisterJob>(text);
      break;
    case 13:
      Try<StartJob>(text);
      break;
    case 14:
      Try<SignalJob>(text);
      break;
    case 15:
      Try<ForgetJob>(text);
      break;
    case 16:
      Try<OpenOutput>(text);
      break;
    case 17:
      Try<HelloReply>(text);
      break;
    case 18:
      Try<RegisterReply>(text);
      break;
    case 19:
      Try<StartReply>(text);
      break;
    case 20:
      Try<Ack>(text);
      break;
    case 21:
      Try<JobExited>(text);
      break;
    // executor <-> launcher
    case 22:
      Try<UserIdentity>(text);
      break;
    case 23:
      Try<SpawnRequest>(text);
      break;
    case 24:
      Try<SpawnReply>(text);
      break;
    case 25:
    case 26:  // were check_dest and its reply
      Try<OutputRequest>(text);
      break;
    case 27:
      Try<DeliverRequest>(text);
      break;
    case 28:
      Try<DeliverReply>(text);
      break;
    case 29:
      Try<ChildExited>(text);
      break;
    case 30:
      (void)PeekEnvelope(text);
      break;
    case 31:
      (void)PeekCommand(text);
      break;
    case 32:
      QueuedFrame(text);
      break;
    // the typed envelope both internal channels dispatch on, and the
    // newer messages (paged job list, coded refusals)
    case 33:
      (void)PeekEnvelope(text);
      break;
    case 34:
      Try<ListJobs>(text);
      break;
    case 35:
      Try<ListJobsReply>(text);
      break;
    case 36:
      Try<JobSummary>(text);
      break;
    case 37:
      Try<Refused>(text);
      break;
    case 38:
      Try<WireError>(text);
      break;
    case 39:
      Try<UserIdentity>(text);
      break;
    case 40:
      Try<SubmitRequest>(text);
      break;
    // info, drain, resume and their replies
    case 41:
      Try<BareRequest>(text);
      break;
    case 42:
      Try<InfoReply>(text);
      break;
    case 43:
      Try<DrainReply>(text);
      break;
    default:
      (void)PeekOk(text);
      break;
  }
  return 0;
}
