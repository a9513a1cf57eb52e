// The executor's message handling without a real launcher: every refusal
// that happens before the launcher is asked.
#include "executor/executor_server.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "common/host/accounts.h"
#include "common/host/host_files.h"
#include "common/host/run_record.h"
#include "executor/sysfacts.h"
#include "protocol/client_framing.h"
#include "protocol/client_messages.h"
#include "protocol/launcher_messages.h"
#include "tests/testing/temp_dir.h"

namespace hpcb::executor {
namespace {

using protocol::Packet;

class ExecutorServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_.state_dir = dir_.path() + "/state";
    config_.dev_dir = dir_.path() + "/dev";
    config_.no_cgroups = true;
    config_.socket = dir_.path() + "/sock";
    listener_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    struct sockaddr_un addr {};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", config_.socket.c_str());
    ASSERT_EQ(::bind(listener_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ASSERT_EQ(::listen(listener_.get(), 8), 0);
    std::filesystem::create_directories(config_.state_dir + "/jobs");
    std::filesystem::create_directories(config_.state_dir + "/specs");
    std::filesystem::create_directories(config_.dev_dir + "/jobs");
    int fds[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET, 0, fds), 0);
    launcher_a_.reset(fds[0]);
    launcher_b_.reset(fds[1]);
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET, 0, fds), 0);
    broker_a_.reset(fds[0]);
    broker_b_.reset(fds[1]);
    facts_.as_root = false;  // user mode: our own uid may submit
    facts_.self_uid = ::getuid();
    facts_.cpus = {0, 1};
    facts_.nodes = {0};
    server_ = std::make_unique<ExecutorServer>(config_, facts_, launcher_a_.get(), broker_a_.get());
  }

  // A client connection as the daemon's socket accepts it: `server` is the
  // accepted end (what the broker forwards), `client` the user's.
  void Connect(UniqueFd& server, UniqueFd& client) {
    client.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    struct sockaddr_un addr {};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", config_.socket.c_str());
    ASSERT_EQ(::connect(client.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    server.reset(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    ASSERT_TRUE(server.valid());
  }

  // The executor's next message to the broker, or "<none>" within 2 s.
  // The turn ends first, as the loop would end it: answers wait for that.
  std::string NextReply() {
    EXPECT_TRUE(server_->EndTurn());
    struct pollfd p {
      broker_b_.get(), POLLIN, 0
    };
    if (::poll(&p, 1, 2000) <= 0) return "<none>";
    Result<Packet> packet = protocol::ReceiveMessage(broker_b_.get());
    return packet ? packet->bytes : "<" + packet.error().message() + ">";
  }

  std::string Send(const std::string& text) {
    Packet packet;
    packet.bytes = text;
    server_->Handle(packet);
    return NextReply();
  }

  // As the broker would: the client's submission is queued on the
  // connection (written by `peer_fd`, the client's end), unread.
  std::string Register(std::uint64_t id, int client_fd, int peer_fd,
                       const std::string& register_text = "") {
    protocol::SubmitRequest submit = Submission();
    submit.env = {{"SECRET", "x"}};
    if (peer_fd >= 0) {
      EXPECT_TRUE(protocol::WriteFrame(peer_fd, protocol::Encode(submit)));
    }
    protocol::RegisterJob job;
    job.id = id;
    Packet packet;
    packet.bytes = register_text.empty() ? protocol::Encode(job) : register_text;
    packet.fds.emplace_back(::dup(client_fd));
    server_->Handle(packet);
    return NextReply();
  }

  // The spec file of `id`, as its last save left it.
  std::string SpecFile(std::uint64_t id) {
    return testing::ReadText(config_.state_dir + "/specs/" + std::to_string(id) + ".json");
  }

  // The executor's next request to the launcher, if one comes within
  // `wait_ms`.
  std::optional<Packet> LauncherRequest(int wait_ms) {
    struct pollfd p {
      launcher_b_.get(), POLLIN, 0
    };
    if (::poll(&p, 1, wait_ms) <= 0) return std::nullopt;
    Result<Packet> asked = protocol::ReceiveMessage(launcher_b_.get());
    EXPECT_TRUE(asked) << asked.error().message();
    if (!asked) return std::nullopt;
    return std::move(*asked);
  }

  // What dispatch sends for `true`, run in "/".
  static protocol::SubmitRequest Submission() {
    protocol::SubmitRequest submit;
    submit.argv = {"true"};
    submit.cwd = "/";
    submit.user = "alice";
    submit.home = "/home/alice";
    submit.shell = "/bin/bash";
    return submit;
  }

  // A client that submitted `true` with `output` (none: --no-output), and
  // the broker's registration of it as job `id` carrying that connection;
  // both ends of the connection stay open in `server_end`, `client_end`.
  void SubmitAndRegister(std::uint64_t id, const std::optional<std::string>& output,
                         UniqueFd& server_end, UniqueFd& client_end) {
    ASSERT_NO_FATAL_FAILURE(Connect(server_end, client_end));
    protocol::SubmitRequest submit = Submission();
    submit.output = output;
    submit.output_is_dir = output && std::filesystem::is_directory(*output);
    ASSERT_TRUE(protocol::WriteFrame(client_end.get(), protocol::Encode(submit)));
    Packet packet;
    packet.bytes = protocol::Encode(protocol::RegisterJob{.req = id, .id = id});
    packet.fds.emplace_back(::dup(server_end.get()));
    server_->Handle(packet);
  }

  // Registers job `id` with output to `path`: nothing is asked of the
  // launcher.
  std::string RegisterWithOutput(std::uint64_t id, const std::string& path) {
    UniqueFd a, b;
    SubmitAndRegister(id, path, a, b);
    if (HasFatalFailure()) return "";
    EXPECT_FALSE(LauncherRequest(0)) << "the launcher was asked";
    return NextReply();
  }

  // Starts registered job `id` and takes the spawn the launcher is asked
  // for (not answered: the job is starting); its req, or 0.
  std::uint64_t StartAndTakeSpawn(std::uint64_t id) {
    protocol::StartJob start{.req = 100 + id, .id = id, .placement = {.cpus = {0}, .mems = {0}}};
    server_->Handle(Packet{protocol::Encode(start), {}});
    EXPECT_TRUE(server_->EndTurn());
    std::optional<Packet> asked = LauncherRequest(2000);
    EXPECT_TRUE(asked) << "no spawn was asked for";
    if (!asked) return 0;
    Result<protocol::SpawnRequest> spawn = protocol::Decode<protocol::SpawnRequest>(asked->bytes);
    EXPECT_TRUE(spawn) << asked->bytes;
    return spawn ? spawn->req : 0;
  }

  // The launcher's answer to a spawn: started as `pid`, or failed.
  void AnswerSpawn(std::uint64_t req, std::uint64_t id, pid_t pid) {
    protocol::SpawnReply reply{.req = req, .id = id, .pid = pid, .shepherd = ::getpid()};
    if (pid <= 0) {
      reply.error = protocol::WireError::From(InvalidArgument("failed to start job: no such file"));
    }
    server_->OnLauncherMessage(Packet{protocol::Encode(reply), {}});
    NextReply();  // the start's answer
  }

  // A broker request about job `id` that the phase table must refuse; the
  // refusal's message (empty if it was not refused).
  std::string RefusalOf(const std::string& request) {
    const std::string reply = Send(request);
    const std::string key = "\"message\":\"";
    const std::size_t at = reply.find(key);
    if (at == std::string::npos) return "";
    const std::size_t from = at + key.size();
    return reply.substr(from, reply.find('"', from) - from);
  }
  static std::string SignalText(std::uint64_t id) {
    return R"({"req":7,"type":"signal","signal":"term","note":"","limit_s":0,"id":)" +
           std::to_string(id) + "}";
  }
  static std::string ForgetText(std::uint64_t id) {
    return R"({"req":7,"type":"forget","id":)" + std::to_string(id) + "}";
  }
  static std::string StartText(std::uint64_t id) {
    return protocol::Encode(
        protocol::StartJob{.req = 7, .id = id, .placement = {.cpus = {0}, .mems = {0}}});
  }
  static std::string DeliverText(std::uint64_t id) {
    return protocol::Encode(protocol::DeliverAgain{.req = 7, .id = id});
  }

  testing::TempDir dir_;
  protocol::RootConfig config_;
  ExecutorFacts facts_;
  UniqueFd launcher_a_, launcher_b_;
  UniqueFd broker_a_, broker_b_;
  UniqueFd listener_;
  std::unique_ptr<ExecutorServer> server_;
};

bool IsError(const std::string& reply) {
  return reply.find("\"error\":[{") != std::string::npos;
}

TEST_F(ExecutorServerTest, HelloFirst) {
  EXPECT_TRUE(IsError(Send(StartText(1))));
  EXPECT_TRUE(IsError(Send(R"({"req":1,"type":"hello","version":99})")));
  std::string hello = Send(protocol::Encode(protocol::Hello{}));
  EXPECT_NE(hello.find("hello_reply"), std::string::npos);
}

// Answers wait for the end of the turn (what it saved made durable), go
// out in the order they were made, and carry their own copies of their
// fds: open_output's buffer fd is closed before the turn ends.
TEST_F(ExecutorServerTest, AnswersWaitForTheTurnsEndInOrderWithTheirOwnFds) {
  ASSERT_FALSE(IsError(Send(protocol::Encode(protocol::Hello{}))));
  UniqueFd a, b;
  ASSERT_NO_FATAL_FAILURE(Connect(a, b));
  ASSERT_FALSE(IsError(Register(1, a.get(), b.get())));
  server_->Handle(Packet{protocol::Encode(protocol::OpenOutput{.req = 5, .id = 1}), {}});
  server_->Handle(Packet{ForgetText(2), {}});  // no such job: req 7 refused
  struct pollfd p {
    broker_b_.get(), POLLIN, 0
  };
  EXPECT_EQ(::poll(&p, 1, 0), 0) << "an answer went out before the turn ended";

  ASSERT_TRUE(server_->EndTurn());

  Result<Packet> first = protocol::ReceiveMessage(broker_b_.get());
  ASSERT_TRUE(first);
  EXPECT_NE(first->bytes.find("\"req\":5"), std::string::npos) << first->bytes;
  ASSERT_EQ(first->fds.size(), 1u);
  struct stat st {};
  ASSERT_EQ(::fstat(first->fds[0].get(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  Result<Packet> second = protocol::ReceiveMessage(broker_b_.get());
  ASSERT_TRUE(second);
  EXPECT_NE(second->bytes.find("\"req\":7"), std::string::npos) << second->bytes;
  EXPECT_TRUE(IsError(second->bytes));
}

// The gpu ids a start may name are those the broker's hello counted; a
// count past any machine's is refused.
TEST_F(ExecutorServerTest, AStartMayNameOnlyTheGpusTheHelloCounted) {
  protocol::Hello too_many;
  too_many.gpu_count = 5000;
  EXPECT_TRUE(IsError(Send(protocol::Encode(too_many))));
  protocol::Hello hello;
  hello.gpu_count = 2;
  EXPECT_FALSE(IsError(Send(protocol::Encode(hello))));
  UniqueFd a, b;
  ASSERT_NO_FATAL_FAILURE(Connect(a, b));
  ASSERT_FALSE(IsError(Register(1, a.get(), b.get())));
  const std::string refused = Send(protocol::Encode(
      protocol::StartJob{.req = 3, .id = 1, .placement = {.cpus = {0}, .mems = {0}, .gpus = {2}}}));
  EXPECT_TRUE(IsError(refused)) << refused;
  EXPECT_NE(refused.find("gpus"), std::string::npos) << refused;
  // Card 1 is the hello's: the start goes as far as the spawn.
  server_->Handle(
      Packet{protocol::Encode(protocol::StartJob{
                 .req = 4, .id = 1, .placement = {.cpus = {0}, .mems = {0}, .gpus = {1}}}),
             {}});
  EXPECT_TRUE(server_->EndTurn());
  std::optional<Packet> spawn = LauncherRequest(2000);
  ASSERT_TRUE(spawn) << "a start on the hello's card 1 was not spawned";
  Result<protocol::SpawnRequest> request = protocol::Decode<protocol::SpawnRequest>(spawn->bytes);
  ASSERT_TRUE(request) << spawn->bytes;
  EXPECT_EQ(request->placement.gpus, std::vector<int>{1});
}

TEST_F(ExecutorServerTest, MalformedAndUnknownMessagesAreRefused) {
  Send(protocol::Encode(protocol::Hello{}));
  EXPECT_TRUE(IsError(Send("not json")));
  EXPECT_TRUE(IsError(Send(R"({"req":1,"type":"format_disk"})")));
  EXPECT_TRUE(IsError(Send(R"({"req":1,"type":"start","id":"1"})")));
  EXPECT_TRUE(IsError(Send(std::string(100, '['))));
  EXPECT_TRUE(
      IsError(Send(R"({"req":1,"type":"signal","id":1,"signal":"term","note":"","limit_s":0})")));
  EXPECT_TRUE(IsError(Send(R"({"req":1,"type":"forget","id":1})")));
  EXPECT_TRUE(IsError(Send(R"({"req":1,"type":"open_output","id":1})")));
}

TEST_F(ExecutorServerTest, RegisterNeedsTheClientSocket) {
  Send(protocol::Encode(protocol::Hello{}));
  protocol::RegisterJob job{.req = 1, .id = 1};
  EXPECT_TRUE(IsError(Send(protocol::Encode(job))));
}

// Who runs the job is what the kernel says of the connection (its uid, gid
// and the groups its process had); the name, home and shell the client
// read of its own account reach only the job's environment. The output
// goes where the client's check as the user found it should.
TEST_F(ExecutorServerTest, WhoRunsTheJobIsWhatTheKernelSaysOfTheConnection) {
  Send(protocol::Encode(protocol::Hello{}));
  const std::string reply = RegisterWithOutput(1, dir_.path());
  ASSERT_FALSE(IsError(reply)) << reply;
  EXPECT_NE(reply.find(dir_.path() + "/output.1.log"), std::string::npos) << reply;
  Result<LaunchSpec> spec = LoadSpec(config_.state_dir + "/specs", 1);
  ASSERT_TRUE(spec);
  EXPECT_EQ(spec->who.uid, ::getuid());
  EXPECT_EQ(spec->who.gid, ::getgid());
  EXPECT_EQ(spec->who.user, "alice");
  EXPECT_EQ(spec->home, "/home/alice");
  EXPECT_EQ(spec->shell, "/bin/bash");
  const std::string exact = RegisterWithOutput(2, dir_.path() + "/mine.log");
  EXPECT_NE(exact.find(dir_.path() + "/mine.log"), std::string::npos) << exact;
}

TEST_F(ExecutorServerTest, SupplementaryGroupsAreTheConnectingProcesss) {
  std::vector<gid_t> own(static_cast<std::size_t>(::getgroups(0, nullptr)));
  ASSERT_EQ(::getgroups(static_cast<int>(own.size()), own.data()), static_cast<int>(own.size()));
  UniqueFd a, b;
  ASSERT_NO_FATAL_FAILURE(Connect(a, b));
  Result<std::vector<std::uint32_t>> groups = PeerGroups(a.get());
  ASSERT_TRUE(groups) << groups.error().message();
  std::vector<std::uint32_t> expected(own.begin(), own.end());
  std::sort(expected.begin(), expected.end());
  std::sort(groups->begin(), groups->end());
  EXPECT_EQ(*groups, expected);
}

TEST_F(ExecutorServerTest, ASubmissionThatDoesNotNameItsUserIsRefusedSayingWhy) {
  Send(protocol::Encode(protocol::Hello{}));
  UniqueFd a, b;
  ASSERT_NO_FATAL_FAILURE(Connect(a, b));
  protocol::SubmitRequest old = Submission();
  old.user.clear();
  ASSERT_TRUE(protocol::WriteFrame(b.get(), protocol::Encode(old)));
  Packet packet{protocol::Encode(protocol::RegisterJob{.req = 1, .id = 1}), {}};
  packet.fds.emplace_back(::dup(a.get()));
  server_->Handle(packet);
  const std::string reply = NextReply();
  EXPECT_TRUE(IsError(reply)) << reply;
  EXPECT_NE(reply.find("older than the daemon"), std::string::npos) << reply;
  EXPECT_NE(::access((config_.state_dir + "/specs/1.json").c_str(), F_OK), 0);
}

TEST_F(ExecutorServerTest, RegisterReadsWhatRunsFromTheClientNotTheBroker) {
  Send(protocol::Encode(protocol::Hello{}));
  UniqueFd a, b;
  ASSERT_NO_FATAL_FAILURE(Connect(a, b));
  // A broker adding its own command, cwd and identity gets none of them in.
  std::string reply = Register(
      3, a.get(), b.get(),
      R"({"req":1,"type":"register","id":3,"start":[],"argv":["/bin/evil"],"cwd":"/forged-cwd","uid":0,"output":["/etc"]})");
  ASSERT_FALSE(IsError(reply)) << reply;
  std::string spec = SpecFile(3);
  EXPECT_NE(spec.find(R"("argv":["true"])"), std::string::npos) << spec;
  EXPECT_EQ(spec.find("evil"), std::string::npos);
  EXPECT_EQ(spec.find("forged-cwd"), std::string::npos);
  char left;
  EXPECT_LT(::recv(a.get(), &left, 1, MSG_DONTWAIT), 0) << "the frame was taken off the socket";
}

TEST_F(ExecutorServerTest, ARegistrationsRefusedStartLeavesTheJobRegisteredAndOnDisk) {
  Send(protocol::Encode(protocol::Hello{}));
  UniqueFd a, b;
  ASSERT_NO_FATAL_FAILURE(Connect(a, b));
  protocol::RegisterJob job{.req = 6, .id = 6};
  job.start =
      protocol::StartJob{.req = 7, .id = 6, .placement = {.cpus = {7}, .mems = {0}}};  // not a cpu
  std::string text = Register(6, a.get(), b.get(), protocol::Encode(job));
  auto reply = protocol::Decode<protocol::RegisterReply>(text);
  ASSERT_TRUE(reply) << text;
  EXPECT_FALSE(reply->error) << text;
  ASSERT_TRUE(reply->start) << text;
  ASSERT_TRUE(reply->start->error) << text;
  EXPECT_NE(reply->start->error->message.find("cpus"), std::string::npos)
      << reply->start->error->message;
  std::string spec = SpecFile(6);
  EXPECT_NE(spec.find(R"("state":"registered")"), std::string::npos) << spec;
  // The job is known: registering the id again is refused as before.
  std::string again = Register(6, a.get(), b.get());
  EXPECT_TRUE(IsError(again)) << again;
}

TEST_F(ExecutorServerTest, OnlyAConnectionAcceptedOnTheDaemonsSocketCarriesASubmission) {
  Send(protocol::Encode(protocol::Hello{}));
  // A socketpair the broker made itself, and one end of a connection to
  // another listening socket (a user's service that would echo a
  // submission back): neither was accepted on the daemon's socket.
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
  UniqueFd own(pair[0]), other(pair[1]);
  std::string made_up = Register(3, own.get(), other.get());
  EXPECT_TRUE(IsError(made_up));
  EXPECT_NE(made_up.find("not a connection accepted on"), std::string::npos) << made_up;
  UniqueFd server, client;
  ASSERT_NO_FATAL_FAILURE(Connect(server, client));
  std::string wrong_end = Register(4, client.get(), server.get());
  EXPECT_TRUE(IsError(wrong_end));
  EXPECT_NE(wrong_end.find("not a connection accepted on"), std::string::npos) << wrong_end;
  EXPECT_FALSE(std::filesystem::exists(config_.state_dir + "/specs/3.json"));
  EXPECT_FALSE(std::filesystem::exists(config_.state_dir + "/specs/4.json"));
}

TEST_F(ExecutorServerTest, RegisterWithoutAQueuedSubmissionIsRefusedWithoutWaiting) {
  Send(protocol::Encode(protocol::Hello{}));
  UniqueFd a, b;
  ASSERT_NO_FATAL_FAILURE(Connect(a, b));
  std::string nothing = Register(4, a.get(), -1);
  EXPECT_TRUE(IsError(nothing));
  EXPECT_NE(nothing.find("no whole request"), std::string::npos) << nothing;
  // Half a frame: a length prefix promising more than is there.
  ASSERT_TRUE(protocol::WriteAll(b.get(), std::string("\x40\x00\x00\x00{\"cmd\"", 11)));
  EXPECT_TRUE(IsError(Register(4, a.get(), -1)));
  // A whole frame that is not a submission (say, the client's list request).
  ASSERT_TRUE(protocol::WriteFrame(b.get(), R"({"cmd":"list","all":true})"));
  std::string list = Register(4, a.get(), -1);
  EXPECT_NE(list.find("does not carry a submission"), std::string::npos) << list;
  EXPECT_NE(::access((config_.state_dir + "/specs/4.json").c_str(), F_OK), 0);
}

// list_jobs sends the spec's JobSummary part: the job as the broker knows
// it, never its environment, home, shell, pids or groups. This catches a
// root-only field moved into JobSummary, or a copy that is not the slice.
TEST_F(ExecutorServerTest, AListedJobCarriesNothingOfTheSpecBeyondItsSummary) {
  Send(protocol::Encode(protocol::Hello{}));
  UniqueFd a, b;
  ASSERT_NO_FATAL_FAILURE(Connect(a, b));
  ASSERT_FALSE(IsError(Register(5, a.get(), b.get())));
  ASSERT_NE(SpecFile(5).find("SECRET"), std::string::npos) << "the spec keeps the environment";
  const std::string listed = Send(protocol::Encode(protocol::ListJobs{.req = 9}));
  Result<protocol::ListJobsReply> reply = protocol::Decode<protocol::ListJobsReply>(listed);
  ASSERT_TRUE(reply) << listed;
  ASSERT_EQ(reply->jobs.size(), 1u) << listed;
  EXPECT_EQ(reply->jobs[0].id, 5u);
  EXPECT_EQ(reply->jobs[0].who.uid, ::getuid());
  EXPECT_TRUE(reply->jobs[0].who.groups.empty()) << listed;
  for (const char* hidden :
       {"SECRET", "\"env\"", "\"home\"", "\"shell\"", "\"pid\"", "\"shepherd\""}) {
    EXPECT_EQ(listed.find(hidden), std::string::npos) << hidden << " in " << listed;
  }
}

TEST_F(ExecutorServerTest, RegisterStoresRootOnlySpecAndRefusesDuplicates) {
  Send(protocol::Encode(protocol::Hello{}));
  UniqueFd a, b;
  ASSERT_NO_FATAL_FAILURE(Connect(a, b));
  std::string reply = Register(5, a.get(), b.get());
  ASSERT_FALSE(IsError(reply)) << reply;
  struct stat st {};
  ASSERT_EQ(::stat((config_.state_dir + "/specs/5.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat((config_.state_dir + "/jobs/5").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0750u);
  ASSERT_EQ(::stat((config_.state_dir + "/jobs/5/output").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  EXPECT_EQ(testing::ReadText(config_.state_dir + "/jobs/5/info.json").find("SECRET"),
            std::string::npos);
  char target[4096] = {0};
  ASSERT_GT(::readlink((config_.dev_dir + "/jobs/5").c_str(), target, sizeof target - 1), 0);
  EXPECT_EQ(std::string(target), config_.state_dir + "/jobs/5");
  EXPECT_TRUE(IsError(Register(5, a.get(), b.get())));
}

TEST_F(ExecutorServerTest, RegistrationsPastTheUsersStateLimitAreRefused) {
  config_.max_user_state_mib = 1;
  server_ = std::make_unique<ExecutorServer>(config_, facts_, launcher_a_.get(), broker_a_.get());
  Send(protocol::Encode(protocol::Hello{}));
  UniqueFd a, b;
  ASSERT_NO_FATAL_FAILURE(Connect(a, b));
  protocol::SubmitRequest big = Submission();
  big.argv = {"echo", std::string(100 * 1024, 'x')};
  std::string last;
  int registered = 0;
  for (std::uint64_t id = 1; id <= 12; ++id) {
    ASSERT_TRUE(protocol::WriteFrame(b.get(), protocol::Encode(big)));
    protocol::RegisterJob job{.req = id, .id = id};
    Packet packet;
    packet.bytes = protocol::Encode(job);
    packet.fds.emplace_back(::dup(a.get()));
    server_->Handle(packet);
    last = NextReply();
    if (IsError(last)) break;
    ++registered;
  }
  EXPECT_GE(registered, 8);
  EXPECT_LE(registered, 10);
  ASSERT_TRUE(IsError(last)) << "twelve 100 KiB specs fit in 1 MiB";
  EXPECT_NE(last.find("--max-user-state-mib"), std::string::npos) << last;
  EXPECT_NE(last.find("\"code\":5"), std::string::npos) << "resource exhausted: " << last;
  // Forgetting one makes room again.
  EXPECT_FALSE(IsError(Send(R"({"req":1,"type":"forget","id":1})")));
  ASSERT_TRUE(protocol::WriteFrame(b.get(), protocol::Encode(big)));
  protocol::RegisterJob again{.req = 99, .id = 99};
  Packet packet;
  packet.bytes = protocol::Encode(again);
  packet.fds.emplace_back(::dup(a.get()));
  server_->Handle(packet);
  const std::string room = NextReply();
  EXPECT_FALSE(IsError(room)) << room;
}

TEST_F(ExecutorServerTest, StartChecksPlacementAndOrder) {
  auto start = [](std::vector<int> cpus, std::vector<int> mems, std::vector<int> gpus = {}) {
    return protocol::Encode(protocol::StartJob{
        .req = 1, .id = 9, .placement = {.cpus = cpus, .mems = mems, .gpus = gpus}});
  };
  Send(protocol::Encode(protocol::Hello{}));
  const std::string unregistered = Send(start({0}, {0}));
  EXPECT_TRUE(IsError(unregistered)) << unregistered;
  UniqueFd a, b;
  ASSERT_NO_FATAL_FAILURE(Connect(a, b));
  ASSERT_FALSE(IsError(Register(9, a.get(), b.get())));
  for (const auto& [text, field] :
       {std::pair{start({7}, {0}), "cpus"}, std::pair{start({0}, {3}), "mems"},
        std::pair{start({0, 0}, {0}), "cpus"}, std::pair{start({0}, {0}, {0}), "gpus"}}) {
    const std::string refused = Send(text);
    EXPECT_TRUE(IsError(refused)) << text;
    EXPECT_NE(refused.find(field), std::string::npos) << refused;
  }
  // Forget a never-started job: everything goes.
  EXPECT_FALSE(IsError(Send(R"({"req":1,"type":"forget","id":9})")));
  EXPECT_NE(::access((config_.state_dir + "/specs/9.json").c_str(), F_OK), 0);
  EXPECT_NE(::access((config_.state_dir + "/jobs/9").c_str(), F_OK), 0);
  EXPECT_FALSE(LauncherRequest(0)) << "a dir of root's files alone needs no helper";
}

// What a user added to their job's dir root leaves alone: after the
// forget's answer, the launcher is asked to empty the dir as the user,
// through the dir's fd, and root removes the emptied dir.
TEST_F(ExecutorServerTest, ForgettingADirTheUserFilledAsksTheLauncherToEmptyIt) {
  Send(protocol::Encode(protocol::Hello{}));
  UniqueFd a, b;
  ASSERT_NO_FATAL_FAILURE(Connect(a, b));
  ASSERT_FALSE(IsError(Register(9, a.get(), b.get())));
  const std::string dir = config_.state_dir + "/jobs/9";
  testing::WriteText(dir + "/junk/file", "x");

  const std::string ack = Send(R"({"req":1,"type":"forget","id":9})");
  std::optional<Packet> asked = LauncherRequest(2000);

  EXPECT_FALSE(IsError(ack)) << ack;
  ASSERT_TRUE(asked) << "the launcher was not asked";
  Result<protocol::EmptyDirRequest> request =
      protocol::Decode<protocol::EmptyDirRequest>(asked->bytes);
  ASSERT_TRUE(request) << asked->bytes;
  EXPECT_EQ(request->id, 9u);
  EXPECT_EQ(request->who.uid, ::getuid());
  ASSERT_EQ(asked->fds.size(), 1u);
  struct stat passed {
  }, job_dir{};
  ASSERT_EQ(::fstat(asked->fds[0].get(), &passed), 0);
  ASSERT_EQ(::stat(dir.c_str(), &job_dir), 0);
  EXPECT_EQ(passed.st_ino, job_dir.st_ino) << "the fd is the job's dir";
  EXPECT_FALSE(std::filesystem::exists(dir + "/output")) << "root's own files go at once";
  // The helper's part, then its answer: root removes the dir.
  std::filesystem::remove_all(dir + "/junk");
  server_->OnLauncherMessage(
      Packet{protocol::Encode(protocol::DeliverReply{.req = request->req}), {}});
  EXPECT_FALSE(std::filesystem::exists(dir));
}

// One helper per user at a time, however many of their dirs wait; a dir
// its helper left full stays (logged) and the next one is asked for.
TEST_F(ExecutorServerTest, AUsersFilledDirsAreEmptiedOneAtATime) {
  Send(protocol::Encode(protocol::Hello{}));
  UniqueFd a, b, c, d;
  ASSERT_NO_FATAL_FAILURE(Connect(a, b));
  ASSERT_FALSE(IsError(Register(8, a.get(), b.get())));
  ASSERT_NO_FATAL_FAILURE(Connect(c, d));
  ASSERT_FALSE(IsError(Register(9, c.get(), d.get())));
  for (const char* id : {"8", "9"})
    testing::WriteText(config_.state_dir + "/jobs/" + id + "/junk", "x");

  ASSERT_FALSE(IsError(Send(R"({"req":1,"type":"forget","id":8})")));
  ASSERT_FALSE(IsError(Send(R"({"req":2,"type":"forget","id":9})")));
  std::optional<Packet> first = LauncherRequest(2000);
  std::optional<Packet> early = LauncherRequest(200);
  ASSERT_TRUE(first);
  Result<protocol::EmptyDirRequest> asked =
      protocol::Decode<protocol::EmptyDirRequest>(first->bytes);
  ASSERT_TRUE(asked) << first->bytes;
  server_->OnLauncherMessage(Packet{
      protocol::Encode(protocol::DeliverReply{
          .req = asked->req, .error = protocol::WireError::From(InvalidArgument("junk: denied"))}),
      {}});
  std::optional<Packet> second = LauncherRequest(2000);

  EXPECT_EQ(asked->id, 8u);
  EXPECT_FALSE(early) << "a second helper for the same user while the first works";
  EXPECT_TRUE(std::filesystem::exists(config_.state_dir + "/jobs/8/junk"));
  ASSERT_TRUE(second) << "the next dir was not asked for";
  Result<protocol::EmptyDirRequest> next =
      protocol::Decode<protocol::EmptyDirRequest>(second->bytes);
  ASSERT_TRUE(next) << second->bytes;
  EXPECT_EQ(next->id, 9u);
}

// A user who stops their helpers holds each for its whole deadline: past
// 64 dirs waiting, the rest stay on disk for the next start's clean-up
// instead of growing the queue.
TEST_F(ExecutorServerTest, AUsersDirsWaitingToBeEmptiedAreBounded) {
  Send(protocol::Encode(protocol::Hello{}));
  constexpr std::uint64_t kJobs = 66;
  for (std::uint64_t id = 1; id <= kJobs; ++id) {
    UniqueFd a, b;
    ASSERT_NO_FATAL_FAILURE(Connect(a, b));
    ASSERT_FALSE(IsError(Register(id, a.get(), b.get())));
    testing::WriteText(config_.state_dir + "/jobs/" + std::to_string(id) + "/junk", "x");
  }
  for (std::uint64_t id = 1; id <= kJobs; ++id) {
    ASSERT_FALSE(IsError(Send(R"({"req":1,"type":"forget","id":)" + std::to_string(id) + "}")));
  }
  std::vector<std::uint64_t> asked;
  while (std::optional<Packet> packet = LauncherRequest(asked.empty() ? 2000 : 500)) {
    Result<protocol::EmptyDirRequest> request =
        protocol::Decode<protocol::EmptyDirRequest>(packet->bytes);
    ASSERT_TRUE(request) << packet->bytes;
    asked.push_back(request->id);
    server_->OnLauncherMessage(
        Packet{protocol::Encode(protocol::DeliverReply{.req = request->req}), {}});
  }

  ASSERT_EQ(asked.size(), 64u);
  EXPECT_EQ(asked.front(), 1u);
  EXPECT_EQ(asked.back(), 64u);
  EXPECT_TRUE(std::filesystem::exists(config_.state_dir + "/jobs/65/junk"));
  EXPECT_TRUE(std::filesystem::exists(config_.state_dir + "/jobs/66/junk"));
}

// A queued job's start rewrites no spec before the spawn: its placement
// goes to the launcher with the spawn, for the shepherd's run record, and
// an executor restarted before the job was saved as running books the job
// from that record.
TEST_F(ExecutorServerTest, AStartsPlacementTravelsWithTheSpawnAndOutlivesARestart) {
  Send(protocol::Encode(protocol::Hello{}));
  UniqueFd a, b;
  ASSERT_NO_FATAL_FAILURE(Connect(a, b));
  ASSERT_FALSE(IsError(Register(4, a.get(), b.get())));
  const std::string spec_path = config_.state_dir + "/specs/4.json";
  const std::string queued = testing::ReadText(spec_path);

  protocol::StartJob start{.req = 5, .id = 4, .placement = {.cpus = {1}, .mems = {0}}};
  start.placement.mem_by_node = {{0, 1.5}};
  Packet packet;
  packet.bytes = protocol::Encode(start);
  server_->Handle(packet);
  ASSERT_TRUE(server_->EndTurn());
  struct pollfd p {
    launcher_b_.get(), POLLIN, 0
  };
  ASSERT_EQ(::poll(&p, 1, 2000), 1) << "no spawn was asked for";
  Result<Packet> asked = protocol::ReceiveMessage(launcher_b_.get());
  ASSERT_TRUE(asked);
  Result<protocol::SpawnRequest> spawn = protocol::Decode<protocol::SpawnRequest>(asked->bytes);
  ASSERT_TRUE(spawn) << asked->bytes;
  EXPECT_EQ(spawn->placement.cpus, std::vector<int>{1});
  EXPECT_EQ(spawn->placement.mem_by_node, (std::map<int, double>{{0, 1.5}}));
  EXPECT_EQ(testing::ReadText(spec_path), queued) << "the spec was rewritten before the spawn";

  // The executor stops here; the shepherd has written its record, and
  // the job (a child of ours) runs.
  const pid_t job = ::fork();
  if (job == 0) {
    ::sleep(30);
    ::_exit(0);
  }
  ASSERT_GT(job, 0);
  host::RunRecord record;
  record.id = 4;
  record.pid = job;
  record.shepherd = ::getpid();
  record.start_time = 1;
  record.placement = spawn->placement;
  std::filesystem::create_directories(config_.state_dir + "/run");
  ASSERT_TRUE(host::WriteFileAtomic(host::RunRecordPath(config_.state_dir + "/run", 4),
                                    protocol::Encode(record), 0600));
  server_ = std::make_unique<ExecutorServer>(config_, facts_, launcher_a_.get(), broker_a_.get());
  server_->Recover();
  Send(protocol::Encode(protocol::Hello{}));
  const std::string listed = Send(protocol::Encode(protocol::ListJobs{.req = 9}));
  ::kill(job, SIGKILL);
  ::waitpid(job, nullptr, 0);
  Result<protocol::ListJobsReply> reply = protocol::Decode<protocol::ListJobsReply>(listed);
  ASSERT_TRUE(reply) << listed;
  ASSERT_EQ(reply->jobs.size(), 1u) << listed;
  EXPECT_EQ(reply->jobs[0].state, protocol::SpecState::kRunning) << listed;
  ASSERT_TRUE(reply->jobs[0].placement) << listed;
  EXPECT_EQ(reply->jobs[0].placement->cpus, std::vector<int>{1}) << listed;
}

// A job that ends in the very turn its spawn is answered: the release of
// its cpus (JobExited::delivering) is held like every answer, so it comes
// after the start's own answer and never reaches a broker that does not
// yet know the job runs.
TEST_F(ExecutorServerTest, TheReleaseOfAJobEndedInItsStartsTurnFollowsTheStartAnswer) {
  Send(protocol::Encode(protocol::Hello{}));
  const std::string registered = RegisterWithOutput(7, dir_.path());
  ASSERT_FALSE(IsError(registered)) << registered;
  const std::uint64_t req = StartAndTakeSpawn(7);
  ASSERT_NE(req, 0u);
  const pid_t job = ::fork();
  if (job == 0) ::_exit(0);
  ::waitpid(job, nullptr, 0);
  protocol::SpawnReply reply{.req = req, .id = 7, .pid = job, .shepherd = ::getpid()};
  server_->OnLauncherMessage(Packet{protocol::Encode(reply), {}});
  server_->OnLauncherMessage(
      Packet{protocol::Encode(protocol::ChildExited{.pid = ::getpid(), .status = 0}), {}});
  const std::string first = NextReply();
  const std::string second = NextReply();
  EXPECT_NE(first.find(R"("type":"start_reply")"), std::string::npos) << first;
  EXPECT_NE(second.find(R"("delivering":true)"), std::string::npos) << second;
}

// After a power cut the pids a run record names may be other processes'.
// A restart takes the job or its shepherd for alive only as the process
// that started when the record says: job 4's are gone, and it is reported
// ended; job 5's record, as older releases wrote it, holds no start time of
// the job, which is then read from the process that has its pid now.
TEST_F(ExecutorServerTest, ARestartAdoptsOnlyTheProcessesItsRunRecordNames) {
  Send(protocol::Encode(protocol::Hello{}));
  UniqueFd a, b, c, d;
  ASSERT_NO_FATAL_FAILURE(Connect(a, b));
  ASSERT_FALSE(IsError(Register(4, a.get(), b.get())));
  ASSERT_NO_FATAL_FAILURE(Connect(c, d));
  ASSERT_FALSE(IsError(Register(5, c.get(), d.get())));
  const pid_t stranger = ::fork();
  if (stranger == 0) {
    ::sleep(30);
    ::_exit(0);
  }
  ASSERT_GT(stranger, 0);
  Result<std::uint64_t> stranger_start = host::ProcStartTime(stranger);
  Result<std::uint64_t> own_start = host::ProcStartTime(::getpid());
  ASSERT_TRUE(stranger_start && own_start);
  const std::string run = config_.state_dir + "/run";
  std::filesystem::create_directories(run);
  for (std::uint64_t id : {4, 5}) {
    host::RunRecord record;
    record.id = id;
    record.pid = stranger;
    record.pid_start = id == 4 ? *stranger_start + 1 : 0;
    record.shepherd = ::getpid();
    record.shepherd_start = *own_start + 1;
    record.start_time = 1;
    ASSERT_TRUE(
        host::WriteFileAtomic(host::RunRecordPath(run, id), protocol::Encode(record), 0600));
  }
  server_ = std::make_unique<ExecutorServer>(config_, facts_, launcher_a_.get(), broker_a_.get());
  server_->Recover();
  Send(protocol::Encode(protocol::Hello{}));
  server_->Tick();
  const std::string ended = NextReply();
  const std::string listed = Send(protocol::Encode(protocol::ListJobs{.req = 9}));
  ::kill(stranger, SIGKILL);
  ::waitpid(stranger, nullptr, 0);
  Result<protocol::JobExited> exited = protocol::Decode<protocol::JobExited>(ended);
  ASSERT_TRUE(exited) << ended;
  EXPECT_EQ(exited->id, 4u) << ended;
  EXPECT_FALSE(exited->delivering) << ended;
  Result<protocol::ListJobsReply> reply = protocol::Decode<protocol::ListJobsReply>(listed);
  ASSERT_TRUE(reply) << "a second job was reported ended: " << listed;
  ASSERT_EQ(reply->jobs.size(), 2u) << listed;
  EXPECT_EQ(reply->jobs[1].id, 5u) << listed;
  EXPECT_EQ(reply->jobs[1].state, protocol::SpecState::kRunning) << listed;
}

// A run record without an end says a shepherd may yet start the job (one a
// wedged launcher's spawn left behind): the start waits rather than run
// the job twice. An ended record is an earlier try's, and goes.
TEST_F(ExecutorServerTest, AJobWhoseRunRecordIsUnsettledIsNotStartedAgain) {
  Send(protocol::Encode(protocol::Hello{}));
  UniqueFd a, b;
  ASSERT_NO_FATAL_FAILURE(Connect(a, b));
  ASSERT_FALSE(IsError(Register(8, a.get(), b.get())));
  const std::string run = config_.state_dir + "/run";
  std::filesystem::create_directories(run);
  host::RunRecord record;
  record.id = 8;
  record.shepherd = ::getpid();  // pid 0: it may be starting
  ASSERT_TRUE(host::WriteFileAtomic(host::RunRecordPath(run, 8), protocol::Encode(record), 0600));
  const std::string start = protocol::Encode(
      protocol::StartJob{.req = 3, .id = 8, .placement = {.cpus = {0}, .mems = {0}}});
  const std::string waits = Send(start);
  Result<protocol::StartReply> refused = protocol::Decode<protocol::StartReply>(waits);
  ASSERT_TRUE(refused) << waits;
  ASSERT_TRUE(refused->error) << waits;
  EXPECT_EQ(refused->error->ToError().code(), ErrorCode::kUnavailable) << waits;
  EXPECT_NE(refused->error->message.find("stays queued"), std::string::npos) << waits;

  ASSERT_TRUE(host::WriteFileAtomic(host::RunRecordPath(run, 8), "{\"garbled", 0600));
  EXPECT_TRUE(IsError(Send(start))) << "a record that cannot be read says nothing either way";

  record.pid = 77;
  record.status = 9;  // killed: that try is over
  ASSERT_TRUE(host::WriteFileAtomic(host::RunRecordPath(run, 8), protocol::Encode(record), 0600));
  Packet packet;
  packet.bytes = start;
  server_->Handle(packet);
  ASSERT_TRUE(server_->EndTurn());
  struct pollfd p {
    launcher_b_.get(), POLLIN, 0
  };
  EXPECT_EQ(::poll(&p, 1, 2000), 1) << "the spawn was not asked for";
  EXPECT_NE(::access(host::RunRecordPath(run, 8).c_str(), F_OK), 0) << "the ended record stays";
}

// Ids never go back: with specs/high_water and every spec gone, a run
// record or a job dir left of an old job still keeps its id from being
// handed out again.
TEST_F(ExecutorServerTest, TheNextIdIsPastEveryIdFoundInTheStateDirectory) {
  std::filesystem::create_directories(config_.state_dir + "/run");
  host::RunRecord record;
  record.id = 5;
  record.pid = 99;
  record.status = 0;
  ASSERT_TRUE(host::WriteFileAtomic(host::RunRecordPath(config_.state_dir + "/run", 5),
                                    protocol::Encode(record), 0600));
  std::filesystem::create_directories(config_.state_dir + "/jobs/12");
  server_->Recover();
  Result<protocol::HelloReply> hello =
      protocol::Decode<protocol::HelloReply>(Send(protocol::Encode(protocol::Hello{})));
  ASSERT_TRUE(hello);
  EXPECT_EQ(hello->next_id, 13u);
}

TEST_F(ExecutorServerTest, RootModeRefusesAForgedRootSubmitter) {
  if (::getuid() != 0) GTEST_SKIP() << "needs a uid 0 peer";
  facts_.as_root = true;
  server_ = std::make_unique<ExecutorServer>(config_, facts_, launcher_a_.get(), broker_a_.get());
  Send(protocol::Encode(protocol::Hello{}));
  UniqueFd a, b;
  ASSERT_NO_FATAL_FAILURE(Connect(a, b));
  std::string reply = Register(2, a.get(), b.get());
  EXPECT_TRUE(IsError(reply));
  EXPECT_NE(reply.find("root"), std::string::npos) << reply;
}

TEST(FramingLimitTest, OversizedFrameIsRefused) {
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET, 0, fds), 0);
  UniqueFd a(fds[0]), b(fds[1]);
  std::string big(4096, 'x');
  ASSERT_TRUE(protocol::SendMessage(a.get(), big));
  auto got = protocol::ReceiveMessage(b.get(), 1024);
  EXPECT_FALSE(got);
}

TEST(ExitCodeTest, SignalsAreNegative) {
  EXPECT_EQ(ExitCodeFromStatus(7 << 8), 7);
  EXPECT_EQ(ExitCodeFromStatus(9), -9);
}

// The phase table (job_phase.h), one test per phase: an operation the
// job's phase does not allow is refused, naming the phase and what the
// operation needs, and changes nothing.
TEST_F(ExecutorServerTest, PhaseUnknownRefusesEverythingButRegister) {
  Send(protocol::Encode(protocol::Hello{}));
  EXPECT_EQ(RefusalOf(SignalText(50)), "no such job 50");
  EXPECT_EQ(RefusalOf(ForgetText(50)), "no such job 50");
  EXPECT_EQ(RefusalOf(StartText(50)), "no such job 50");
  EXPECT_EQ(RefusalOf(DeliverText(50)), "no such job 50");
}

TEST_F(ExecutorServerTest, PhaseQueuedRefusesASignalAndADelivery) {
  Send(protocol::Encode(protocol::Hello{}));
  UniqueFd a, b;
  ASSERT_NO_FATAL_FAILURE(Connect(a, b));
  ASSERT_FALSE(IsError(Register(2, a.get(), b.get())));
  EXPECT_EQ(RefusalOf(SignalText(2)), "job 2 is queued; signal needs it running");
  EXPECT_EQ(RefusalOf(DeliverText(2)), "job 2 is queued; deliver_again needs it ended");
}

TEST_F(ExecutorServerTest, PhaseStartingRefusesAForgetAndASecondStart) {
  Send(protocol::Encode(protocol::Hello{}));
  UniqueFd a, b;
  ASSERT_NO_FATAL_FAILURE(Connect(a, b));
  ASSERT_FALSE(IsError(Register(3, a.get(), b.get())));
  ASSERT_NE(StartAndTakeSpawn(3), 0u);
  EXPECT_EQ(RefusalOf(ForgetText(3)), "job 3 is starting; forget needs it queued or ended");
  EXPECT_EQ(RefusalOf(StartText(3)), "job 3 is starting; start needs it queued");
  EXPECT_EQ(RefusalOf(SignalText(3)), "job 3 is starting; signal needs it running");
  EXPECT_TRUE(std::filesystem::exists(config_.state_dir + "/jobs/3")) << "the forget touched it";
}

TEST_F(ExecutorServerTest, PhaseRunningRefusesAForgetAStartAndADelivery) {
  Send(protocol::Encode(protocol::Hello{}));
  UniqueFd a, b;
  ASSERT_NO_FATAL_FAILURE(Connect(a, b));
  ASSERT_FALSE(IsError(Register(4, a.get(), b.get())));
  const std::uint64_t req = StartAndTakeSpawn(4);
  ASSERT_NE(req, 0u);
  const pid_t job = ::fork();
  if (job == 0) {
    ::setpgid(0, 0);
    ::sleep(30);
    ::_exit(0);
  }
  ASSERT_GT(job, 0);
  AnswerSpawn(req, 4, job);
  EXPECT_EQ(RefusalOf(ForgetText(4)), "job 4 is running; forget needs it queued or ended");
  EXPECT_EQ(RefusalOf(StartText(4)), "job 4 is running; start needs it queued");
  EXPECT_EQ(RefusalOf(DeliverText(4)), "job 4 is running; deliver_again needs it ended");
  EXPECT_EQ(::kill(job, 0), 0) << "the job was touched";
  ::kill(job, SIGKILL);
  ::waitpid(job, nullptr, 0);
}

TEST_F(ExecutorServerTest, PhaseFinishingRefusesASignalAForgetAndADelivery) {
  Send(protocol::Encode(protocol::Hello{}));
  // With an output path, a failed start delivers its message as the user:
  // the delivery, left unanswered, holds the job finishing.
  const std::string registered = RegisterWithOutput(5, dir_.path());
  ASSERT_FALSE(IsError(registered)) << registered;
  const std::uint64_t req = StartAndTakeSpawn(5);
  ASSERT_NE(req, 0u);
  AnswerSpawn(req, 5, 0);
  ASSERT_TRUE(LauncherRequest(2000)) << "no delivery was asked for";
  EXPECT_EQ(RefusalOf(SignalText(5)), "job 5 is finishing; signal needs it running");
  EXPECT_EQ(RefusalOf(ForgetText(5)), "job 5 is finishing; forget needs it queued or ended");
  EXPECT_EQ(RefusalOf(DeliverText(5)), "job 5 is finishing; deliver_again needs it ended");
}

TEST_F(ExecutorServerTest, PhaseEndedRefusesASignalAndAStart) {
  Send(protocol::Encode(protocol::Hello{}));
  UniqueFd a, b;
  ASSERT_NO_FATAL_FAILURE(Connect(a, b));
  ASSERT_FALSE(IsError(Register(6, a.get(), b.get())));
  const std::uint64_t req = StartAndTakeSpawn(6);
  ASSERT_NE(req, 0u);
  AnswerSpawn(req, 6, 0);  // failed: with no output to deliver, it has ended
  EXPECT_EQ(RefusalOf(SignalText(6)), "job 6 is ended; signal needs it running");
  EXPECT_EQ(RefusalOf(StartText(6)), "job 6 is ended; start needs it queued");
  EXPECT_EQ(RefusalOf(ForgetText(6)), "") << "an ended job may be forgotten";
}

// Array elements (`dispatch new --array`): the root side makes each from
// the array's spec at its first start, under the id its index gives, once.
class ArrayElementTest : public ExecutorServerTest {
 protected:
  // Registers array `id` of `indices` running `argv` (no output file).
  std::string RegisterArray(std::uint64_t id, std::vector<std::uint32_t> indices,
                            std::vector<std::string> argv = {"true"}) {
    UniqueFd server_end, client_end;
    Connect(server_end, client_end);
    protocol::SubmitRequest submit = Submission();
    submit.argv = std::move(argv);
    submit.array = std::move(indices);
    EXPECT_TRUE(protocol::WriteFrame(client_end.get(), protocol::Encode(submit)));
    Packet packet{protocol::Encode(protocol::RegisterJob{.req = id, .id = id}), {}};
    packet.fds.emplace_back(::dup(server_end.get()));
    server_->Handle(packet);
    return NextReply();
  }
  static std::string ElementStart(std::uint64_t array, std::uint32_t index, std::uint64_t id,
                                  std::vector<int> cpus = {0}) {
    return protocol::Encode(protocol::StartJob{.req = 7,
                                               .id = id,
                                               .placement = {.cpus = std::move(cpus), .mems = {0}},
                                               .array = array,
                                               .array_index = index});
  }
  // Starts element `id` and answers its spawn as failed: it has ended.
  void StartAndFail(std::uint64_t array, std::uint32_t index, std::uint64_t id) {
    server_->Handle(Packet{ElementStart(array, index, id), {}});
    ASSERT_TRUE(server_->EndTurn());
    std::optional<Packet> asked = LauncherRequest(2000);
    ASSERT_TRUE(asked) << "no spawn was asked for";
    Result<protocol::SpawnRequest> spawn = protocol::Decode<protocol::SpawnRequest>(asked->bytes);
    ASSERT_TRUE(spawn) << asked->bytes;
    AnswerSpawn(spawn->req, id, 0);
  }
  void RestartExecutor() {
    server_ = std::make_unique<ExecutorServer>(config_, facts_, launcher_a_.get(), broker_a_.get());
    server_->Recover();
    Send(protocol::Encode(protocol::Hello{}));
  }
};

TEST_F(ArrayElementTest, AnElementHasTheIdItsIndexGivesAndIsMadeOnceEvenAfterARestart) {
  Send(protocol::Encode(protocol::Hello{}));
  ASSERT_FALSE(IsError(RegisterArray(10, {3, 5, 8})));
  // Index 5 is the second: job 12, and no other id.
  EXPECT_NE(RefusalOf(ElementStart(10, 5, 13)).find("not the unstarted element 5"),
            std::string::npos);
  EXPECT_NE(RefusalOf(ElementStart(10, 4, 12)).find("not the unstarted element 4"),
            std::string::npos);
  ASSERT_NO_FATAL_FAILURE(StartAndFail(10, 5, 12));
  EXPECT_NE(SpecFile(10).find(R"("array_started":[5])"), std::string::npos) << SpecFile(10);
  // Ended and forgotten, then the executor restarts: the array's own spec
  // says index 5 was used.
  ASSERT_EQ(RefusalOf(ForgetText(12)), "");
  RestartExecutor();
  EXPECT_NE(RefusalOf(ElementStart(10, 5, 12)).find("not the unstarted element 5"),
            std::string::npos);
  // The others still start.
  ASSERT_NO_FATAL_FAILURE(StartAndFail(10, 8, 13));
}

TEST_F(ArrayElementTest, AnElementSavedWithoutItsArraysRecordIsStillCountedStartedAfterARestart) {
  Send(protocol::Encode(protocol::Hello{}));
  ASSERT_FALSE(IsError(RegisterArray(20, {1, 2})));
  ASSERT_NO_FATAL_FAILURE(StartAndFail(20, 2, 22));
  // The array's spec as an older release, or a power cut before its
  // rename, left it: without the index.
  const std::string path = config_.state_dir + "/specs/20.json";
  std::string text = testing::ReadText(path);
  const std::string recorded = R"("array_started":[2])";
  ASSERT_NE(text.find(recorded), std::string::npos) << text;
  text.replace(text.find(recorded), recorded.size(), R"("array_started":[])");
  ASSERT_TRUE(host::WriteFileAtomic(path, text, 0600));
  RestartExecutor();
  EXPECT_NE(SpecFile(20).find(recorded), std::string::npos) << SpecFile(20);
  ASSERT_EQ(RefusalOf(ForgetText(22)), "");
  EXPECT_NE(RefusalOf(ElementStart(20, 2, 22)).find("not the unstarted element 2"),
            std::string::npos);
}

TEST_F(ArrayElementTest, AStartRefusedByItsOwnChecksLeavesTheElementUnmade) {
  Send(protocol::Encode(protocol::Hello{}));
  ASSERT_FALSE(IsError(RegisterArray(30, {7})));
  EXPECT_NE(RefusalOf(ElementStart(30, 7, 31, {9})).find("cpus"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(config_.state_dir + "/jobs/31"));
  EXPECT_EQ(SpecFile(30).find(R"("array_started":[7])"), std::string::npos);
  ASSERT_NO_FATAL_FAILURE(StartAndFail(30, 7, 31));
}

// The broker checks an array's list; the root side, which finds an
// element by its index's place in it, checks its order again.
TEST_F(ArrayElementTest, AListOutOfOrderOrRepeatingAnIndexIsRefusedAtRegistration) {
  Send(protocol::Encode(protocol::Hello{}));
  for (const std::vector<std::uint32_t>& indices :
       {std::vector<std::uint32_t>{5, 3}, std::vector<std::uint32_t>{5, 5}}) {
    const std::string reply = RegisterArray(45, indices);
    EXPECT_NE(reply.find("field 'array': indices must be strictly increasing"), std::string::npos)
        << reply;
  }
}

TEST_F(ArrayElementTest, AnElementPastTheUsersStateLimitWaitsQueued) {
  config_.max_user_state_mib = 1;
  server_ = std::make_unique<ExecutorServer>(config_, facts_, launcher_a_.get(), broker_a_.get());
  Send(protocol::Encode(protocol::Hello{}));
  // Each element's spec holds this 100 KiB command: the tenth cannot fit.
  ASSERT_FALSE(IsError(RegisterArray(50, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11},
                                     {"true", std::string(100 * 1024, 'x')})));
  std::string refused;
  std::uint32_t index = 0;
  for (; index < 12; ++index) {
    server_->Handle(Packet{ElementStart(50, index, 51 + index), {}});
    ASSERT_TRUE(server_->EndTurn());
    if (LauncherRequest(1000)) continue;  // made, and its spawn asked for
    refused = NextReply();
    break;
  }
  EXPECT_NE(refused.find("--max-user-state-mib"), std::string::npos) << refused;
  Result<protocol::StartReply> reply = protocol::Decode<protocol::StartReply>(refused);
  ASSERT_TRUE(reply && reply->error) << refused;
  EXPECT_EQ(reply->error->ToError().code(), ErrorCode::kUnavailable) << "it stays queued";
  EXPECT_GT(index, 3u);
  EXPECT_FALSE(std::filesystem::exists(config_.state_dir + "/jobs/" + std::to_string(51 + index)));
}

}  // namespace
}  // namespace hpcb::executor
