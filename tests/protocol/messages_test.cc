#include <gtest/gtest.h>

#include "protocol/client_messages.h"
#include "protocol/executor_messages.h"

namespace hpcb::protocol {
namespace {

SubmitRequest MinimalSubmit() {
  SubmitRequest r;
  r.argv = {"echo"};
  r.cwd = "/tmp";
  return r;
}

TEST(SubmitValidateTest, RefusesEmptyCommand) {
  SubmitRequest r = MinimalSubmit();
  r.argv.clear();
  EXPECT_EQ(r.Validate().error().message(), "no command given");
}

// The name a client sends reaches its job's environment and root's log
// lines: nothing in it may pass for something else there.
TEST(SubmitValidateTest, TheUserNameIsOneAsAccountsAreNamed) {
  for (const char* good : {"alice", "a.b-c_d", "svc@realm", "machine$", "uid1000"}) {
    SubmitRequest r = MinimalSubmit();
    r.user = good;
    EXPECT_TRUE(r.Validate()) << good;
  }
  for (const char* bad : {"al ice", "bob\nERROR forged", "-rf", "../x", "a$b", "x\x1b[31m"}) {
    SubmitRequest r = MinimalSubmit();
    r.user = bad;
    ASSERT_FALSE(r.Validate()) << bad;
    EXPECT_EQ(r.Validate().error().message(), "the submitter's user name is not one");
  }
  SubmitRequest r = MinimalSubmit();
  r.user = std::string(65, 'a');
  EXPECT_FALSE(r.Validate());
  r.user = "alice";
  r.home = "home/alice";
  EXPECT_FALSE(r.Validate()) << "a relative home";
}

TEST(SubmitValidateTest, RefusesRelativeCwdAndOutput) {
  SubmitRequest r = MinimalSubmit();
  r.cwd = "tmp";
  EXPECT_EQ(r.Validate().error().message(), "cwd must be absolute");
  r = MinimalSubmit();
  r.output = "out.log";
  EXPECT_EQ(r.Validate().error().message(), "output path must be absolute");
}

TEST(SubmitValidateTest, RefusesOversizedEnvironment) {
  SubmitRequest r = MinimalSubmit();
  r.env["BIG"] = std::string(300 * 1024, 'x');
  EXPECT_NE(r.Validate().error().message().find("environment is too large"), std::string::npos);
}

TEST(SubmitValidateTest, RefusesBadEnvNamesAndNul) {
  SubmitRequest r = MinimalSubmit();
  r.env["1FOO"] = "x";
  EXPECT_FALSE(r.Validate());
  r = MinimalSubmit();
  r.argv = {"echo", std::string("a\0b", 3)};
  EXPECT_FALSE(r.Validate());
}

TEST(SubmitValidateTest, RefusesAMemoryBudgetTooSmallToRunAnything) {
  SubmitRequest r = MinimalSubmit();
  r.max_mem_gb = 1e-300;  // rounds to zero bytes on the root side
  ASSERT_FALSE(r.Validate());
  EXPECT_EQ(r.Validate().error().message(), "--max-mem must be at least 0.001 (GiB)");
  r.max_mem_gb = 0.001;
  EXPECT_TRUE(r.Validate());
}

TEST(SubmitValidateTest, RefusesNonPositiveResourcesAndUnknownLinks) {
  SubmitRequest r = MinimalSubmit();
  r.max_time_s = 0;
  EXPECT_EQ(r.Validate().error().message(), "resource requests must be positive");
  r = MinimalSubmit();
  r.max_mem_gb = -1;
  EXPECT_FALSE(r.Validate());
  r = MinimalSubmit();
  r.min_gpu_link = "SYS";
  EXPECT_NE(r.Validate().error().message().find("--gpu-link"), std::string::npos);
  r.min_gpu_link = "NV";
  EXPECT_TRUE(r.Validate());
}

TEST(SubmitValidateTest, RefusesBadDependencies) {
  SubmitRequest r = MinimalSubmit();
  r.after = {3, 0};
  EXPECT_EQ(r.Validate().error().message(), "--after: job ids start at 1");
  r.after.assign(kMaxDependencies + 1, 7);
  EXPECT_NE(r.Validate().error().message().find("limit 64"), std::string::npos);
  r.after.clear();
  r.after_any = true;
  EXPECT_EQ(r.Validate().error().message(), "--after-any needs job ids");
  r.after = {3};
  EXPECT_TRUE(r.Validate());
}

TEST(SubmitValidateTest, TheNotifyCommandIsBoundedAndHasNoNul) {
  SubmitRequest r = MinimalSubmit();
  r.notify = "";
  EXPECT_FALSE(r.Validate());
  r.notify = std::string(kMaxNotifyBytes + 1, 'x');
  EXPECT_EQ(r.Validate().error().message(),
            "--notify's command must be 1 to 4096 bytes, without a NUL byte");
  r.notify = std::string("echo a") + '\0' + "b";
  EXPECT_FALSE(r.Validate());
  r.notify = std::string(kMaxNotifyBytes, 'x');
  EXPECT_TRUE(r.Validate());
}

TEST(ClientMessagesTest, TheNotifyCommandTravelsAndOldSubmissionsHaveNone) {
  SubmitRequest r = MinimalSubmit();
  r.notify = "notify-send \"$HPC_BATCH_JOB_ID\"";
  Result<SubmitRequest> decoded = Decode<SubmitRequest>(Encode(r));
  ASSERT_TRUE(decoded) << decoded.error().message();
  EXPECT_EQ(decoded->notify, r.notify);

  std::string old = Encode(MinimalSubmit());
  const std::string field = R"(,"notify":[])";
  ASSERT_NE(old.find(field), std::string::npos) << old;
  old.erase(old.find(field), field.size());
  Result<SubmitRequest> older = Decode<SubmitRequest>(old);
  ASSERT_TRUE(older) << older.error().message();
  EXPECT_FALSE(older->notify);
}

TEST(ClientMessagesTest, ListNamesAtMostSoManyIds) {
  ListRequest request;
  request.ids.assign(kMaxListIds, 1);
  EXPECT_TRUE(request.Validate());
  request.ids.push_back(1);
  EXPECT_EQ(request.Validate().error().message(), "list names 4097 jobs, limit 4096");
}

TEST(ClientMessagesTest, DependenciesTravelInTheSubmission) {
  SubmitRequest r = MinimalSubmit();
  r.after = {4, 9};
  r.after_any = true;
  Result<SubmitRequest> back = Decode<SubmitRequest>(Encode(r));
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(back->after, (std::vector<std::uint64_t>{4, 9}));
  EXPECT_TRUE(back->after_any);
}

TEST(ClientMessagesTest, AJobNameIsShortPlainAsciiWithoutSpacesSlashesOrCommas) {
  const std::vector<std::string> good = {"train", "run-2024.05_b", "a+b@host:3=x", "7",
                                         std::string(64, 'n')};
  for (const std::string& name : good)
    EXPECT_TRUE(CheckJobName(name)) << name;
  const std::vector<std::string> bad = {"",
                                        "-x",
                                        "two words",
                                        "a/b",
                                        "a,b",
                                        "tab\there",
                                        "caf\xc3\xa9",
                                        std::string(65, 'n'),
                                        std::string("nul\0x", 5)};
  for (const std::string& name : bad) {
    Result<void> checked = CheckJobName(name);
    ASSERT_FALSE(checked) << name;
    EXPECT_EQ(checked.error().message(),
              "a job name is 1 to 64 letters, digits and ._-+@:= (no spaces, '/' or ','), not "
              "starting with '-'");
  }
}

TEST(ClientMessagesTest, TheNameTravelsAndOldSubmissionsAndSpecsHaveNone) {
  SubmitRequest r = MinimalSubmit();
  r.name = "train";
  Result<SubmitRequest> back = Decode<SubmitRequest>(Encode(r));
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(back->name, "train");

  std::string old = Encode(MinimalSubmit());
  const std::string field = ",\"name\":[]";
  ASSERT_NE(old.find(field), std::string::npos) << old;
  old.erase(old.find(field), field.size());
  back = Decode<SubmitRequest>(old);
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(back->name, std::nullopt);

  std::string spec = Encode(JobSummary{});
  ASSERT_NE(spec.find(field), std::string::npos) << spec;
  spec.erase(spec.find(field), field.size());
  Result<JobSummary> summary = Decode<JobSummary>(spec);
  ASSERT_TRUE(summary) << summary.error().message();
  EXPECT_EQ(summary->name, std::nullopt);

  ListRequest list{false, true, {}, "a b"};
  EXPECT_EQ(list.Validate().error().message().rfind("field 'name': a job name", 0), 0u);
}

TEST(ClientMessagesTest, InfoDrainAndResumeAreBareRequests) {
  for (ClientCommand cmd : {ClientCommand::kInfo, ClientCommand::kDrain, ClientCommand::kResume}) {
    const std::string text = Encode(BareRequest{cmd});
    EXPECT_EQ(PeekCommand(text).value(), NameOf(cmd));
    Result<BareRequest> back = Decode<BareRequest>(text);
    ASSERT_TRUE(back);
    EXPECT_EQ(back->cmd, cmd);
  }
  Result<BareRequest> bad = Decode<BareRequest>(R"({"cmd":"reboot"})");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("field 'cmd' must be one of"), std::string::npos);
}

TEST(ClientMessagesTest, InfoReplyRoundTripsWithOptionalMemory) {
  InfoReply reply;
  reply.policy = "easy-backfill";
  reply.draining = true;
  reply.queued = 4;
  reply.waiting = 2;
  reply.running = 1;
  NodeInfo node;
  node.node = 1;
  node.cpus = {16, 2, 4, 10};
  node.mem_gib = Amounts<double>{64, 2, 8.5, 53.5};
  node.gpus = {2, 0, 1, 1};
  reply.nodes = {node};
  const std::string text = Encode(reply);
  Result<InfoReply> back = Decode<InfoReply>(text);
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(Encode(*back), text);
  EXPECT_NE(text.find(R"("cpus":{"total":16,"reserved":2,"in_use":4,"free":10})"),
            std::string::npos)
      << text;
  Result<DrainReply> drain = Decode<DrainReply>(Encode(DrainReply{true, false}));
  ASSERT_TRUE(drain);
  EXPECT_TRUE(drain->draining);
  EXPECT_FALSE(drain->changed);
}

TEST(ExecutorMessagesTest, StartJobRoundTripsAndValidates) {
  StartJob start{.id = 7, .placement = {.cpus = {0, 1}, .mems = {0}}, .memory_max = 1 << 30};
  auto out = Decode<StartJob>(Encode(start));
  ASSERT_TRUE(out);
  EXPECT_EQ(out->placement.cpus, (std::vector<int>{0, 1}));
  EXPECT_EQ(out->memory_max, 1u << 30);

  start.placement.cpus = {-1};
  EXPECT_FALSE(Decode<StartJob>(Encode(start)));
  start.placement.cpus = {};
  EXPECT_FALSE(Decode<StartJob>(Encode(start)));
}

TEST(ExecutorMessagesTest, SignalJobChecksTheSignalName) {
  SignalJob s{.req = 3, .id = 1, .signal = SignalKind::kKill, .note = SignalNote::kTimeout};
  Result<SignalJob> back = Decode<SignalJob>(Encode(s));
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(back->signal, SignalKind::kKill);
  EXPECT_EQ(back->note, SignalNote::kTimeout);
  EXPECT_EQ(back->req, 3u);
  Result<SignalJob> hup =
      Decode<SignalJob>(R"({"type":"signal","req":1,"id":1,"signal":"hup","note":"","limit_s":0})");
  ASSERT_FALSE(hup);
  EXPECT_EQ(hup.error().message(), "field 'signal' must be one of term or kill (not 'hup')");
}

TEST(ExecutorMessagesTest, EveryMessageCarriesItsKindAndReq) {
  Result<Envelope> envelope = PeekEnvelope(Encode(StartReply{.req = 42, .id = 7}));
  ASSERT_TRUE(envelope) << envelope.error().message();
  EXPECT_EQ(envelope->type, "start_reply");
  EXPECT_EQ(envelope->req, 42u);
  EXPECT_EQ(*KindOf<ExecutorKind>(*envelope), ExecutorKind::kStartReply);
  Result<ExecutorKind> unknown = KindOf<ExecutorKind>(Envelope{"format_disk", 1});
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message().find("format_disk"), std::string::npos);
  // Every kind's tag names it back, one to one.
  for (const auto& [kind, name] : EnumNames<ExecutorKind>::kNames) {
    EXPECT_EQ(FromName<ExecutorKind>(name), kind);
  }
  EXPECT_FALSE(PeekEnvelope(R"({"type":"start"})"));  // no req: not a message of ours
}

