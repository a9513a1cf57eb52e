#include "executor/dest_cache.h"

#include <gtest/gtest.h>

namespace hpcb::executor {
namespace {

protocol::UserIdentity Alice() {
  return {1000, 1000, "alice", {1000, 27}};
}

protocol::CheckDestReply Answer(const std::string& dest) {
  protocol::CheckDestReply reply;
  reply.dest = dest;
  return reply;
}

TEST(DestCacheTest, AWritableDirectoryIsReusedForTwoSecondsForTheSameIdentityOnly) {
  DestCache cache;
  const auto now = DestCache::Clock::now();
  cache.Put(Alice(), "/home/alice/run", 7, Answer("/home/alice/run/output.7.log"), now);
  EXPECT_TRUE(cache.FreshDirectory(Alice(), "/home/alice/run", now + std::chrono::seconds(1)));
  EXPECT_FALSE(cache.FreshDirectory(Alice(), "/home/alice/run", now + std::chrono::seconds(2)));
  EXPECT_FALSE(cache.FreshDirectory(Alice(), "/home/alice", now));
  protocol::UserIdentity fewer_groups = Alice();
  fewer_groups.groups = {1000};
  EXPECT_FALSE(cache.FreshDirectory(fewer_groups, "/home/alice/run", now))
      << "a change of groups is checked again";
  protocol::UserIdentity bob = Alice();
  bob.uid = 1001;
  EXPECT_FALSE(cache.FreshDirectory(bob, "/home/alice/run", now));
}

TEST(DestCacheTest, AFileNameOrARefusalIsNeverKept) {
  DestCache cache;
  const auto now = DestCache::Clock::now();
  cache.Put(Alice(), "/home/alice/out.log", 7, Answer("/home/alice/out.log"), now);
  EXPECT_FALSE(cache.FreshDirectory(Alice(), "/home/alice/out.log", now));
  protocol::CheckDestReply refused = Answer("");
  refused.error = protocol::WireError{};
  cache.Put(Alice(), "/home/alice/run", 7, refused, now);
  EXPECT_FALSE(cache.FreshDirectory(Alice(), "/home/alice/run", now));
}

TEST(DestCacheTest, ItStaysBoundedWhateverIsPutInIt) {
  DestCache cache;
  const auto now = DestCache::Clock::now();
  for (int i = 0; i < 1000; ++i) {
    const std::string dir = "/d" + std::to_string(i);
    cache.Put(Alice(), dir, 1, Answer(dir + "/output.1.log"), now);
  }
  EXPECT_TRUE(cache.FreshDirectory(Alice(), "/d999", now));
  int kept = 0;
  for (int i = 0; i < 1000; ++i)
    kept += cache.FreshDirectory(Alice(), "/d" + std::to_string(i), now) ? 1 : 0;
  EXPECT_LE(kept, static_cast<int>(DestCache::kMaxEntries));
}

}  // namespace
}  // namespace hpcb::executor
