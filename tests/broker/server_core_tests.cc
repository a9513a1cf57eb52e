#include <gtest/gtest.h>

#include <string>

#include "broker/broker_core.h"
#include "protocol/client_messages.h"
#include "protocol/codec.h"
#include "tests/broker/server_fakes.h"

namespace hpcb::broker {
namespace {

class ServerCoreTest : public ::testing::Test {
 protected:
  ServerCoreTest() : scheduler_(2), permissions_(users_, "wheel") {
    users_.members["wheel"] = {1001};
    options_.max_lifetime_s = 3600;
    options_.keep_finished = 2;
  }

  void StartCore(QueueFile loaded = {}) {
    core_ = std::make_unique<BrokerCore>(options_, scheduler_, executor_, clock_, permissions_,
                                         nullptr);
    ASSERT_TRUE(core_->Start(std::move(loaded)));
  }

  std::string Call(uid_t uid, const std::string& text) {
    executor_.peer_uid = uid;
    std::optional<Response> response = HandleNow(Peer{uid, -1}, text);
    return response ? (response->frame.empty() ? "<closed>" : response->frame) : "<no answer>";
  }

  protocol::SubmitReply Submit(uid_t uid, std::int64_t cpu = 1,
                               std::optional<std::int64_t> max_time = std::nullopt) {
    protocol::SubmitRequest request;
    request.argv = {"sleep", "100"};
    request.cwd = "/tmp";
    request.cpu = cpu;
    request.max_time_s = max_time;
    request.output = "/tmp";
    std::string frame = Call(uid, protocol::Encode(request));
    Result<protocol::SubmitReply> reply = protocol::Decode<protocol::SubmitReply>(frame);
    EXPECT_TRUE(reply) << frame;
    return reply ? *reply : protocol::SubmitReply{};
  }

  // Starts the core and submits an array of one element (index 1) while
  // the root side refuses every start as "not now"; its id, or 0.
  std::uint64_t SubmitArrayOfOneWhileStartsAreNotNow() {
    StartCore();
    protocol::SubmitRequest request;
    request.argv = {"true"};
    request.cwd = "/tmp";
    request.cpu = 1;
    request.array = {1};
    executor_.start_error = "the state directory is full; the job stays queued";
    executor_.start_error_code = ErrorCode::kUnavailable;
    Result<protocol::SubmitReply> reply =
        protocol::Decode<protocol::SubmitReply>(Call(1000, protocol::Encode(request)));
    EXPECT_TRUE(reply);
    return reply ? reply->id : 0;
  }

  // Submits a one-cpu job that waits for `after` (any ending when
  // `any`); returns the reply frame.
  std::string SubmitAfter(uid_t uid, std::vector<std::uint64_t> after, bool any = false) {
    protocol::SubmitRequest request;
    request.argv = {"true"};
    request.cwd = "/tmp";
    request.cpu = 1;
    request.output = "/tmp";
    request.after = std::move(after);
    request.after_any = any;
    return Call(uid, protocol::Encode(request));
  }

  // An array of one-cpu `true` elements with these indices, its outputs
  // in /tmp.
  static protocol::SubmitRequest TrueArray(std::vector<std::uint32_t> indices) {
    protocol::SubmitRequest request;
    request.argv = {"true"};
    request.cwd = "/tmp";
    request.cpu = 1;
    request.output = "/tmp";
    request.output_is_dir = true;
    request.array = std::move(indices);
    return request;
  }

  void Exit(std::uint64_t id, std::int64_t code) {
    executor_.events.push_back({0, id, code, false, 0, std::nullopt});
    TickNow();
  }

  std::string Bare(uid_t uid, protocol::ClientCommand cmd) {
    return Call(uid, protocol::Encode(protocol::BareRequest{cmd}));
  }

  // Handles one request as the server's loop would: the executor answers,
  // then the turn's journal write releases the acknowledgments.
  std::optional<Response> HandleNow(const Peer& peer, const std::string& text) {
    std::optional<Response> answer;
    core_->Handle(peer, text, [&answer](Response response) { answer = std::move(response); });
    executor_.Flush();
    core_->Flush();
    return answer;
  }

  // A tick of the server's loop: timers and scheduling, the executor's
  // answers to what they sent, the turn's journal write.
  void TickNow() {
    core_->Tick();
    executor_.Flush();
    core_->Flush();
  }

  static std::string ErrorOf(const std::string& frame) {
    Result<protocol::ErrorReply> error = protocol::Decode<protocol::ErrorReply>(frame);
    return error ? error->error : "not an error: " + frame;
  }

  std::string Kill(uid_t uid, std::uint64_t id) {
    return Call(uid, protocol::Encode(protocol::JobIdRequest{protocol::ClientCommand::kKill, id}));
  }

  protocol::ListReply List(uid_t uid, bool all, bool finished) {
    Result<protocol::ListReply> reply = protocol::Decode<protocol::ListReply>(
        Call(uid, protocol::Encode(protocol::ListRequest{all, finished})));
    EXPECT_TRUE(reply);
    return reply ? *reply : protocol::ListReply{};
  }

