#include "executor/sysfacts.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "common/host/host_files.h"
#include "common/units.h"
#include "tests/testing/temp_dir.h"

namespace hpcb::executor {
namespace {

using host::FormatIdList;
using host::HostHasSwap;
using host::ProcStartTime;
using host::ReadNumaNodes;
using host::ReadOnlineCpus;
using hpcb::ParseCpuList;

TEST(ParseCpuListTest, RangesAndSingles) {
  auto cpus = ParseCpuList("0-3,5,7-8\n");
  ASSERT_TRUE(cpus) << cpus.error().message();
  EXPECT_EQ(*cpus, (std::vector<int>{0, 1, 2, 3, 5, 7, 8}));
}

TEST(ParseCpuListTest, RejectsJunk) {
  EXPECT_FALSE(ParseCpuList("0-x"));
  EXPECT_FALSE(ParseCpuList("3-1"));
  EXPECT_FALSE(ParseCpuList("-1"));
  EXPECT_FALSE(ParseCpuList("0,,1"));
  EXPECT_FALSE(ParseCpuList("99999999"));
}

TEST(FormatIdListTest, CommaListNeverRanges) {
  EXPECT_EQ(FormatIdList({0, 1, 2, 5}), "0,1,2,5");
  EXPECT_EQ(FormatIdList({}), "");
}

TEST(SysfsTest, ReadsFakeSysfs) {
  testing::TempDir dir;
  testing::WriteText(dir.path() + "/devices/system/cpu/online", "0-7\n");
  testing::WriteText(dir.path() + "/devices/system/node/online", "0-1\n");
  auto cpus = ReadOnlineCpus(dir.path());
  ASSERT_TRUE(cpus);
  EXPECT_EQ(cpus->size(), 8u);
  auto nodes = ReadNumaNodes(dir.path());
  ASSERT_TRUE(nodes);
  EXPECT_EQ(*nodes, (std::set<int>{0, 1}));
}

TEST(SysfsTest, NoNodeDirMeansNodeZero) {
  testing::TempDir dir;
  testing::WriteText(dir.path() + "/devices/system/cpu/online", "0\n");
  auto nodes = ReadNumaNodes(dir.path());
  ASSERT_TRUE(nodes);
  EXPECT_EQ(*nodes, (std::set<int>{0}));
  testing::TempDir empty;
  EXPECT_FALSE(ReadOnlineCpus(empty.path()));
}

TEST(HostHasSwapTest, ReadsSwapTotalFromAFakeProc) {
  testing::TempDir proc;
  testing::WriteText(proc.path() + "/meminfo",
                     "MemTotal:       24683568 kB\nHugePages_Total:       0\n"
                     "SwapTotal:             0 kB\nSwapFree:              0 kB\n");
  auto none = HostHasSwap(proc.path());
  ASSERT_TRUE(none) << none.error().message();
  EXPECT_FALSE(*none);
  testing::WriteText(proc.path() + "/meminfo", "MemTotal: 1024 kB\nSwapTotal: 2097148 kB\n");
  auto some = HostHasSwap(proc.path());
  ASSERT_TRUE(some) << some.error().message();
  EXPECT_TRUE(*some);
  testing::WriteText(proc.path() + "/meminfo", "MemTotal: 1024 kB\n");
  EXPECT_FALSE(HostHasSwap(proc.path()));
  EXPECT_FALSE(HostHasSwap(proc.path() + "/absent"));
}

TEST(CheckSubsetTest, RejectsForeignAndDuplicateIds) {
  std::set<int> online{0, 1, 2, 3};
  EXPECT_TRUE(CheckSubset({0, 3}, online, "cpus"));
  auto foreign = CheckSubset({0, 4}, online, "cpus");
  ASSERT_FALSE(foreign);
  EXPECT_NE(foreign.error().message().find("cpus names 4"), std::string::npos);
  EXPECT_FALSE(CheckSubset({1, 1}, online, "cpus"));
}

TEST(CheckSubmitterTest, RootModeRefusesUidAndGidZero) {
  struct ucred root {
    1, 0, 0
  };
  struct ucred gid0 {
    1, 1000, 0
  };
  struct ucred user {
    1, 1000, 1000
  };
  EXPECT_FALSE(CheckSubmitter(root, true, 0));
  EXPECT_FALSE(CheckSubmitter(gid0, true, 0));
  EXPECT_TRUE(CheckSubmitter(user, true, 0));
}

TEST(CheckSubmitterTest, RootModeRefusesTheBrokersOwnUid) {
  struct ucred broker {
    1, 999, 999
  };
  struct ucred user {
    1, 1000, 1000
  };
  auto refused = CheckSubmitter(broker, true, 0, 999u);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find("service user"), std::string::npos);
  EXPECT_TRUE(CheckSubmitter(user, true, 0, 999u));
  EXPECT_TRUE(CheckSubmitter(broker, true, 0));  // no broker user known: uid 999 is a user
}

TEST(CheckSubmitterTest, UserModeOnlyOwnUid) {
  struct ucred me {
    1, 1000, 1000
  };
  struct ucred other {
    1, 1001, 1001
  };
  EXPECT_TRUE(CheckSubmitter(me, false, 1000));
  EXPECT_FALSE(CheckSubmitter(other, false, 1000));
}

TEST(ProcStartTimeTest, SelfAndGarbled) {
  auto start = ProcStartTime(::getpid());
  ASSERT_TRUE(start) << start.error().message();
  EXPECT_GT(*start, 0u);
  testing::TempDir dir;
  testing::WriteText(dir.path() + "/42/stat",
                     "42 (a b) c) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 12345 0\n");
  auto fake = ProcStartTime(42, dir.path());
  ASSERT_TRUE(fake) << fake.error().message();
  EXPECT_EQ(*fake, 12345u);
  testing::WriteText(dir.path() + "/43/stat", "43 (x) S 1");
  EXPECT_FALSE(ProcStartTime(43, dir.path()));
  EXPECT_FALSE(ProcStartTime(44, dir.path()));
  EXPECT_FALSE(ProcStartTime(0, dir.path()));
  // The same reading gives every field: the parent pid is field 4.
  auto parent = host::ProcStatField(42, 4, dir.path());
  ASSERT_TRUE(parent) << parent.error().message();
  EXPECT_EQ(*parent, 1u);
  auto own_parent = host::ProcStatField(::getpid(), 4);
  ASSERT_TRUE(own_parent) << own_parent.error().message();
  EXPECT_EQ(*own_parent, static_cast<std::uint64_t>(::getppid()));
}

}  // namespace
}  // namespace hpcb::executor
