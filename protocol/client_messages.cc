#include "protocol/client_messages.h"

#include <algorithm>
#include <cctype>
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

Result<void> CheckJobName(std::string_view name) {
  const bool fits = !name.empty() && name.size() <= kMaxJobNameBytes && name[0] != '-';
  const bool plain = std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
           kJobNamePunctuation.find(c) != std::string_view::npos;
  });
  if (fits && plain) return Ok();
  return InvalidArgument("a job name is 1 to " + std::to_string(kMaxJobNameBytes) +
                         " letters, digits and " + std::string(kJobNamePunctuation) +
                         " (no spaces, '/' or ','), not starting with '-'");
}

Result<void> ListRequest::Validate() const {
  if (ids.size() > kMaxListIds) {
    return InvalidArgument("list names " + std::to_string(ids.size()) + " jobs, limit " +
                           std::to_string(kMaxListIds));
  }
  if (Result<void> named = name ? CheckJobName(*name) : Ok(); !named) {
    return named.error().WithContext("field 'name'");
  }
  return Ok();
}

Result<bool> PeekOk(std::string_view text) {
  HPCB_ASSIGN_OR_RETURN(OkOnly only, Decode<OkOnly>(text));
  return only.ok;
}

}  // namespace hpcb::protocol