  FakeUserDb users_;
  FakeExecutor executor_;
  FakeScheduler scheduler_;
  FakeClock clock_{1000};
  Permissions permissions_;
  CoreOptions options_;
  std::unique_ptr<BrokerCore> core_;
};

TEST_F(ServerCoreTest, SubmitRegistersDefaultsAndStarts) {
  StartCore();
  protocol::SubmitReply reply = Submit(1000);
  EXPECT_EQ(reply.id, 1u);
  EXPECT_EQ(reply.state, JobState::kRunning);
  EXPECT_EQ(reply.max_time_s, 3600);
  EXPECT_EQ(reply.max_mem_gb, 2.5);
  EXPECT_TRUE(reply.mem_defaulted);
  EXPECT_EQ(reply.output_dest, "/tmp/output.1.log");
  ASSERT_EQ(executor_.registered.size(), 1u);
  ASSERT_EQ(executor_.started.size(), 1u);
  EXPECT_EQ(executor_.started[0].memory_max, std::uint64_t{2684354560});
  EXPECT_EQ(core_->Find(1)->user, "alice");
}

TEST_F(ServerCoreTest, AJobThatFitsIsStartedByItsRegistration) {
  StartCore();
  EXPECT_EQ(Submit(1000, 2).state, JobState::kRunning);
  EXPECT_EQ(Submit(1000, 1).state, JobState::kQueued);
  ASSERT_EQ(executor_.registered.size(), 2u);
  ASSERT_TRUE(executor_.registered[0].start) << "placed at once: one message registers and starts";
  EXPECT_EQ(executor_.registered[0].start->id, 1u);
  EXPECT_EQ(executor_.registered[0].start->placement.cpus, (std::vector<int>{0, 1}));
  EXPECT_FALSE(executor_.registered[1].start) << "a job that must wait is only registered";
  EXPECT_EQ(executor_.started.size(), 1u);
}

// dispatch could not find the command: the job is registered (its id is
// the root side's too), then ended at once and forgotten there; its cpus
// go to the next job.
TEST_F(ServerCoreTest, ACommandDispatchCannotExecuteEndsTheJobAtOnce) {
  StartCore();
  protocol::SubmitRequest request;
  request.argv = {"./bench.sh"};
  request.cwd = "/tmp";
  request.cpu = 2;
  request.output = "/tmp";
  request.exec_error = "cannot execute ./bench.sh: No such file or directory";
  const std::string frame = Call(1000, protocol::Encode(request));
  Result<protocol::SubmitReply> reply = protocol::Decode<protocol::SubmitReply>(frame);
  ASSERT_TRUE(reply) << frame;
  EXPECT_EQ(reply->id, 1u);
  EXPECT_EQ(reply->state, JobState::kDone);
  EXPECT_EQ(reply->start_error, request.exec_error);
  ASSERT_EQ(executor_.registered.size(), 1u);
  EXPECT_FALSE(executor_.registered[0].start) << "it must not be started";
  EXPECT_EQ(executor_.forgotten, std::vector<std::uint64_t>{1});
  ASSERT_NE(core_->Find(1), nullptr);
  EXPECT_EQ(core_->Find(1)->reason, protocol::JobReason::kError);
  EXPECT_EQ(core_->Find(1)->detail, "failed to start: " + *request.exec_error);
  EXPECT_EQ(Submit(1000, 2).state, JobState::kRunning) << "its cpus were not kept";
}

TEST_F(ServerCoreTest, AnOlderJobTheSamePassPlacesIsStartedFirst) {
  StartCore();
  EXPECT_EQ(Submit(1000, 2).state, JobState::kRunning);
  EXPECT_EQ(Submit(1000, 1).state, JobState::kQueued);
  core_->OnExited({0, 1, 0, false, 1005, std::nullopt});  // frees both cpus; no pass yet
  EXPECT_EQ(Submit(1000, 1).state, JobState::kRunning);
  EXPECT_EQ(core_->Find(2)->state, JobState::kRunning);
  ASSERT_EQ(executor_.started.size(), 3u);
  EXPECT_EQ(executor_.started[1].id, 2u) << "the older job starts before the new one";
  EXPECT_EQ(executor_.started[2].id, 3u);
  EXPECT_EQ(scheduler_.free_cpus(), 0);
}

// A start whose answer never came is settled by asking the executor
// (ReconcileStart). Its answer frees the placement: a job that never
// started is placed again, and one that ended gives its cpus to the next,
// in that turn, not at the next second's tick.
TEST_F(ServerCoreTest, AStartFoundNeverMadeIsPlacedAgainAtOnce) {
  StartCore();
  EXPECT_EQ(Submit(1000, 2).state, JobState::kRunning);
  EXPECT_EQ(Submit(1000, 2).state, JobState::kQueued);
  executor_.starts_lost = 1;
  executor_.hello.registered = {2};  // what the executor tells of job 2
  core_->OnExited({0, 1, 0, false, 1005, std::nullopt});
  core_->AfterExits();  // places job 2; its start's answer is lost
  executor_.Flush();    // the lost answer, then the executor's word: never started
  ASSERT_EQ(executor_.started.size(), 3u) << "job 2 is started again without waiting for a tick";
  EXPECT_EQ(executor_.started[2].id, 2u);
  EXPECT_EQ(core_->Find(2)->state, JobState::kRunning);
}

TEST_F(ServerCoreTest, AStartFoundEndedGivesItsCpusToTheNextAtOnce) {
  StartCore();
  EXPECT_EQ(Submit(1000, 2).state, JobState::kRunning);
  EXPECT_EQ(Submit(1000, 2).state, JobState::kQueued);
  EXPECT_EQ(Submit(1000, 2).state, JobState::kQueued);
  executor_.starts_lost = 1;
  executor_.hello.exited = {2};
  core_->OnExited({0, 1, 0, false, 1005, std::nullopt});
  core_->AfterExits();
  executor_.Flush();
  EXPECT_TRUE(core_->Find(2)->done());
  ASSERT_EQ(executor_.started.size(), 3u) << "job 3 gets job 2's cpus without waiting for a tick";
  EXPECT_EQ(executor_.started[2].id, 3u);
  EXPECT_EQ(core_->Find(3)->state, JobState::kRunning);
}

// A job whose processes are gone while its output is still on its way
// (a slow filesystem, a delivery helper its user stopped) gives its cpus
// back at once; it is done only when the delivery is.
TEST_F(ServerCoreTest, AJobWhoseOutputIsStillBeingDeliveredGivesBackItsCpus) {
  StartCore();
  EXPECT_EQ(Submit(1000, 2).state, JobState::kRunning);
  EXPECT_EQ(Submit(1000, 2).state, JobState::kQueued);
  protocol::JobExited delivering{0, 1, 0, false, 1005, std::nullopt};
  delivering.delivering = true;
  core_->OnExited(delivering);
  core_->AfterExits();  // as the loop does after a turn's events
  executor_.Flush();
  EXPECT_EQ(core_->Find(1)->state, JobState::kRunning) << "done only once delivered";
  EXPECT_EQ(core_->Find(2)->state, JobState::kRunning) << "the cpus went to the next job";
  EXPECT_EQ(ErrorOf(Kill(1000, 1)), "job 1 already finished") << "nothing is left to signal";
  clock_.Advance(1000000);
  TickNow();
  for (const protocol::SignalJob& signal : executor_.signals) {
    EXPECT_NE(signal.id, 1u) << "a job that ended is past its timers";
  }
  core_->OnExited({0, 1, 0, false, 1006, std::nullopt});
  EXPECT_EQ(core_->Find(1)->state, JobState::kDone);
  EXPECT_EQ(core_->Find(1)->exit_code, 0);
  EXPECT_EQ(scheduler_.free_cpus(), 0) << "job 2 still holds its own";
}

// The executor holds a start's answer until its turn's flush, and its
// release of a job that ended at once comes in order after it; but a
// start whose answer was late or lost (asked again by ReconcileStart)
// can still hear of the end first. The release is kept until the start
// is known: the cpus go to the next job, and the ended one gets no timer.
TEST_F(ServerCoreTest, AReleaseAheadOfTheStartAnswerIsAppliedOnceTheStartIsKnown) {
  StartCore();
  executor_.hold_answers = true;
  protocol::SubmitRequest request;
  request.argv = {"true"};
  request.cwd = "/tmp";
  request.cpu = 2;
  request.max_time_s = 10;
  std::optional<Response> answer;
  core_->Handle(Peer{1000, -1}, protocol::Encode(request),
                [&answer](Response response) { answer = std::move(response); });
  ASSERT_EQ(executor_.pending.size(), 2u);
  auto start_answer = std::move(executor_.pending[1]);
  executor_.pending.pop_back();
  executor_.hold_answers = false;
  executor_.Flush();  // the registration's answer only
  core_->Flush();
  ASSERT_TRUE(answer);
  EXPECT_EQ(Submit(1000, 2).state, JobState::kQueued);
  protocol::JobExited delivering{0, 1, 0, false, 1005, std::nullopt};
  delivering.delivering = true;
  core_->OnExited(delivering);
  core_->AfterExits();
  EXPECT_EQ(core_->Find(2)->state, JobState::kQueued) << "released before job 1 was known to run";
  start_answer();
  executor_.Flush();  // the start the freed cpus allowed
  core_->Flush();
  EXPECT_EQ(core_->Find(1)->state, JobState::kRunning) << "done only once delivered";
  EXPECT_EQ(core_->Find(2)->state, JobState::kRunning) << "job 1's cpus were not given back";
  clock_.Advance(100);
  TickNow();
  for (const protocol::SignalJob& signal : executor_.signals)
    EXPECT_NE(signal.id, 1u) << "a job that ended got a time-limit signal";
  EXPECT_NE(core_->Find(1)->reason, JobReason::kTimeout);
}

// A list goes out in pages of about 1 MiB, the next built only when asked
// (the server asks once the last is written): each job once, in order.
TEST_F(ServerCoreTest, AListLargerThanAPageComesInPagesThatJoinUp) {
  StartCore();
  protocol::SubmitRequest request;
  request.argv = {"true", std::string(100 * 1024, 'y')};
  request.cwd = "/tmp";
  request.cpu = 1;
  request.output = "/tmp";
  for (int i = 0; i < 24; ++i) {
    const std::string reply = Call(1000, protocol::Encode(request));
    ASSERT_TRUE(protocol::Decode<protocol::SubmitReply>(reply)) << reply.substr(0, 300);
  }
  std::optional<Response> first =
      HandleNow(Peer{1000, -1}, protocol::Encode(protocol::ListRequest{false, true, {}}));
  ASSERT_TRUE(first);
  Result<protocol::ListReply> page = protocol::Decode<protocol::ListReply>(first->frame);
  ASSERT_TRUE(page) << first->frame.substr(0, 200);
  EXPECT_TRUE(page->more);
  ASSERT_TRUE(first->list) << "no cursor for the pages that follow";
  EXPECT_LT(first->frame.size(), std::size_t{2} << 20) << "a page is about 1 MiB";
  std::vector<std::uint64_t> ids;
  for (const protocol::JobRow& row : page->jobs)
    ids.push_back(row.id);
  ListCursor cursor = *first->list;
  for (bool more = true; more;) {
    Result<protocol::ListReply> next =
        protocol::Decode<protocol::ListReply>(core_->ListPage(cursor, &more));
    ASSERT_TRUE(next);
    EXPECT_EQ(next->more, more);
    for (const protocol::JobRow& row : next->jobs)
      ids.push_back(row.id);
  }
  std::vector<std::uint64_t> expected;
  for (std::uint64_t id = 1; id <= 24; ++id)
    expected.push_back(id);
  EXPECT_EQ(ids, expected);
}

TEST_F(ServerCoreTest, ARefusedRegistrationGivesItsPlacementBack) {
  StartCore();
  executor_.register_error = "cannot save output there: no";
  protocol::SubmitRequest request;
  request.argv = {"true"};
  request.cwd = "/";
  request.cpu = 2;
  EXPECT_EQ(ErrorOf(Call(1000, protocol::Encode(request))), "cannot save output there: no");
  ASSERT_TRUE(executor_.registered.back().start);
  EXPECT_EQ(scheduler_.free_cpus(), 2);
  executor_.register_error.reset();
  EXPECT_EQ(Submit(1000, 2).state, JobState::kRunning);
}

TEST_F(ServerCoreTest, AFailedStartDroppedByRetentionStillGetsItsReply) {
  options_.keep_finished = 0;
  scheduler_.backfill = true;
  StartCore();
  EXPECT_EQ(Submit(1000, 1).state, JobState::kRunning);
  EXPECT_EQ(Submit(1000, 2).state, JobState::kQueued);  // waits behind the first
  executor_.start_error = "cannot enter the working directory";
  executor_.start_refused_early = true;           // answered with the registration
  protocol::SubmitReply reply = Submit(1000, 1);  // backfilled, fails, dropped at once
  EXPECT_EQ(reply.id, 3u);
  EXPECT_EQ(reply.state, JobState::kDone);
  executor_.Flush();  // the answer to its forget
  EXPECT_EQ(core_->Find(3), nullptr);
  EXPECT_EQ(scheduler_.free_cpus(), 1);
  executor_.start_refused_early = false;  // answered on its own, after
  reply = Submit(1000, 1);
  EXPECT_EQ(reply.id, 4u);
  EXPECT_EQ(reply.state, JobState::kRunning);  // its start was under way
  executor_.Flush();
  EXPECT_EQ(core_->Find(4), nullptr);
  EXPECT_EQ(scheduler_.free_cpus(), 1);
}

TEST_F(ServerCoreTest, MaxTimeIsClampedToLifetime) {
  StartCore();
  EXPECT_EQ(Submit(1000, 1, 7200).max_time_s, 3600);
  EXPECT_EQ(Submit(1000, 1, 60).max_time_s, 60);
}

// A job that starts at once is told its placement; a queued one what the
// scheduler would grant it.
TEST_F(ServerCoreTest, SubmitReplySaysWhatTheCpusBecame) {
  scheduler_.threads_per_core = 2;
  StartCore();
  protocol::SubmitReply started = Submit(1000, 2);
  EXPECT_EQ(started.state, JobState::kRunning);
  EXPECT_EQ(started.cpu, 2);
  EXPECT_EQ(started.granted_cpus, 2);
  EXPECT_EQ(started.granted_cores, 2);
  protocol::SubmitReply queued = Submit(1000, 1);
  EXPECT_EQ(queued.state, JobState::kQueued);
  EXPECT_EQ(queued.cpu, 1);
  EXPECT_EQ(queued.granted_cpus, 2);
  EXPECT_EQ(queued.granted_cores, 1);
}

TEST_F(ServerCoreTest, SubmitErrors) {
  StartCore();
  protocol::SubmitRequest big;
  big.argv = {"true"};
  big.cwd = "/";
  big.cpu = 3;
  EXPECT_EQ(ErrorOf(Call(1000, protocol::Encode(big))),
            "--cpu 3 exceeds the 2 cores available to jobs");
  executor_.register_error = "cannot save output there: PermissionError: cannot write to /x";
  big.cpu = 1;
  EXPECT_EQ(ErrorOf(Call(1000, protocol::Encode(big))),
            "cannot save output there: PermissionError: cannot write to /x");
  EXPECT_EQ(core_->Find(1), nullptr);
  EXPECT_EQ(ErrorOf(Call(1000, "{\"cmd\":\"frobnicate\"}")), "unknown command 'frobnicate'");
  EXPECT_EQ(Call(1000, "[1,2]"), "<closed>");
  EXPECT_EQ(Call(1000, "not json"), "<closed>");
}

// The executor learns the machine's GPUs from the broker's hello (root
// never runs nvidia-smi).
TEST_F(ServerCoreTest, HelloTellsTheExecutorTheMachinesGpus) {
  options_.gpu_count = 3;
  StartCore();
  EXPECT_EQ(executor_.hello_gpu_count, 3);
}

TEST_F(ServerCoreTest, UserModeOnlyRunsItsOwnUid) {
  options_.only_uid = 1000;
  StartCore();
  protocol::SubmitRequest request;
  request.argv = {"true"};
  request.cwd = "/";
  EXPECT_EQ(ErrorOf(Call(0, protocol::Encode(request))),
            "daemon is not running as root; it can only run your own jobs");
}

TEST_F(ServerCoreTest, QueuedJobsStartWhenResourcesFree) {
  StartCore();
  EXPECT_EQ(Submit(1000, 2).state, JobState::kRunning);
  EXPECT_EQ(Submit(1000, 1).state, JobState::kQueued);
  executor_.events.push_back({0, 1, 0, false, 1005, std::nullopt});
  TickNow();
  EXPECT_EQ(core_->Find(1)->state, JobState::kDone);
  EXPECT_EQ(core_->Find(1)->exit_code, 0);
  EXPECT_EQ(core_->Find(2)->state, JobState::kRunning);
}

TEST_F(ServerCoreTest, StartFailureFinishesWithError) {
  StartCore();
  executor_.start_error = "No such file or directory";
  // The spawn failed after the registration was answered: the user heard
  // "running", and the job then ends in error.
  protocol::SubmitReply reply = Submit(1000);
  EXPECT_EQ(reply.state, JobState::kRunning);
  EXPECT_EQ(core_->Find(1)->state, JobState::kDone);
  EXPECT_EQ(core_->Find(1)->reason, JobReason::kError);
  EXPECT_EQ(core_->Find(1)->detail, "No such file or directory");
  EXPECT_FALSE(core_->Find(1)->start_time);
  EXPECT_EQ(scheduler_.free_cpus(), 2);
  // Refused before the spawn, the start's end comes with the registration.
  executor_.start_refused_early = true;
  reply = Submit(1000);
  EXPECT_EQ(reply.state, JobState::kDone);
  EXPECT_EQ(core_->Find(2)->reason, JobReason::kError);
  EXPECT_EQ(scheduler_.free_cpus(), 2);
}

TEST_F(ServerCoreTest, AJobTakenBackWhileItsSpawnIsUnderWayIsKilledOnceItRuns) {
  StartCore();
  executor_.peer_uid = 2000;  // the executor sees another uid on the connection
  protocol::SubmitRequest request;
  request.argv = {"true"};
  request.cwd = "/";
  std::optional<Response> response = HandleNow(Peer{1000, -1}, protocol::Encode(request));
  ASSERT_TRUE(response);
  EXPECT_NE(response->frame.find("another uid"), std::string::npos) << response->frame;
  EXPECT_EQ(core_->Find(1), nullptr);
  // One kill when taken back (refused by a real executor: not running
  // yet), and one once its start reported it running.
  std::size_t kills = 0;
  for (const protocol::SignalJob& signal : executor_.signals)
    kills += signal.id == 1 && signal.signal == protocol::SignalKind::kKill;
  EXPECT_EQ(kills, 2u);
}

TEST_F(ServerCoreTest, AStartUnderWayIsCompletedByItsOwnAnswer) {
  StartCore();
  executor_.hold_answers = true;
  protocol::SubmitRequest request;
  request.argv = {"true"};
  request.cwd = "/";
  std::optional<Response> answer;
  core_->Handle(Peer{1000, -1}, protocol::Encode(request),
                [&answer](Response response) { answer = std::move(response); });
  ASSERT_EQ(executor_.pending.size(), 2u);  // the registration's answer, then the start's
  executor_.pending[0]();
  core_->Flush();
  ASSERT_TRUE(answer);
  Result<protocol::SubmitReply> reply = protocol::Decode<protocol::SubmitReply>(answer->frame);
  ASSERT_TRUE(reply) << answer->frame;
  EXPECT_EQ(reply->state, JobState::kRunning);
  // Acknowledged and on record, but not yet known to run.
  EXPECT_EQ(core_->Find(1)->state, JobState::kQueued);
  EXPECT_TRUE(core_->Find(1)->holds_placement);
  // Attached meanwhile (`new --wait`), it is running, as its answer said.
  std::optional<Response> attached;
  core_->Handle(Peer{1000, -1},
                protocol::Encode(protocol::JobIdRequest{protocol::ClientCommand::kAttach, 1}),
                [&attached](Response response) { attached = std::move(response); });
  ASSERT_TRUE(attached);
  Result<protocol::AttachReply> attach = protocol::Decode<protocol::AttachReply>(attached->frame);
  ASSERT_TRUE(attach) << attached->frame;
  EXPECT_EQ(attach->state, JobState::kRunning);
  executor_.pending[1]();
  EXPECT_EQ(core_->Find(1)->state, JobState::kRunning);
  EXPECT_EQ(scheduler_.free_cpus(), 1);
}

TEST_F(ServerCoreTest, KillQueuedRemovesAndForgets) {
  StartCore();
  Submit(1000, 2);
  Submit(1000, 1);
  Result<protocol::KillReply> reply = protocol::Decode<protocol::KillReply>(Kill(1000, 2));
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->state, protocol::KillOutcome::kRemoved);
  EXPECT_EQ(executor_.forgotten, std::vector<std::uint64_t>{2});
  EXPECT_EQ(core_->Find(2)->reason, JobReason::kKilled);
  EXPECT_EQ(ErrorOf(Kill(1000, 2)), "job 2 already finished");
}

TEST_F(ServerCoreTest, KillRunningEscalatesAndRepeatsDoNotPostpone) {
  StartCore();
  Submit(1000);
  Result<protocol::KillReply> reply = protocol::Decode<protocol::KillReply>(Kill(1000, 1));
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->state, protocol::KillOutcome::kKilling);
  ASSERT_EQ(executor_.signals.size(), 1u);
  EXPECT_EQ(executor_.signals[0].signal, protocol::SignalKind::kTerm);
  clock_.Advance(6);
  Kill(1000, 1);
  EXPECT_EQ(executor_.signals.size(), 1u);
  clock_.Advance(4);
  TickNow();
  ASSERT_EQ(executor_.signals.size(), 2u);
  EXPECT_EQ(executor_.signals[1].signal, protocol::SignalKind::kKill);
  clock_.Advance(10);
  TickNow();
  EXPECT_EQ(executor_.signals.size(), 3u);
  executor_.events.push_back({0, 1, -9, false, 0, std::nullopt});
  TickNow();
  EXPECT_EQ(core_->Find(1)->reason, JobReason::kKilled);
  EXPECT_EQ(core_->Find(1)->exit_code, -9);
  EXPECT_EQ(scheduler_.free_cpus(), 2);
}

