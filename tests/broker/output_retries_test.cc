#include "broker/output_retries.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace hpcb::broker {
namespace {

using Ids = std::vector<std::uint64_t>;

TEST(OutputRetriesTest, TheWaitDoublesFromTenSecondsToAnHour) {
  OutputRetries retries;
  retries.Failed(4, "closed", 0);
  EXPECT_EQ(retries.TakeDue(9.9), Ids{});
  double now = 10;
  double wait = 10;
  for (int tries = 0; tries < 12; ++tries) {
    ASSERT_EQ(retries.TakeDue(now), Ids{4}) << "try " << tries << " at " << now;
    EXPECT_EQ(retries.TakeDue(now + 1e6), Ids{}) << "not due again while it is being tried";
    retries.Landed(4);
    retries.Failed(4, "closed", now);
    wait = std::min(wait * 2, OutputRetries::kLongestRetryS);
    EXPECT_EQ(retries.TakeDue(now + wait - 0.5), Ids{});
    now += wait;
  }
  EXPECT_EQ(wait, 3600);
}

TEST(OutputRetriesTest, DeliveredOrTooLargeIsNotTriedAgain) {
  OutputRetries retries;
  retries.Failed(1, "closed", 0);
  retries.Failed(2, "closed", 0, 5);
  retries.Failed(3, "the output is over the delivery limit (64 MiB)", 0);
  EXPECT_FALSE(retries.Scheduled(3));
  EXPECT_EQ(retries.TakeDue(5), Ids{2});
  retries.Drop(1);
  EXPECT_EQ(retries.TakeDue(1e6), Ids{});
}

// After a start the limit may have been raised: one try whatever the error.
TEST(OutputRetriesTest, AfterAStartEvenAnOutputOverTheLimitIsTriedOnce) {
  OutputRetries retries;
  const std::string too_large = "the output is over the delivery limit (64 MiB)";
  retries.AfterStart(5, 0, 5);
  ASSERT_EQ(retries.TakeDue(5), Ids{5});
  retries.Landed(5);
  retries.Failed(5, too_large, 5);
  EXPECT_FALSE(retries.Scheduled(5));
}

// A failure reported while a try is out (a user's own request) leaves
// that try to report its own outcome: no second try goes out meanwhile.
TEST(OutputRetriesTest, AFailureWhileATryIsOutDoesNotSendAnother) {
  OutputRetries retries;
  retries.Failed(6, "closed", 0);
  ASSERT_EQ(retries.TakeDue(10), Ids{6});
  retries.Failed(6, "job 6 is ending; deliver_again needs it ended", 11);
  EXPECT_EQ(retries.TakeDue(1e6), Ids{});
  retries.Landed(6);
  retries.Failed(6, "closed", 12);
  EXPECT_EQ(retries.TakeDue(12 + 19), Ids{});
  EXPECT_EQ(retries.TakeDue(12 + 20), Ids{6});
}

}  // namespace
}  // namespace hpcb::broker