TEST(ExecutorMessagesTest, ErrorsCrossWithTheirCode) {
  Ack ack{.req = 1, .id = 2, .error = WireError::From(Error(ErrorCode::kPermissionDenied, "no"))};
  Result<Ack> back = Decode<Ack>(Encode(ack));
  ASSERT_TRUE(back);
  ASSERT_TRUE(back->error);
  EXPECT_EQ(back->error->ToError().code(), ErrorCode::kPermissionDenied);
  EXPECT_EQ(back->error->ToError().message(), "no");
  const WireError unknown_code{.code = 200, .message = "x"};
  EXPECT_EQ(unknown_code.ToError().code(), ErrorCode::kInternal);
}

TEST(ExecutorMessagesTest, StringsWithANulAreRefused) {
  // A submission whose second word is `word`, spelled as JSON.
  auto with_word = [](const std::string& word) {
    std::string text = Encode(MinimalSubmit());
    const std::string argv = R"("argv":["echo"])";
    text.replace(text.find(argv), argv.size(), R"("argv":["echo",")" + word + R"("])");
    return text;
  };
  Result<SubmitRequest> escaped = Decode<SubmitRequest>(with_word(R"(a\u0000b)"));
  ASSERT_FALSE(escaped);
  EXPECT_NE(escaped.error().message().find("NUL"), std::string::npos) << escaped.error().message();
  // An escaped backslash before "u0000" is text, not a NUL.
  Result<SubmitRequest> text = Decode<SubmitRequest>(with_word(R"(a\\u0000b)"));
  ASSERT_TRUE(text) << text.error().message();
  EXPECT_EQ(text->argv[1], R"(a\u0000b)");
  EXPECT_FALSE(Decode<SubmitRequest>(with_word(std::string("a\0b", 3))));
}