TEST_F(ServerCoreTest, TimeoutSendsTermWithNote) {
  StartCore();
  Submit(1000, 1, 3);
  clock_.Advance(3);
  TickNow();
  EXPECT_TRUE(executor_.signals.empty());
  clock_.Advance(1);
  TickNow();
  ASSERT_EQ(executor_.signals.size(), 1u);
  EXPECT_EQ(executor_.signals[0].note, protocol::SignalNote::kTimeout);
  EXPECT_EQ(executor_.signals[0].limit_s, 3);
  EXPECT_EQ(core_->Find(1)->reason, JobReason::kTimeout);
  Kill(1000, 1);
  EXPECT_EQ(core_->Find(1)->reason, JobReason::kTimeout);
}

TEST_F(ServerCoreTest, OomExitIsReported) {
  StartCore();
  Submit(1000);
  executor_.events.push_back({0, 1, -9, true, 0, std::string("could not save")});
  TickNow();
  EXPECT_EQ(core_->Find(1)->reason, JobReason::kOom);
  EXPECT_EQ(core_->Find(1)->output_error, "could not save");
}

// The broker keeps a kept output's retries (output_retries.h): 10 s after
// the failed delivery, then twice as long each time, until it is delivered.
TEST_F(ServerCoreTest, AKeptOutputIsAskedForAgainAfterABackOffUntilDelivered) {
  StartCore();
  Submit(1000);
  executor_.events.push_back({0, 1, 0, false, 0, std::string("could not save output")});
  TickNow();
  EXPECT_EQ(core_->Find(1)->output_error, "could not save output");
  // A failed try is followed by a look at the executor's record.
  executor_.hello.exited = {1};
  executor_.summaries[1].output_dest = "/tmp/output.1.log";
  executor_.summaries[1].output_error = "still closed";
  executor_.deliver_again_error = "still closed";
  clock_.Advance(9);
  TickNow();
  EXPECT_TRUE(executor_.delivered_again.empty());
  clock_.Advance(1);
  TickNow();
  ASSERT_EQ(executor_.delivered_again.size(), 1u);
  EXPECT_EQ(core_->Find(1)->output_error, "still closed");
  clock_.Advance(19);
  TickNow();
  EXPECT_EQ(executor_.delivered_again.size(), 1u) << "the second wait is 20 s";
  executor_.deliver_again_error.reset();
  clock_.Advance(1);
  TickNow();
  ASSERT_EQ(executor_.delivered_again.size(), 2u);
  EXPECT_FALSE(core_->Find(1)->output_error);
  EXPECT_EQ(core_->Find(1)->output_dest, "/tmp/output.1.log");
  clock_.Advance(3600);
  TickNow();
  EXPECT_EQ(executor_.delivered_again.size(), 2u) << "delivered: no more tries";
}

