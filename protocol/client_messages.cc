#include "protocol/client_messages.h"

#include <string>

namespace hpcb::protocol {
namespace {
struct OkOnly {
  bool ok = false;
  template <class A>
  void load(A& ar) {
    Get(ar, "ok", ok);
  }
};
}  // namespace

Result<void> ListRequest::Validate() const {
  if (ids.size() > kMaxListIds) {
    return InvalidArgument("list names " + std::to_string(ids.size()) + " jobs, limit " +
                           std::to_string(kMaxListIds));
  }
  return Ok();
}

Result<bool> PeekOk(std::string_view text) {
  HPCB_ASSIGN_OR_RETURN(OkOnly only, Decode<OkOnly>(text));
  return only.ok;
}

}  // namespace hpcb::protocol
