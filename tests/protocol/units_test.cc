#include "common/units.h"

#include <gtest/gtest.h>

namespace hpcb {
namespace {

TEST(ParseDurationTest, AcceptsSecondsAndUnits) {
  EXPECT_EQ(*ParseDuration("3600"), 3600);
  EXPECT_EQ(*ParseDuration("45s"), 45);
  EXPECT_EQ(*ParseDuration("15m"), 900);
  EXPECT_EQ(*ParseDuration("2h"), 7200);
  EXPECT_EQ(*ParseDuration("1d"), 86400);
  EXPECT_EQ(*ParseDuration("1h30m"), 5400);
  EXPECT_EQ(*ParseDuration("1d2h3m4s"), 93784);
  EXPECT_EQ(*ParseDuration(" 2H "), 7200);
  EXPECT_EQ(*ParseDuration("1h1h"), 7200);
  EXPECT_EQ(*ParseDuration("30m1h"), 5400);
  EXPECT_EQ(*ParseDuration("0"), 0);
}

TEST(ParseDurationTest, RejectsMalformedText) {
  for (const char* bad : {"", "abc", "1x", "h1", "1h30", "-5", "1.5h", "+5", "1 h",
                          "99999999999999999999", "999999999999999999d"}) {
    auto parsed = ParseDuration(bad);
    ASSERT_FALSE(parsed) << bad;
    EXPECT_NE(parsed.error().message().find("invalid duration"), std::string::npos);
  }
}

TEST(FormatDurationTest, OmitsZeroParts) {
  EXPECT_EQ(FormatDuration(std::nullopt), "-");
  EXPECT_EQ(FormatDuration(0), "0s");
  EXPECT_EQ(FormatDuration(5400), "1h30m");
  EXPECT_EQ(FormatDuration(86461), "1d1m1s");
  EXPECT_EQ(FormatDuration(93600), "1d2h");
  EXPECT_EQ(FormatDuration(-3), "0s");
}

TEST(FormatDurationTest, RoundTripsThroughParse) {
  EXPECT_EQ(*ParseDuration(FormatDuration(123456)), 123456);
}

TEST(ParseMemoryTest, PlainNumbersAreGiB) {
  EXPECT_DOUBLE_EQ(*ParseMemoryGiB("2"), 2.0);
  EXPECT_DOUBLE_EQ(*ParseMemoryGiB("0.5"), 0.5);
  EXPECT_DOUBLE_EQ(*ParseMemoryGiB("512M"), 0.5);
  EXPECT_DOUBLE_EQ(*ParseMemoryGiB("1T"), 1024.0);
  EXPECT_DOUBLE_EQ(*ParseMemoryGiB("4GiB"), 4.0);
  EXPECT_DOUBLE_EQ(*ParseMemoryGiB("1048576k"), 1.0);
}

TEST(ParseMemoryTest, RejectsGarbageAndNegatives) {
  for (const char* bad : {"", "-1", "x", "1Q", "nan", "inf", "G", "1..2"}) {
    EXPECT_FALSE(ParseMemoryGiB(bad)) << bad;
  }
}

TEST(FormatGiBTest, UsesShortestForm) {
  EXPECT_EQ(FormatGiB(16.0), "16G");
  EXPECT_EQ(FormatGiB(2.08), "2.08G");
  EXPECT_EQ(FormatGiB(0.5), "0.5G");
  EXPECT_EQ(FormatGiB(0.0), "0G");
  EXPECT_EQ(FormatGiB(std::nullopt), "-");
  EXPECT_EQ(FormatGiB(1234567.0), "1.23457e+06G");
}

TEST(GiBWordsTest, TwoDecimalsAtMostAndNoExponent) {
  EXPECT_EQ(GiBWords(21.5403), "21.54 GiB");
  EXPECT_EQ(GiBWords(21.5), "21.5 GiB");
  EXPECT_EQ(GiBWords(64.0), "64 GiB");
  EXPECT_EQ(GiBWords(0.0), "0 GiB");
  EXPECT_EQ(GiBWords(1234567.0), "1234567 GiB");
}

TEST(FloorTo2Test, RoundsDown) {
  EXPECT_DOUBLE_EQ(FloorTo2(2.0899), 2.08);
  EXPECT_DOUBLE_EQ(FloorTo2(2.08), 2.08);
  EXPECT_DOUBLE_EQ(FloorTo2(8.0), 8.0);
}

TEST(CpuListTest, ParsesRangesAndSingles) {
  EXPECT_EQ(*ParseCpuList("0-3,8-11"), (std::vector<int>{0, 1, 2, 3, 8, 9, 10, 11}));
  EXPECT_EQ(*ParseCpuList("5"), (std::vector<int>{5}));
  EXPECT_EQ(*ParseCpuList("0,2-3\n"), (std::vector<int>{0, 2, 3}));
  EXPECT_EQ(*ParseCpuList(""), (std::vector<int>{}));
  EXPECT_EQ(*ParseCpuList("3,1,1"), (std::vector<int>{1, 3}));
}

TEST(CpuListTest, RejectsBadSyntax) {
  for (const char* bad : {"a", "1-", "-1", "3-1", "1,,2", "1,", "0-99999999", "1 2"}) {
    auto parsed = ParseCpuList(bad);
    ASSERT_FALSE(parsed) << bad;
    EXPECT_NE(parsed.error().message().find("invalid cpu list"), std::string::npos);
  }
}

TEST(CpuListTest, FormatsRangesAndCommaLists) {
  EXPECT_EQ(FormatCpuRanges({0, 1, 2, 3, 8}), "0-3,8");
  EXPECT_EQ(FormatCpuRanges({}), "");
  EXPECT_EQ(FormatCpuRanges({5, 1, 2}), "1-2,5");
  EXPECT_EQ(FormatCommaList({0, 1, 2}), "0,1,2");
  EXPECT_EQ(FormatCommaList({}), "");
}

TEST(SplitLinesTest, KeepsEmptyLinesAndALastLineWithoutANewline) {
  using Lines = std::vector<std::string_view>;
  EXPECT_EQ(SplitLines(""), Lines{});
  EXPECT_EQ(SplitLines("\n"), Lines{""});
  EXPECT_EQ(SplitLines("a\n\nb"), (Lines{"a", "", "b"}));
  EXPECT_EQ(SplitLines("a\r\nb\n"), (Lines{"a\r", "b"}));
}

TEST(ParseIntegerTest, IsStrict) {
  EXPECT_EQ(*ParseInteger("42", 0, 100), 42);
  EXPECT_FALSE(ParseInteger("-1", 0, 100));
  EXPECT_FALSE(ParseInteger("101", 0, 100));
  EXPECT_FALSE(ParseInteger("4 2", 0, 100));
  EXPECT_FALSE(ParseInteger("+4", 0, 100));
  EXPECT_EQ(*ParseInteger("-4", -10, 10), -4);
}

TEST(ErrorTest, FromErrnoMapsCodesAndText) {
  Error e = Error::FromErrno(ENOENT, "open x");
  EXPECT_EQ(e.code(), ErrorCode::kNotFound);
  EXPECT_EQ(e.message(), "open x: No such file or directory");
  EXPECT_EQ(e.sys_errno(), ENOENT);
  EXPECT_EQ(Error::FromErrno(EACCES, "a").code(), ErrorCode::kPermissionDenied);
  EXPECT_EQ(Error::FromErrno(EEXIST, "a").code(), ErrorCode::kAlreadyExists);
  EXPECT_EQ(Error::FromErrno(EBUSY, "a").code(), ErrorCode::kFailedPrecondition);
  EXPECT_EQ(Error::FromErrno(EIO, "a").code(), ErrorCode::kInternal);
}

Result<int> Half(int x) {
  if (x % 2 != 0) return InvalidArgument("odd");
  return x / 2;
}
Result<int> Quarter(int x) {
  HPCB_ASSIGN_OR_RETURN(int half, Half(x));
  HPCB_ASSIGN_OR_RETURN(int quarter, Half(half));
  return quarter;
}

TEST(ResultTest, MacrosPropagateErrors) {
  EXPECT_EQ(*Quarter(8), 2);
  EXPECT_FALSE(Quarter(6));
  EXPECT_EQ(Quarter(6).error().message(), "odd");
}

}  // namespace
}  // namespace hpcb
