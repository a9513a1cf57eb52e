// hpc-batchd's flags: the broker's CLI11 definition (the one users see),
// the launcher's root table held to it, the check run as nobody, and the
// root flags handed to the executor as one message.
#include "launcher/root_flags.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "broker/daemon_config.h"
#include "common/base/unique_fd.h"
#include "protocol/codec.h"

namespace hpcb::launcher {
namespace {

using broker::ParseDaemonFlags;

TEST(DaemonFlagsTest, ParsesDurationsAndSizes) {
  auto parsed = ParseDaemonFlags({"--max-lifetime", "1h30m", "--reserve-mem", "512M",
                                  "--no-cgroups", "--schedule", "easy-backfill"});
  ASSERT_FALSE(parsed.exit_now) << parsed.output;
  EXPECT_EQ(parsed.config.max_lifetime_s, 5400);
  EXPECT_DOUBLE_EQ(parsed.config.reserve_mem_gib, 0.5);
  EXPECT_TRUE(parsed.config.no_cgroups);
  EXPECT_EQ(parsed.config.schedule, "easy-backfill");
  EXPECT_EQ(parsed.config.cpu_unit, "core");
  EXPECT_FALSE(parsed.config.no_gpu_mask);
}

TEST(DaemonFlagsTest, RejectsBadValuesWithUsageExit) {
  for (const std::vector<std::string>& bad :
       std::vector<std::vector<std::string>>{{"--max-lifetime", "1x"},
                                             {"--schedule", "lifo"},
                                             {"--frobnicate"},
                                             {"--cpu-unit", "socket"},
                                             {"--max-lifetime", "0"}}) {
    auto parsed = ParseDaemonFlags(bad);
    ASSERT_TRUE(parsed.exit_now) << bad.front();
    EXPECT_NE(*parsed.exit_now, 0) << bad.front();
    EXPECT_NE(broker::CheckDaemonFlags(bad), 0) << bad.front();
  }
  EXPECT_NE(ParseDaemonFlags({"--max-lifetime", "1x"}).output.find("invalid duration"),
            std::string::npos);
  EXPECT_EQ(broker::CheckDaemonFlags({"--no-cgroups"}), 0);
}

// Every flag the broker defines is one the root table can step over, with
// the same arity, and the other way round: a flag added to one alone fails.
TEST(RootFlagsTest, TheTableKnowsEveryFlagWithItsArity) {
  std::map<std::string, bool> cli11;
  for (const auto& [name, takes_value] : broker::DaemonFlagArities())
    cli11[name] = takes_value;
  std::map<std::string, bool> ours;
  for (const FlagRow& flag : FlagTable())
    ours[std::string(flag.name)] = flag.takes_value;
  EXPECT_EQ(ours, cli11);
  EXPECT_GT(ours.size(), 20u);
}

// The root fields read the same by both, whichever way the values are written.
TEST(RootFlagsTest, ReadsTheRootFlagsAsTheBrokerDoes) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {},
           {"--no-cgroups", "--socket", "/tmp/s", "--state-dir=/tmp/st", "--keep-finished", "3"},
           {"--max-lifetime", "2h", "--dev-dir", "/tmp/d", "--no-dev-dir", "--log-level", "debug"},
           {"--sys-root=/x/sys", "--cgroup-root", "/x/cg", "--proc-root", "/x/proc",
            "--no-gpu-mask", "--gpu-dev-dir", "/x/dev", "--gpu-driver-dir=/x/drv"},
           {"--admin-group", "sudo", "--broker-user", "svc", "--max-user-state-mib", "7",
            "--max-output-mib=9", "--list-is-public", "--reserve-mem", "0.5", "--schedule",
            "easy-backfill", "--reserve-cpu=0", "--nvidia-smi", "/bin/true"}}) {
    auto cli11 = ParseDaemonFlags(args);
    ASSERT_FALSE(cli11.exit_now) << cli11.output;
    Result<protocol::RootConfig> root = ParseRootFlags(args);
    ASSERT_TRUE(root) << root.error().message();
    const protocol::RootConfig& want = cli11.config;
    EXPECT_EQ(protocol::Encode(*root), protocol::Encode(want));
  }
}

TEST(RootFlagsTest, RefusesWhatItCannotReadNamingTheFlag) {
  const std::map<std::vector<std::string>, std::string> cases = {
      {{"--state-dir", "state"}, "--state-dir must be an absolute path"},
      {{"--socket=sock"}, "--socket must be an absolute path"},
      {{"--max-output-mib", "0"}, "--max-output-mib needs a positive integer"},
      {{"--max-user-state-mib", "7M"}, "--max-user-state-mib needs a positive integer"},
      {{"--no-cgroups=true"}, "--no-cgroups takes no value"},
      {{"--cgroup-root"}, "--cgroup-root needs a value"},
      {{"--help"}, "does not know the flag '--help'"},
  };
  for (const auto& [args, message] : cases) {
    Result<protocol::RootConfig> root = ParseRootFlags(args);
    ASSERT_FALSE(root) << args.front();
    EXPECT_THAT(root.error().message(), ::testing::HasSubstr(message));
  }
}

