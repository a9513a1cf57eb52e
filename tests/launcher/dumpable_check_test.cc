#include "launcher/dumpable_check.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "tests/testing/temp_dir.h"

namespace hpcb::launcher {
namespace {

class DumpableCheckTest : public ::testing::Test {
 protected:
  Result<void> CheckWith(const std::string& text) {
    testing::WriteText(proc_.path() + "/sys/fs/suid_dumpable", text);
    return CheckSuidDumpable(proc_.path());
  }
  testing::TempDir proc_;
};

TEST_F(DumpableCheckTest, ZeroAndTwoPass) {
  EXPECT_TRUE(CheckWith("0\n"));
  EXPECT_TRUE(CheckWith("2\n"));
}

TEST_F(DumpableCheckTest, OneIsRefusedWithTheFix) {
  Result<void> checked = CheckWith("1\n");
  ASSERT_FALSE(checked);
  EXPECT_NE(checked.error().message().find("fs.suid_dumpable is 1"), std::string::npos)
      << checked.error().message();
  EXPECT_NE(checked.error().message().find("set it to 0 or 2"), std::string::npos);
}

TEST_F(DumpableCheckTest, AnUnknownValueOrAMissingFileIsAnError) {
  Result<void> odd = CheckWith("3\n");
  ASSERT_FALSE(odd);
  EXPECT_NE(odd.error().message().find("\"3\", not 0, 1 or 2"), std::string::npos)
      << odd.error().message();
  Result<void> missing = CheckSuidDumpable(proc_.path() + "/nowhere");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message().find("cannot read fs.suid_dumpable"), std::string::npos)
      << missing.error().message();
}

// The real procfs of the machine running the tests: a host set to 1 would
// make every root-mode start refuse, so say so here first. A sandbox that
// hides the file is not that host.
TEST(DumpableCheckHostTest, ThisHostPasses) {
  if (::access("/proc/sys/fs/suid_dumpable", R_OK) != 0) {
    GTEST_SKIP() << "no readable /proc/sys/fs/suid_dumpable here";
  }
  Result<void> checked = CheckSuidDumpable("/proc");
  EXPECT_TRUE(checked) << checked.error().message();
}

}  // namespace
}  // namespace hpcb::launcher
