#include "common/base/exec_path.h"

#include <gtest/gtest.h>

namespace hpcb {
namespace {

TEST(ExecCandidatesTest, SearchesTheJobsPath) {
  EXPECT_EQ(ExecCandidates("ls", "/a:/b"), (std::vector<std::string>{"/a/ls", "/b/ls"}));
  EXPECT_EQ(ExecCandidates("./run.sh", "/a"), (std::vector<std::string>{"./run.sh"}));
  EXPECT_EQ(ExecCandidates("x", "/a::/b"), (std::vector<std::string>{"/a/x", "./x", "/b/x"}));
}

}  // namespace
}  // namespace hpcb