TEST(ExecutorMessagesTest, RegisterJobCarriesNothingToRun) {
  // Fields a broker might add are ignored, never stored.
  auto r = Decode<RegisterJob>(
      R"({"type":"register","req":9,"id":4,"start":[],"argv":["rm","-rf","/"],"uid":0})");
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(Encode(*r), R"({"type":"register","req":9,"id":4,"start":[]})");
}

TEST(ExecutorMessagesTest, HelloRefusesAnotherVersion) {
  Hello hello{.version = 99};
  EXPECT_FALSE(Decode<Hello>(Encode(hello)));
  EXPECT_EQ(PeekEnvelope(Encode(Hello{}))->type, "hello");
}

TEST(ExecutorMessagesTest, RegisterJobsStartIsAStartJobForTheSameId) {
  RegisterJob r{.id = 5};
  r.start = StartJob{.req = 8, .id = 5, .placement = {.cpus = {0}, .mems = {0}}};
  auto decoded = Decode<RegisterJob>(Encode(r));
  ASSERT_TRUE(decoded) << decoded.error().message();
  ASSERT_TRUE(decoded->start);
  EXPECT_EQ(decoded->start->placement.cpus, std::vector<int>{0});
  EXPECT_EQ(decoded->start->req, 8u);
  r.start->id = 6;
  auto other = Decode<RegisterJob>(Encode(r));
  ASSERT_FALSE(other);
  // The start's outcome may come on its own, so it needs a req to answer.
  r.start->id = 5;
  r.start->req = 0;
  auto unanswerable = Decode<RegisterJob>(Encode(r));
  ASSERT_FALSE(unanswerable);
  EXPECT_NE(unanswerable.error().message().find("start.req"), std::string::npos)
      << unanswerable.error().message();
}

TEST(ExecutorMessagesTest, ARegistrationsStartIsEitherEndedOrUnderWay) {
  RegisterReply reply{.id = 5};
  reply.starting = true;
  ASSERT_TRUE(Decode<RegisterReply>(Encode(reply)));
  EXPECT_TRUE(Decode<RegisterReply>(Encode(reply))->starting);
  reply.start = StartReply{.id = 5};
  EXPECT_FALSE(Decode<RegisterReply>(Encode(reply)));
}

TEST(ExecutorMessagesTest, RegisterJobNeedsAnId) {
  RegisterJob r{.id = 0};
  EXPECT_FALSE(Decode<RegisterJob>(Encode(r)));
  r.id = 3;
  EXPECT_TRUE(Decode<RegisterJob>(Encode(r)));
}

TEST(ReplyTest, ErrorReplyIsRecognised) {
  std::string text = Encode(ErrorReply::From(InvalidArgument("no such job 4")));
  EXPECT_FALSE(*PeekOk(text));
  auto err = Decode<ErrorReply>(text);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->error, "no such job 4");
}

}  // namespace
}  // namespace hpcb::protocol
