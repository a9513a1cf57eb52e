#include "executor/account_cache.h"

#include <gtest/gtest.h>

namespace hpcb::executor {
namespace {

using Clock = AccountCache::Clock;

protocol::LookUpUserReply Alice() {
  protocol::LookUpUserReply found;
  found.who.uid = 1001;
  found.who.gid = 1001;
  found.who.user = "alice";
  found.home = "/home/alice";
  found.shell = "/bin/sh";
  return found;
}

TEST(AccountCacheTest, AnAnswerIsReusedWhileFreshAndOnlyForItsUid) {
  AccountCache cache;
  const Clock::time_point now = Clock::now();
  cache.Put(1001, Alice(), now);

  std::optional<protocol::LookUpUserReply> hit = cache.Find(1001, now + std::chrono::seconds(1));

  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->who.user, "alice");
  EXPECT_FALSE(cache.Find(1002, now));
  EXPECT_FALSE(cache.Find(1001, now + AccountCache::kFreshFor)) << "stale";
  EXPECT_FALSE(cache.Find(1001, now - std::chrono::seconds(1))) << "the clock went back";
}

TEST(AccountCacheTest, RefusalsAndAnswersForAnotherUidAreNotKept) {
  AccountCache cache;
  const Clock::time_point now = Clock::now();
  protocol::LookUpUserReply refused = Alice();
  refused.error = protocol::WireError::From(Error(ErrorCode::kNotFound, "no such user"));
  cache.Put(1001, refused, now);
  cache.Put(1002, Alice(), now);

  EXPECT_FALSE(cache.Find(1001, now));
  EXPECT_FALSE(cache.Find(1002, now));
}

TEST(AccountCacheTest, ItNeverHoldsMoreThanItsBound) {
  AccountCache cache;
  const Clock::time_point now = Clock::now();
  for (uid_t uid = 1000; uid < 1000 + AccountCache::kMaxEntries + 10; ++uid) {
    protocol::LookUpUserReply found = Alice();
    found.who.uid = uid;
    cache.Put(uid, found, now);
  }

  EXPECT_TRUE(cache.Find(1000 + AccountCache::kMaxEntries + 9, now));
  EXPECT_FALSE(cache.Find(1000, now)) << "the full cache was dropped to make room";
}

}  // namespace
}  // namespace hpcb::executor
