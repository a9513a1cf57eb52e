#include "client/exec_check.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "tests/testing/temp_dir.h"

namespace hpcb::client {
namespace {

// Runs `body` with `dir` as the current directory (relative candidates are
// looked for from there, as the job will look for them).
template <class F>
void InDirectory(const std::string& dir, F body) {
  const std::filesystem::path before = std::filesystem::current_path();
  std::filesystem::current_path(dir);
  body();
  std::filesystem::current_path(before);
}

TEST(ExecCheckTest, FindsACommandOnThePathOrByItsOwnPath) {
  EXPECT_EQ(WhyNotExecutable("sh", "/nonexistent:/bin"), std::nullopt);
  EXPECT_EQ(WhyNotExecutable("/bin/sh", "/nonexistent"), std::nullopt);
}

TEST(ExecCheckTest, AMissingCommandIsNamed) {
  EXPECT_EQ(WhyNotExecutable("no-such-command-here", "/bin:/usr/bin"),
            "cannot execute no-such-command-here: No such file or directory");
  EXPECT_EQ(WhyNotExecutable("/nonexistent/cmd", "/bin"),
            "cannot execute /nonexistent/cmd: No such file or directory");
}

TEST(ExecCheckTest, AFileWithoutItsExecuteBitOrADirectoryIsRefused) {
  // Root too: access(X_OK) wants an execute bit on a regular file.
  testing::TempDir dir;
  testing::WriteText(dir.path() + "/run.sh", "#!/bin/sh\n");
  std::filesystem::create_directory(dir.path() + "/tool");
  InDirectory(dir.path(), [] {
    EXPECT_EQ(WhyNotExecutable("./run.sh", "/bin"), "cannot execute ./run.sh: Permission denied");
    // An empty PATH entry is the current directory, as for execvp.
    EXPECT_EQ(WhyNotExecutable("tool", ":/nonexistent"), "cannot execute tool: Permission denied");
  });
  ASSERT_EQ(::chmod((dir.path() + "/run.sh").c_str(), 0755), 0);
  InDirectory(dir.path(), [] { EXPECT_EQ(WhyNotExecutable("./run.sh", "/bin"), std::nullopt); });
}

}  // namespace
}  // namespace hpcb::client
