#include "tests/e2e/test_accounts.h"

#include <grp.h>
#include <pwd.h>

#include <cstdlib>
#include <vector>

namespace hpcb::e2e {

int Sh(const std::string& command) {
  return std::system(("(" + command + ") >/dev/null 2>&1").c_str());
}

void EnsureUser(const std::string& name, const std::string& group) {
  Sh("getent passwd " + name + " || useradd --no-create-home --shell /usr/sbin/nologin " +
     (group.empty() ? "" : "-G " + group + " ") + name);
  if (!group.empty())
    Sh("id -nG " + name + " | grep -qw " + group + " || usermod -aG " + group + " " + name);
}

void EnsureAccounts() {
  for (const char* group : {kExtraGroup, kAdminGroup}) {
    Sh(std::string("getent group ") + group + " || groupadd " + group);
  }
  Sh(std::string("getent passwd ") + kBrokerUser +
     " || useradd --system --no-create-home --shell /usr/sbin/nologin " + kBrokerUser);
  EnsureUser(kAlice, kExtraGroup);
  EnsureUser(kBob);
  EnsureUser(kCarol, kAdminGroup);
}

Account Lookup(const std::string& name) {
  Account account;
  account.name = name;
  if (struct passwd* pw = ::getpwnam(name.c_str())) {
    account.uid = pw->pw_uid;
    account.gid = pw->pw_gid;
  }
  return account;
}

std::set<gid_t> GroupsOf(const Account& who) {
  std::vector<gid_t> groups(64);
  int count = static_cast<int>(groups.size());
  if (::getgrouplist(who.name.c_str(), who.gid, groups.data(), &count) < 0) return {};
  return std::set<gid_t>(groups.begin(), groups.begin() + count);
}

}  // namespace hpcb::e2e
