#include "launcher/standby_shepherd.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "launcher/child_reap.h"
#include "protocol/codec.h"
#include "protocol/framing.h"
#include "protocol/host/run_record.h"
#include "tests/testing/cpu_affinity.h"
#include "tests/testing/temp_dir.h"

namespace hpcb::launcher {
namespace {

using std::chrono::milliseconds;

TEST(StandbyOrderTest, TheNodeListAndTheRequestComeBackAsTheyWent) {
  const std::string request = R"({"type":"spawn","argv":["a\u0000b"]})";
  Result<StandbyOrder> order =
      DecodeStandbyOrder(EncodeStandbyOrder(request, {"/dev/nvidia1", "/dev/nvidia3"}));
  ASSERT_TRUE(order) << order.error().message();
  EXPECT_EQ(order->hide, (std::vector<std::string>{"/dev/nvidia1", "/dev/nvidia3"}));
  EXPECT_EQ(order->request_text, request);

  order = DecodeStandbyOrder(EncodeStandbyOrder(request, {}));
  ASSERT_TRUE(order);
  EXPECT_TRUE(order->hide.empty());
  EXPECT_EQ(order->request_text, request);
}

TEST(StandbyOrderTest, AnOrderWithoutTheEndOfItsNodeListIsRefused) {
  for (const std::string& bytes : {std::string(), std::string("/dev/nvidia0"),
                                   std::string("/dev/nvidia0\0/dev/nvidia1", 25)}) {
    Result<StandbyOrder> order = DecodeStandbyOrder(bytes);
    ASSERT_FALSE(order) << bytes;
    EXPECT_NE(order.error().message().find("node list"), std::string::npos);
  }
}

// A standby forked by this test (as this user, no identity change), handed
// one job or something else, and reaped within a bound.
class StandbyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.change_identity = false;
    options_.run_dir = dir_.path();
    options_.exec_deadline = milliseconds(5000);
    Result<StandbyShepherd> standby = StartStandbyShepherd(options_);
    ASSERT_TRUE(standby) << standby.error().message();
    standby_ = std::move(*standby);
  }
  void TearDown() override {
    if (standby_.pid > 0) (void)ReapWithin(standby_.pid, milliseconds(0), milliseconds(10));
  }

  protocol::SpawnRequest Request(std::vector<std::string> argv) const {
    protocol::SpawnRequest request;
    request.id = 11;
    request.argv = std::move(argv);
    request.cwd = "/tmp";
    request.env = {"PATH=/usr/bin:/bin"};
    request.cpus = {testing::FirstAllowedCpu()};
    // As the launcher would send it: a request that passes its checks.
    request.who.uid = ::getuid();
    request.who.gid = ::getgid();
    const struct passwd* pw = ::getpwuid(::getuid());
    request.who.user = pw != nullptr ? pw->pw_name : "nobody";
    return request;
  }

  // The report on `channel`, within a bound.
  ShepherdReport ReadReport(int channel) {
    ShepherdReport report;
    report.stage = 99;
    struct pollfd pfd {
      channel, POLLIN, 0
    };
    if (::poll(&pfd, 1, 20000) != 1) {
      ADD_FAILURE() << "no report in time";
      return report;
    }
    EXPECT_EQ(::read(channel, &report, sizeof report), static_cast<ssize_t>(sizeof report));
    return report;
  }

  Reaped Reap() {
    const Reaped reaped = ReapWithin(standby_.pid, milliseconds(20000), milliseconds(10));
    standby_.pid = -1;
    return reaped;
  }

  std::string CommOf(pid_t pid) const {
    std::string comm = testing::ReadText("/proc/" + std::to_string(pid) + "/comm");
    if (!comm.empty() && comm.back() == '\n') comm.pop_back();
    return comm;
  }

  testing::TempDir dir_;
  ShepherdOptions options_;
  StandbyShepherd standby_;
};

