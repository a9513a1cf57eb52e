// Permissions: who is an admin, and the one owner-or-admin rule that every
// job-addressed request goes through. The user database sits behind an
// interface so tests need no real accounts.
#ifndef HPCB_BROKER_PERMISSIONS_H_
#define HPCB_BROKER_PERMISSIONS_H_

#include <sys/types.h>

#include <cstddef>
#include <map>
#include <optional>
#include <string>

#include "broker/job_record.h"
#include "common/base/result.h"

namespace hpcb::broker {

class UserDb {
 public:
  virtual ~UserDb() = default;
  virtual std::optional<std::string> UserName(uid_t uid) const = 0;
  // Whether `group` is among getgrouplist(user, primary gid) of `uid`.
  virtual bool InGroup(uid_t uid, const std::string& group) const = 0;
  virtual bool GroupExists(const std::string& group) const = 0;
};

// passwd/group databases (getpwuid_r, getgrnam_r, getgrouplist).
//
// The bargain: a uid's name is kept for kNameTtlS after it was looked up,
// so a burst of submissions from one user reads the passwd database once,
// not once per job (each lookup opened and parsed /etc/passwd, about a
// fifth of the broker's system calls per submission). A user renamed
// meanwhile is shown by the old name on jobs submitted within that time;
// the name is only shown, never checked (identity is the uid).
class SystemUserDb : public UserDb {
 public:
  static constexpr double kNameTtlS = 10;
  std::optional<std::string> UserName(uid_t uid) const override;
  bool InGroup(uid_t uid, const std::string& group) const override;
  bool GroupExists(const std::string& group) const override;

 private:
  struct CachedName {
    std::optional<std::string> name;
    double looked_up_at = 0;  // steady clock, seconds
  };
  // Bounded: entries past their time are dropped when it is full.
  static constexpr std::size_t kMaxCachedNames = 1024;
  mutable std::map<uid_t, CachedName> names_;
};

class Permissions {
 public:
  Permissions(const UserDb& users, std::string admin_group)
      : users_(users), admin_group_(std::move(admin_group)) {}

  const std::string& admin_group() const { return admin_group_; }
  bool IsAdmin(uid_t uid) const;
  // "job N belongs to USER" unless `uid` owns the job or is an admin.
  Result<void> OwnerOrAdmin(uid_t uid, const JobRecord& job) const;
  // "'WHAT' requires membership of group 'G'" unless admin.
  Result<void> RequireAdmin(uid_t uid, const std::string& what) const;
  // The name every listing shows for `uid`: its passwd entry's, never the
  // one its client sent (which only its own job's environment takes), or
  // "uid N" when it has none.
  std::string NameOf(uid_t uid) const;

 private:
  const UserDb& users_;
  std::string admin_group_;
};

// --admin-group, or the first existing candidate; empty if none exists.
std::string ResolveAdminGroup(const std::string& flag, const UserDb& users);

}  // namespace hpcb::broker

#endif  // HPCB_BROKER_PERMISSIONS_H_
