#include "common/host/accounts.h"

#include <grp.h>
#include <pwd.h>

#include <algorithm>
#include <cerrno>

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
  std::vector<std::string> existing;
  for (const auto& candidate : AdminGroupCandidates()) {
    if (::getgrnam(candidate.c_str()) != nullptr) existing.push_back(candidate);
  }
  std::sort(existing.begin(), existing.end());
  std::string message =
      name.empty() ? std::string(
                         "none of the default admin groups (wheel, sudo, adm, staff) exists "
                         "on this system; pass --admin-group GROUP")
                   : "--admin-group '" + name + "' does not exist on this system";
  for (std::size_t i = 0; i < existing.size(); ++i)
    message += (i == 0 ? "; try one of: " : ", ") + existing[i];
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
