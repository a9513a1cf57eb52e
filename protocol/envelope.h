// What every message on the two internal channels (broker <-> executor,
// executor <-> launcher) carries besides its body:
//
//   {"type": KIND, "req": N, ...}
//
// KIND names one value of the channel's kind enum (a wire enum, codec.h),
// so the encoder and the dispatcher share one tag per kind. A request's
// `req` is chosen by its sender (never 0, never reused on a connection);
// the reply to it echoes that `req`, and the sender matches replies to
// requests by it alone. Events, which answer nothing, carry req 0. A reply
// whose `req` is not outstanding (it came after its request timed out, or
// it was never asked for) is logged and dropped by the receiver.
//
// A refusal travels as a WireError: the ErrorCode vocabulary of
// common/base/result.h (the one the client protocol's ErrorReply uses)
// plus the message, so a refusal reaches the user as what it is.
#ifndef HPCB_PROTOCOL_ENVELOPE_H_
#define HPCB_PROTOCOL_ENVELOPE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/base/result.h"
#include "protocol/codec.h"

namespace hpcb::protocol {

struct WireError {
  std::uint8_t code = static_cast<std::uint8_t>(ErrorCode::kInternal);
  std::string message;

  static WireError From(const Error& error) {
    return {static_cast<std::uint8_t>(error.code()), error.message()};
  }
  // A code outside the vocabulary (a newer or broken peer) reads as kInternal.
  Error ToError() const;

  HPCB_FIELDS(code, message)
  Result<void> Validate() const;
};

// An optional WireError from a Result: nullopt when it holds a value.
template <class T>
std::optional<WireError> ErrorOf(const Result<T>& result) {
  if (result) return std::nullopt;
  return WireError::From(result.error());
}

// The type and req of any message, read without decoding its body.
struct Envelope {
  std::string type;
  std::uint64_t req = 0;
  HPCB_FIELDS(type, req)
};
Result<Envelope> PeekEnvelope(std::string_view text);

// The kind an envelope names on a channel whose kinds are the wire enum
// `Kind`; kInvalidArgument naming the tag when it is not one of them.
template <WireEnum Kind>
Result<Kind> KindOf(const Envelope& envelope) {
  std::optional<Kind> kind = FromName<Kind>(envelope.type);
  if (!kind) {
    return InvalidArgument("unknown message type '" + envelope.type.substr(0, 40) + "'");
  }
  return *kind;
}

}  // namespace hpcb::protocol

#endif  // HPCB_PROTOCOL_ENVELOPE_H_
