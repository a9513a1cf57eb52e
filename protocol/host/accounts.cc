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

Result<UserRecord> LookUpUser(uid_t uid) {
  struct passwd pw {};
  struct passwd* found = nullptr;
  std::vector<char> buf(16384);
  int rc = ::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found);
  if (rc != 0 || found == nullptr) {
    return Error(ErrorCode::kNotFound, "uid " + std::to_string(uid) + " has no passwd entry");
  }
  UserRecord record;
  record.who.uid = uid;
  record.who.gid = pw.pw_gid;
  record.who.user = pw.pw_name;
  record.facts.user = pw.pw_name;
  record.facts.home = pw.pw_dir ? pw.pw_dir : "/";
  record.facts.shell = pw.pw_shell ? pw.pw_shell : "";
  int ngroups = 64;
  std::vector<gid_t> groups(static_cast<size_t>(ngroups));
  while (::getgrouplist(pw.pw_name, pw.pw_gid, groups.data(), &ngroups) < 0) {
    if (ngroups > 65536) return Error(ErrorCode::kInternal, "too many groups");
    groups.resize(static_cast<size_t>(ngroups) * 2);
    ngroups = static_cast<int>(groups.size());
  }
  groups.resize(static_cast<size_t>(ngroups));
  record.who.groups.assign(groups.begin(), groups.end());
  return record;
}

}  // namespace hpcb::host
