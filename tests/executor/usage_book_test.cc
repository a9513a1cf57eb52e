#include "executor/usage_book.h"

#include <gtest/gtest.h>

namespace hpcb::executor {
namespace {

TEST(UsageBookTest, TotalsFollowEachJobsLatestFigure) {
  UsageBook book;
  book.Set(1, 1000, 300);
  book.Set(2, 1000, 200);
  book.Set(3, 1001, 50);
  EXPECT_EQ(book.Of(1000), 500u);
  book.Set(1, 1000, 100);  // rewritten smaller (the env dropped at start)
  EXPECT_EQ(book.Of(1000), 300u);
  book.Remove(2);
  book.Remove(2);  // twice is harmless
  EXPECT_EQ(book.Of(1000), 100u);
  EXPECT_EQ(book.Of(1001), 50u);
  EXPECT_EQ(book.Of(4242), 0u);
}

}  // namespace
}  // namespace hpcb::executor
