// Hostile-user end-to-end checks: the real hpc-batchd as root with
// --no-cgroups (as in root_e2e_test.cc), one attack per test by the
// unprivileged attacker hpcb-mallory, and meanwhile the victim hpcb-alice
// running the real `dispatch list` and `dispatch new` every 200 ms. Each
// test requires that every victim call answers within 1 s, that the
// daemon lives on with all its roles, that no reply reaches the wrong
// client, and that afterwards every job is in a defined state with its
// output or its error. Every test skips unless it runs as root.
//
// Each test prints one line for collecting figures:
//   HOSTILE-FIGURES attack=NAME list_p50_ms=.. list_max_ms=.. new_p50_ms=..
//   new_max_ms=.. failures=.. (then counts and the daemon's fate)
// A victim call that has not answered after kCallTimeout is killed and
// counted as a failure with that latency: a stalled daemon must still let
// each test end in bounded time.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "protocol/client_messages.h"
#include "protocol/codec.h"
#include "tests/e2e/daemon_harness.h"
#include "tests/e2e/hostile_tools.h"
#include "tests/e2e/test_accounts.h"

namespace hpcb::e2e {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

constexpr const char* kAttacker = "hpcb-mallory";
constexpr int kIdleUsers = 10;  // hpcb-idle0 .. hpcb-idle9
constexpr milliseconds kCallTimeout{5000};
// `attach` follows the job to its end, and a flood queues the victim's job
// behind the attacker's (up to its cap): how long it takes measures that
// queue on a loaded machine, not whether the daemon answers (the victim's
// `list` and `new` check that, against kBudgetMs).
constexpr milliseconds kAttachTimeout{15000};
constexpr double kBudgetMs = 1000;
constexpr milliseconds kVictimPeriod{200};
constexpr seconds kAttackPhase{10};
constexpr seconds kSettle{20};

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Tail(const std::string& text, std::size_t bytes = 3000) {
  return text.size() <= bytes ? text : "..." + text.substr(text.size() - bytes);
}

std::string Describe(const TimedResult& r) {
  if (r.timed_out)
    return "no answer before its timeout (killed after " + std::to_string(static_cast<long>(r.ms)) +
           " ms)";
  std::string text = Tail(r.err + r.out, 300);
  while (!text.empty() && text.back() == '\n')
    text.pop_back();
  return "exit " + std::to_string(r.exit_code) + ": " + text;
}

std::optional<protocol::ListReply> ParseList(const TimedResult& r) {
  if (r.timed_out || r.exit_code != 0) return std::nullopt;
  std::string text = r.out;
  while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
    text.pop_back();
  auto reply = protocol::Decode<protocol::ListReply>(text);
  if (!reply) return std::nullopt;
  return *reply;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

bool Ended(const protocol::JobRow& row) {
  return row.state == protocol::JobState::kDone;
}

class HostileE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "hostile-user e2e tests need root";
    EnsureAccounts();
    EnsureUser(kAttacker);
    victim_ = Lookup(kAlice);
    attacker_ = Lookup(kAttacker);
    ASSERT_NE(victim_.uid, 0u) << "could not create " << kAlice;
    ASSERT_NE(attacker_.uid, 0u) << "could not create " << kAttacker;
    victim_id_ = IdentityOf(victim_);
    attacker_id_ = IdentityOf(attacker_);
    // Whatever the daemon started that outlives it becomes our child, so
    // teardown can end it by pid and reap it.
    ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  }

  void TearDown() override {
    StopVictim();
    for (pid_t pid : attackers_)
      KillAndReap(pid);
    attackers_.clear();
    EndDaemon();
  }

  // A root daemon that keeps every finished job (the checks read them all).
  void Boot(const std::vector<std::string>& extra = {}, bool scratch_in_memory = false) {
    HarnessOptions options;
    options.daemon_as_root = true;
    options.scratch_in_memory = scratch_in_memory;
    daemon_ = std::make_unique<DaemonHarness>(std::move(options));
    for (const Account* who : {&victim_, &attacker_})
      MakeUserDir(*who);
    reports_ = daemon_->dir() + "/reports";
    fs::create_directories(reports_);
    ::chmod(reports_.c_str(), 0700);
    std::vector<std::string> flags = {"--admin-group", kAdminGroup};
    if (std::find(extra.begin(), extra.end(), "--keep-finished") == extra.end()) {
      flags.insert(flags.end(), {"--keep-finished", "1000000"});
    }
    flags.insert(flags.end(), extra.begin(), extra.end());
    flags_ = flags;
    ASSERT_TRUE(daemon_->Start(flags)) << daemon_->log();
    ASSERT_TRUE(DaemonHarness::RolePids(daemon_->log(), &executor_pid_, &broker_pid_))
        << daemon_->log();
  }

  void MakeUserDir(const Account& who) {
    std::string dir = DirOf(who);
    fs::create_directories(dir);
    (void)!::chown(dir.c_str(), who.uid, who.gid);
    ::chmod(dir.c_str(), 0755);
  }
  std::string DirOf(const Account& who) const { return daemon_->work() + "/" + who.name; }
  std::string Dispatch() const { return daemon_->bin() + "/dispatch"; }
  std::vector<std::string> Env() const {
    return {"HPC_BATCH_SOCKET=" + daemon_->socket(), "PATH=/usr/bin:/bin", "LANG=C.UTF-8"};
  }

  TimedResult As(const Account& who, const std::vector<std::string>& args,
                 milliseconds timeout = kCallTimeout) {
    std::vector<std::string> argv = {Dispatch()};
    argv.insert(argv.end(), args.begin(), args.end());
    const Identity& identity = who.uid == victim_.uid ? victim_id_ : attacker_id_;
    return RunTimed(identity, DirOf(who), argv, Env(), timeout);
  }

  // `dispatch new args...` as `who`: the job id, or -1.
  int Submit(const Account& who, const std::vector<std::string>& args,
             TimedResult* result = nullptr) {
    std::vector<std::string> full = {"new"};
    full.insert(full.end(), args.begin(), args.end());
    TimedResult r = As(who, full);
    if (result != nullptr) *result = r;
    return r.exit_code == 0 ? DaemonHarness::JobIdIn(r.out) : -1;
  }

