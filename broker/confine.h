// Confinement of the broker process: drop to the service user (when started
// as root), no_new_privs, an empty capability bounding set, and a seccomp
// allow-list (libseccomp; anything else kills the process). The broker
// never forks or execs, so neither is on the list.
#ifndef HPCB_BROKER_CONFINE_H_
#define HPCB_BROKER_CONFINE_H_

#include <sys/types.h>

#include <string>

#include "common/base/result.h"

namespace hpcb::broker {

struct ServiceUser {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
};

// kNotFound names --broker-user when the user does not exist.
Result<ServiceUser> LookupServiceUser(const std::string& name);

// Creates `dir` (mode 0700) if missing and, when `owner` is given, chowns it.
Result<void> PrepareStateDir(const std::string& dir, const ServiceUser* owner);

// As root: empties the bounding set, then setgroups({}), setresgid,
// setresuid, and checks that root cannot be regained.
Result<void> DropToUser(const ServiceUser& user);

// no_new_privs and the seccomp allow-list.
Result<void> ApplySeccomp();

}  // namespace hpcb::broker

#endif  // HPCB_BROKER_CONFINE_H_