TEST(RootConfigTest, TravelsToTheExecutorAsOneMessage) {
  protocol::RootConfig config = *ParseRootFlags({"--no-cgroups", "--state-dir", "/s"});
  config.admin_gid = 27;
  Result<protocol::RootConfig> back =
      protocol::Decode<protocol::RootConfig>(protocol::Encode(config));
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(back->state_dir, "/s");
  EXPECT_TRUE(back->no_cgroups);
  EXPECT_EQ(back->admin_gid, std::optional<std::uint32_t>(27));
  EXPECT_FALSE(back->broker_uid);

  protocol::RootConfig relative = config;
  relative.cgroup_root = "cg";
  Result<protocol::RootConfig> refused =
      protocol::Decode<protocol::RootConfig>(protocol::Encode(relative));
  ASSERT_FALSE(refused);
  EXPECT_THAT(refused.error().message(), ::testing::HasSubstr("'cgroup_root'"));
  protocol::RootConfig no_room = config;
  no_room.max_output_mib = 0;
  EXPECT_FALSE(protocol::Decode<protocol::RootConfig>(protocol::Encode(no_room)));
  EXPECT_FALSE(protocol::Decode<protocol::RootConfig>("{\"socket\":\"/s\"}"));
}

// A launcher of another release (running on after a package upgrade)
// starting this executor: refused, whether it sends another protocol
// number or none at all.
TEST(RootConfigTest, AnotherLauncherProtocolIsRefused) {
  protocol::RootConfig config;
  config.launcher_protocol = protocol::kLauncherProtocol - 1;
  Result<protocol::RootConfig> other =
      protocol::Decode<protocol::RootConfig>(protocol::Encode(config));
  ASSERT_FALSE(other);
  EXPECT_THAT(other.error().message(), ::testing::HasSubstr("the launcher speaks protocol"));
  std::string older = protocol::Encode(protocol::RootConfig{});
  const std::string field = ",\"launcher_protocol\":" + std::to_string(protocol::kLauncherProtocol);
  ASSERT_NE(older.find(field), std::string::npos) << older;
  older.erase(older.find(field), field.size());
  Result<protocol::RootConfig> without = protocol::Decode<protocol::RootConfig>(older);
  ASSERT_FALSE(without);
  EXPECT_THAT(without.error().message(), ::testing::HasSubstr("launcher_protocol"));
  EXPECT_TRUE(protocol::Decode<protocol::RootConfig>(protocol::Encode(protocol::RootConfig{})));
}

UniqueFd OpenPath(const char* path) {
  return UniqueFd(::open(path, O_PATH | O_CLOEXEC));
}

int RunDaemon(const std::string& args, std::string* out) {
  FILE* pipe = ::popen((std::string(HPCB_DAEMON_BIN) + " " + args + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return -1;
  char buffer[4096];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr)
    *out += buffer;
  const int status = ::pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(FlagCheckTest, TheBrokerAnswersHelpVersionAndUsageErrors) {
  UniqueFd broker = OpenPath(HPCB_BROKER_BIN);
  ASSERT_TRUE(broker.valid());
  EXPECT_EQ(CheckFlagsAsNobody(broker.get(), {"--no-cgroups", "--socket", "/tmp/x"}), std::nullopt);
  EXPECT_EQ(CheckFlagsAsNobody(broker.get(), {"--version"}), std::optional<int>(0));
  const std::optional<int> bad = CheckFlagsAsNobody(broker.get(), {"--schedule", "lifo"});
  ASSERT_TRUE(bad);
  EXPECT_NE(*bad, 0);

  std::string help;
  EXPECT_EQ(RunDaemon("--help", &help), 0);
  EXPECT_THAT(help, ::testing::HasSubstr("--max-lifetime"));
  std::string unknown;
  EXPECT_NE(RunDaemon("--frobnicate", &unknown), 0);
  EXPECT_THAT(unknown, ::testing::HasSubstr("frobnicate"));
  std::string relative;
  EXPECT_EQ(RunDaemon("--no-cgroups --state-dir state", &relative), 2);
  EXPECT_THAT(relative, ::testing::HasSubstr("--state-dir must be an absolute path"));
}

TEST(FlagCheckTest, AsRootTheCheckRunsAsNobodyWithNothingOfOurs) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root";
  UniqueFd child = OpenPath(HPCB_CHECK_CHILD_BIN);
  ASSERT_TRUE(child.valid());
  UniqueFd held(::open("/dev/null", O_RDONLY));  // not close-on-exec: must not reach the check
  ASSERT_GT(held.get(), 3);
  EXPECT_EQ(CheckFlagsAsNobody(child.get(), {}), std::nullopt);
}

}  // namespace
}  // namespace hpcb::launcher
