// The queue store's snapshot + journal: reload after appends and after
// compaction, torn and corrupt journal lines, a crash between the snapshot
// rename and the journal reset, ids never reused, and the broker core
// writing only what changed.
#include "broker/queue_journal.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "broker/broker_core.h"
#include "broker/queue_store.h"
#include "protocol/client_messages.h"
#include "protocol/codec.h"
#include "tests/broker/server_fakes.h"
#include "tests/testing/temp_dir.h"

namespace hpcb::broker {
namespace {

using hpcb::testing::TempDir;

JobRecord MakeJob(std::uint64_t id, JobState state = JobState::kQueued) {
  JobRecord job;
  job.id = id;
  job.user = "alice";
  job.uid = 1000;
  job.gid = 1000;
  job.argv = {"echo", "job " + std::to_string(id)};
  job.cwd = "/home/alice";
  job.demand.cpu = 1;
  job.max_time_s = 60;
  job.state = state;
  return job;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void WriteFile(const std::string& path, const std::string& text, bool append = false) {
  std::ofstream out(path, append ? std::ios::binary | std::ios::app : std::ios::binary);
  out << text;
}

// id -> state, the part of a loaded queue most tests compare.
std::map<std::uint64_t, JobState> States(const QueueFile& file) {
  std::map<std::uint64_t, JobState> out;
  for (const JobRecord& job : file.jobs)
    out[job.id] = job.state;
  return out;
}

QueueFile Queue(std::uint64_t next_id, std::vector<JobRecord> jobs) {
  QueueFile file;
  file.next_id = next_id;
  file.jobs = std::move(jobs);
  return file;
}

TEST(QueueJournalTest, ReloadsAfterAppends) {
  TempDir dir;
  QueueStore store(dir.path());
  EXPECT_TRUE(store.WantsCompaction());
  const JobRecord seven = MakeJob(7);
  EXPECT_FALSE(store.Append(8, {{7, &seven}}, true));  // refused before the first Save
  ASSERT_TRUE(store.Save(Queue(8, {MakeJob(7)})));
  EXPECT_FALSE(store.WantsCompaction());

  const JobRecord running = MakeJob(7, JobState::kRunning);
  const JobRecord eight = MakeJob(8);
  ASSERT_TRUE(store.Append(9, {{7, &running}, {8, &eight}}, true));
  ASSERT_TRUE(store.Append(10, {{9, nullptr}}, true));  // id 9 handed out, never a job
  const JobRecord done = MakeJob(7, JobState::kDone);
  ASSERT_TRUE(store.Append(10, {{7, &done}}, true));
  ASSERT_TRUE(store.Append(10, {{7, nullptr}}, true));

  for (const std::string& file : {store.path(), store.journal_path()}) {
    struct stat st {};
    ASSERT_EQ(::stat(file.c_str(), &st), 0) << file;
    EXPECT_EQ(st.st_mode & 0777, 0600u) << file;  // env values live here
  }
  Result<QueueFile> loaded = QueueStore(dir.path()).Load();
  ASSERT_TRUE(loaded) << loaded.error().message();
  EXPECT_EQ(States(*loaded), (std::map<std::uint64_t, JobState>{{8, JobState::kQueued}}));
  EXPECT_EQ(loaded->next_id, 10u);
  EXPECT_EQ(loaded->jobs[0].argv, eight.argv);
}

TEST(QueueJournalTest, ReloadsAfterCompaction) {
  TempDir dir;
  QueueStore store(dir.path());
  ASSERT_TRUE(store.Save(Queue(1, {})));
  const JobRecord one = MakeJob(1);
  const JobRecord two = MakeJob(2);
  ASSERT_TRUE(store.Append(3, {{1, &one}, {2, &two}}, true));
  EXPECT_GT(store.journal_bytes(), 0u);
  ASSERT_TRUE(store.Save(Queue(3, {MakeJob(1, JobState::kRunning), MakeJob(2)})));
  EXPECT_EQ(store.journal_bytes(), 0u);
  EXPECT_EQ(ReadFile(store.journal_path()), "");
  EXPECT_FALSE(std::filesystem::exists(store.path() + ".tmp"));
  EXPECT_FALSE(std::filesystem::exists(store.journal_path() + ".tmp"));
  const JobRecord three = MakeJob(3);
  ASSERT_TRUE(store.Append(4, {{3, &three}}, true));

  Result<QueueFile> loaded = QueueStore(dir.path()).Load();
  ASSERT_TRUE(loaded) << loaded.error().message();
  EXPECT_EQ(States(*loaded),
            (std::map<std::uint64_t, JobState>{
                {1, JobState::kRunning}, {2, JobState::kQueued}, {3, JobState::kQueued}}));
  EXPECT_EQ(loaded->next_id, 4u);
}

TEST(QueueJournalTest, TornLastLineIsIgnored) {
  TempDir dir;
  QueueStore store(dir.path());
  ASSERT_TRUE(store.Save(Queue(1, {})));
  const JobRecord one = MakeJob(1);
  ASSERT_TRUE(store.Append(2, {{1, &one}}, true));
  const JobRecord two = MakeJob(2);
  const std::string line = JournalLine(99, 3, {2, &two});
  WriteFile(store.journal_path(), line.substr(0, line.size() / 2), /*append=*/true);

  QueueStore reopened(dir.path());
  Result<QueueFile> loaded = reopened.Load();
  ASSERT_TRUE(loaded) << loaded.error().message();
  EXPECT_EQ(States(*loaded), (std::map<std::uint64_t, JobState>{{1, JobState::kQueued}}));
  // The torn line named id 2 and next_id 3; neither is handed out again.
  EXPECT_EQ(loaded->next_id, 3u);
  EXPECT_FALSE(std::filesystem::exists(store.journal_path() + ".corrupt"));
  // Nothing is appended after a torn line: the next write replaces it.
  EXPECT_TRUE(reopened.WantsCompaction());
  EXPECT_FALSE(reopened.Append(3, {{1, &one}}, true));
}

TEST(QueueJournalTest, ZeroFilledTailIsTorn) {
  TempDir dir;
  QueueStore store(dir.path());
  ASSERT_TRUE(store.Save(Queue(1, {})));
  const JobRecord one = MakeJob(1);
  ASSERT_TRUE(store.Append(2, {{1, &one}}, true));
  WriteFile(store.journal_path(), std::string(4096, '\0'), /*append=*/true);
  Result<QueueFile> loaded = QueueStore(dir.path()).Load();
  ASSERT_TRUE(loaded) << loaded.error().message();
  EXPECT_EQ(States(*loaded), (std::map<std::uint64_t, JobState>{{1, JobState::kQueued}}));
}

TEST(QueueJournalTest, CorruptMiddleLineKeepsWhatCameBeforeAndMovesTheJournalAside) {
  TempDir dir;
  QueueStore store(dir.path());
  ASSERT_TRUE(store.Save(Queue(1, {})));
  const JobRecord one = MakeJob(1);
  ASSERT_TRUE(store.Append(2, {{1, &one}}, true));
  WriteFile(store.journal_path(), "{\"seq\":2,\"next_id\":41,\"job\":[{\"id\": 40\n",
            /*append=*/true);
  const JobRecord two = MakeJob(2);
  WriteFile(store.journal_path(), JournalLine(3, 3, {2, &two}), /*append=*/true);

  Result<QueueFile> loaded = QueueStore(dir.path()).Load();
  ASSERT_TRUE(loaded) << loaded.error().message();
  EXPECT_EQ(States(*loaded), (std::map<std::uint64_t, JobState>{{1, JobState::kQueued}}));
  EXPECT_EQ(loaded->next_id, 41u);  // past every id the file mentions
  EXPECT_TRUE(std::filesystem::exists(store.journal_path() + ".corrupt"));
  EXPECT_FALSE(std::filesystem::exists(store.journal_path()));
}

TEST(QueueJournalTest, CorruptSnapshotIsMovedAsideWithItsJournal) {
  TempDir dir;
  QueueStore store(dir.path());
  ASSERT_TRUE(store.Save(Queue(1, {})));
  const JobRecord five = MakeJob(5);
  ASSERT_TRUE(store.Append(6, {{5, &five}}, true));
  WriteFile(store.path(), "{\"next_id\": 12, \"jobs\": [{\"id\": 3, \"user\": ");
  Result<QueueFile> loaded = QueueStore(dir.path()).Load();
  ASSERT_TRUE(loaded) << loaded.error().message();
  EXPECT_TRUE(loaded->jobs.empty());
  EXPECT_EQ(loaded->next_id, 12u);
  EXPECT_TRUE(std::filesystem::exists(store.path() + ".corrupt"));
  EXPECT_TRUE(std::filesystem::exists(store.journal_path() + ".corrupt"));
}

// Compaction renames the new snapshot into place, then replaces the
// journal. A crash between the two leaves the old journal next to the new
// snapshot; replaying it must not undo what the snapshot already holds.
TEST(QueueJournalTest, CrashBetweenSnapshotRenameAndJournalResetReplaysIdempotently) {
  TempDir dir;
  QueueStore store(dir.path());
  ASSERT_TRUE(store.Save(Queue(1, {})));
  const JobRecord one = MakeJob(1);
  const JobRecord two = MakeJob(2);
  const JobRecord one_running = MakeJob(1, JobState::kRunning);
  ASSERT_TRUE(store.Append(3, {{1, &one}, {2, &two}}, true));
  ASSERT_TRUE(store.Append(3, {{1, &one_running}}, true));
  const std::string old_journal = ReadFile(store.journal_path());
  // Since then job 1 finished and job 2 was removed; the compaction
  // writes that state, and the crash "undoes" the journal reset.
  ASSERT_TRUE(store.Save(Queue(3, {MakeJob(1, JobState::kDone)})));
  WriteFile(store.journal_path(), old_journal);

  for (int round = 0; round < 2; ++round) {
    QueueStore reopened(dir.path());
    Result<QueueFile> loaded = reopened.Load();
    ASSERT_TRUE(loaded) << loaded.error().message();
    EXPECT_EQ(States(*loaded), (std::map<std::uint64_t, JobState>{{1, JobState::kDone}}));
    EXPECT_EQ(loaded->next_id, 3u);
    // A restart after the restart compacts again and appends more: the old
    // lines stay skipped, the new ones count.
    ASSERT_TRUE(reopened.Save(*loaded));
    WriteFile(store.journal_path(), old_journal);
  }
  QueueStore reopened(dir.path());
  ASSERT_TRUE(reopened.Load());
  ASSERT_TRUE(reopened.Save(Queue(3, {MakeJob(1, JobState::kDone)})));
  const JobRecord three = MakeJob(3);
  ASSERT_TRUE(reopened.Append(4, {{3, &three}}, true));
  Result<QueueFile> loaded = QueueStore(dir.path()).Load();
  ASSERT_TRUE(loaded) << loaded.error().message();
  EXPECT_EQ(States(*loaded),
            (std::map<std::uint64_t, JobState>{{1, JobState::kDone}, {3, JobState::kQueued}}));
}

// A line that did not all land (failed write or fdatasync) must not be
// replayed over the compaction that follows it.
TEST(QueueJournalTest, CompactionAfterAFailedAppendCoversItsLines) {
  TempDir dir;
  QueueStore store(dir.path());
  ASSERT_TRUE(store.Save(Queue(1, {})));
  const JobRecord one = MakeJob(1);
  ASSERT_TRUE(store.Append(2, {{1, &one}}, true));
  const std::string journal = ReadFile(store.journal_path());
  ASSERT_TRUE(store.Save(Queue(2, {})));  // job 1 removed since
  // The snapshot's journal_seq covers seq 1, so the stale line is skipped.
  WriteFile(store.journal_path(), journal);
  Result<QueueFile> loaded = QueueStore(dir.path()).Load();
  ASSERT_TRUE(loaded) << loaded.error().message();
  EXPECT_TRUE(loaded->jobs.empty());
}

TEST(QueueJournalTest, IdsAreNeverReused) {
  TempDir dir;
  {
    QueueStore store(dir.path());
    ASSERT_TRUE(store.Save(Queue(40, {})));
    // Job 40 was handed out and failed registration; 41 ran and was
    // dropped by retention.
    const JobRecord job41 = MakeJob(41, JobState::kDone);
    ASSERT_TRUE(store.Append(41, {{40, nullptr}}, true));
    ASSERT_TRUE(store.Append(42, {{41, &job41}}, true));
    ASSERT_TRUE(store.Append(42, {{41, nullptr}}, true));
  }
  QueueStore store(dir.path());
  Result<QueueFile> loaded = store.Load();
  ASSERT_TRUE(loaded) << loaded.error().message();
  EXPECT_TRUE(loaded->jobs.empty());
  EXPECT_EQ(loaded->next_id, 42u);
  // Through a compaction too.
  ASSERT_TRUE(store.Save(*loaded));
  loaded = QueueStore(dir.path()).Load();
  ASSERT_TRUE(loaded);
  EXPECT_EQ(loaded->next_id, 42u);
}

TEST(QueueJournalTest, QueueJsonFromBeforeTheJournalLoads) {
  TempDir dir;
  QueueStore store(dir.path());
  WriteFile(store.path(), "{\"next_id\": 5, \"jobs\": [" + protocol::Encode(MakeJob(3)) + "]}\n");
  Result<QueueFile> loaded = store.Load();
  ASSERT_TRUE(loaded) << loaded.error().message();
  EXPECT_EQ(States(*loaded), (std::map<std::uint64_t, JobState>{{3, JobState::kQueued}}));
  EXPECT_EQ(loaded->next_id, 5u);
  // And it is rewritten in the new form at the first compaction.
  ASSERT_TRUE(store.Save(*loaded));
  EXPECT_NE(ReadFile(store.path()).find("\"journal_seq\""), std::string::npos);
}

TEST(QueueJournalTest, CompactionIsAskedForOnceTheJournalOutgrowsTheSnapshot) {
  TempDir dir;
  QueueStore store(dir.path());
  ASSERT_TRUE(store.Save(Queue(1, {})));
  JobRecord job = MakeJob(1);
  job.argv = {std::string(4096, 'x')};
  std::size_t appends = 0;
  while (!store.WantsCompaction()) {
    ASSERT_TRUE(store.Append(2, {{1, &job}}, true));
    ++appends;
    ASSERT_LT(appends, 100000u);
  }
  EXPECT_GT(store.journal_bytes(), QueueStore::kMinJournalBytes);
  ASSERT_TRUE(store.Save(Queue(2, {job})));
  EXPECT_FALSE(store.WantsCompaction());
}

// A disk that starts failing on command, under the broker core.
class FailingStore : public QueueStore {
 public:
  using QueueStore::QueueStore;
  bool failing = false;
  Result<void> Save(const QueueFile& file) override {
    if (failing) return Error(ErrorCode::kInternal, "disk full (test)");
    return QueueStore::Save(file);
  }
  std::vector<bool> synced;  // per Append that wrote something
  Result<void> Append(std::uint64_t next_id, const std::vector<QueueChange>& changes,
                      bool sync) override {
    if (failing) return Error(ErrorCode::kInternal, "disk full (test)");
    if (!changes.empty()) synced.push_back(sync);
    return QueueStore::Append(next_id, changes, sync);
  }
};

// The broker core with a real store: each change appends, a restart
// replays, and nothing is rewritten wholesale between compactions.
class QueueJournalCoreTest : public ::testing::Test {
 protected:
  QueueJournalCoreTest() : scheduler_(1), permissions_(users_, "wheel") {
    options_.max_lifetime_s = 3600;
    options_.keep_finished = 100;
  }

  std::unique_ptr<BrokerCore> StartCore(QueueStore& store) {
    Result<QueueFile> loaded = store.Load();
    EXPECT_TRUE(loaded) << loaded.error().message();
    auto core =
        std::make_unique<BrokerCore>(options_, scheduler_, executor_, clock_, permissions_, &store);
    EXPECT_TRUE(core->Start(loaded ? *loaded : QueueFile{}));
    return core;
  }

  // As the server's loop: the executor answers, then the turn's write.
  std::optional<Response> HandleNow(BrokerCore& core, const std::string& text) {
    std::optional<Response> answer;
    core.Handle(Peer{1000, -1}, text,
                [&answer](Response response) { answer = std::move(response); });
    executor_.Flush();
    core.Flush();
    return answer;
  }

  std::uint64_t Submit(BrokerCore& core) {
    protocol::SubmitRequest request;
    request.argv = {"sleep", "100"};
    request.cwd = "/tmp";
    request.env = {{"TOKEN", "hush"}};
    request.output = "/tmp";
    std::optional<Response> response = HandleNow(core, protocol::Encode(request));
    EXPECT_TRUE(response);
    Result<protocol::SubmitReply> reply =
        protocol::Decode<protocol::SubmitReply>(response ? response->frame : "");
    EXPECT_TRUE(reply);
    return reply ? reply->id : 0;
  }

  FakeUserDb users_;
  FakeExecutor executor_;
  FakeScheduler scheduler_;
  FakeClock clock_{1000};
  Permissions permissions_;
  CoreOptions options_;
};

TEST_F(QueueJournalCoreTest, SubmitsAreJournalledAndSurviveARestart) {
  TempDir dir;
  QueueStore store(dir.path());
  std::unique_ptr<BrokerCore> core = StartCore(store);
  const std::string snapshot = ReadFile(store.path());
  std::vector<std::uint64_t> ids;
  for (int i = 0; i < 5; ++i)
    ids.push_back(Submit(*core));
  // Acknowledged means on disk: the journal holds every job already, and
  // the snapshot was not rewritten.
  EXPECT_EQ(ReadFile(store.path()), snapshot);
  const std::string journal = ReadFile(store.journal_path());
  EXPECT_EQ(journal.find("hush"), std::string::npos) << "a forwarded value reached the journal";
  for (std::uint64_t id : ids) {
    EXPECT_NE(journal.find("\"id\":" + std::to_string(id) + ","), std::string::npos) << id;
  }

  // Crash (no final Persist) and restart: job 1 runs, 2..5 wait.
  core.reset();
  executor_.hello.running = {ids[0]};
  executor_.hello.registered = {ids.begin(), ids.end()};
  QueueStore reopened(dir.path());
  core = StartCore(reopened);
  ASSERT_NE(core->Find(ids[0]), nullptr);
  EXPECT_TRUE(core->Find(ids[0])->running());
  for (std::size_t i = 1; i < ids.size(); ++i) {
    ASSERT_NE(core->Find(ids[i]), nullptr);
    EXPECT_TRUE(core->Find(ids[i])->queued());
  }
  EXPECT_EQ(core->next_id(), ids.back() + 1);
  EXPECT_EQ(Submit(*core), ids.back() + 1);
}

TEST_F(QueueJournalCoreTest, FinishedAndForgottenJobsAreJournalled) {
  options_.keep_finished = 0;
  TempDir dir;
  QueueStore store(dir.path());
  std::unique_ptr<BrokerCore> core = StartCore(store);
  const std::uint64_t first = Submit(*core);
  const std::uint64_t second = Submit(*core);  // queued behind the first
  executor_.events.push_back(protocol::JobExited{0, first, 0, false, 1001, std::nullopt});
  core->Tick();  // first finishes and is dropped; second starts
  executor_.Flush();
  core->Flush();
  core.reset();

  executor_.hello.running = {second};
  executor_.hello.registered = {second};
  QueueStore reopened(dir.path());
  core = StartCore(reopened);
  EXPECT_EQ(core->Find(first), nullptr);
  ASSERT_NE(core->Find(second), nullptr);
  EXPECT_TRUE(core->Find(second)->running());
  EXPECT_EQ(core->next_id(), second + 1);
}

TEST_F(QueueJournalCoreTest, ASubmitThatCannotBeSavedIsRefusedAndTakenBack) {
  TempDir dir;
  FailingStore store(dir.path());
  std::unique_ptr<BrokerCore> core = StartCore(store);
  const std::uint64_t running = Submit(*core);  // takes the one cpu
  ASSERT_TRUE(core->Find(running)->running());

  store.failing = true;
  protocol::SubmitRequest request;
  request.argv = {"sleep", "100"};
  request.cwd = "/tmp";
  std::optional<Response> response = HandleNow(*core, protocol::Encode(request));
  ASSERT_TRUE(response);
  Result<protocol::ErrorReply> refused = protocol::Decode<protocol::ErrorReply>(response->frame);
  ASSERT_TRUE(refused) << response->frame;
  EXPECT_NE(refused->error.find("could not be saved"), std::string::npos) << refused->error;
  EXPECT_NE(refused->error.find("disk full (test)"), std::string::npos) << refused->error;
  const std::uint64_t refused_id = running + 1;
  EXPECT_EQ(core->Find(refused_id), nullptr);
  ASSERT_FALSE(executor_.forgotten.empty());
  EXPECT_EQ(executor_.forgotten.back(), refused_id);

  // Once the disk is back, the next write is a compaction without the job,
  // and a restart knows nothing of it.
  store.failing = false;
  core->Tick();
  executor_.Flush();
  core->Flush();
  core.reset();
  executor_.hello.running = {running};
  executor_.hello.registered = {running};
  QueueStore reopened(dir.path());
  core = StartCore(reopened);
  EXPECT_NE(core->Find(running), nullptr);
  EXPECT_EQ(core->Find(refused_id), nullptr);
}

// Only what the broker alone knows waits for an fdatasync before its
// answer; what the root side already holds on disk rides along unsynced
// and is still in the file, so a crash of the broker finds it.
TEST_F(QueueJournalCoreTest, OnlyFactsTheBrokerAloneHoldsWaitForASync) {
  TempDir dir;
  FailingStore store(dir.path());
  std::unique_ptr<BrokerCore> core = StartCore(store);
  const std::uint64_t plain = Submit(*core);  // registered and started
  ASSERT_FALSE(store.synced.empty());
  EXPECT_EQ(store.synced, std::vector<bool>(store.synced.size(), false));
  EXPECT_NE(ReadFile(store.journal_path()).find("\"id\":" + std::to_string(plain) + ","),
            std::string::npos);

  store.synced.clear();
  protocol::SubmitRequest request;
  request.argv = {"true"};
  request.cwd = "/tmp";
  request.after = {plain};  // a dependency: the launch spec does not hold it
  std::optional<Response> response = HandleNow(*core, protocol::Encode(request));
  ASSERT_TRUE(response);
  ASSERT_TRUE(protocol::Decode<protocol::SubmitReply>(response->frame)) << response->frame;
  EXPECT_EQ(store.synced, std::vector<bool>{true});

  store.synced.clear();
  executor_.events.push_back(protocol::JobExited{0, plain, 0, false, 1001, std::nullopt});
  core->Tick();  // the root side reported the end; the dependent job starts
  executor_.Flush();
  core->Flush();
  EXPECT_EQ(store.synced, std::vector<bool>(store.synced.size(), false));
  EXPECT_FALSE(store.synced.empty());

  store.synced.clear();
  const std::uint64_t queued = Submit(*core);  // waits: the cpu is taken
  ASSERT_TRUE(core->Find(queued)->queued());
  std::optional<Response> killed = HandleNow(
      *core, protocol::Encode(protocol::JobIdRequest{protocol::ClientCommand::kKill, queued}));
  ASSERT_TRUE(killed);
  ASSERT_FALSE(store.synced.empty());
  EXPECT_TRUE(store.synced.back()) << "a queued job's removal is the broker's alone";
}

}  // namespace
}  // namespace hpcb::broker