TEST_F(StandbyTest, AStandbyHandedAJobIsItsShepherd) {
  // Named by the standby itself once it has closed what it inherited.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (CommOf(standby_.pid) != "hpcb-standby" && std::chrono::steady_clock::now() < until)
    ::usleep(1000);
  EXPECT_EQ(CommOf(standby_.pid), "hpcb-standby");
  // It keeps stdio and its end of the socket, nothing else of ours.
  std::set<std::string> fds;
  for (const auto& entry :
       std::filesystem::directory_iterator("/proc/" + std::to_string(standby_.pid) + "/fd"))
    fds.insert(entry.path().filename());
  EXPECT_EQ(fds, (std::set<std::string>{"0", "1", "2", "3"}));

  const std::string output_path = dir_.path() + "/output";
  UniqueFd buffer(::open(output_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  ASSERT_TRUE(buffer.valid());
  protocol::SpawnRequest request = Request({"sh", "-c", "echo $PPID ${#BIG}; exit 4"});
  request.env.push_back("BIG=" + std::string(30000, 'x'));  // the order is a 30 KB packet
  std::optional<std::string> order = MakeStandbyOrder(protocol::Encode(request), {});
  ASSERT_TRUE(order);
  const pid_t standby_pid = standby_.pid;
  Result<ShepherdChild> shepherd =
      HandToStandby(std::move(standby_), *order, SpawnFds{buffer.get(), -1});
  standby_.pid = standby_pid;
  ASSERT_TRUE(shepherd) << shepherd.error().message();
  EXPECT_EQ(shepherd->pid, standby_pid);
  const ShepherdReport report = ReadReport(shepherd->report.get());
  EXPECT_EQ(report.stage, 0) << std::strerror(report.err);
  EXPECT_GT(report.pid, 0);
  const Reaped reaped = Reap();
  EXPECT_EQ(reaped.how, Reaped::How::kEnded);
  EXPECT_TRUE(WIFEXITED(reaped.status) && WEXITSTATUS(reaped.status) == 0);
  // The job's parent was the standby itself, and its end is on record.
  EXPECT_EQ(testing::ReadText(output_path), std::to_string(standby_pid) + " 30000\n");
  Result<host::RunRecord> record = host::LoadRunRecord(dir_.path(), 11);
  ASSERT_TRUE(record) << record.error().message();
  EXPECT_EQ(record->shepherd, standby_pid);
  EXPECT_EQ(record->pid, report.pid);
  ASSERT_TRUE(record->status.has_value());
  EXPECT_EQ(WEXITSTATUS(*record->status), 4);
}

TEST_F(StandbyTest, AStandbyWhoseLauncherGoesAwayExitsWithoutRunningAnything) {
  standby_.channel.reset();
  const Reaped reaped = Reap();
  EXPECT_EQ(reaped.how, Reaped::How::kEnded);
  EXPECT_TRUE(WIFEXITED(reaped.status) && WEXITSTATUS(reaped.status) == 0);
  EXPECT_FALSE(host::LoadRunRecord(dir_.path(), 11));
}

TEST_F(StandbyTest, AnOrderItCannotReadIsReportedAndNothingRuns) {
  const std::string output_path = dir_.path() + "/output";
  UniqueFd buffer(::open(output_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  ASSERT_TRUE(buffer.valid());
  ASSERT_TRUE(protocol::SendMessage(
      standby_.channel.get(), EncodeStandbyOrder("{not a spawn request", {}), {buffer.get()}));
  const ShepherdReport report = ReadReport(standby_.channel.get());
  EXPECT_EQ(report.stage, kHandOverStage);
  EXPECT_EQ(report.err, EINVAL);
  Result<PreparedJob> job = PreparedJob::Build(Request({"true"}));
  ASSERT_TRUE(job);
  EXPECT_EQ(DescribeShepherdReport(report, *job, options_.exec_deadline),
            "failed to start job: the standby shepherd could not read the job: " +
                std::string(std::strerror(EINVAL)));
  const Reaped reaped = Reap();
  EXPECT_EQ(reaped.how, Reaped::How::kEnded);
  EXPECT_FALSE(host::LoadRunRecord(dir_.path(), 11));
  EXPECT_EQ(testing::ReadText(output_path), "");
}

TEST_F(StandbyTest, AnOrderWithoutTheBufferIsReported) {
  ASSERT_TRUE(protocol::SendMessage(standby_.channel.get(),
                                    EncodeStandbyOrder(protocol::Encode(Request({"true"})), {})));
  const ShepherdReport report = ReadReport(standby_.channel.get());
  EXPECT_EQ(report.stage, kHandOverStage);
  EXPECT_EQ(report.err, EBADF);
  EXPECT_EQ(Reap().how, Reaped::How::kEnded);
  EXPECT_FALSE(host::LoadRunRecord(dir_.path(), 11));
}

// An order over kMaxStandbyOrder (still one packet here) is more than a
// standby reads: it says so and runs nothing. (The launcher never sends
// one: MakeStandbyOrder refuses it.)
TEST_F(StandbyTest, AnOrderOverItsCapIsReportedAndNothingRuns) {
  UniqueFd buffer(::open("/dev/null", O_WRONLY | O_CLOEXEC));
  protocol::SpawnRequest request = Request({"true"});
  request.env.push_back("BIG=" + std::string(kMaxStandbyOrder, 'x'));
  const std::string text = protocol::Encode(request);
  EXPECT_FALSE(MakeStandbyOrder(text, {}));
  // Sent from a thread, the channel made blocking for it: an empty socket
  // takes the packet at once, or the send fails if the standby is gone.
  const int channel = standby_.channel.get();
  const int flags = ::fcntl(channel, F_GETFL);
  ASSERT_EQ(::fcntl(channel, F_SETFL, flags & ~O_NONBLOCK), 0);
  std::thread sender(
      [&] { (void)protocol::SendMessage(channel, EncodeStandbyOrder(text, {}), {buffer.get()}); });
  const ShepherdReport report = ReadReport(channel);
  EXPECT_EQ(report.stage, kHandOverStage);
  EXPECT_EQ(report.err, EPROTO);
  EXPECT_EQ(Reap().how, Reaped::How::kEnded);
  sender.join();
  EXPECT_FALSE(host::LoadRunRecord(dir_.path(), 11));
}

TEST_F(StandbyTest, HandingAJobToAStandbyThatDiedFailsSoTheCallerCanFork) {
  const pid_t pid = standby_.pid;
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  // Dead but not reaped, as the launcher would find it: the pid is still
  // its own, so HandToStandby's kill cannot reach another process.
  siginfo_t info{};
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (info.si_pid != pid && std::chrono::steady_clock::now() < until) {
    ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT), 0);
    if (info.si_pid != pid) ::usleep(10000);
  }
  ASSERT_EQ(info.si_pid, pid);
  UniqueFd buffer(::open("/dev/null", O_WRONLY | O_CLOEXEC));
  std::optional<std::string> order = MakeStandbyOrder(protocol::Encode(Request({"true"})), {});
  ASSERT_TRUE(order);
  Result<ShepherdChild> shepherd =
      HandToStandby(std::move(standby_), *order, SpawnFds{buffer.get(), -1});
  ASSERT_FALSE(shepherd);
  EXPECT_EQ(shepherd.error().message(),
            "the standby shepherd (pid " + std::to_string(pid) + ") has exited");
  EXPECT_EQ(Reap().how, Reaped::How::kEnded);
}

}  // namespace
}  // namespace hpcb::launcher
