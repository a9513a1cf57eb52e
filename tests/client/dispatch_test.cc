// Runs the real client against a one-connection fake broker in a thread.
#include "client/dispatch.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "client/transport.h"
#include "common/base/unique_fd.h"
#include "protocol/client_framing.h"
#include "protocol/client_messages.h"
#include "protocol/codec.h"
#include "protocol/framing.h"

namespace hpcb::client {
namespace {

// The replies for each connection in turn: `replies[i]` answers the i-th.
struct Connections {
  std::vector<std::vector<std::string>> replies;
};

class FakeBroker {
 public:
  // Accepts one connection, reads one frame into request(), then sends
  // `replies` as frames and closes.
  explicit FakeBroker(std::vector<std::string> replies)
      : FakeBroker(Connections{{std::move(replies)}}) {}
  explicit FakeBroker(Connections connections) {
    char dir_template[] = "/tmp/hpcb-client-test-XXXXXX";
    dir_ = ::mkdtemp(dir_template);
    path_ = dir_ + "/sock";
    listener_ = UniqueFd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path_.c_str(), path_.size());
    EXPECT_EQ(::bind(listener_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(::listen(listener_.get(), 1), 0);
    ::setenv("HPC_BATCH_SOCKET", path_.c_str(), 1);
    thread_ = std::thread([this, connections = std::move(connections)] {
      for (const std::vector<std::string>& answer : connections.replies) {
        UniqueFd conn(::accept(listener_.get(), nullptr, nullptr));
        if (!conn.valid()) return;
        auto frame = protocol::ReadFrame(conn.get(), protocol::kMaxClientFrame);
        if (frame && frame->has_value()) requests_.push_back(**frame);
        for (const std::string& reply : answer) {
          (void)protocol::WriteFrame(conn.get(), reply);
        }
      }
      // A client that connects once more than expected is refused, not
      // left waiting for an answer that never comes.
      ::shutdown(listener_.get(), SHUT_RDWR);
    });
  }
  ~FakeBroker() {
    // A client that connected fewer times than scripted leaves the thread
    // in accept: the test fails on its expectations rather than hanging.
    ::shutdown(listener_.get(), SHUT_RDWR);
    if (thread_.joinable()) thread_.join();
    ::unlink(path_.c_str());
    ::rmdir(dir_.c_str());
  }
  const std::string& request() { return requests().front(); }
  const std::vector<std::string>& requests() {
    if (thread_.joinable()) thread_.join();
    if (requests_.empty()) requests_.emplace_back();
    return requests_;
  }

 private:
  std::string dir_;
  std::string path_;
  UniqueFd listener_;
  std::thread thread_;
  std::vector<std::string> requests_;
};

struct Outcome {
  int code;
  std::string out;
  std::string err;
};

Outcome Dispatch(const std::vector<std::string>& args) {
  std::ostringstream out;
  std::ostringstream err;
  int code = RunDispatch(args, Io{out, err, false});
  return {code, out.str(), err.str()};
}

TEST(DispatchTest, NewSendsRequestAndPrintsReply) {
  protocol::SubmitReply reply;
  reply.id = 4;
  reply.state = protocol::JobState::kQueued;
  reply.cpu = 2;
  reply.max_time_s = 5400;
  reply.max_mem_gb = 84;
  reply.output_dest = "/tmp/results/output.4.log";
  FakeBroker broker({protocol::Encode(reply)});
  Outcome run =
      Dispatch({"new",          "--cpu",        "2",     "--gpu-cores", "3",        "--max-mem",
                "84",           "--max-time",   "1h30m", "--gpu-link",  "pxb",      "--numa-local",
                "--output",     "/tmp/results", "--",    "FOO=bar",     "EXPR=a=b", "./bench",
                "--iterations", "10",           "X=1"});
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.out,
            "job 4 queued (2 cpu, max time 1h30m, memory 84G)\n"
            "output will be saved to /tmp/results/output.4.log\n");
  auto sent = protocol::Decode<protocol::SubmitRequest>(broker.request());
  ASSERT_TRUE(sent) << broker.request();
  EXPECT_EQ(*protocol::PeekCommand(broker.request()), "new");
  EXPECT_EQ(sent->argv, (std::vector<std::string>{"./bench", "--iterations", "10", "X=1"}));
  EXPECT_EQ(sent->env, (std::map<std::string, std::string>{{"EXPR", "a=b"}, {"FOO", "bar"}}));
  EXPECT_EQ(sent->cpu, 2);
  EXPECT_EQ(sent->gpu_cores, 3);
  EXPECT_EQ(sent->max_mem_gb, 84.0);
  EXPECT_EQ(sent->max_time_s, 5400);
  EXPECT_EQ(sent->min_gpu_link, "PXB");
  EXPECT_TRUE(sent->numa_local_mem);
  EXPECT_TRUE(sent->numa_local_gpu);
  EXPECT_FALSE(sent->exclusive);
  EXPECT_FALSE(sent->forward_env);
  EXPECT_EQ(sent->output, "/tmp/results");
  EXPECT_FALSE(sent->cwd.empty());
}

TEST(DispatchTest, NewDefaultsAndNoOutput) {
  protocol::SubmitReply reply;
  reply.id = 1;
  reply.state = protocol::JobState::kRunning;
  reply.cpu = 1;
  reply.max_time_s = 3600;
  reply.max_mem_gb = 2.08;
  reply.mem_defaulted = true;
  FakeBroker broker({protocol::Encode(reply)});
  ::setenv("HPCB_CLIENT_TEST_VAR", "seen", 1);
  Outcome run = Dispatch({"new", "--env", "--no-output", "--", "echo", "hello"});
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.out, "job 1 running (1 cpu, max time 1h, memory 2.08G (default))\n");
  auto sent = protocol::Decode<protocol::SubmitRequest>(broker.request());
  ASSERT_TRUE(sent);
  EXPECT_FALSE(sent->cpu.has_value());
  EXPECT_FALSE(sent->max_mem_gb.has_value());
  EXPECT_FALSE(sent->max_time_s.has_value());
  EXPECT_FALSE(sent->min_gpu_link.has_value());
  EXPECT_FALSE(sent->output.has_value());
  EXPECT_TRUE(sent->forward_env);
  EXPECT_EQ(sent->env.at("HPCB_CLIENT_TEST_VAR"), "seen");
}

TEST(DispatchTest, NewOutputDefaultsToCwd) {
  protocol::SubmitReply reply;
  reply.id = 2;
  reply.state = protocol::JobState::kRunning;
  FakeBroker broker({protocol::Encode(reply)});
  Outcome run = Dispatch({"new", "--", "true"});
  EXPECT_EQ(run.code, 0) << run.err;
  auto sent = protocol::Decode<protocol::SubmitRequest>(broker.request());
  ASSERT_TRUE(sent);
  EXPECT_EQ(sent->output, sent->cwd);
  EXPECT_NE(run.out.find("output will be saved to " + sent->cwd), std::string::npos);
}

TEST(DispatchTest, AfterSendsTheIdsAndRefusesWhatIsNotOne) {
  protocol::SubmitReply reply;
  reply.id = 5;
  {
    FakeBroker broker({protocol::Encode(reply)});
    Outcome run = Dispatch({"new", "--after-any", "3,4", "--", "true"});
    EXPECT_EQ(run.code, 0) << run.err;
    auto sent = protocol::Decode<protocol::SubmitRequest>(broker.request());
    ASSERT_TRUE(sent);
    EXPECT_EQ(sent->after, (std::vector<std::uint64_t>{3, 4}));
    EXPECT_TRUE(sent->after_any);
  }
  Outcome bad = Dispatch({"new", "--after", "3,,4", "--", "true"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("argument --after: '' is not a job id (expected ID[,ID...])"),
            std::string::npos)
      << bad.err;
  Outcome both = Dispatch({"new", "--after", "3", "--after-any", "4", "--", "true"});
  EXPECT_EQ(both.code, 2);
  EXPECT_NE(both.err.find("cannot be combined"), std::string::npos) << both.err;
}

TEST(DispatchTest, InfoAndJobGetPrintTheReplyAsJson) {
  protocol::InfoReply info;
  info.policy = "fifo-strict";
  {
    FakeBroker broker({protocol::Encode(info)});
    Outcome run = Dispatch({"info", "--json"});
    EXPECT_EQ(run.code, 0) << run.err;
    EXPECT_EQ(run.out, protocol::Encode(info) + "\n");
    EXPECT_EQ(broker.request(), R"({"cmd":"info"})");
  }
  {
    FakeBroker broker({protocol::Encode(protocol::JobFieldReply{3600, std::nullopt})});
    Outcome run = Dispatch({"job", "4", "max-time", "get", "--json"});
    EXPECT_EQ(run.out, "{\"ok\":true,\"value\":3600,\"before\":[]}\n") << run.err;
  }
  {
    FakeBroker broker({protocol::Encode(protocol::DrainReply{true, true})});
    Outcome run = Dispatch({"drain"});
    EXPECT_EQ(run.out, "draining: queued jobs will not be started; running jobs finish\n");
    EXPECT_EQ(broker.request(), R"({"cmd":"drain"})");
  }
}

TEST(DispatchTest, DaemonErrorIsExitOne) {
  protocol::ErrorReply error{"daemon is not running as root; it can only run your own jobs",
                             static_cast<std::uint8_t>(ErrorCode::kPermissionDenied)};
  FakeBroker broker({protocol::Encode(error)});
  Outcome run = Dispatch({"new", "--", "true"});
  EXPECT_EQ(run.code, 1);
  EXPECT_EQ(run.err, "dispatch: daemon is not running as root; it can only run your own jobs\n");
  EXPECT_EQ(run.out, "");
}

TEST(DispatchTest, MalformedAndMissingReplies) {
  {
    FakeBroker broker({"not json"});
    EXPECT_EQ(Dispatch({"kill", "3"}).err, "dispatch: malformed response from daemon\n");
  }
  {
    FakeBroker broker(std::vector<std::string>{});
    Outcome run = Dispatch({"kill", "3"});
    EXPECT_EQ(run.code, 1);
    EXPECT_EQ(run.err, "dispatch: daemon closed the connection unexpectedly\n");
  }
  {
    FakeBroker broker({R"({"ok":false})"});
    EXPECT_EQ(Dispatch({"kill", "3"}).err, "dispatch: unknown daemon error\n");
  }
}

TEST(DispatchTest, ListRendersTable) {
  ::setenv("TZ", "UTC", 1);
  ::tzset();
  protocol::ListReply reply;
  reply.now = 1785160992;
  protocol::JobRow row;
  row.user = "root";
  row.id = 1;
  row.argv = {"echo", "hello"};
  row.start_time = reply.now - 2;
  row.uptime_s = 0;
  row.max_time_s = 3600;
  row.max_mem_gb = 2.08;
  row.state = protocol::JobState::kDone;
  row.exit_code = 0;
  reply.jobs = {row};
  FakeBroker broker({protocol::Encode(reply)});
  Outcome run = Dispatch({"list", "--finished", "--all"});
  EXPECT_EQ(run.code, 0);
  EXPECT_EQ(run.out,
            "USER  ID  COMMAND     START     UPTIME  MAX-TIME  MEM    EXCLUSIVE  STATE  EXIT\n"
            "root  1   echo hello  14:03:10  0s      1h        2.08G  no         done   0\n");
  auto sent = protocol::Decode<protocol::ListRequest>(broker.request());
  ASSERT_TRUE(sent);
  EXPECT_TRUE(sent->all);
  EXPECT_TRUE(sent->finished);
}

TEST(DispatchTest, ListEmptyAndJson) {
  {
    FakeBroker broker({protocol::Encode(protocol::ListReply{})});
    Outcome run = Dispatch({"list"});
    EXPECT_EQ(run.out, "no jobs\n");
    auto sent = protocol::Decode<protocol::ListRequest>(broker.request());
    ASSERT_TRUE(sent);
    EXPECT_FALSE(sent->all);
    EXPECT_FALSE(sent->finished);
  }
  {
    std::string text = protocol::Encode(protocol::ListReply{});
    FakeBroker broker({text});
    EXPECT_EQ(Dispatch({"list", "--json"}).out, text + "\n");
  }
}

TEST(DispatchTest, KillMessages) {
  {
    FakeBroker broker({protocol::Encode(protocol::KillReply{protocol::KillOutcome::kRemoved})});
    Outcome run = Dispatch({"kill", "7"});
    EXPECT_EQ(run.out, "job 7 removed from the queue\n");
    auto sent = protocol::Decode<protocol::JobIdRequest>(broker.request());
    ASSERT_TRUE(sent);
    EXPECT_EQ(sent->cmd, protocol::ClientCommand::kKill);
    EXPECT_EQ(sent->id, 7u);
  }
  {
    FakeBroker broker({protocol::Encode(protocol::KillReply{protocol::KillOutcome::kKilling})});
    EXPECT_EQ(Dispatch({"kill", "8"}).out, "job 8: kill signal sent\n");
  }
}

TEST(DispatchTest, AttachStreamsFramesUntilEmptyFrame) {
  protocol::AttachReply reply;
  reply.state = protocol::JobState::kQueued;
  FakeBroker broker({protocol::Encode(reply), "line 1\n", "partial", " line 2\n", "", "after end"});
  Outcome run = Dispatch({"attach", "9"});
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.out, "line 1\npartial line 2\n");
  EXPECT_EQ(run.err, "job 9 is queued; waiting for it to start...\n");
  auto sent = protocol::Decode<protocol::JobIdRequest>(broker.request());
  ASSERT_TRUE(sent);
  EXPECT_EQ(sent->cmd, protocol::ClientCommand::kAttach);
  EXPECT_EQ(sent->id, 9u);
}

TEST(DispatchTest, AttachEndsWhenDaemonCloses) {
  protocol::AttachReply reply;
  reply.state = protocol::JobState::kDone;
  reply.output_dest = "/w/output.3.log";
  FakeBroker broker({protocol::Encode(reply)});
  Outcome run = Dispatch({"attach", "3"});
  EXPECT_EQ(run.code, 0);
  EXPECT_EQ(run.out, "");
  EXPECT_EQ(run.err, "job 3 has finished; its output is at /w/output.3.log\n");
}

// A short job can end, and its output be delivered, before `new --wait`'s
// attach is served, or before the daemon opens it for the stream: the
// output it promised on stdout is then read from the delivered file, but
// only for a job that ran.
TEST(DispatchTest, NewWaitPrintsTheDeliveredFileOfAJobTheStreamMissed) {
  char dir_template[] = "/tmp/hpcb-client-test-XXXXXX";
  const std::string dir = ::mkdtemp(dir_template);
  const std::string delivered = dir + "/output.5.log";
  {
    std::FILE* file = std::fopen(delivered.c_str(), "w");
    ASSERT_NE(file, nullptr);
    std::fputs("from the job\n", file);
    std::fclose(file);
  }
  protocol::SubmitReply submitted;
  submitted.id = 5;
  submitted.state = protocol::JobState::kRunning;
  submitted.output_dest = delivered;
  protocol::AttachReply ended;
  ended.state = protocol::JobState::kDone;
  ended.output_dest = delivered;
  protocol::AttachReply running;
  running.state = protocol::JobState::kRunning;
  auto finished = [&](std::optional<std::string> dest, bool ran) {
    protocol::JobRow row;
    row.id = 5;
    row.state = protocol::JobState::kDone;
    row.output_dest = std::move(dest);
    if (ran) row.start_time = 1000;
    if (ran) row.exit_code = 4;
    if (!ran) {
      row.reason = protocol::JobReason::kError;
      row.detail = "failed to start job: cannot execute nosuchcmd";
    }
    protocol::ListReply listed;
    listed.jobs.push_back(row);
    return protocol::Encode(listed);
  };
  const std::string ran = finished(delivered, true);
  {
    // Ended and delivered before the attach was served.
    FakeBroker broker(
        Connections{{{protocol::Encode(submitted)}, {protocol::Encode(ended)}, {ran}, {ran}}});
    Outcome run = Dispatch({"new", "--wait", "--", "sh", "-c", "echo from the job; exit 4"});
    EXPECT_EQ(run.code, 4) << run.err;
    EXPECT_EQ(run.out, "from the job\n");
    EXPECT_EQ(run.err.find("has finished"), std::string::npos) << run.err;
    EXPECT_EQ(broker.requests().size(), 4u);
  }
  {
    // Attached while it ran, the stream came back empty.
    FakeBroker broker(Connections{
        {{protocol::Encode(submitted)}, {protocol::Encode(running), ""}, {ran}, {ran}}});
    Outcome run = Dispatch({"new", "--wait", "--", "sh", "-c", "echo from the job; exit 4"});
    EXPECT_EQ(run.code, 4) << run.err;
    EXPECT_EQ(run.out, "from the job\n");
    EXPECT_EQ(broker.requests().size(), 4u);
  }
  {
    // It never ran (a failed start is marked done before its delivery):
    // the file at its destination is not its output, so its reason is said.
    const std::string failed = finished(delivered, false);
    FakeBroker broker(Connections{
        {{protocol::Encode(submitted)}, {protocol::Encode(ended)}, {failed}, {failed}}});
    Outcome run = Dispatch({"new", "--wait", "--", "nosuchcmd"});
    EXPECT_EQ(run.code, 1) << run.err;
    EXPECT_EQ(run.out, "");
    EXPECT_NE(run.err.find("job 5 did not run: failed to start job: cannot execute nosuchcmd"),
              std::string::npos)
        << run.err;
  }
  {
    // Neither a directory nor a symlink is read: said on stderr, and the
    // job's status still decides the exit.
    ASSERT_EQ(::symlink(delivered.c_str(), (dir + "/link").c_str()), 0);
    for (const std::string& not_a_file : {dir, dir + "/link"}) {
      const std::string row = finished(not_a_file, true);
      FakeBroker broker(Connections{
          {{protocol::Encode(submitted)}, {protocol::Encode(running), ""}, {row}, {row}}});
      Outcome run = Dispatch({"new", "--wait", "--", "true"});
      EXPECT_EQ(run.code, 4);
      EXPECT_EQ(run.out, "");
      EXPECT_NE(run.err.find("dispatch: "), std::string::npos) << not_a_file << ": " << run.err;
    }
    ::unlink((dir + "/link").c_str());
  }
  ::unlink(delivered.c_str());
  ::rmdir(dir.c_str());
}

TEST(DispatchTest, JobFieldGetAndAdd) {
  {
    protocol::JobFieldReply reply;
    reply.value = 60;
    FakeBroker broker({protocol::Encode(reply)});
    EXPECT_EQ(Dispatch({"job", "7", "max-time", "get"}).out, "job 7 max-time 1m\n");
    auto sent = protocol::Decode<protocol::JobFieldRequest>(broker.request());
    ASSERT_TRUE(sent);
    EXPECT_EQ(sent->field, "max-time");
    EXPECT_EQ(sent->action, "get");
    EXPECT_FALSE(sent->value.has_value());
  }
  {
    protocol::JobFieldReply reply;
    reply.value = 172860;
    reply.before = 60;
    FakeBroker broker({protocol::Encode(reply)});
    EXPECT_EQ(Dispatch({"job", "7", "max-time", "add", "2d"}).out, "job 7 max-time 1m -> 2d1m\n");
    auto sent = protocol::Decode<protocol::JobFieldRequest>(broker.request());
    ASSERT_TRUE(sent);
    EXPECT_EQ(sent->action, "add");
    EXPECT_EQ(sent->value, 172800);
  }
}

TEST(DispatchTest, ConnectFailureMessage) {
  ::setenv("HPC_BATCH_SOCKET", "/nonexistent/hpcb.sock", 1);
  Outcome run = Dispatch({"list"});
  EXPECT_EQ(run.code, 1);
  EXPECT_EQ(run.err,
            "dispatch: cannot reach the hpc-batch daemon on /nonexistent/hpcb.sock (No such "
            "file or directory); is the service running?\n");
}

TEST(DispatchTest, UsageErrorsExitTwoWithoutConnecting) {
  ::setenv("HPC_BATCH_SOCKET", "/nonexistent/hpcb.sock", 1);
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{},
                                             {"new"},
                                             {"new", "--"},
                                             {"new", "--", "A=1"},
                                             {"new", "echo", "hi"},
                                             {"new", "--max-mem", "1G", "--", "x"},
                                             {"new", "--gpu-link", "SYS", "--", "x"},
                                             {"new", "--max-time", "1h30", "--", "x"},
                                             {"new", "--cpu", "two", "--", "x"},
                                             {"list", "extra"},
                                             {"kill"},
                                             {"attach", "abc"},
                                             {"job", "7"},
                                             {"job", "7", "max-time"},
                                             {"job", "7", "max-time", "set"},
                                             {"job", "7", "max-time", "frob"},
                                             {"job", "7", "bogus", "get"},
                                             {"bogus"}}) {
    Outcome run = Dispatch(args);
    std::string joined;
    for (const auto& a : args)
      joined += a + " ";
    EXPECT_EQ(run.code, 2) << joined << run.err;
    EXPECT_NE(run.err.find("usage: dispatch"), std::string::npos) << joined;
    EXPECT_EQ(run.err.find("cannot reach"), std::string::npos) << joined;
  }
}

