// Real unprivileged accounts for the root-mode e2e suites, created
// idempotently (useradd/groupadd when missing) and never removed: several
// suites and repeated runs share them.
#ifndef HPCB_TESTS_E2E_TEST_ACCOUNTS_H_
#define HPCB_TESTS_E2E_TEST_ACCOUNTS_H_

#include <sys/types.h>

#include <set>
#include <string>

namespace hpcb::e2e {

inline constexpr const char* kAlice = "hpcb-alice";  // supplementary group kExtraGroup
inline constexpr const char* kBob = "hpcb-bob";
inline constexpr const char* kCarol = "hpcb-carol";  // in the admin group
inline constexpr const char* kAdminGroup = "hpcb-adm";
inline constexpr const char* kExtraGroup = "hpcb-extra";
inline constexpr const char* kBrokerUser = "hpc-batch";

struct Account {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
};

// `command` through /bin/sh, its output discarded; its exit status.
int Sh(const std::string& command);

// The groups above, the broker's service user, alice, bob and carol.
void EnsureAccounts();
// A login-less user `name` (its own primary group), in `group` if not "".
void EnsureUser(const std::string& name, const std::string& group = "");

// uid 0 when there is no such user.
Account Lookup(const std::string& name);
// Primary and supplementary groups, as initgroups() would set them.
std::set<gid_t> GroupsOf(const Account& who);

}  // namespace hpcb::e2e

#endif  // HPCB_TESTS_E2E_TEST_ACCOUNTS_H_
