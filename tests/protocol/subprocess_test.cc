#include "common/subprocess.h"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>

namespace hpcb {
namespace {

ProcessSpec Spec(std::string program, std::vector<std::string> args, std::string input = {}) {
  ProcessSpec spec;
  spec.program = std::move(program);
  spec.args = std::move(args);
  spec.stdin_text = std::move(input);
  spec.timeout = std::chrono::seconds(10);
  return spec;
}

TEST(SubprocessTest, CollectsOutputAndExitCodeWithoutAShell) {
  auto outcome = RunProcess(Spec("/bin/sh", {"-c", "echo out; echo err >&2; exit 7"}));
  ASSERT_TRUE(outcome) << outcome.error().message();
  EXPECT_EQ(outcome->out, "out\n");
  EXPECT_EQ(outcome->err, "err\n");
  EXPECT_EQ(outcome->exit_code, 7);
  EXPECT_FALSE(outcome->succeeded());

  // Arguments reach the program verbatim: no word splitting, no globbing.
  auto echo = RunProcess(Spec("printf", {"[%s]", "a b", "*", "$HOME"}));
  ASSERT_TRUE(echo) << echo.error().message();
  EXPECT_EQ(echo->out, "[a b][*][$HOME]");
  EXPECT_TRUE(echo->succeeded());
}

TEST(SubprocessTest, FeedsStandardInput) {
  std::string big(1 << 20, 'x');
  big += "\nend\n";
  auto outcome = RunProcess(Spec("/usr/bin/tail", {"-n", "1"}, big));
  ASSERT_TRUE(outcome) << outcome.error().message();
  EXPECT_EQ(outcome->out, "end\n");
  auto none = RunProcess(Spec("/bin/cat", {}));
  ASSERT_TRUE(none);
  EXPECT_EQ(none->out, "");
}

TEST(SubprocessTest, AProgramThatIgnoresItsInputIsFine) {
  auto outcome = RunProcess(Spec("/bin/true", {}, std::string(4 << 20, 'y')));
  ASSERT_TRUE(outcome) << outcome.error().message();
  EXPECT_TRUE(outcome->succeeded());
}

TEST(SubprocessTest, ReportsASignal) {
  auto outcome = RunProcess(Spec("/bin/sh", {"-c", "kill -TERM $$"}));
  ASSERT_TRUE(outcome);
  EXPECT_EQ(outcome->signal, SIGTERM);
  EXPECT_FALSE(outcome->succeeded());
}

TEST(SubprocessTest, TheHelperGetsTheDefaultSigpipe) {
  // dispatch ignores SIGPIPE; a helper writing into a closed pipe must die
  // of it rather than loop on EPIPE.
  struct sigaction ignore {};
  struct sigaction old {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore, &old);
  auto outcome = RunProcess(Spec("grep", {"SigIgn", "/proc/self/status"}));
  ::sigaction(SIGPIPE, &old, nullptr);
  ASSERT_TRUE(outcome) << outcome.error().message();
  // Bit 13 (SIGPIPE) of the ignored mask is clear.
  auto mask = std::stoull(outcome->out.substr(outcome->out.find(':') + 1), nullptr, 16);
  EXPECT_EQ(mask & (1ull << (SIGPIPE - 1)), 0u) << outcome->out;
}

TEST(SubprocessTest, KillsAProgramThatOutlivesItsTimeout) {
  ProcessSpec spec = Spec("/bin/sleep", {"30"});
  spec.timeout = std::chrono::milliseconds(300);
  auto started = std::chrono::steady_clock::now();
  auto outcome = RunProcess(spec);
  auto took = std::chrono::steady_clock::now() - started;
  ASSERT_FALSE(outcome);
  EXPECT_EQ(outcome.error().code(), ErrorCode::kUnavailable);
  EXPECT_NE(outcome.error().message().find("did not finish"), std::string::npos);
  EXPECT_LT(took, std::chrono::seconds(5));
}

TEST(SubprocessTest, AMissingProgramIsNotFound) {
  auto outcome = RunProcess(Spec("/nonexistent/sbatch", {}));
  ASSERT_FALSE(outcome);
  EXPECT_EQ(outcome.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(outcome.error().message().find("/nonexistent/sbatch"), std::string::npos);
  auto on_path = RunProcess(Spec("hpcb-no-such-program", {}));
  ASSERT_FALSE(on_path);
  EXPECT_EQ(on_path.error().code(), ErrorCode::kNotFound);
}

}  // namespace
}  // namespace hpcb