// Worded as the original tool's argparse words them: flag, kind, value.
TEST(DispatchTest, BadValuesNameTheFlagAndTheValue) {
  ::setenv("HPC_BATCH_SOCKET", "/nonexistent/hpcb.sock", 1);
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"new", "--max-mem", "1G", "--", "x"}, "argument --max-mem: invalid float value: '1G'"},
      {{"new", "--cpu", "two", "--", "x"}, "argument --cpu: invalid int value: 'two'"},
      {{"new", "--gpu-cores", "1.5", "--", "x"}, "argument --gpu-cores: invalid int value: '1.5'"},
      {{"new", "--gpu-link", "SYS", "--", "x"},
       "argument --gpu-link: invalid choice: 'SYS' (choose from 'NV', 'PIX', 'PXB', 'PHB', "
       "'NODE')"},
      {{"attach", "abc"}, "argument ID: invalid job id: 'abc'"},
      {{"job", "7", "max-time", "frob"},
       "argument ACTION: invalid choice: 'frob' (choose from 'get', 'set', 'add')"},
      {{"job", "7", "bogus", "get"},
       "argument FIELD: invalid choice: 'bogus' (choose from 'max-time')"},
      {{"kill"}, "the following arguments are required: ID"},
      {{"new", "--max-mem"}, "argument --max-mem: expected one argument"},
  };
  for (const auto& [args, wording] : cases) {
    Outcome run = Dispatch(args);
    EXPECT_EQ(run.code, 2) << wording;
    EXPECT_NE(run.err.find("dispatch: error: " + wording + "\n"), std::string::npos) << run.err;
  }
}

