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
  for (const char* name :
       {"nvidia0", "nvidia3", "nvidia12", "nvidiactl", "nvidia-uvm", "nvidia-modeset", "nvidia1x",
        "nvidia", "nvidia-caps", "null", "nvidia1234567"}) {
    WriteText(dev.path() + "/" + name, "");
  }
  EXPECT_EQ(CardNodes(dev.path()), (std::vector<int>{0, 3, 12}));
  EXPECT_TRUE(CardNodes(dev.path() + "/missing").empty());
}

// As the driver writes it: one directory per card, named by bus id.
TEST(GpuMaskTest, TheDriversCardsAreReadFromTheirDeviceMinor) {
  TempDir driver;
  auto card = [&](const std::string& bus, const std::string& information) {
    ASSERT_EQ(::mkdir((driver.path() + "/" + bus).c_str(), 0755), 0);
    WriteText(driver.path() + "/" + bus + "/information", information);
  };
  card("0000:1b:00.0",
       "Model: \t\t NVIDIA H200\nIRQ:   \t\t 42\nBus Location: \t 0000:1b:00.0\n"
       "Device Minor: \t 3\nGPU Excluded:\t No\n");
  card("0000:0a:00.0", "Model: \t\t NVIDIA H200\nDevice Minor: \t 0\n");
  card("0000:99:00.0", "Model: \t\t garbled, no minor\n");
  card("0000:98:00.0", "Device Minor: \t twelve\n");
  card("0000:96:00.0", "Model: \t\t NVIDIA H200\nDevice Minor: \t 5\nGPU Excluded:\t Yes\n");
  card("0000:95:00.0", "Model: \t\t not a Device Minor: 6\n");
  card("0000:94:00.0", "Device Minor: \t 7 \r\n");  // trailing blanks are no part of it
  card("0000:93:00.0", "Device Minor: \t 9abc\n");
  card("0000:92:00.0", "Device Minor: \t 1234567\n");  // more digits than a minor has
  ASSERT_EQ(::mkdir((driver.path() + "/0000:97:00.0").c_str(), 0755), 0);  // no information
  EXPECT_EQ(DriverCards(driver.path()), (std::vector<int>{0, 3, 7}));
  EXPECT_TRUE(DriverCards(driver.path() + "/missing").empty()) << "no driver, no cards";
}

TEST(GpuMaskTest, ADriverCardWithoutItsNodeIsNamedWithTheCure) {
  EXPECT_TRUE(CardsWithoutNodes({0, 1}, {0, 1, 2}).empty());
  EXPECT_TRUE(CardsWithoutNodes({}, {0}).empty());
  const std::vector<int> missing = CardsWithoutNodes({0, 1, 2, 3}, {0, 2});
  ASSERT_EQ(missing, (std::vector<int>{1, 3}));
  const std::string message = MissingNodesError("/dev", missing).message();
  EXPECT_NE(message.find("card(s) 1, 3"), std::string::npos) << message;
  EXPECT_NE(message.find("/dev/nvidia1 does not exist"), std::string::npos) << message;
  EXPECT_NE(message.find("--no-gpu-mask"), std::string::npos) << message;
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