  // `who`'s jobs from `list --finished --json`; nullopt when that failed.
  std::optional<std::vector<protocol::JobRow>> JobsOf(const Account& who) {
    std::optional<protocol::ListReply> reply = ParseList(As(who, {"list", "--finished", "--json"}));
    if (!reply) return std::nullopt;
    return reply->jobs;
  }

  std::optional<protocol::JobRow> JobOf(const Account& who, std::uint64_t id) {
    auto jobs = JobsOf(who);
    if (!jobs) return std::nullopt;
    for (const auto& row : *jobs) {
      if (row.id == id) return row;
    }
    return std::nullopt;
  }

  // A report file the attack processes append to (opened before fork).
  UniqueFd ReportFile(const std::string& name) {
    return UniqueFd(
        ::open((reports_ + "/" + name).c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  }

  pid_t Attack(const Account& who, const std::function<int()>& body) {
    pid_t pid = ForkAs(who, body);
    EXPECT_GT(pid, 0) << "could not start an attack process (the test must fork before its "
                         "probe threads run)";
    if (pid > 0) attackers_.push_back(pid);
    return pid;
  }

  void StopAttacks() {
    for (pid_t pid : attackers_)
      KillAndReap(pid);
    attackers_.clear();
  }

  // Reaps the attack processes that exit on their own within `timeout`;
  // they are no longer ours to kill.
  void AwaitAttacks(milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    while (!attackers_.empty() && Clock::now() < deadline) {
      std::erase_if(attackers_, [](pid_t pid) { return ::waitpid(pid, nullptr, WNOHANG) == pid; });
      std::this_thread::sleep_for(milliseconds(20));
    }
  }

  // The victim: `list` on one thread, `new` (then `attach` to that job) on
  // another, each every kVictimPeriod.
  void StartVictim() {
    list_probe_ = std::make_unique<RepeatingProbe>(kVictimPeriod, [this] { return VictimList(); });
    new_probe_ = std::make_unique<RepeatingProbe>(kVictimPeriod, [this] { return VictimNew(); });
    list_probe_->Start();
    new_probe_->Start();
  }

  void StopVictim() {
    if (list_probe_) list_probe_->Stop();
    if (new_probe_) new_probe_->Stop();
  }

  ProbeResult VictimList() {
    TimedResult r = As(victim_, {"list", "--json"});
    std::optional<protocol::ListReply> reply = ParseList(r);
    std::lock_guard<std::mutex> lock(mu_);
    if (!reply) {
      NoteFailure("list: " + Describe(r));
      return {false, r.ms};
    }
    for (const auto& row : reply->jobs) {
      if (row.user != victim_.name) {
        foreign_rows_.push_back("job " + std::to_string(row.id) + " of " + row.user);
      }
    }
    return {true, r.ms};
  }

  ProbeResult VictimNew() {
    const std::string marker = "hostile-victim-" + std::to_string(++victim_seq_);
    TimedResult r = As(victim_, {"new", "--", "echo", marker});
    const int id = r.exit_code == 0 ? DaemonHarness::JobIdIn(r.out) : -1;
    if (id <= 0) {
      std::lock_guard<std::mutex> lock(mu_);
      NoteFailure("new: " + Describe(r));
      return {false, r.ms};
    }
    TimedResult attach = As(victim_, {"attach", std::to_string(id)}, kAttachTimeout);
    std::lock_guard<std::mutex> lock(mu_);
    victim_jobs_[id] = marker;
    // Attached before or after the job ended: its own output, or nothing.
    if (attach.timed_out || attach.exit_code != 0) {
      ++attach_failures_;
      NoteFailure("attach " + std::to_string(id) + ": " + Describe(attach));
    } else if (!attach.out.empty() && attach.out != marker + "\n") {
      wrong_attach_.push_back("job " + std::to_string(id) + " (" + marker +
                              "): " + Tail(attach.out, 200));
    }
    return {true, r.ms};
  }

  void NoteFailure(const std::string& what) {
    if (failure_notes_.size() < 8) failure_notes_.push_back(what);
  }

  bool DaemonAlive() const { return daemon_ && IsLive(daemon_->daemon_pid()); }

  // The figures line, then the checks made while the attack ran.
  void ReportAndCheckVictim(const std::string& attack, const std::string& extra = "") {
    StopVictim();
    ASSERT_TRUE(list_probe_ && new_probe_);
    const std::vector<double> list = list_probe_->latencies_ms();
    const std::vector<double> made = new_probe_->latencies_ms();
    const int failures = list_probe_->failures() + new_probe_->failures();
    const bool alive = DaemonAlive();
    char line[512];
    std::snprintf(line, sizeof line,
                  "HOSTILE-FIGURES attack=%s list_p50_ms=%.0f list_max_ms=%.0f new_p50_ms=%.0f "
                  "new_max_ms=%.0f failures=%d list_n=%zu new_n=%zu attach_failures=%d daemon=%s",
                  attack.c_str(), Percentile(list, 0.5), Percentile(list, 1.0),
                  Percentile(made, 0.5), Percentile(made, 1.0), failures, list.size(), made.size(),
                  attach_failures_, alive ? "alive" : "exited");
    std::cout << line << (extra.empty() ? "" : " " + extra) << std::endl;

    std::string notes;
    for (const std::string& note : failure_notes_)
      notes += "\n  " + note;
    EXPECT_FALSE(list.empty());
    EXPECT_FALSE(made.empty());
    EXPECT_LT(Percentile(list, 1.0), kBudgetMs) << "a victim `list` took too long" << notes;
    EXPECT_LT(Percentile(made, 1.0), kBudgetMs) << "a victim `new` took too long" << notes;
    EXPECT_EQ(failures, 0) << notes;
    EXPECT_EQ(attach_failures_, 0) << "the victim could not attach to its own job" << notes;
    EXPECT_TRUE(foreign_rows_.empty()) << "the victim's list showed " << foreign_rows_.front();
    EXPECT_TRUE(wrong_attach_.empty()) << "the victim's attach got " << wrong_attach_.front();
    EXPECT_TRUE(alive) << "the daemon exited\n" << Tail(daemon_->log());
    const std::string log = daemon_->log();
    for (const char* death : {" exited with status ", "went away", "lost the executor"}) {
      EXPECT_EQ(log.find(death), std::string::npos) << "a role died: " << death << "\n"
                                                    << Tail(log);
    }
  }

  // Waits (at most kSettle) until every job of the victim has ended and
  // `attacker_settled` holds for the attacker's jobs, then checks the
  // victim's: each its own, done, exit 0, its output delivered.
  void SettleAndCheck(
      const std::function<bool(const std::vector<protocol::JobRow>&)>& attacker_settled) {
    std::optional<std::vector<protocol::JobRow>> victim;
    std::optional<std::vector<protocol::JobRow>> attacker;
    const bool settled = DaemonHarness::WaitFor(
        [&] {
          victim = JobsOf(victim_);
          if (!victim || !std::all_of(victim->begin(), victim->end(), Ended)) return false;
          attacker = JobsOf(attacker_);
          return attacker && attacker_settled(*attacker);
        },
        kSettle);
    EXPECT_TRUE(settled) << "jobs did not settle in " << kSettle.count() << " s\n"
                         << Tail(daemon_->log());
    ASSERT_TRUE(victim) << "the victim cannot list its jobs";
    std::map<std::uint64_t, const protocol::JobRow*> rows;
    for (const auto& row : *victim)
      rows[row.id] = &row;
    std::map<int, std::string> submitted;
    {
      std::lock_guard<std::mutex> lock(mu_);
      submitted = victim_jobs_;
    }
    for (const auto& [id, marker] : submitted) {
      EXPECT_TRUE(rows.contains(static_cast<std::uint64_t>(id)))
          << "job " << id << " the victim was given is not in its list";
    }
    for (const auto& row : *victim) {
      SCOPED_TRACE("victim job " + std::to_string(row.id));
      EXPECT_EQ(row.user, victim_.name);
      ASSERT_EQ(row.argv.size(), 2u);
      EXPECT_EQ(row.state, protocol::JobState::kDone);
      EXPECT_EQ(row.exit_code.value_or(-1), 0) << (row.reason ? protocol::NameOf(*row.reason) : "");
      EXPECT_FALSE(row.output_error) << *row.output_error;
      const std::string output = DirOf(victim_) + "/output." + std::to_string(row.id) + ".log";
      if (Ended(row)) {
        EXPECT_EQ(Slurp(output), row.argv[1] + "\n") << output;
      }
    }
    if (attacker) {
      for (const auto& row : *attacker) {
        EXPECT_EQ(row.user, attacker_.name) << "the attacker's list showed job " << row.id;
        EXPECT_EQ(submitted.count(static_cast<int>(row.id)), 0u)
            << "job " << row.id << " is the attacker's and was handed to the victim";
      }
    }
    attacker_jobs_ = attacker.value_or(std::vector<protocol::JobRow>{});
  }

  std::optional<protocol::JobRow> AttackerJob(int id) const {
    for (const auto& row : attacker_jobs_) {
      if (row.id == static_cast<std::uint64_t>(id)) return row;
    }
    return std::nullopt;
  }

  // Ends what the daemon started and the daemon itself, by pid: first the
  // processes below it (a stuck helper or a stopped child is what keeps
  // it from answering SIGTERM), then the daemon, then whatever of its tree
  // is left, reaping what was reparented to us.
  void EndDaemon() {
    if (!daemon_) return;
    const pid_t launcher = daemon_->daemon_pid();
    std::vector<ProcInfo> tree = launcher > 0 ? Descendants(launcher) : std::vector<ProcInfo>{};
    auto kill_if_same = [](const ProcInfo& was) {
      std::optional<ProcInfo> now = ReadProc(was.pid);
      if (now && now->start_ticks == was.start_ticks) ::kill(was.pid, SIGKILL);
    };
    for (const ProcInfo& info : tree) {
      if (info.pid != executor_pid_ && info.pid != broker_pid_) kill_if_same(info);
    }
    daemon_->Stop();
    for (const ProcInfo& info : tree)
      kill_if_same(info);
    // Our only other children (probes' and attackers') are reaped already,
    // so any child left is an orphan of the daemon's tree.
    for (const ProcInfo& info : Descendants(::getpid()))
      ::kill(info.pid, SIGKILL);
    const auto deadline = Clock::now() + seconds(5);
    while (Clock::now() < deadline) {
      pid_t reaped;
      while ((reaped = ::waitpid(-1, nullptr, WNOHANG)) > 0) {
      }
      if (reaped < 0) break;
      std::this_thread::sleep_for(milliseconds(20));
    }
    daemon_.reset();
  }

  // The daemon stopped and started again on the same state, as an admin's
  // restart would.
  void Restart() {
    daemon_->Stop();
    ASSERT_TRUE(daemon_->Start(flags_)) << daemon_->log();
    ASSERT_TRUE(DaemonHarness::RolePids(daemon_->log(), &executor_pid_, &broker_pid_));
  }

  Account victim_, attacker_;
  Identity victim_id_, attacker_id_;
  std::unique_ptr<DaemonHarness> daemon_;
  std::vector<std::string> flags_;
  pid_t executor_pid_ = -1;
  pid_t broker_pid_ = -1;
  std::string reports_;
  std::vector<pid_t> attackers_;
  std::unique_ptr<RepeatingProbe> list_probe_;
  std::unique_ptr<RepeatingProbe> new_probe_;
  std::vector<protocol::JobRow> attacker_jobs_;

  std::mutex mu_;
  int victim_seq_ = 0;                      // only the `new` probe's thread
  std::map<int, std::string> victim_jobs_;  // id -> marker it echoes
  std::vector<std::string> foreign_rows_;
  std::vector<std::string> wrong_attach_;
  std::vector<std::string> failure_notes_;
  int attach_failures_ = 0;
};

// 1. Output to a FIFO nobody reads: delivery at the job's end must not
// wait for a reader.
TEST_F(HostileE2eTest, FifoDestinationStallsNoOne) {
  Boot();
  const std::string fifo = DirOf(attacker_) + "/fifo.log";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  ASSERT_EQ(::lchown(fifo.c_str(), attacker_.uid, attacker_.gid), 0);
  StartVictim();
  std::this_thread::sleep_for(seconds(1));

  TimedResult submit;
  const int id =
      Submit(attacker_, {"--output", fifo, "--", "sh", "-c", "echo fifo-attack; sleep 1"}, &submit);
  std::this_thread::sleep_for(kAttackPhase);

  ReportAndCheckVictim("fifo-destination", "attack_job=" + std::to_string(id));
  if (id < 0) {
    // Refusing such a destination up front is fine; silence is not.
    EXPECT_FALSE(submit.timed_out);
    EXPECT_NE(submit.err.find("dispatch:"), std::string::npos) << Describe(submit);
  }
  SettleAndCheck([&](const std::vector<protocol::JobRow>& jobs) {
    return std::all_of(jobs.begin(), jobs.end(), Ended);
  });
  if (id > 0) {
    std::optional<protocol::JobRow> job = AttackerJob(id);
    ASSERT_TRUE(job) << "the attacker's job " << id << " is not listed";
    EXPECT_EQ(job->state, protocol::JobState::kDone);
    EXPECT_FALSE(job->output_error.value_or("").empty()) << "delivery to a FIFO reported no error";
  }
}

// 2. A job that makes its output buffer a 20 GiB sparse file: delivery
// must neither stall anyone nor write gigabytes of zeros.
TEST_F(HostileE2eTest, SparseHugeOutputStallsNoOne) {
  Boot();
  const std::string dest = DirOf(attacker_) + "/sparse.log";
  StartVictim();
  std::this_thread::sleep_for(seconds(1));

  const int id = Submit(attacker_, {"--output", dest, "--", "perl", "-e",
                                    "$| = 1; print qq(sparse-attack\\n); "
                                    "truncate(STDOUT, 20 * 1024**3) or die qq(truncate: $!\\n)"});
  std::this_thread::sleep_for(kAttackPhase);

  struct stat st {};
  const bool exists = ::lstat(dest.c_str(), &st) == 0;
  const long long allocated = exists ? static_cast<long long>(st.st_blocks) * 512 : 0;
  ReportAndCheckVictim("sparse-output",
                       "attack_job=" + std::to_string(id) +
                           " dest_allocated_mib=" + std::to_string(allocated >> 20));
  EXPECT_GT(id, 0) << "the attacker's submission failed";
  SettleAndCheck([&](const std::vector<protocol::JobRow>& jobs) {
    return std::all_of(jobs.begin(), jobs.end(), Ended);
  });
  if (::lstat(dest.c_str(), &st) == 0) {
    EXPECT_LT(static_cast<long long>(st.st_blocks) * 512, 1LL << 30)
        << "gigabytes of zeros were written to " << dest;
  }
  std::optional<protocol::JobRow> job = AttackerJob(id);
  ASSERT_TRUE(job) << "the attacker's job " << id << " is not listed";
  EXPECT_EQ(job->state, protocol::JobState::kDone);
  std::cout << "sparse job: exit " << job->exit_code.value_or(-1) << ", output error '"
            << job->output_error.value_or("") << "'\n";
}

// 3. The attacker stops its own job's child between the switch to its uid
// and exec (a PATH of thousands of entries that each resolve to a script
// with a missing interpreter keeps that window open for a few hundred
// ms). The launcher must not wait for it; the job must fail with a reason
// within kSettle.
TEST_F(HostileE2eTest, SigstopBeforeExecFreezesNoOne) {
  Boot();
  const std::string bin_dir = DirOf(attacker_) + "/x";
  fs::create_directories(bin_dir);
  const std::string script = bin_dir + "/hostile-stall";
  {
    std::ofstream out(script);
    out << "#!/nonexistent/hostile-interp\n";
  }
  ::chmod(script.c_str(), 0755);
  for (const std::string& path : {bin_dir, script}) {
    ASSERT_EQ(::lchown(path.c_str(), attacker_.uid, attacker_.gid), 0);
  }
  std::string path = "PATH=x";
  for (int i = 1; i < 12000; ++i)
    path += ":x";

  UniqueFd report = ReportFile("stopped");
  const pid_t launcher = daemon_->daemon_pid();
  const int report_fd = report.get();
  Attack(attacker_, [&] { return StopPreExecChildren(launcher, "hostile-stall", report_fd); });
  report.reset();
  StartVictim();
  std::this_thread::sleep_for(seconds(1));

  const auto phase_end = Clock::now() + kAttackPhase;
  std::vector<int> ids;
  for (int attempt = 0; attempt < 3 && Slurp(reports_ + "/stopped").empty(); ++attempt) {
    int id = Submit(attacker_, {"--no-output", "--", path, "hostile-stall"});
    if (id > 0) ids.push_back(id);
    DaemonHarness::WaitFor([&] { return !Slurp(reports_ + "/stopped").empty(); }, seconds(3));
  }
  std::this_thread::sleep_until(phase_end);
  const std::vector<std::string> stopped = Lines(Slurp(reports_ + "/stopped"));

  ReportAndCheckVictim("sigstop-before-exec", "stopped=" + std::to_string(stopped.size()));
  StopAttacks();
  EXPECT_FALSE(stopped.empty()) << "the attack did not land: no child was caught before exec";
  SettleAndCheck([&](const std::vector<protocol::JobRow>& jobs) {
    return std::all_of(jobs.begin(), jobs.end(), Ended);
  });
  for (int id : ids) {
    std::optional<protocol::JobRow> job = AttackerJob(id);
    ASSERT_TRUE(job) << "the attacker's job " << id << " is not listed";
    EXPECT_EQ(job->state, protocol::JobState::kDone);
    EXPECT_TRUE(job->reason.has_value()) << "job " << id << " ended without a reason\n"
                                         << Tail(daemon_->log());
  }
  for (const auto& job : attacker_jobs_) {
    EXPECT_TRUE(Ended(job)) << "attacker job " << job.id << " is still " << job.state;
  }
}

// 4a. Eight connections that ask to attach to a chatty job and never read
// (each replaced as soon as the daemon drops it).
TEST_F(HostileE2eTest, AttachClientsThatNeverReadStallNoOne) {
  Boot();
  const int chatty =
      Submit(attacker_, {"--max-time", "2m", "--no-output", "--", "perl", "-e",
                         "$| = 1; my $l = ('x' x 1023) . qq(\\n); "
                         "print $l for 1 .. 40960; "
                         "while (1) { print $l for 1 .. 64; select(undef, undef, undef, 0.1) }"});
  ASSERT_GT(chatty, 0);
  ASSERT_TRUE(DaemonHarness::WaitFor(
      [&] {
        auto job = JobOf(attacker_, static_cast<std::uint64_t>(chatty));
        return job && job->state == protocol::JobState::kRunning;
      },
      seconds(10)))
      << Tail(daemon_->log());
  const std::string attach = protocol::Encode(
      protocol::JobIdRequest{protocol::ClientCommand::kAttach, static_cast<std::uint64_t>(chatty)});
  const std::string socket = daemon_->socket();
  Attack(attacker_, [&] { return HoldConnections(socket, 8, attach, milliseconds(200)); });
  std::this_thread::sleep_for(milliseconds(500));
  StartVictim();
  std::this_thread::sleep_for(kAttackPhase);

  ReportAndCheckVictim("attach-non-readers", "attack_job=" + std::to_string(chatty));
  StopAttacks();
  bool killed = false;
  SettleAndCheck([&](const std::vector<protocol::JobRow>& jobs) {
    if (!killed) killed = As(attacker_, {"kill", std::to_string(chatty)}).exit_code == 0;
    return std::all_of(jobs.begin(), jobs.end(), Ended);
  });
  std::optional<protocol::JobRow> job = AttackerJob(chatty);
  ASSERT_TRUE(job) << "the attacker's job " << chatty << " is not listed";
  EXPECT_EQ(job->state, protocol::JobState::kDone);
  EXPECT_EQ(job->reason, protocol::JobReason::kKilled);
}

// 4b. A client that asks for a list of over 1 MB and reads it 64 KiB every
// 2 s, over and over.
TEST_F(HostileE2eTest, SlowReaderOfALargeListStallsNoOne) {
  Boot();
  const std::string filler(100 * 1024, 'y');
  std::vector<int> ids;
  for (int i = 0; i < 16; ++i) {
    int id = Submit(attacker_, {"--no-output", "--", "true", filler});
    ASSERT_GT(id, 0) << i;
    ids.push_back(id);
  }
  std::size_t list_bytes = 0;
  ASSERT_TRUE(DaemonHarness::WaitFor(
      [&] {
        TimedResult r = As(attacker_, {"list", "--finished", "--json"});
        auto reply = ParseList(r);
        list_bytes = r.out.size();
        return reply && reply->jobs.size() == ids.size() &&
               std::all_of(reply->jobs.begin(), reply->jobs.end(), Ended);
      },
      seconds(20)))
      << Tail(daemon_->log());
  ASSERT_GT(list_bytes, std::size_t{1} << 20) << "the attacker's list is too small to matter";

  UniqueFd report = ReportFile("slow-replies");
  const int report_fd = report.get();
  const std::string request = protocol::Encode(protocol::ListRequest{false, true});
  const std::string socket = daemon_->socket();
  Attack(attacker_, [&] {
    return ReadRepliesSlowly(socket, request, 64 * 1024, milliseconds(2000), report_fd);
  });
  report.reset();
  std::this_thread::sleep_for(milliseconds(500));
  StartVictim();
  std::this_thread::sleep_for(kAttackPhase);

  ReportAndCheckVictim("slow-list-reader",
                       "list_bytes=" + std::to_string(list_bytes) + " slow_replies=" +
                           std::to_string(Lines(Slurp(reports_ + "/slow-replies")).size()));
  StopAttacks();
  SettleAndCheck([&](const std::vector<protocol::JobRow>& jobs) {
    return std::all_of(jobs.begin(), jobs.end(), Ended);
  });
  for (int id : ids) {
    std::optional<protocol::JobRow> job = AttackerJob(id);
    ASSERT_TRUE(job) << "the attacker's job " << id << " is not listed";
    EXPECT_EQ(job->state, protocol::JobState::kDone);
    EXPECT_EQ(job->exit_code.value_or(-1), 0);
  }
}

// 5. Ten more users, each holding as many idle connections as the daemon
// accepts (re-opening those it drops).
TEST_F(HostileE2eTest, IdleConnectionsFromManyUsersLockOutNoOne) {
  std::vector<Account> idle;
  for (int i = 0; i < kIdleUsers; ++i) {
    const std::string name = "hpcb-idle" + std::to_string(i);
    EnsureUser(name);
    idle.push_back(Lookup(name));
    ASSERT_NE(idle.back().uid, 0u) << "could not create " << name;
  }
  Boot();
  const std::string socket = daemon_->socket();
  for (const Account& who : idle) {
    Attack(who, [&] { return HoldConnections(socket, 200, "", milliseconds(500)); });
  }
  std::this_thread::sleep_for(seconds(2));
  StartVictim();
  std::this_thread::sleep_for(kAttackPhase);

  std::size_t broker_fds = 0;
  std::error_code ec;
  for (auto it = fs::directory_iterator("/proc/" + std::to_string(broker_pid_) + "/fd", ec);
       !ec && it != fs::directory_iterator(); it.increment(ec)) {
    ++broker_fds;
  }
  ReportAndCheckVictim("idle-connections", "broker_fds=" + std::to_string(broker_fds));
  StopAttacks();
  SettleAndCheck([](const std::vector<protocol::JobRow>&) { return true; });
}

// 6. The attacker submits as fast as it can for the whole phase, 200
// submissions at a time (what a shell loop of `dispatch new ... &` opens).
// Every submission it was given an id for must be listed; a refusal must
// say why.
// Jobs start in submission order, so a flood does delay the victim's jobs:
// the per-user cap on queued jobs is what bounds that delay (here to a
// hundred `true` jobs), and a refusal past it must say why.
TEST_F(HostileE2eTest, QueueFloodStallsNoOne) {
  constexpr int kCap = 100;
  Boot({"--max-queued-per-user", std::to_string(kCap)});
  protocol::SubmitRequest submit;
  submit.argv = {"true"};
  submit.cwd = DirOf(attacker_);
  submit.output = DirOf(attacker_);
  submit.output_is_dir = true;
  submit.user = attacker_.name;
  const std::string request = protocol::Encode(submit);
  const std::string socket = daemon_->socket();
  constexpr int kFlooders = 200;
  std::vector<UniqueFd> reports;
  for (int i = 0; i < kFlooders; ++i) {
    reports.push_back(ReportFile("flood" + std::to_string(i)));
    const int report_fd = reports.back().get();
    Attack(attacker_, [&] { return SubmitRepeatedly(socket, request, kAttackPhase, report_fd); });
  }
  reports.clear();
  StartVictim();
  std::this_thread::sleep_for(kAttackPhase + seconds(1));
  StopVictim();
  // The flooders stop on their own; one still waiting for a reply is cut off.
  AwaitAttacks(seconds(3));
  StopAttacks();

  std::vector<std::uint64_t> acked;
  std::vector<std::string> refusals;
  std::vector<std::string> broken;
  for (int i = 0; i < kFlooders; ++i) {
    for (const std::string& line : Lines(Slurp(reports_ + "/flood" + std::to_string(i)))) {
      if (line.rfind("id ", 0) == 0) {
        acked.push_back(std::stoull(line.substr(3)));
      } else if (line.rfind("refused ", 0) == 0) {
        refusals.push_back(line.substr(8));
      } else {
        broken.push_back(line);
      }
    }
  }
  ReportAndCheckVictim("queue-flood", "acked=" + std::to_string(acked.size()) +
                                          " refused=" + std::to_string(refusals.size()) +
                                          " broken=" + std::to_string(broken.size()));
  EXPECT_GT(acked.size(), 0u) << "the flood got nothing in";
  EXPECT_TRUE(broken.empty()) << broken.size() << " submissions got no answer, e.g. "
                              << broken.front();
  std::size_t capped = 0;
  for (const std::string& why : refusals) {
    EXPECT_GT(why.size(), 10u) << "a refusal without a clear message: '" << why << "'";
    if (why.find("--max-queued-per-user") != std::string::npos) ++capped;
  }
  EXPECT_GT(capped, 0u) << "the flood never reached the per-user cap";
  std::set<std::uint64_t> unique(acked.begin(), acked.end());
  EXPECT_EQ(unique.size(), acked.size()) << "an id was handed out twice";
  SettleAndCheck([](const std::vector<protocol::JobRow>&) { return true; });
  std::set<std::uint64_t> listed;
  for (const auto& row : attacker_jobs_)
    listed.insert(row.id);
  std::size_t missing = 0;
  for (std::uint64_t id : unique)
    missing += listed.contains(id) ? 0 : 1;
  EXPECT_EQ(missing, 0u) << "acknowledged submissions missing from the attacker's list";
}

// 7. Not an attack: an ordinary workflow. One job fails after 2,000 jobs
// were queued `--after` it, at the default retention. Its end sends the
// executor a burst of forgets (each dependent ends as `dependency`, and
// retention drops all but 50) while the executor answers: with blocking
// sends on both internal channels, both roles sat in sendmsg for good and
// every user's `dispatch` hung. Another user must be answered within 1 s
// during and after the cascade, each dependent is forgotten once, and a
// restart finds nothing lost.
TEST_F(HostileE2eTest, AFailingJobWithTwoThousandDependentsStallsNoOne) {
  constexpr std::size_t kDependents = 2000;
  Boot({"--keep-finished", "50"});
  const std::string go = DirOf(attacker_) + "/go";
  const int failing = Submit(attacker_, {"--no-output", "--", "sh", "-c",
                                         "while [ ! -e go ]; do sleep 0.1; done; exit 1"});
  ASSERT_GT(failing, 0) << Tail(daemon_->log());
  protocol::SubmitRequest dependent;
  dependent.argv = {"true"};
  dependent.cwd = DirOf(attacker_);
  dependent.user = attacker_.name;
  dependent.after = {static_cast<std::uint64_t>(failing)};
  const std::string request = protocol::Encode(dependent);
  const std::string socket = daemon_->socket();
  UniqueFd report = ReportFile("dependents");
  const int report_fd = report.get();
  Attack(attacker_,
         [&] { return SubmitRepeatedly(socket, request, seconds(240), report_fd, kDependents); });
  report.reset();
  AwaitAttacks(seconds(250));
  StopAttacks();
  std::set<std::uint64_t> acked;
  for (const std::string& line : Lines(Slurp(reports_ + "/dependents"))) {
    ASSERT_EQ(line.rfind("id ", 0), 0u) << "a dependent was not queued: " << line;
    acked.insert(std::stoull(line.substr(3)));
  }
  ASSERT_EQ(acked.size(), kDependents);

  StartVictim();
  std::this_thread::sleep_for(seconds(1));
  { std::ofstream touch(go); }
  const bool cascaded = DaemonHarness::WaitFor(
      [&] {
        const std::string log = daemon_->log();
        std::size_t ended = 0;
        for (std::size_t at = log.find("will not run"); at != std::string::npos;
             at = log.find("will not run", at + 1)) {
          ++ended;
        }
        return ended >= kDependents;
      },
      seconds(60));
  // The victim goes on for a while after the cascade, while retention
  // and the forgets it sent are still being worked off.
  std::this_thread::sleep_for(seconds(3));
  ReportAndCheckVictim("dependency-cascade", "dependents=" + std::to_string(acked.size()));
  ASSERT_TRUE(cascaded) << "not every dependent ended\n" << Tail(daemon_->log());
  const std::string log = daemon_->log();
  for (std::uint64_t id : acked) {
    ASSERT_NE(log.find("job " + std::to_string(id) + " will not run: job " +
                       std::to_string(failing) + " failed"),
              std::string::npos)
        << "dependent " << id << " did not end as `dependency`";
  }
  EXPECT_EQ(log.find("refused forget"), std::string::npos) << "a job was forgotten twice\n"
                                                           << Tail(log);
  const std::optional<std::vector<protocol::JobRow>> left = JobsOf(attacker_);
  ASSERT_TRUE(left);
  for (const protocol::JobRow& row : *left) {
    EXPECT_TRUE(Ended(row)) << "job " << row.id << " is still " << row.state;
    if (acked.contains(row.id)) {
      ASSERT_TRUE(row.reason) << "job " << row.id;
      EXPECT_EQ(*row.reason, protocol::JobReason::kDependency) << "job " << row.id;
    }
  }

  Restart();
  const std::string restarted = daemon_->log();
  EXPECT_EQ(restarted.find("reported lost"), std::string::npos) << Tail(restarted);
  EXPECT_EQ(restarted.find("has no launch spec"), std::string::npos) << Tail(restarted);
  const std::optional<std::vector<protocol::JobRow>> after = JobsOf(attacker_);
  ASSERT_TRUE(after);
  for (const protocol::JobRow& row : *after) {
    EXPECT_TRUE(Ended(row)) << "job " << row.id << " is " << row.state << " after the restart";
    EXPECT_NE(row.reason.value_or(protocol::JobReason::kDependency), protocol::JobReason::kError)
        << "job " << row.id;
  }
}

// 8. A job fills another of its user's job directories with a million
// files; that job is then forgotten (its dependency failed). Root removes
// only the files it made there and has a helper, as the user, empty the
// rest: other users are answered within 1 s throughout, and the tree is
// gone in the end. The state directory is in memory: on this disk
// (mounted with `discard`) making and removing the million files took
// 50 s of the suite, and what is under test, the executor serving others
// while the tree is emptied, is the same on tmpfs, where a removal done
// in the executor's loop would still hold everyone for seconds.
TEST_F(HostileE2eTest, ForgettingAJobDirOfAMillionFilesStallsNoOne) {
  Boot({}, /*scratch_in_memory=*/true);
  const std::string jobs = daemon_->state() + "/jobs";
  const std::string counted = DirOf(attacker_) + "/junk-count";
  const std::string filler_script =
      "while [ ! -s victim-id ]; do sleep 0.1; done; d=" + jobs +
      "/$(cat victim-id)/junk; mkdir $d && cd $d && seq 1 1000000 | xargs touch && ls -f | " +
      "wc -l > " + counted + "; exit 1";
  const int filler = Submit(attacker_, {"--no-output", "--", "sh", "-c", filler_script});
  ASSERT_GT(filler, 0) << Tail(daemon_->log());
  const int doomed =
      Submit(attacker_, {"--no-output", "--after", std::to_string(filler), "--", "echo", "never"});
  ASSERT_GT(doomed, 0) << Tail(daemon_->log());
  StartVictim();
  {
    std::ofstream id(DirOf(attacker_) + "/victim-id");
    id << doomed << "\n";
  }
  const std::string doomed_dir = jobs + "/" + std::to_string(doomed);
  const bool filled = DaemonHarness::WaitFor(
      [&] {
        return daemon_->log().find("job " + std::to_string(doomed) + " will not run") !=
               std::string::npos;
      },
      seconds(180));
  const bool removed =
      filled && DaemonHarness::WaitFor([&] { return !fs::exists(doomed_dir); }, seconds(120));
  std::this_thread::sleep_for(seconds(1));
  ReportAndCheckVictim("million-file-forget");
  EXPECT_TRUE(filled) << "the filler job did not end\n" << Tail(daemon_->log());
  EXPECT_GE(std::strtol(Slurp(counted).c_str(), nullptr, 10), 1000000) << "the tree was never made";
  EXPECT_TRUE(removed) << doomed_dir << " is still there\n" << Tail(daemon_->log());
}

// Resident memory of `pid` in KiB (VmRSS), or 0.
std::size_t ResidentKib(pid_t pid) {
  std::istringstream status(Slurp("/proc/" + std::to_string(pid) + "/status"));
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoul(line.substr(6));
  }
  return 0;
}

// 4c. Ten connections each ask for a 50 MB list (400 queued jobs of
// 120 KB of argv) and never read it. The list goes in pages, each built
// once the last is written: each connection holds one page of the
// broker's memory, not the list, and everyone else is answered.
TEST_F(HostileE2eTest, UnreadFiftyMegabyteListsStallNoOne) {
  Boot();
  const int blocker =
      Submit(attacker_, {"--no-output", "--", "sh", "-c", "while [ ! -e go ]; do sleep 0.1; done"});
  ASSERT_GT(blocker, 0) << Tail(daemon_->log());
  protocol::SubmitRequest big;
  big.argv = {"true", std::string(120 * 1024, 'y')};
  big.cwd = DirOf(attacker_);
  big.user = attacker_.name;
  big.after = {static_cast<std::uint64_t>(blocker)};
  const std::string socket = daemon_->socket();
  const std::string request = protocol::Encode(big);
  UniqueFd report = ReportFile("big-jobs");
  const int report_fd = report.get();
  Attack(attacker_,
         [&] { return SubmitRepeatedly(socket, request, seconds(120), report_fd, 400); });
  report.reset();
  AwaitAttacks(seconds(130));
  StopAttacks();
  std::size_t queued = 0;
  for (const std::string& line : Lines(Slurp(reports_ + "/big-jobs")))
    queued += line.rfind("id ", 0) == 0 ? 1 : 0;
  ASSERT_EQ(queued, 400u) << Slurp(reports_ + "/big-jobs").substr(0, 500);

  const std::size_t before_kib = ResidentKib(broker_pid_);
  const std::string list = protocol::Encode(protocol::ListRequest{false, true});
  Attack(attacker_, [&] { return HoldConnections(socket, 10, list, milliseconds(500)); });
  StartVictim();
  std::size_t peak_kib = before_kib;
  const auto until = Clock::now() + kAttackPhase;
  while (Clock::now() < until) {
    peak_kib = std::max(peak_kib, ResidentKib(broker_pid_));
    std::this_thread::sleep_for(milliseconds(100));
  }
  ReportAndCheckVictim("unread-big-lists", "broker_rss_kib_before=" + std::to_string(before_kib) +
                                               " peak=" + std::to_string(peak_kib));
  StopAttacks();
  // Ten unread 50 MB answers were 500 MB; ten pages are about 10 MB.
  EXPECT_LT(peak_kib - before_kib, std::size_t{64} * 1024)
      << "the broker grew from " << before_kib << " to " << peak_kib << " KiB";
  { std::ofstream go(DirOf(attacker_) + "/go"); }
}

// A delivery helper once it has exec'd hpc-batch-as-user, as /proc names it
// (a command name is cut at 15 bytes).
constexpr char kHelperComm[] = "hpc-batch-as-us";

// 3b. A user stops their own delivery helper (SIGSTOP, as it starts) once
// their job, holding every cpu, has ended. The delivery waits for its
// deadline, but the job's cpus do not: another user's two-cpu job runs
// within seconds, not after the minute the delivery may take.
TEST_F(HostileE2eTest, AStoppedDeliveryHelperHoldsNoCpus) {
  Boot();
  // 200 MB of output: its copy takes long enough to be caught.
  const int hog =
      Submit(attacker_, {"--cpu", "2", "--", "sh", "-c", "sleep 2; head -c 200000000 /dev/zero"});
  ASSERT_GT(hog, 0) << Tail(daemon_->log());
  ASSERT_TRUE(DaemonHarness::WaitFor(
      [&] {
        std::optional<protocol::JobRow> row = JobOf(attacker_, hog);
        return row && row->state == protocol::JobState::kRunning;
      },
      seconds(10)));
  UniqueFd report = ReportFile("stopped-helpers");
  const pid_t launcher = daemon_->daemon_pid();
  const int report_fd = report.get();
  Attack(attacker_, [&] { return SignalChildrenNamed(launcher, kHelperComm, SIGSTOP, report_fd); });
  report.reset();
  TimedResult wide;
  const int waiting = Submit(victim_, {"--cpu", "2", "--", "echo", "wide"}, &wide);
  ASSERT_GT(waiting, 0) << Describe(wide);
  StartVictim();
  const bool ran = DaemonHarness::WaitFor(
      [&] {
        std::optional<protocol::JobRow> row = JobOf(victim_, waiting);
        return row && row->state == protocol::JobState::kDone;
      },
      seconds(20));
  ReportAndCheckVictim(
      "stopped-delivery-helper",
      "stopped=" + std::to_string(Lines(Slurp(reports_ + "/stopped-helpers")).size()));
  EXPECT_FALSE(Slurp(reports_ + "/stopped-helpers").empty())
      << "the attack did not land: no helper of the attacker was stopped";
  EXPECT_TRUE(ran) << "the two-cpu job did not run while the hog's delivery was stopped\n"
                   << Tail(daemon_->log());
  std::optional<protocol::JobRow> held = JobOf(attacker_, hog);
  ASSERT_TRUE(held);
  EXPECT_EQ(held->state, protocol::JobState::kRunning)
      << "the hog is done before its output was delivered";
  StopAttacks();
}

// 3c. A user kills their own delivery helper in the middle of its copy.
// The copy is unnamed until whole, so nothing half-written is left in
// their directory; the output is kept for a later try.
TEST_F(HostileE2eTest, AKilledDeliveryHelperLeavesNoPartialCopy) {
  Boot();
  const int job = Submit(attacker_, {"--", "sh", "-c", "sleep 2; head -c 200000000 /dev/zero"});
  ASSERT_GT(job, 0) << Tail(daemon_->log());
  ASSERT_TRUE(DaemonHarness::WaitFor(
      [&] {
        std::optional<protocol::JobRow> row = JobOf(attacker_, job);
        return row && row->state == protocol::JobState::kRunning;
      },
      seconds(10)));
  UniqueFd report = ReportFile("killed-helpers");
  const pid_t launcher = daemon_->daemon_pid();
  const int report_fd = report.get();
  // Killed 100 ms into its life, well into a 200 MB copy (root's and other
  // users' processes refuse the signal).
  Attack(attacker_, [&] {
    std::set<pid_t> done;
    for (;;) {
      for (const ProcInfo& info : Descendants(launcher)) {
        if (info.comm != kHelperComm || info.state == 'Z' || done.contains(info.pid)) continue;
        std::this_thread::sleep_for(milliseconds(100));
        if (::kill(info.pid, SIGKILL) == 0) {
          const std::string line = "killed " + std::to_string(info.pid) + "\n";
          (void)!::write(report_fd, line.data(), line.size());
        }
        done.insert(info.pid);
      }
      std::this_thread::sleep_for(milliseconds(2));
    }
    return 0;
  });
  report.reset();
  const bool kept = DaemonHarness::WaitFor(
      [&] {
        std::optional<protocol::JobRow> row = JobOf(attacker_, job);
        return row && row->state == protocol::JobState::kDone && row->output_error;
      },
      seconds(20));
  StopAttacks();
  EXPECT_FALSE(Slurp(reports_ + "/killed-helpers").empty())
      << "the attack did not land: no helper of the attacker was killed";
  EXPECT_TRUE(kept) << "the job did not end with its output kept\n" << Tail(daemon_->log());
  std::vector<std::string> strays;
  for (const auto& entry : fs::directory_iterator(DirOf(attacker_))) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(".output.", 0) == 0) strays.push_back(name);
  }
  EXPECT_TRUE(strays.empty()) << "a partial copy was left: " << strays.front();
}

}  // namespace
}  // namespace hpcb::e2e