// A try that failed, or was not answered in time, while the executor
// delivered the copy after all: its record says so, and no more is asked.
TEST_F(ServerCoreTest, ARetryThatFindsTheOutputDeliveredStopsAsking) {
  StartCore();
  Submit(1000);
  executor_.events.push_back({0, 1, 0, false, 0, std::string("could not save output")});
  TickNow();
  executor_.hello.exited = {1};
  executor_.summaries[1].output_dest = "/tmp/elsewhere.log";
  executor_.deliver_again_error = "no output is kept for this job";
  clock_.Advance(10);
  TickNow();
  ASSERT_EQ(executor_.delivered_again.size(), 1u);
  EXPECT_FALSE(core_->Find(1)->output_error);
  EXPECT_EQ(core_->Find(1)->output_dest, "/tmp/elsewhere.log");
  clock_.Advance(3600);
  TickNow();
  EXPECT_EQ(executor_.delivered_again.size(), 1u);
}

TEST_F(ServerCoreTest, AnOutputOverTheDeliveryLimitIsNotAskedForAgain) {
  StartCore();
  Submit(1000);
  executor_.events.push_back(
      {0, 1, 0, false, 0, std::string("the output is over the delivery limit (1 MiB)")});
  TickNow();
  clock_.Advance(3600);
  TickNow();
  EXPECT_TRUE(executor_.delivered_again.empty());
}

TEST_F(ServerCoreTest, AHeldJobIsPassedByUntilReleasedAndOnlyItsOwnerOrAnAdminHoldsIt) {
  StartCore();
  Submit(1000, 2);  // runs, on both cpus
  Submit(1000, 1);
  Submit(1002, 1);
  auto ask = [&](uid_t uid, std::uint64_t id, protocol::ClientCommand command) {
    return Call(uid, protocol::Encode(protocol::JobIdRequest{command, id}));
  };
  const auto kHold = protocol::ClientCommand::kHold;
  const auto kRelease = protocol::ClientCommand::kRelease;
  EXPECT_EQ(ErrorOf(ask(1002, 2, kHold)), "job 2 belongs to alice");
  Result<protocol::HoldReply> held = protocol::Decode<protocol::HoldReply>(ask(1000, 2, kHold));
  ASSERT_TRUE(held);
  EXPECT_TRUE(held->held && held->changed);
  held = protocol::Decode<protocol::HoldReply>(ask(1001, 3, kHold));  // an admin's
  ASSERT_TRUE(held);
  EXPECT_TRUE(held->held && held->changed);
  EXPECT_EQ(ErrorOf(ask(1000, 1, kHold)),
            "job 1 is running; only a queued job can be held or released");
  Exit(1, 0);
  EXPECT_EQ(core_->Find(2)->state, JobState::kQueued);
  EXPECT_EQ(core_->Find(3)->state, JobState::kQueued);
  protocol::ListReply listed = List(1000, false, false);
  ASSERT_EQ(listed.jobs.size(), 1u);
  EXPECT_TRUE(listed.jobs[0].held);

  Result<protocol::HoldReply> released =
      protocol::Decode<protocol::HoldReply>(ask(1000, 2, kRelease));
  ASSERT_TRUE(released);
  EXPECT_FALSE(released->held);
  EXPECT_TRUE(released->changed);
  TickNow();
  EXPECT_EQ(core_->Find(2)->state, JobState::kRunning);
  EXPECT_EQ(core_->Find(3)->state, JobState::kQueued) << "still held";
  EXPECT_EQ(ErrorOf(ask(1000, 2, kRelease)),
            "job 2 is running; only a queued job can be held or released");
}

