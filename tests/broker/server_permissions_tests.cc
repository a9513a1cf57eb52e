#include <gtest/gtest.h>

#include "broker/permissions.h"
#include "tests/broker/server_fakes.h"

namespace hpcb::broker {
namespace {

TEST(ServerPermissionsTest, RootAndGroupMembersAreAdmins) {
  FakeUserDb users;
  users.members["sudo"] = {1001};
  Permissions permissions(users, "sudo");
  EXPECT_TRUE(permissions.IsAdmin(0));
  EXPECT_TRUE(permissions.IsAdmin(1001));
  EXPECT_FALSE(permissions.IsAdmin(1000));
}

TEST(ServerPermissionsTest, OwnerOrAdmin) {
  FakeUserDb users;
  users.members["sudo"] = {1001};
  Permissions permissions(users, "sudo");
  JobRecord job;
  job.id = 4;
  job.uid = 1000;
  job.user = "alice";
  EXPECT_TRUE(permissions.OwnerOrAdmin(1000, job));
  EXPECT_TRUE(permissions.OwnerOrAdmin(1001, job));
  EXPECT_TRUE(permissions.OwnerOrAdmin(0, job));
  Result<void> other = permissions.OwnerOrAdmin(1002, job);
  ASSERT_FALSE(other);
  EXPECT_EQ(other.error().message(), "job 4 belongs to alice");
  EXPECT_EQ(other.error().code(), ErrorCode::kPermissionDenied);
}

TEST(ServerPermissionsTest, RequireAdminNamesTheGroup) {
  FakeUserDb users;
  Permissions permissions(users, "wheel");
  Result<void> refused = permissions.RequireAdmin(1000, "list --all");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message(), "'list --all' requires membership of group 'wheel'");
}

TEST(ServerPermissionsTest, ResolveAdminGroupPicksFirstExistingCandidate) {
  FakeUserDb users;
  users.members["adm"] = {};
  users.members["sudo"] = {};
  EXPECT_EQ(ResolveAdminGroup("", users), "sudo");
  EXPECT_EQ(ResolveAdminGroup("staff", users), "staff");
  FakeUserDb none;
  EXPECT_EQ(ResolveAdminGroup("", none), "");
}

}  // namespace
}  // namespace hpcb::broker
