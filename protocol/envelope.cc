#include "protocol/envelope.h"

namespace hpcb::protocol {
Result<void> WireError::Validate() const {
  if (code < static_cast<std::uint8_t>(ErrorCode::kInvalidArgument) ||
      code > static_cast<std::uint8_t>(ErrorCode::kInternal)) {
    return InvalidArgument("error code " + std::to_string(code) + " is not one we know");
  }
  return Ok();
}

Error WireError::ToError() const {
  if (!Validate()) return Error(ErrorCode::kInternal, message);
  return Error(static_cast<ErrorCode>(code), message);
}

Result<Envelope> PeekEnvelope(std::string_view text) {
  return Decode<Envelope>(text);
}

}  // namespace hpcb::protocol