// --array: one registration; an element record per index, ids after the
// array's; each element is made on the root side by its start (StartJob
// carries the array and index); `%N` caps how many run; kill and hold of
// the array's id reach every element; once no element needs the array's
// spec, the root side forgets it; the per-user cap counts elements.
TEST_F(ServerCoreTest, AnArrayIsRegisteredOnceAndItsElementsStartOneByOneUnderItsThrottle) {
  options_.max_queued_per_user = 5;
  StartCore();
  auto submit_array = [&](std::vector<std::uint32_t> indices, std::optional<std::uint32_t> limit,
                          bool output_is_dir = true) {
    protocol::SubmitRequest request;
    request.argv = {"sleep", "100"};
    request.cwd = "/tmp";
    request.cpu = 1;
    request.output = "/tmp";
    request.output_is_dir = output_is_dir;
    request.array = std::move(indices);
    request.array_throttle = limit;
    return Call(1000, protocol::Encode(request));
  };
  EXPECT_EQ(ErrorOf(submit_array({3, 1}, std::nullopt)),
            "field 'array': array indices must be strictly increasing");
  EXPECT_EQ(ErrorOf(submit_array({1, 2}, std::nullopt, /*output_is_dir=*/false)),
            "field 'array': an array's --output and --error must name directories");
  EXPECT_NE(ErrorOf(submit_array({1, 2, 3, 4, 5, 6}, std::nullopt))
                .find("this array has 6 elements, more than the 5 one user may have queued"),
            std::string::npos);
  Result<protocol::SubmitReply> reply =
      protocol::Decode<protocol::SubmitReply>(submit_array({2, 4, 6}, 1));
  ASSERT_TRUE(reply);
  const std::uint64_t array = reply->id;
  EXPECT_EQ(reply->array_elements, 3u);
  EXPECT_EQ(reply->output_dest, "/tmp/output." + std::to_string(array) + ".log");
  ASSERT_EQ(executor_.registered.size(), 1u);
  EXPECT_FALSE(executor_.registered[0].start) << "an array never starts itself";
  TickNow();
  // Two cpus are free, but %1 lets one element run.
  ASSERT_EQ(executor_.started.size(), 1u);
  EXPECT_EQ(executor_.started[0].id, array + 1);
  EXPECT_EQ(executor_.started[0].array, array);
  EXPECT_EQ(executor_.started[0].array_index, 2u);
  EXPECT_EQ(core_->Find(array + 1)->output_dest, "/tmp/output." + std::to_string(array) + "_2.log");
  protocol::ListReply listed = List(1000, false, false);
  ASSERT_EQ(listed.jobs.size(), 3u);
  EXPECT_EQ(listed.jobs[2].array_id, array);
  EXPECT_EQ(listed.jobs[2].array_index, 6u);
  // A list of the array's id is a list of its elements.
  Result<protocol::ListReply> by_id = protocol::Decode<protocol::ListReply>(
      Call(1000, protocol::Encode(protocol::ListRequest{false, true, {array}})));
  ASSERT_TRUE(by_id);
  EXPECT_EQ(by_id->jobs.size(), 3u);
  // Folded by the daemon: one row, the indices and the counts.
  protocol::ListRequest fold{false, false, {}};
  fold.fold_arrays = true;
  Result<protocol::ListReply> folded =
      protocol::Decode<protocol::ListReply>(Call(1000, protocol::Encode(fold)));
  ASSERT_TRUE(folded);
  ASSERT_EQ(folded->jobs.size(), 1u);
  EXPECT_EQ(folded->jobs[0].array_indices, "2,4,6");
  EXPECT_EQ(folded->jobs[0].array_counts,
            (std::map<std::string, std::uint32_t>{{"queued", 2}, {"running", 1}}));

  Exit(array + 1, 0);
  ASSERT_EQ(executor_.started.size(), 2u);
  EXPECT_EQ(executor_.started[1].array_index, 4u);
  EXPECT_EQ(std::count(executor_.forgotten.begin(), executor_.forgotten.end(), array), 0)
      << "element 6 still needs the array's spec";
  Result<protocol::HoldReply> held = protocol::Decode<protocol::HoldReply>(
      Call(1000, protocol::Encode(protocol::JobIdRequest{protocol::ClientCommand::kHold, array})));
  ASSERT_TRUE(held);
  EXPECT_TRUE(held->changed);
  EXPECT_TRUE(core_->Find(array + 3)->held);
  EXPECT_EQ(ErrorOf(Kill(1002, array)), "job " + std::to_string(array + 1) + " belongs to alice");
  Result<protocol::KillReply> killed = protocol::Decode<protocol::KillReply>(Kill(1000, array));
  ASSERT_TRUE(killed);
  EXPECT_EQ(killed->state, protocol::KillOutcome::kKilling) << "element 4 runs";
  EXPECT_EQ(core_->Find(array + 3)->state, JobState::kDone);
  TickNow();
  EXPECT_EQ(std::count(executor_.forgotten.begin(), executor_.forgotten.end(), array), 1)
      << "no element needs the array's spec any more";
  EXPECT_EQ(std::count(executor_.forgotten.begin(), executor_.forgotten.end(), array + 3), 0)
      << "an element never made has no spec to forget";
  EXPECT_EQ(ErrorOf(Kill(1000, array + 10)), "no such job " + std::to_string(array + 10));
}

// A start the root side refuses as "not now" (the state directory is
// full, say) made no element: the element is tried again, and the
// array's spec, which it will be made from, is not forgotten.
TEST_F(ServerCoreTest, AnElementsStartRefusedAsNotNowLeavesItUnmade) {
  const std::uint64_t array = SubmitArrayOfOneWhileStartsAreNotNow();
  ASSERT_NE(array, 0u);
  TickNow();
  ASSERT_EQ(executor_.started.size(), 1u);
  EXPECT_EQ(core_->Find(array + 1)->state, JobState::kQueued);
  EXPECT_EQ(std::count(executor_.forgotten.begin(), executor_.forgotten.end(), array), 0)
      << "the element is still to be made from the array's spec";
  executor_.start_error.reset();
  clock_.Advance(1);
  TickNow();
  ASSERT_EQ(executor_.started.size(), 2u);
  EXPECT_EQ(executor_.started[1].array, array);
  EXPECT_EQ(core_->Find(array + 1)->state, JobState::kRunning);
  EXPECT_EQ(std::count(executor_.forgotten.begin(), executor_.forgotten.end(), array), 1);
}

// A kill that comes while an element's start is under way, which the root
// side then refuses as "not now": the element ends killed, and is never
// started again.
TEST_F(ServerCoreTest, AnElementKilledWhileItsStartIsRefusedAsNotNowEnds) {
  const std::uint64_t array = SubmitArrayOfOneWhileStartsAreNotNow();
  ASSERT_NE(array, 0u);
  const std::uint64_t element = array + 1;
  ASSERT_EQ(executor_.started.size(), 1u);
  // Tried again, and killed while that try is under way.
  executor_.hold_answers = true;
  clock_.Advance(1);
  TickNow();
  ASSERT_EQ(executor_.started.size(), 2u);
  Kill(1000, element);
  executor_.hold_answers = false;
  executor_.Flush();
  clock_.Advance(20);
  TickNow();
  EXPECT_EQ(core_->Find(element)->state, JobState::kDone);
  EXPECT_EQ(executor_.started.size(), 2u) << "a killed element was started again";
}

// --name: checked again here (a client need not be dispatch), listed, and
// the list filtered by name is the caller's own jobs with it, an admin's
// too.
TEST_F(ServerCoreTest, AJobNameIsCheckedListedAndFiltersTheCallersOwnJobs) {
  StartCore();
  auto submit_named = [&](uid_t uid, std::string name) {
    protocol::SubmitRequest request;
    request.argv = {"sleep", "100"};
    request.cwd = "/tmp";
    request.cpu = 1;
    request.output = "/tmp";
    request.name = std::move(name);
    return Call(uid, protocol::Encode(request));
  };
  auto named = [&](uid_t uid, const std::string& name) {
    protocol::ListRequest request{false, true, {}, name};
    Result<protocol::ListReply> reply =
        protocol::Decode<protocol::ListReply>(Call(uid, protocol::Encode(request)));
    std::vector<std::uint64_t> ids;
    for (const protocol::JobRow& row : reply ? reply->jobs : std::vector<protocol::JobRow>{})
      ids.push_back(row.id);
    return ids;
  };
  EXPECT_EQ(ErrorOf(submit_named(1000, "a b")).rfind("field 'name': a job name is 1 to 64", 0), 0u);
  EXPECT_EQ(ErrorOf(submit_named(1000, std::string(65, 'x'))).rfind("field 'name'", 0), 0u);
  EXPECT_EQ(ErrorOf(submit_named(1000, "-x")).rfind("field 'name'", 0), 0u);
  EXPECT_TRUE(executor_.registered.empty()) << "a bad name never reaches the executor";

  ASSERT_TRUE(protocol::Decode<protocol::SubmitReply>(submit_named(1000, "train")));  // 1
  ASSERT_TRUE(protocol::Decode<protocol::SubmitReply>(submit_named(1001, "train")));  // 2, admin
  Submit(1000);                                                                       // 3
  ASSERT_TRUE(protocol::Decode<protocol::SubmitReply>(submit_named(1000, "train")));  // 4

  EXPECT_EQ(named(1000, "train"), (std::vector<std::uint64_t>{1, 4}));
  EXPECT_EQ(named(1001, "train"), (std::vector<std::uint64_t>{2})) << "an admin's own only";
  EXPECT_TRUE(named(1000, "other").empty());
  protocol::ListReply all = List(1000, false, false);
  ASSERT_EQ(all.jobs.size(), 3u);
  EXPECT_EQ(all.jobs[0].name, "train");
  EXPECT_EQ(all.jobs[1].name, std::nullopt);
  EXPECT_EQ(ErrorOf(Call(1000, protocol::Encode(protocol::ListRequest{false, false, {}, "a/b"})))
                .rfind("field 'name'", 0),
            0u);
  EXPECT_EQ(core_->Snapshot().jobs.front().name, "train") << "kept in the queue file";
}

// A hand-made submission with stderr apart but no output file is refused
// before the executor sees it, as dispatch refuses --error --no-output.
TEST_F(ServerCoreTest, StderrApartWithoutAnOutputFileIsRefused) {
  StartCore();
  protocol::SubmitRequest request;
  request.argv = {"true"};
  request.cwd = "/tmp";
  request.cpu = 1;
  request.error = "/tmp/err.log";
  EXPECT_EQ(ErrorOf(Call(1000, protocol::Encode(request))).rfind("field 'error': ", 0), 0u);
  EXPECT_TRUE(executor_.registered.empty());
  request.output = "/tmp";
  EXPECT_TRUE(protocol::Decode<protocol::SubmitReply>(Call(1000, protocol::Encode(request))));
}

TEST_F(ServerCoreTest, JobAddressedRequestsCheckOwnership) {
  StartCore();
  Submit(1000);
  EXPECT_EQ(ErrorOf(Kill(1002, 1)), "job 1 belongs to alice");
  EXPECT_EQ(ErrorOf(Kill(1000, 9)), "no such job 9");
  EXPECT_EQ(
      ErrorOf(Call(1002, protocol::Encode(protocol::JobFieldRequest{1, "max-time", "get", {}}))),
      "job 1 belongs to alice");
  Result<protocol::JobFieldReply> got = protocol::Decode<protocol::JobFieldReply>(
      Call(1000, protocol::Encode(protocol::JobFieldRequest{1, "max-time", "get", {}})));
  ASSERT_TRUE(got);
  EXPECT_EQ(got->value, 3600);
  EXPECT_EQ(
      ErrorOf(Call(1000, protocol::Encode(protocol::JobFieldRequest{1, "max-time", "set", 5}))),
      "'job max-time set' requires membership of group 'wheel'");
  Result<protocol::JobFieldReply> added = protocol::Decode<protocol::JobFieldReply>(
      Call(1001, protocol::Encode(protocol::JobFieldRequest{1, "max-time", "add", 60})));
  ASSERT_TRUE(added);
  EXPECT_EQ(added->value, 3660);
  EXPECT_EQ(core_->Find(1)->max_time_s, 3660);
}

