#include "protocol/host/accounts.h"

#include <grp.h>
#include <pwd.h>

#include <cerrno>
#include <vector>

namespace hpcb::host {

const std::vector<std::string>& AdminGroupCandidates() {
  static const std::vector<std::string> kCandidates = {"wheel", "sudo", "adm", "staff"};
  return kCandidates;
}

Result<gid_t> ResolveAdminGroup(const std::string& name) {
  if (!name.empty()) {
    if (struct group* g = ::getgrnam(name.c_str())) return g->gr_gid;
  } else {
    for (const auto& candidate : AdminGroupCandidates()) {
      if (struct group* g = ::getgrnam(candidate.c_str())) return g->gr_gid;
    }
  }
  std::string existing;
  for (const auto& candidate : AdminGroupCandidates()) {
    if (::getgrnam(candidate.c_str()) != nullptr) {
      existing += (existing.empty() ? "" : ", ") + candidate;
    }
  }
  std::string message = name.empty()
                            ? std::string("none of the default admin groups exists on this system")
                            : "--admin-group '" + name + "' does not exist on this system";
  if (!existing.empty()) message += "; try one of: " + existing;
  return Error(ErrorCode::kNotFound, message);
}

Result<uid_t> LookUpUid(const std::string& name) {
  struct passwd pw {};
  struct passwd* found = nullptr;
  std::vector<char> buf(16384);
  int rc = 0;
  while ((rc = ::getpwnam_r(name.c_str(), &pw, buf.data(), buf.size(), &found)) == ERANGE &&
         buf.size() < (1u << 20)) {
    buf.resize(buf.size() * 2);
  }
  if (rc != 0) return Error::FromErrno(rc, "looking up user " + name);
  if (found == nullptr) return Error(ErrorCode::kNotFound, "there is no user " + name);
  return pw.pw_uid;
}

}  // namespace hpcb::host
