#include "protocol/array_spec.h"

#include <gtest/gtest.h>

#include <string>

namespace hpcb::protocol {
namespace {

std::vector<std::uint32_t> IndicesOf(const std::string& spec) {
  Result<ArraySpec> parsed = ParseArraySpec(spec);
  EXPECT_TRUE(parsed) << spec << ": " << parsed.error().message();
  return parsed ? parsed->indices : std::vector<std::uint32_t>{};
}

TEST(ArraySpecTest, RangesStepsListsAndThrottle) {
  EXPECT_EQ(IndicesOf("1-5"), (std::vector<std::uint32_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(IndicesOf("1-10:4"), (std::vector<std::uint32_t>{1, 5, 9}));
  EXPECT_EQ(IndicesOf("9,1,5"), (std::vector<std::uint32_t>{1, 5, 9}));
  EXPECT_EQ(IndicesOf("0"), (std::vector<std::uint32_t>{0}));
  EXPECT_EQ(IndicesOf("3,0-1"), (std::vector<std::uint32_t>{0, 1, 3}));
  Result<ArraySpec> throttled = ParseArraySpec("1-100%8");
  ASSERT_TRUE(throttled);
  EXPECT_EQ(throttled->indices.size(), 100u);
  EXPECT_EQ(throttled->throttle, 8u);
  EXPECT_FALSE(ParseArraySpec("1-3")->throttle);
}

TEST(ArraySpecTest, RefusesWhatIsNotASpec) {
  for (const char* bad :
       {"",     "%4",   "1-",    "-3",      "a",         "1-3:0", "5-1",   "1,,2",
        "1,",   ",1",   "1-3%0", "1-3%",    "1-3%x",     "1%2%3", "+1",    " 1",
        "1 ",   "1:2",  "1-3:",  "1-3:2:1", "1-1000000", "1,1",   "1-3,2", "99999999999999999999",
        "0x10", "1-2-3"}) {
    EXPECT_FALSE(ParseArraySpec(bad)) << "'" << bad << "'";
  }
  Result<ArraySpec> twice = ParseArraySpec("1-3,2");
  ASSERT_FALSE(twice);
  EXPECT_NE(twice.error().message().find("index 2 is named twice"), std::string::npos);
}

TEST(ArraySpecTest, BoundsTheElementCountAndTheSpecLength) {
  EXPECT_EQ(IndicesOf("1-10000").size(), kMaxArrayElements);
  EXPECT_EQ(IndicesOf("0-999999:100").size(), kMaxArrayElements);
  Result<ArraySpec> big = ParseArraySpec("0-10000");
  ASSERT_FALSE(big);
  EXPECT_NE(big.error().message().find("more than 10000 elements"), std::string::npos);
  EXPECT_FALSE(ParseArraySpec(std::string(kMaxArraySpecBytes + 1, '1')));
  // Many small items end at the same bound, not at the end of the list.
  std::string many;
  for (int i = 0; i <= 10000; ++i)
    many += std::to_string(i) + ",";
  many.pop_back();
  EXPECT_FALSE(ParseArraySpec(many));
}

TEST(ArraySpecTest, CheckArrayIsWhatTheBrokerAsks) {
  EXPECT_TRUE(CheckArray({}, std::nullopt));
  EXPECT_TRUE(CheckArray({1, 2, 7}, 2));
  EXPECT_FALSE(CheckArray({2, 1}, std::nullopt));
  EXPECT_FALSE(CheckArray({1, 1}, std::nullopt));
  EXPECT_FALSE(CheckArray({1, kMaxArrayIndex + 1}, std::nullopt));
  EXPECT_FALSE(CheckArray({1}, 0));
  EXPECT_FALSE(CheckArray({}, 3));
  EXPECT_FALSE(CheckArray(std::vector<std::uint32_t>(kMaxArrayElements + 1, 0), std::nullopt));
}

TEST(ArraySpecTest, FormatIndicesFoldsRuns) {
  EXPECT_EQ(FormatIndices({1, 2, 3, 7, 9, 10}), "1-3,7,9-10");
  EXPECT_EQ(FormatIndices({5}), "5");
  EXPECT_EQ(FormatIndices({}), "");
  EXPECT_EQ(IndicesOf(FormatIndices(IndicesOf("1-100:3,200-210"))), IndicesOf("1-100:3,200-210"));
}

}  // namespace
}  // namespace hpcb::protocol