TEST_F(ServerCoreTest, AttachRepliesAndAsksForAStream) {
  StartCore();
  Submit(1000);
  std::optional<Response> response =
      HandleNow(Peer{1000, -1},
                protocol::Encode(protocol::JobIdRequest{protocol::ClientCommand::kAttach, 1}));
  ASSERT_TRUE(response);
  EXPECT_EQ(response->attach, 1u);
  executor_.events.push_back({0, 1, 0, false, 0, std::nullopt});
  TickNow();
  response =
      HandleNow(Peer{1000, -1},
                protocol::Encode(protocol::JobIdRequest{protocol::ClientCommand::kAttach, 1}));
  ASSERT_TRUE(response);
  EXPECT_FALSE(response->attach);
  Result<protocol::AttachReply> reply = protocol::Decode<protocol::AttachReply>(response->frame);
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->state, JobState::kDone);
}

TEST_F(ServerCoreTest, ListFiltersAndGatesAll) {
  StartCore();
  Submit(1000);
  Submit(1002);
  executor_.events.push_back({0, 1, 0, false, 0, std::nullopt});
  TickNow();
  EXPECT_TRUE(List(1000, false, false).jobs.empty());
  EXPECT_EQ(List(1000, false, true).jobs.size(), 1u);
  EXPECT_EQ(ErrorOf(Call(1000, protocol::Encode(protocol::ListRequest{true, false}))),
            "'list --all' requires membership of group 'wheel'");
  protocol::ListReply all = List(1001, true, true);
  ASSERT_EQ(all.jobs.size(), 2u);
  EXPECT_EQ(all.jobs[1].state, JobState::kRunning);
  EXPECT_EQ(*all.jobs[1].start_time + *all.jobs[1].uptime_s, all.now);
}

TEST_F(ServerCoreTest, RetentionForgetsOldFinishedJobs) {
  StartCore();
  for (int i = 0; i < 4; ++i) {
    protocol::SubmitReply reply = Submit(1000);
    executor_.events.push_back({0, reply.id, 0, false, 0, std::nullopt});
    TickNow();
  }
  EXPECT_EQ(core_->Find(1), nullptr);
  EXPECT_EQ(executor_.forgotten, (std::vector<std::uint64_t>{1, 2}));
  // Job 2's forget is unanswered: its record stays, on disk too, and
  // `list` no longer shows it.
  ASSERT_NE(core_->Find(2), nullptr);
  EXPECT_EQ(core_->Snapshot().jobs.front().id, 2u);
  for (const protocol::JobRow& entry : List(1000, false, true).jobs)
    EXPECT_NE(entry.id, 2u);
  executor_.Flush();
  EXPECT_EQ(core_->Find(2), nullptr);
  EXPECT_NE(core_->Find(3), nullptr);
}

// Retention drops a finished job only once the root side let go of its
// spec. A restart before that finds the job finished in the queue file and
// forgets it again; it is never taken for a submission the file lost and
// queued a second time.
TEST_F(ServerCoreTest, ARestartWhileRetentionsForgetsAreUnansweredQueuesNothingAgain) {
  options_.keep_finished = 0;
  StartCore();
  for (std::uint64_t id = 1; id <= 2; ++id) {
    ASSERT_EQ(Submit(1000).id, id);
    executor_.events.push_back({0, id, 0, false, 0, std::nullopt});
  }
  executor_.hold_answers = true;  // the forgets stay unanswered
  TickNow();
  ASSERT_EQ(executor_.forgotten, (std::vector<std::uint64_t>{1, 2}));
  QueueFile saved = core_->Snapshot();
  ASSERT_EQ(saved.jobs.size(), 2u) << "the records wait for their forgets";
  executor_.hold_answers = false;
  executor_.pending.clear();  // the daemon stops; the executor kept the specs
  executor_.forgotten.clear();
  executor_.hello.exited = {1};
  executor_.hello.registered = {2};  // as a dependent that ended unstarted
  core_.reset();
  StartCore(saved);
  for (std::uint64_t id = 1; id <= 2; ++id) {
    ASSERT_NE(core_->Find(id), nullptr);
    EXPECT_EQ(core_->Find(id)->state, JobState::kDone) << "job " << id;
  }
  core_->Flush();
  EXPECT_EQ(executor_.forgotten, (std::vector<std::uint64_t>{1, 2}));
  executor_.Flush();
  core_->Flush();
  for (std::uint64_t id = 1; id <= 2; ++id)
    EXPECT_EQ(core_->Find(id), nullptr) << "job " << id;
  EXPECT_TRUE(core_->Snapshot().jobs.empty());
}

// A job the broker ended unstarted (its dependency failed) keeps its record
// while its forget is unanswered, past --keep-finished: dropped first, a
// restart in between would find only its launch spec, queue it again with
// none of its dependencies, and run it.
TEST_F(ServerCoreTest, AJobEndedUnstartedKeepsItsRecordUntilItsForgetIsAnswered) {
  options_.keep_finished = 0;
  StartCore();
  Submit(1000, 1);
  SubmitAfter(1000, {1});
  executor_.hold_answers = true;  // the forgets stay unanswered
  Exit(1, 3);
  TickNow();
  ASSERT_EQ(executor_.forgotten, (std::vector<std::uint64_t>{2, 1}));
  ASSERT_NE(core_->Find(2), nullptr) << "dropped while the executor may still hold its spec";
  EXPECT_EQ(core_->Find(2)->reason, JobReason::kDependency);
  const QueueFile saved = core_->Snapshot();
  EXPECT_TRUE(std::any_of(saved.jobs.begin(), saved.jobs.end(),
                          [](const JobRecord& job) { return job.id == 2; }));
  executor_.hold_answers = false;
  executor_.Flush();
  TickNow();
  EXPECT_EQ(core_->Find(2), nullptr) << "answered, retention drops it";
  EXPECT_EQ(core_->Find(1), nullptr);
  EXPECT_TRUE(core_->Snapshot().jobs.empty());
}

// The same for an array's elements that end unstarted: they have no spec of
// their own, the array's lists them, and they are kept until the forget of
// that spec is answered.
TEST_F(ServerCoreTest, AnArraysUnstartedElementsAreKeptUntilItsSpecsForgetIsAnswered) {
  options_.keep_finished = 0;
  StartCore();
  Submit(1000, 1);
  protocol::SubmitRequest request = TrueArray({1, 2});
  request.after = {1};
  Result<protocol::SubmitReply> reply =
      protocol::Decode<protocol::SubmitReply>(Call(1000, protocol::Encode(request)));
  ASSERT_TRUE(reply);
  const std::uint64_t array = reply->id;
  executor_.hold_answers = true;
  Exit(1, 3);
  TickNow();
  ASSERT_NE(std::find(executor_.forgotten.begin(), executor_.forgotten.end(), array),
            executor_.forgotten.end());
  for (std::uint64_t element : {array + 1, array + 2}) {
    ASSERT_NE(core_->Find(element), nullptr) << "element " << element << " dropped too soon";
    EXPECT_EQ(core_->Find(element)->reason, JobReason::kDependency);
  }
  executor_.hold_answers = false;
  executor_.Flush();
  TickNow();
  EXPECT_EQ(core_->Find(array + 1), nullptr);
  EXPECT_EQ(core_->Find(array + 2), nullptr);
}

TEST_F(ServerCoreTest, AForgetWithNoAnswerKeepsTheRecordAndIsSentAgain) {
  options_.keep_finished = 0;
  StartCore();
  ASSERT_EQ(Submit(1000).id, 1u);
  executor_.hold_answers = true;
  Exit(1, 0);
  ASSERT_EQ(executor_.forgotten, (std::vector<std::uint64_t>{1}));
  // The call times out: the channel answers it with an error.
  std::vector<std::function<void()>> lost;
  lost.swap(executor_.pending);
  executor_.hold_answers = false;
  ASSERT_NE(core_->Find(1), nullptr);
  executor_.forgot_error = true;
  for (auto& answer : lost)
    answer();
  executor_.forgot_error = false;
  ASSERT_NE(core_->Find(1), nullptr) << "no answer: the spec may still be there";
  core_->Flush();
  EXPECT_EQ(executor_.forgotten, (std::vector<std::uint64_t>{1, 1}));
  executor_.Flush();
  EXPECT_EQ(core_->Find(1), nullptr);
}

