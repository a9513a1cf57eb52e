#include "launcher/gpu_mask.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/testing/temp_dir.h"

namespace hpcb::launcher {
namespace {

using hpcb::testing::TempDir;
using hpcb::testing::WriteText;

TEST(GpuMaskTest, OnlyPerCardNodesCount) {
  TempDir dev;
  for (const char* name : {"nvidia0", "nvidia3", "nvidia12", "nvidiactl", "nvidia-uvm",
                           "nvidia-modeset", "nvidia1x", "nvidia", "nvidia-caps", "null"}) {
    WriteText(dev.path() + "/" + name, "");
  }
  EXPECT_EQ(CardNodes(dev.path()), (std::vector<int>{0, 3, 12}));
  EXPECT_TRUE(CardNodes(dev.path() + "/missing").empty());
}

TEST(GpuMaskTest, EveryPresentCardNotAllocatedIsHidden) {
  const std::vector<int> present{0, 1, 2, 3};
  EXPECT_EQ(NodesToHide("/d", present, {1}),
            (std::vector<std::string>{"/d/nvidia0", "/d/nvidia2", "/d/nvidia3"}));
  EXPECT_EQ(NodesToHide("/d", present, {}),
            (std::vector<std::string>{"/d/nvidia0", "/d/nvidia1", "/d/nvidia2", "/d/nvidia3"}));
  EXPECT_TRUE(NodesToHide("/d", present, {3, 2, 1, 0}).empty());
  // A card it was given that is not there changes nothing.
  EXPECT_EQ(NodesToHide("/d", {0, 1}, {1, 7}), (std::vector<std::string>{"/d/nvidia0"}));
}

// The namespace is the child's alone: inside, a hidden node reads as
// /dev/null; outside, it is untouched.
TEST(GpuMaskTest, HiddenNodesAreDevNullOnlyInsideTheChild) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to unshare a mount namespace";
  ASSERT_TRUE(ProbeGpuMasking()) << "root can make a mount namespace";
  TempDir dev;
  WriteText(dev.path() + "/nvidia0", "card zero");
  WriteText(dev.path() + "/nvidia1", "card one");
  const std::vector<std::string> hide = NodesToHide(dev.path(), CardNodes(dev.path()), {1});
  ASSERT_EQ(hide, (std::vector<std::string>{dev.path() + "/nvidia0"}));
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (HideNodes(hide) != 0) ::_exit(10);
    struct stat hidden {
    }, given{};
    if (::stat((dev.path() + "/nvidia0").c_str(), &hidden) != 0) ::_exit(11);
    if (!S_ISCHR(hidden.st_mode)) ::_exit(12);  // /dev/null now
    if (::stat((dev.path() + "/nvidia1").c_str(), &given) != 0) ::_exit(13);
    if (!S_ISREG(given.st_mode)) ::_exit(14);  // still the card it was given
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10 hide failed, 12 not covered, 14 given card covered";
  struct stat outside {};
  ASSERT_EQ(::stat((dev.path() + "/nvidia0").c_str(), &outside), 0);
  EXPECT_TRUE(S_ISREG(outside.st_mode)) << "the host's view changed";
  EXPECT_EQ(hpcb::testing::ReadText(dev.path() + "/nvidia0"), "card zero");
}

TEST(GpuMaskTest, NothingToHideMakesNoNamespace) {
  // No unshare at all, so this holds without privilege too.
  EXPECT_EQ(HideNodes({}), 0);
}

}  // namespace
}  // namespace hpcb::launcher