TEST(DispatchTest, NoCommandMessage) {
  Outcome run = Dispatch({"new", "--cpu", "2", "--", "FOO=1"});
  EXPECT_EQ(run.code, 2);
  EXPECT_EQ(run.err,
            "usage: dispatch new [options] [NAME=VALUE...] -- CMD [ARGS...]\n"
            "dispatch: error: no command given after --\n");
}

// Only the subcommand named first is built: the list that decides it must
// name every subcommand the full help shows, and each must still answer
// --help and a usage error on its own.
TEST(DispatchTest, EachSubcommandIsBuiltWhenNamedFirst) {
  ::setenv("HPC_BATCH_SOCKET", "/nonexistent/hpcb.sock", 1);
  Outcome help = Dispatch({"--help"});
  ASSERT_EQ(help.code, 0);
  const std::size_t section = help.out.find("\nSubcommands:\n");
  ASSERT_NE(section, std::string::npos) << help.out;
  std::vector<std::string> listed;
  std::istringstream lines(help.out.substr(section + 14));
  for (std::string line; std::getline(lines, line) && line.rfind("  ", 0) == 0;) {
    std::istringstream words(line);
    std::string name;
    words >> name;
    listed.push_back(name);
  }
  EXPECT_EQ(listed, SubcommandNames());
  for (const std::string& name : SubcommandNames()) {
    Outcome sub_help = Dispatch({name, "--help"});
    EXPECT_EQ(sub_help.code, 0) << name << sub_help.err;
    EXPECT_NE(sub_help.out.find("Usage: dispatch " + name), std::string::npos) << sub_help.out;
    Outcome extra = Dispatch({name, "--no-such-flag"});
    EXPECT_EQ(extra.code, 2) << name;
    EXPECT_NE(extra.err.find("usage: dispatch"), std::string::npos) << name << extra.err;
    EXPECT_EQ(extra.err.find("cannot reach"), std::string::npos) << name << extra.err;
  }
}

TEST(DispatchTest, VersionAndHelp) {
  Outcome version = Dispatch({"--version"});
  EXPECT_EQ(version.code, 0);
  EXPECT_EQ(version.out, "dispatch 0.1.0\n");
  Outcome help = Dispatch({"--help"});
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("attach"), std::string::npos);
}

}  // namespace
}  // namespace hpcb::client

namespace hpcb::client {
namespace {

// A submission must fit the socket queue whole (protocol/queued_frame.h):
// the client says so itself instead of sending something never accepted.
TEST(TransportTest, OversizedRequestIsRefusedBeforeSending) {
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
  UniqueFd a(pair[0]), b(pair[1]);
  auto sent = Exchange(a.get(), std::string(200 * 1024, 'x'));
  ASSERT_FALSE(sent);
  EXPECT_NE(sent.error().message().find("at most 131072"), std::string::npos)
      << sent.error().message();
  char byte;
  EXPECT_LT(::recv(b.get(), &byte, 1, MSG_DONTWAIT), 0) << "nothing was sent";
}

}  // namespace
}  // namespace hpcb::client
