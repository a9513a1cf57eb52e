#include "client/output_place.h"

#include <gtest/gtest.h>

#include "protocol/launcher_messages.h"
#include "tests/testing/temp_dir.h"

namespace hpcb::client {
namespace {

using protocol::ResolveDestination;

TEST(ResolveDestinationTest, DirectoryGetsOutputIdLog) {
  EXPECT_EQ(ResolveDestination("/home/a", true, 7), "/home/a/output.7.log");
  EXPECT_EQ(ResolveDestination("/home/a/", true, 7), "/home/a/output.7.log");
  EXPECT_EQ(ResolveDestination("/", true, 2), "/output.2.log");
  EXPECT_EQ(ResolveDestination("/home/a/x.log", false, 7), "/home/a/x.log");
  // --error's stderr, named alike.
  EXPECT_EQ(ResolveDestination("/home/a/", true, 7, "error"), "/home/a/error.7.log");
  EXPECT_EQ(ResolveDestination("/home/a/e.txt", false, 7, "error"), "/home/a/e.txt");
}

TEST(OutputPlaceTest, AnExistingDirectoryOrAFileInOne) {
  testing::TempDir dir;
  Result<bool> in_dir = CheckOutputPlace(dir.path(), true);
  ASSERT_TRUE(in_dir) << in_dir.error().message();
  EXPECT_TRUE(*in_dir);
  Result<bool> exact = CheckOutputPlace(dir.path() + "/mine.log", true);
  ASSERT_TRUE(exact) << exact.error().message();
  EXPECT_FALSE(*exact);
}

TEST(OutputPlaceTest, RefusesRelativeMissingAndNonDirectoryParents) {
  testing::TempDir dir;
  EXPECT_FALSE(CheckOutputPlace("relative.log", true));
  EXPECT_FALSE(CheckOutputPlace(dir.path() + "/missing/x.log", true));
  testing::WriteText(dir.path() + "/file", "x");
  Result<bool> not_dir = CheckOutputPlace(dir.path() + "/file/x.log", true);
  ASSERT_FALSE(not_dir);
  EXPECT_NE(not_dir.error().message().find("is not a directory"), std::string::npos);
}

}  // namespace
}  // namespace hpcb::client