TEST_F(ServerCoreTest, JobsTheQueueFileLostAreRebuiltFromTheRootSide) {
  // The queue file is gone; the root side holds a running job, a queued
  // one and a finished one, and once held ids up to 11.
  auto summary = [](std::uint64_t id, std::vector<std::string> argv) {
    protocol::JobSummary s;
    s.id = id;
    s.who.uid = 1000;
    s.who.gid = 1000;
    s.argv = std::move(argv);
    s.cwd = "/home/alice";
    s.output_dest = "/home/alice/output." + std::to_string(id) + ".log";
    s.request.cpu = 1;
    s.request.max_time_s = 600;
    s.request.submit_time = 900;
    return s;
  };
  executor_.summaries[7] = summary(7, {"sleep", "9"});
  executor_.summaries[7].start_time = 950;
  executor_.summaries[7].placement =
      protocol::PlacementRecord{{1}, {0}, {}, {{-1, 2.5}}, {}, false};
  executor_.summaries[9] = summary(9, {"make", "bench"});
  executor_.summaries[9].name = "bench";
  executor_.summaries[10] = summary(10, {"false"});
  executor_.summaries[10].exit_code = 1;
  executor_.summaries[10].end_time = 990;
  executor_.hello.running = {7};
  executor_.hello.registered = {9};
  executor_.hello.exited = {10};
  executor_.next_id = 12;
  QueueFile empty;
  empty.next_id = 1;
  StartCore(empty);

  EXPECT_TRUE(executor_.signals.empty()) << "a running job is never killed for a lost file";
  ASSERT_NE(core_->Find(7), nullptr);
  EXPECT_EQ(core_->Find(7)->state, JobState::kRunning);
  EXPECT_EQ(core_->Find(7)->placement.cpus, std::vector<int>{1});
  EXPECT_EQ(core_->Find(7)->max_time_s, 600);
  EXPECT_EQ(core_->Find(7)->argv, (std::vector<std::string>{"sleep", "9"}));
  ASSERT_NE(core_->Find(9), nullptr);
  EXPECT_EQ(core_->Find(9)->name, "bench") << "the name is kept on the root side too";
  EXPECT_EQ(core_->Find(7)->name, std::nullopt);
  ASSERT_FALSE(executor_.started.empty()) << "the rebuilt queued job runs on the cpu job 7 left";
  EXPECT_EQ(executor_.started[0].id, 9u);
  EXPECT_EQ(executor_.started[0].placement.cpus, std::vector<int>{0});
  ASSERT_NE(core_->Find(10), nullptr);
  EXPECT_EQ(core_->Find(10)->state, JobState::kDone);
  EXPECT_EQ(core_->Find(10)->exit_code, 1);
  EXPECT_EQ(core_->next_id(), 12u) << "ids the root side ever held are never handed out again";
  EXPECT_EQ(Submit(1000).id, 12u);
}

// The queue file is gone while array 5 (indices 2, 4, 6, 9: elements 6 to
// 9) has one element running: that one is rebuilt from its own spec and
// marked as the array's; the two never started, which have none, from the
// array's spec, queued, each named and started as its element; the one
// the root side made and has forgotten (its index in array_started) is
// not made again.
TEST_F(ServerCoreTest, AnArraysUnstartedElementsTheQueueFileLostAreRebuiltFromItsSpec) {
  protocol::JobSummary array;
  array.id = 5;
  array.who.uid = 1000;
  array.who.gid = 1000;
  array.argv = {"sh", "work.sh"};
  array.cwd = "/home/alice";
  array.output_dest = "/home/alice/output.5.log";
  array.error_dest = "/home/alice/error.5.log";
  array.request.cpu = 1;
  array.request.max_time_s = 600;
  array.array = {2, 4, 6, 9};
  array.array_started = {2, 9};  // 9's element ran and was forgotten
  protocol::JobSummary first = array;
  first.id = 6;
  first.array.clear();
  first.array_started.clear();
  first.output_dest = "/home/alice/output.5_2.log";
  first.start_time = 950;
  first.placement = protocol::PlacementRecord{{1}, {0}, {}, {{-1, 2.5}}, {}, false};
  executor_.summaries[5] = array;
  executor_.summaries[6] = first;
  executor_.hello.registered = {5};
  executor_.hello.running = {6};
  executor_.next_id = 10;
  QueueFile empty;
  empty.next_id = 1;
  StartCore(empty);

  ASSERT_NE(core_->Find(6), nullptr);
  EXPECT_EQ(core_->Find(6)->state, JobState::kRunning);
  EXPECT_EQ(core_->Find(6)->array_id, 5u);
  EXPECT_EQ(core_->Find(6)->array_index, 2u);
  for (std::uint64_t id : {7, 8}) {
    const JobRecord* element = core_->Find(id);
    ASSERT_NE(element, nullptr) << "element " << id << " was never started and must not be lost";
    EXPECT_EQ(element->array_id, 5u);
    EXPECT_EQ(element->array_index, id == 7 ? 4u : 6u);
    EXPECT_EQ(element->argv, array.argv);
    EXPECT_EQ(element->output_dest,
              "/home/alice/output.5_" + std::to_string(element->array_index) + ".log");
    EXPECT_EQ(element->error_dest,
              "/home/alice/error.5_" + std::to_string(element->array_index) + ".log");
  }
  ASSERT_EQ(executor_.started.size(), 1u) << "one cpu is free";
  EXPECT_EQ(executor_.started[0].id, 7u);
  EXPECT_EQ(executor_.started[0].array, 5u);
  EXPECT_EQ(executor_.started[0].array_index, 4u);
  EXPECT_EQ(core_->Find(8)->state, JobState::kQueued);
  EXPECT_EQ(core_->Find(9), nullptr) << "index 9 was used; it must not run again";
  EXPECT_TRUE(executor_.forgotten.empty()) << "element 8 still needs the array's spec";
  EXPECT_EQ(Submit(1000).id, 10u);
}

// With --keep-finished 0, an ended element is kept while its array's spec
// is still held: a restart then finds every element, and runs none again.
TEST_F(ServerCoreTest, AnEndedElementIsKeptWhileItsArraysSpecIsHeld) {
  options_.keep_finished = 0;
  StartCore();
  protocol::SubmitRequest request = TrueArray({1, 2, 3});
  request.array_throttle = 1;
  Result<protocol::SubmitReply> reply =
      protocol::Decode<protocol::SubmitReply>(Call(1000, protocol::Encode(request)));
  ASSERT_TRUE(reply);
  const std::uint64_t array = reply->id;
  TickNow();

  Exit(array + 1, 0);
  core_->Flush();
  executor_.Flush();
  ASSERT_NE(core_->Find(array + 1), nullptr) << "elements 2 and 3 still need the array's spec";
  EXPECT_EQ(std::count(executor_.forgotten.begin(), executor_.forgotten.end(), array + 1), 0);
  Exit(array + 2, 0);
  ASSERT_EQ(executor_.started.size(), 3u);
  EXPECT_EQ(std::count(executor_.forgotten.begin(), executor_.forgotten.end(), array), 1)
      << "each element has its own spec now";
  Exit(array + 3, 0);
  core_->Flush();
  executor_.Flush();
  EXPECT_EQ(core_->Find(array + 1), nullptr);
  EXPECT_EQ(core_->Find(array + 3), nullptr);
}

TEST_F(ServerCoreTest, HelloReconcilesTheLoadedQueue) {
  QueueFile loaded;
  loaded.next_id = 10;
  JobRecord running;
  running.id = 3;
  running.uid = 1000;
  running.state = JobState::kRunning;
  running.start_time = 900;
  running.max_time_s = 3600;
  running.placement.cpus = {0};
  JobRecord gone = running;
  gone.id = 4;
  gone.placement.cpus = {1};
  JobRecord queued;
  queued.id = 5;
  queued.uid = 1000;
  queued.max_time_s = 60;
  queued.demand.cpu = 2;
  JobRecord lost = queued;
  lost.id = 6;
  loaded.jobs = {running, gone, queued, lost};
  executor_.hello.running = {3};
  executor_.hello.registered = {5, 8};
  StartCore(loaded);
  EXPECT_EQ(core_->Find(3)->state, JobState::kRunning);
  EXPECT_EQ(core_->Find(4)->state, JobState::kDone);
  EXPECT_FALSE(core_->Find(4)->exit_code);
  EXPECT_EQ(core_->Find(5)->state, JobState::kQueued);  // job 3 still holds cpu 0
  EXPECT_EQ(core_->Find(6)->reason, JobReason::kError);
  ASSERT_TRUE(core_->Find(6)->detail);
  EXPECT_NE(core_->Find(6)->detail->find("lost"), std::string::npos) << *core_->Find(6)->detail;
  EXPECT_TRUE(executor_.forgotten.empty()) << "job 8, registered only on the root side, is kept";
  ASSERT_NE(core_->Find(8), nullptr);
  EXPECT_EQ(core_->Find(8)->state, JobState::kQueued);
  EXPECT_EQ(Submit(1000).id, 10u);
}

}  // namespace
}  // namespace hpcb::broker

