// Accounts as the roles look them up before they are confined: a job
// owner's passwd entry and groups, and the admin group.
#ifndef HPCB_COMMON_HOST_ACCOUNTS_H_
#define HPCB_COMMON_HOST_ACCOUNTS_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "common/base/result.h"

namespace hpcb::host {

// What a job's environment takes from the passwd entry.
struct PasswdFacts {
  std::string user;
  std::string home;
  std::string shell;  // empty -> /bin/sh
};

// The candidates tried, in order, when --admin-group is not given.
const std::vector<std::string>& AdminGroupCandidates();

// --admin-group: the named group, or (empty) the first existing candidate.
// The error lists the existing candidates.
Result<gid_t> ResolveAdminGroup(const std::string& name);

// The uid of the user `name`; kNotFound when there is no such user, another
// error when the lookup itself failed.
Result<uid_t> LookUpUid(const std::string& name);

}  // namespace hpcb::host

#endif  // HPCB_COMMON_HOST_ACCOUNTS_H_
