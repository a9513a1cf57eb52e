#include "executor/job_env.h"

#include <gtest/gtest.h>

#include "common/base/exec_path.h"
#include "protocol/launcher_messages.h"

namespace hpcb::executor {
namespace {

using hpcb::EnvValue;

host::PasswdFacts Alice() {
  return {"alice", "/home/alice", "/bin/bash"};
}

TEST(BuildJobEnvTest, CleanDefaults) {
  auto env = BuildJobEnv(Alice(), {}, 7, {}, false, "");
  EXPECT_EQ(EnvValue(env, "PATH"), std::string(kCleanPath));
  EXPECT_EQ(EnvValue(env, "LANG"), "C.UTF-8");
  EXPECT_EQ(EnvValue(env, "HOME"), "/home/alice");
  EXPECT_EQ(EnvValue(env, "USER"), "alice");
  EXPECT_EQ(EnvValue(env, "LOGNAME"), "alice");
  EXPECT_EQ(EnvValue(env, "SHELL"), "/bin/bash");
  EXPECT_EQ(EnvValue(env, "HPC_BATCH_JOB_ID"), "7");
  EXPECT_FALSE(EnvValue(env, "CUDA_VISIBLE_DEVICES"));
  EXPECT_EQ(env.size(), 7u);
}

TEST(BuildJobEnvTest, ForwardedOverlaysButNeverWinsOverForcedKeys) {
  std::map<std::string, std::string> forwarded{{"PATH", "/opt/bin"},
                                               {"USER", "root"},
                                               {"HOME", "/root"},
                                               {"HPC_BATCH_JOB_ID", "1"},
                                               {"CUDA_VISIBLE_DEVICES", "0,1,2,3"},
                                               {"FOO", "bar"}};
  auto env = BuildJobEnv(Alice(), forwarded, 9, {2}, true, "en_GB.UTF-8");
  EXPECT_EQ(EnvValue(env, "PATH"), "/opt/bin");
  EXPECT_EQ(EnvValue(env, "FOO"), "bar");
  EXPECT_EQ(EnvValue(env, "LANG"), "en_GB.UTF-8");
  EXPECT_EQ(EnvValue(env, "USER"), "alice");
  EXPECT_EQ(EnvValue(env, "HOME"), "/home/alice");
  EXPECT_EQ(EnvValue(env, "HPC_BATCH_JOB_ID"), "9");
  EXPECT_EQ(EnvValue(env, "CUDA_VISIBLE_DEVICES"), "2");
}

TEST(BuildJobEnvTest, NoGpusDropsForwardedCudaMask) {
  auto env = BuildJobEnv(Alice(), {{"CUDA_VISIBLE_DEVICES", "0"}}, 1, {}, false, "C");
  EXPECT_FALSE(EnvValue(env, "CUDA_VISIBLE_DEVICES"));
}

TEST(BuildJobEnvTest, EmptyShellIsBinSh) {
  auto env = BuildJobEnv({"bob", "/", ""}, {}, 1, {}, false, "C");
  EXPECT_EQ(EnvValue(env, "SHELL"), "/bin/sh");
}

TEST(EndStateTest, TheBrokersReasonComesFirstThenOomThenTheExitCode) {
  using protocol::SignalNote;
  EXPECT_EQ(EndState(SignalNote::kTimeout, true, -15), "timeout");
  EXPECT_EQ(EndState(SignalNote::kKilled, false, 0), "killed");
  EXPECT_EQ(EndState(SignalNote::kNone, true, -9), "oom");
  EXPECT_EQ(EndState(SignalNote::kNone, false, std::nullopt), "error");
  EXPECT_EQ(EndState(SignalNote::kNone, false, 0), "done");
  EXPECT_EQ(EndState(SignalNote::kNone, false, 3), "failed");
  EXPECT_EQ(EndState(SignalNote::kNone, false, -11), "failed");
}

}  // namespace
}  // namespace hpcb::executor
