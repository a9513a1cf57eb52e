#include "broker/permissions.h"

#include <grp.h>
#include <pwd.h>

#include <chrono>
#include <vector>

#include "broker/daemon_config.h"
#include "common/host/accounts.h"

namespace hpcb::broker {
namespace {

bool LookupPasswd(uid_t uid, struct passwd* out, std::vector<char>& buffer) {
  buffer.assign(16384, 0);
  struct passwd* found = nullptr;
  return getpwuid_r(uid, out, buffer.data(), buffer.size(), &found) == 0 && found != nullptr;
}

std::optional<gid_t> GroupId(const std::string& group) {
  std::vector<char> buffer(16384);
  struct group entry {};
  struct group* found = nullptr;
  if (getgrnam_r(group.c_str(), &entry, buffer.data(), buffer.size(), &found) != 0 ||
      found == nullptr) {
    return std::nullopt;
  }
  return entry.gr_gid;
}

}  // namespace

std::optional<std::string> SystemUserDb::UserName(uid_t uid) const {
  const double now =
      std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  if (auto it = names_.find(uid); it != names_.end() && now - it->second.looked_up_at < kNameTtlS) {
    return it->second.name;
  }
  std::vector<char> buffer;
  struct passwd entry {};
  std::optional<std::string> name;
  if (LookupPasswd(uid, &entry, buffer)) name = std::string(entry.pw_name);
  if (names_.size() >= kMaxCachedNames) {
    std::erase_if(names_,
                  [now](const auto& kept) { return now - kept.second.looked_up_at >= kNameTtlS; });
    if (names_.size() >= kMaxCachedNames) names_.clear();
  }
  names_.insert_or_assign(uid, CachedName{name, now});
  return name;
}

bool SystemUserDb::InGroup(uid_t uid, const std::string& group) const {
  std::optional<gid_t> wanted = GroupId(group);
  if (!wanted) return false;
  std::vector<char> buffer;
  struct passwd entry {};
  if (!LookupPasswd(uid, &entry, buffer)) return false;
  int count = 64;
  std::vector<gid_t> groups(static_cast<std::size_t>(count));
  while (getgrouplist(entry.pw_name, entry.pw_gid, groups.data(), &count) < 0) {
    if (count > 65536) return false;
    groups.resize(static_cast<std::size_t>(count) * 2);
    count = static_cast<int>(groups.size());
  }
  for (int i = 0; i < count; ++i) {
    if (groups[static_cast<std::size_t>(i)] == *wanted) return true;
  }
  return false;
}

bool SystemUserDb::GroupExists(const std::string& group) const {
  return GroupId(group).has_value();
}

bool Permissions::IsAdmin(uid_t uid) const {
  if (uid == 0) return true;
  return !admin_group_.empty() && users_.InGroup(uid, admin_group_);
}

Result<void> Permissions::OwnerOrAdmin(uid_t uid, const JobRecord& job) const {
  if (job.uid == uid || IsAdmin(uid)) return Ok();
  return Error(ErrorCode::kPermissionDenied,
               "job " + std::to_string(job.id) + " belongs to " + job.user);
}

std::string Permissions::NameOf(uid_t uid) const {
  return users_.UserName(uid).value_or("uid " + std::to_string(uid));
}

Result<void> Permissions::RequireAdmin(uid_t uid, const std::string& what) const {
  if (IsAdmin(uid)) return Ok();
  return Error(ErrorCode::kPermissionDenied,
               "'" + what + "' requires membership of group '" + admin_group_ + "'");
}

std::string ResolveAdminGroup(const std::string& flag, const UserDb& users) {
  if (!flag.empty()) return flag;
  for (const std::string& candidate : host::AdminGroupCandidates()) {
    if (users.GroupExists(candidate)) return candidate;
  }
  return "";
}

}  // namespace hpcb::broker