namespace hpcb::broker {
namespace {

TEST_F(ServerCoreTest, AJobAfterAnotherStartsOnlyOnceThatOneSucceeded) {
  StartCore();
  Submit(1000, 1);
  Result<protocol::SubmitReply> second =
      protocol::Decode<protocol::SubmitReply>(SubmitAfter(1000, {1}));
  ASSERT_TRUE(second);
  EXPECT_EQ(second->state, JobState::kQueued) << "a cpu is free, but job 1 has not ended";
  TickNow();
  EXPECT_EQ(core_->Find(2)->state, JobState::kQueued);
  Exit(1, 0);
  EXPECT_EQ(core_->Find(2)->state, JobState::kRunning);
}

TEST_F(ServerCoreTest, AFailedDependencyEndsTheChainWithoutRunningIt) {
  StartCore();
  Submit(1000, 1);
  SubmitAfter(1000, {1});
  SubmitAfter(1000, {2});
  Exit(1, 3);
  for (std::uint64_t id : {2u, 3u}) {
    const JobRecord* job = core_->Find(id);
    ASSERT_NE(job, nullptr);
    EXPECT_EQ(job->state, JobState::kDone) << id;
    EXPECT_EQ(job->reason, JobReason::kDependency) << id;
    EXPECT_FALSE(job->start_time) << id;
  }
  EXPECT_EQ(core_->Find(2)->detail, "job 1 failed (exit 3), so it did not run");
  EXPECT_EQ(core_->Find(3)->detail, "job 2 ended as dependency, so it did not run");
  EXPECT_EQ(ErrorOf(Call(1000, protocol::Encode(
                                   protocol::JobIdRequest{protocol::ClientCommand::kAttach, 3}))),
            "job 3: job 2 ended as dependency, so it did not run")
      << "there is no output to attach to";
  EXPECT_EQ(executor_.started.size(), 1u);
  // Their registrations are dropped (then job 1 by retention: keep 2).
  ASSERT_GE(executor_.forgotten.size(), 2u);
  EXPECT_EQ(executor_.forgotten[0], 2u);
  EXPECT_EQ(executor_.forgotten[1], 3u);
}

TEST_F(ServerCoreTest, AfterAnyStartsHoweverTheDependencyEnded) {
  StartCore();
  Submit(1000, 1);
  SubmitAfter(1000, {1}, /*any=*/true);
  Kill(1000, 1);
  Exit(1, -15);
  EXPECT_EQ(core_->Find(2)->state, JobState::kRunning);
}

TEST_F(ServerCoreTest, ADependencyThatAlreadyFailedEndsTheJobAtOnce) {
  StartCore();
  Submit(1000, 1);
  Exit(1, 1);
  SubmitAfter(1000, {1});
  EXPECT_EQ(core_->Find(2)->reason, JobReason::kDependency);
}

TEST_F(ServerCoreTest, AWaitingDependentNeverBlocksTheHead) {
  StartCore();
  Submit(1000, 1);         // 1 runs
  SubmitAfter(1000, {1});  // 2 waits for 1
  EXPECT_EQ(Submit(1000, 1).state, JobState::kRunning) << "job 3 passes the waiting job 2";
}

TEST_F(ServerCoreTest, DependenciesMustBeJobsTheSubmitterMaySee) {
  StartCore();
  Submit(1000, 1);
  EXPECT_EQ(ErrorOf(SubmitAfter(1000, {9})), "--after: no such job 9");
  EXPECT_EQ(ErrorOf(SubmitAfter(1002, {1})), "--after: job 1 belongs to alice");
  EXPECT_TRUE(protocol::Decode<protocol::SubmitReply>(SubmitAfter(1001, {1})))
      << "an admin sees every job";
}

TEST_F(ServerCoreTest, RetentionKeepsAFinishedJobSomeoneStillWaitsFor) {
  options_.keep_finished = 0;
  StartCore();
  Submit(1000, 2);                       // 1 holds both cpus
  Submit(1000, 1);                       // 2
  SubmitAfter(1000, {2}, /*any=*/true);  // 3 waits for 2
  Kill(1000, 2);                         // 2 ends while 3 cannot start yet
  ASSERT_NE(core_->Find(2), nullptr) << "job 3 still needs to know how job 2 ended";
  Exit(1, 0);
  EXPECT_EQ(core_->Find(3)->state, JobState::kRunning);
  EXPECT_EQ(core_->Find(2), nullptr) << "answered, it may go";
}

TEST_F(ServerCoreTest, DependenciesSurviveARestart) {
  StartCore();
  Submit(1000, 1);
  SubmitAfter(1000, {1});
  QueueFile saved = core_->Snapshot();
  executor_.hello.running = {1};
  executor_.hello.registered = {2};
  core_.reset();
  StartCore(saved);
  EXPECT_EQ(core_->Find(2)->after, std::vector<std::uint64_t>{1});
  EXPECT_EQ(core_->Find(2)->state, JobState::kQueued);
  Exit(1, 0);
  EXPECT_EQ(core_->Find(2)->state, JobState::kRunning);
}

TEST_F(ServerCoreTest, DrainStopsStartsUntilResumeAndIsAdminsOnly) {
  StartCore();
  EXPECT_EQ(ErrorOf(Bare(1000, protocol::ClientCommand::kDrain)),
            "'drain' requires membership of group 'wheel'");
  Result<protocol::DrainReply> drained =
      protocol::Decode<protocol::DrainReply>(Bare(1001, protocol::ClientCommand::kDrain));
  ASSERT_TRUE(drained);
  EXPECT_TRUE(drained->draining);
  EXPECT_TRUE(drained->changed);
  EXPECT_EQ(Submit(1000, 1).state, JobState::kQueued) << "accepted, not started";
  TickNow();
  EXPECT_EQ(core_->Find(1)->state, JobState::kQueued);
  EXPECT_TRUE(List(1000, false, false).draining);
  EXPECT_TRUE(core_->Snapshot().draining);
  Result<protocol::DrainReply> resumed =
      protocol::Decode<protocol::DrainReply>(Bare(1001, protocol::ClientCommand::kResume));
  ASSERT_TRUE(resumed);
  EXPECT_FALSE(resumed->draining);
  EXPECT_EQ(core_->Find(1)->state, JobState::kRunning);
}

TEST_F(ServerCoreTest, DrainingIsKeptAcrossARestartAndRunningJobsFinish) {
  StartCore();
  Submit(1000, 1);
  Bare(1001, protocol::ClientCommand::kDrain);
  Submit(1000, 1);
  QueueFile saved = core_->Snapshot();
  executor_.hello.running = {1};
  executor_.hello.registered = {2};
  core_.reset();
  StartCore(saved);
  Exit(1, 0);
  EXPECT_EQ(core_->Find(1)->state, JobState::kDone);
  EXPECT_EQ(core_->Find(2)->state, JobState::kQueued);
}

TEST_F(ServerCoreTest, ListCanBeNarrowedToSomeIds) {
  StartCore();
  Submit(1000);
  Submit(1000);
  Submit(1002);
  protocol::ListRequest request{true, true, {2, 3, 9}};
  Result<protocol::ListReply> some =
      protocol::Decode<protocol::ListReply>(Call(1001, protocol::Encode(request)));
  ASSERT_TRUE(some);
  ASSERT_EQ(some->jobs.size(), 2u);
  EXPECT_EQ(some->jobs[0].id, 2u);
  EXPECT_EQ(some->jobs[1].id, 3u);
  // An admin asking without --all gets only their own (wait then asks
  // again with --all).
  request.all = false;
  Result<protocol::ListReply> admin_own =
      protocol::Decode<protocol::ListReply>(Call(1001, protocol::Encode(request)));
  ASSERT_TRUE(admin_own);
  EXPECT_TRUE(admin_own->jobs.empty());
  // Ids never widen what a user may see: another user's is refused by name.
  request.all = false;
  EXPECT_EQ(ErrorOf(Call(1000, protocol::Encode(request))), "job 3 belongs to carol");
  request.ids = {2, 9};
  Result<protocol::ListReply> own =
      protocol::Decode<protocol::ListReply>(Call(1000, protocol::Encode(request)));
  ASSERT_TRUE(own);
  ASSERT_EQ(own->jobs.size(), 1u);
  EXPECT_EQ(own->jobs[0].id, 2u);
}

TEST_F(ServerCoreTest, InfoShowsTheMachineTheQueueAndTheDrainToAnyone) {
  options_.policy = "easy-backfill";
  StartCore();
  Submit(1000, 1);
  SubmitAfter(1000, {1});
  Result<protocol::InfoReply> info =
      protocol::Decode<protocol::InfoReply>(Bare(1002, protocol::ClientCommand::kInfo));
  ASSERT_TRUE(info);
  EXPECT_EQ(info->policy, "easy-backfill");
  EXPECT_FALSE(info->draining);
  EXPECT_EQ(info->running, 1);
  EXPECT_EQ(info->queued, 1);
  EXPECT_EQ(info->waiting, 1);
  ASSERT_EQ(info->nodes.size(), 1u);
  EXPECT_EQ(info->nodes[0].cpus.total, 2);
  EXPECT_EQ(info->nodes[0].cpus.in_use, 1);
  EXPECT_EQ(info->nodes[0].cpus.free, 1);
  ASSERT_TRUE(info->mem_gib);
  EXPECT_EQ(info->mem_gib->in_use, 2.5);
}

}  // namespace
}  // namespace hpcb::broker
