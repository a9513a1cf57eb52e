// Faults: roles killed with SIGKILL at random points while jobs churn, the
// launcher itself killed and the daemon started again, reloads, damaged
// and deleted state files. After each, for every job the daemon accepted
// (answered with an id): it ran exactly once, its exit code is the one it
// exited with, and its output is at its destination byte for byte. A job
// whose submission got no answer ran at most once.
//
// Every job of the churn is `sh -c 'echo TOKEN; echo x >>ledger/TOKEN;
// exit CODE'`: the ledger counts its runs, the output and the exit code are
// known in advance.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "protocol/client_messages.h"
#include "protocol/codec.h"
#include "tests/e2e/daemon_harness.h"

namespace hpcb::e2e {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool Alive(pid_t pid) {
  return pid > 0 && ::kill(pid, 0) == 0;
}

// The pids of the roles started last (the launcher logs each start).
bool LatestRolePids(const std::string& log, pid_t* executor, pid_t* broker) {
  static const std::regex kRoles("executor pid ([0-9]+), broker pid ([0-9]+)");
  bool found = false;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), kRoles); it != std::sregex_iterator();
       ++it) {
    *executor = std::stoi((*it)[1]);
    *broker = std::stoi((*it)[2]);
    found = true;
  }
  return found;
}

std::size_t Count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++n;
  return n;
}

// One submission of the churn.
struct Submission {
  std::string token;
  int code = 0;
  std::uint64_t id = 0;  // 0: no answer with an id
};

class FaultE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ledger_ = daemon_.work() + "/ledger";
    fs::create_directories(ledger_);
    if (::geteuid() == 0)
      (void)!::chown(ledger_.c_str(), daemon_.client_uid(), daemon_.client_gid());
  }

  const std::vector<std::string>& Flags() const {
    static const std::vector<std::string> kFlags = {"--keep-finished", "1000000",
                                                    "--max-queued-per-user", "100000"};
    return kFlags;
  }

  void Boot() { ASSERT_TRUE(daemon_.Start(Flags())) << daemon_.log(); }

  // SIGKILL to the launcher and both roles, right after their last answers;
  // returns once the roles are gone.
  void KillEveryRole() {
    pid_t executor = -1, broker = -1;
    ASSERT_TRUE(LatestRolePids(daemon_.log(), &executor, &broker)) << daemon_.log();
    ::kill(executor, SIGKILL);
    ::kill(broker, SIGKILL);
    ::kill(daemon_.daemon_pid(), SIGKILL);
    daemon_.WaitForExit(seconds(5));
    ASSERT_TRUE(
        DaemonHarness::WaitFor([&] { return !Alive(executor) && !Alive(broker); }, seconds(10)));
  }

  // Submits one churn job; returns what the client was told.
  Submission SubmitOne(int n) {
    Submission s;
    s.token = "t" + std::to_string(n);
    s.code = n % 50;
    const std::string script =
        "echo " + s.token + "; echo x >>ledger/" + s.token + "; exit " + std::to_string(s.code);
    CommandResult r =
        daemon_.Dispatch({"new", "--max-mem", "0.1", "--", "sh", "-c", script}, seconds(20));
    std::smatch match;
    if (r.exit_code == 0 && std::regex_search(r.out, match, std::regex("job ([0-9]+) "))) {
      s.id = std::stoull(match[1]);
    }
    return s;
  }

  // Every finished job, by id (nullopt: the list could not be had).
  std::optional<std::map<std::uint64_t, protocol::JobRow>> Finished() {
    CommandResult r = daemon_.Dispatch({"list", "--finished", "--json"}, seconds(30));
    if (r.exit_code != 0) return std::nullopt;
    Result<protocol::ListReply> reply = protocol::Decode<protocol::ListReply>(r.out);
    if (!reply) return std::nullopt;
    std::map<std::uint64_t, protocol::JobRow> rows;
    for (protocol::JobRow& row : reply->jobs)
      rows[row.id] = std::move(row);
    return rows;
  }

  // Waits (bounded) until every acknowledged job is done.
  bool AllDone(const std::vector<Submission>& submissions, seconds timeout) {
    return DaemonHarness::WaitFor(
        [&] {
          auto rows = Finished();
          if (!rows) return false;
          for (const Submission& s : submissions) {
            if (s.id == 0) continue;
            auto it = rows->find(s.id);
            if (it == rows->end() || it->second.state != protocol::JobState::kDone) return false;
          }
          return true;
        },
        timeout);
  }

  // Everything the promise says, for every submission; the violations.
  std::vector<std::string> Violations(const std::vector<Submission>& submissions) {
    std::vector<std::string> out;
    auto rows = Finished();
    if (!rows) return {"the job list could not be had"};
    for (const Submission& s : submissions) {
      const std::size_t runs = Count(Slurp(ledger_ + "/" + s.token), "x");
      const std::string who = s.token + (s.id ? " (job " + std::to_string(s.id) + ")" : "");
      if (s.id == 0) {
        if (runs > 1) out.push_back(who + " ran " + std::to_string(runs) + " times");
        continue;
      }
      auto it = rows->find(s.id);
      if (it == rows->end()) {
        out.push_back(who + " is not listed");
        continue;
      }
      const protocol::JobRow& row = it->second;
      if (runs != 1) out.push_back(who + " ran " + std::to_string(runs) + " times");
      if (row.state != protocol::JobState::kDone) out.push_back(who + " is not done");
      if (row.exit_code != s.code) {
        out.push_back(who + " exit " + (row.exit_code ? std::to_string(*row.exit_code) : "-") +
                      ", not " + std::to_string(s.code) +
                      (row.detail ? " (" + *row.detail + ")" : "") +
                      (row.reason ? " reason " + std::string(protocol::NameOf(*row.reason)) : ""));
      }
      const std::string output = Slurp(daemon_.work() + "/output." + std::to_string(s.id) + ".log");
      if (output != s.token + "\n") {
        out.push_back(who + " output '" + output.substr(0, 40) + "'" +
                      (row.output_error ? " (" + *row.output_error + ")" : ""));
      }
    }
    return out;
  }

  // This daemon's shepherds, wherever they are in their job's start: they
  // are forks of its launcher (the same command line, naming this state
  // directory) under their own name.
  std::vector<pid_t> Shepherds() const {
    std::vector<pid_t> found;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator("/proc", ec)) {
      const std::string name = entry.path().filename().string();
      if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
      std::string comm = Slurp(entry.path() / "comm");
      if (comm != "hpcb-shepherd\n") continue;
      std::string cmdline = Slurp(entry.path() / "cmdline");
      std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
      if (cmdline.find(daemon_.state() + " ") != std::string::npos ||
          cmdline.ends_with(daemon_.state())) {
        found.push_back(std::stoi(name));
      }
    }
    return found;
  }

  // kill -9 of the launcher, or of its whole process group (launcher and
  // roles; the shepherds have sessions of their own and outlive it), or of
  // that and every shepherd too: the roles follow the launcher out; the
  // daemon is started again, as systemd would.
  enum class Kill { kLauncher, kGroup, kGroupAndShepherds };
  void KillLauncherAndRestart(Kill what = Kill::kLauncher) {
    pid_t executor = -1, broker = -1;
    LatestRolePids(daemon_.log(), &executor, &broker);
    ::kill(what == Kill::kLauncher ? daemon_.daemon_pid() : -daemon_.daemon_pid(), SIGKILL);
    if (what == Kill::kGroupAndShepherds) {
      for (pid_t shepherd : Shepherds())
        ::kill(shepherd, SIGKILL);
    }
    daemon_.WaitForExit(seconds(5));
    DaemonHarness::WaitFor([&] { return !Alive(executor) && !Alive(broker); }, seconds(10));
    ASSERT_TRUE(daemon_.Start(Flags())) << daemon_.log();
  }

  // Does `act`, then waits for the launcher to have started both roles
  // again (the log's next "roles started"), so that the next kill finds the
  // new roles and not the old ones' pids.
  template <class Act>
  bool RolesStartAgainAfter(Act act) {
    const std::size_t starts = Count(daemon_.log(), "roles started");
    act();
    return DaemonHarness::WaitFor([&] { return Count(daemon_.log(), "roles started") > starts; },
                                  seconds(30));
  }

  // kill -9 of one role, and the roles started again.
  bool KillRole(bool executor_role) {
    pid_t executor = -1, broker = -1;
    if (!LatestRolePids(daemon_.log(), &executor, &broker)) return false;
    return RolesStartAgainAfter([&] { ::kill(executor_role ? executor : broker, SIGKILL); });
  }

  DaemonHarness daemon_;
  std::string ledger_;
};

TEST_F(FaultE2eTest, AKilledRoleIsRestartedAndARunningJobKeepsItsExitCode) {
  Boot();
  for (bool executor_role : {true, false}) {
    SCOPED_TRACE(executor_role ? "executor" : "broker");
    const std::uint64_t before = SubmitOne(0).id;
    ASSERT_GT(before, 0u);
    CommandResult long_job = daemon_.Dispatch(
        {"new", "--max-mem", "0.1", "--", "sh", "-c", "sleep 2; echo slow; exit 7"});
    std::smatch match;
    ASSERT_TRUE(std::regex_search(long_job.out, match, std::regex("job ([0-9]+) ")))
        << long_job.out << long_job.err;
    const std::uint64_t id = std::stoull(match[1]);
    ASSERT_TRUE(KillRole(executor_role)) << daemon_.log();
    // Served again, and the job that ran through the restart ends as it did.
    Submission after = SubmitOne(1);
    EXPECT_GT(after.id, id) << daemon_.log();
    ASSERT_TRUE(DaemonHarness::WaitFor(
        [&] {
          auto rows = Finished();
          return rows && rows->contains(id) && rows->at(id).state == protocol::JobState::kDone;
        },
        seconds(20)))
        << daemon_.log();
    auto rows = Finished();
    ASSERT_TRUE(rows);
    EXPECT_EQ(rows->at(id).exit_code, 7);
    EXPECT_EQ(Slurp(daemon_.work() + "/output." + std::to_string(id) + ".log"), "slow\n");
  }
  EXPECT_EQ(Count(daemon_.log(), "restarting the executor and the broker"), 2u) << daemon_.log();
}

TEST_F(FaultE2eTest, AKilledLauncherLosesNoExitCodeOnceTheDaemonIsBack) {
  Boot();
  CommandResult job = daemon_.Dispatch(
      {"new", "--max-mem", "0.1", "--", "sh", "-c", "sleep 2; echo outlived; exit 9"});
  std::smatch match;
  ASSERT_TRUE(std::regex_search(job.out, match, std::regex("job ([0-9]+) "))) << job.out;
  const std::uint64_t id = std::stoull(match[1]);
  KillLauncherAndRestart();
  ASSERT_TRUE(DaemonHarness::WaitFor(
      [&] {
        auto rows = Finished();
        return rows && rows->contains(id) && rows->at(id).state == protocol::JobState::kDone;
      },
      seconds(20)))
      << daemon_.log();
  EXPECT_EQ(Finished()->at(id).exit_code, 9);
  EXPECT_EQ(Slurp(daemon_.work() + "/output." + std::to_string(id) + ".log"), "outlived\n");
}

// A burst from 8 clients, and every role (executor, broker, launcher)
// killed with SIGKILL the moment the burst's 40th acknowledgment arrives,
// while the other clients' submissions are still in flight. Acknowledgments
// share one flush per loop turn on each side (group commit); whatever was
// acknowledged must still be there after the restart, and run once.
TEST_F(FaultE2eTest, EveryAcknowledgedSubmissionOfABurstSurvivesKillingEveryRole) {
  Boot();
  constexpr int kClients = 8;
  constexpr int kPerClient = 10;
  constexpr int kKillAfter = 40;
  std::vector<Submission> submissions;
  std::mutex mu;
  std::atomic<int> acked{0};
  std::atomic<bool> killed{false};
  pid_t executor = -1, broker = -1;
  ASSERT_TRUE(LatestRolePids(daemon_.log(), &executor, &broker)) << daemon_.log();
  const pid_t launcher = daemon_.daemon_pid();
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      for (int i = 0; i < kPerClient; ++i) {
        Submission s = SubmitOne(c * kPerClient + i);
        if (s.id != 0 && ++acked == kKillAfter && !killed.exchange(true)) {
          ::kill(executor, SIGKILL);
          ::kill(broker, SIGKILL);
          ::kill(launcher, SIGKILL);
        }
        std::lock_guard<std::mutex> lock(mu);
        submissions.push_back(std::move(s));
      }
    });
  }
  for (std::thread& client : clients)
    client.join();
  ASSERT_TRUE(killed) << "fewer than " << kKillAfter << " submissions were acknowledged\n"
                      << daemon_.log();
  daemon_.WaitForExit(seconds(5));
  ASSERT_TRUE(
      DaemonHarness::WaitFor([&] { return !Alive(executor) && !Alive(broker); }, seconds(10)));
  ASSERT_TRUE(daemon_.Start(Flags())) << daemon_.log();
  const bool settled = AllDone(submissions, seconds(90));
  std::size_t acknowledged = 0;
  for (const Submission& s : submissions)
    acknowledged += s.id ? 1 : 0;
  const std::vector<std::string> violations = Violations(submissions);
  std::string some;
  for (std::size_t i = 0; i < violations.size() && i < 20; ++i)
    some += "\n  " + violations[i];
  EXPECT_GE(acknowledged, static_cast<std::size_t>(kKillAfter));
  EXPECT_TRUE(settled) << "not every acknowledged job finished" << some;
  EXPECT_TRUE(violations.empty()) << violations.size() << " violations:" << some;
}

// The churn: jobs submitted as fast as one client goes while a killer sends
// SIGKILL to a random role (now and then the launcher itself or its whole
// process group, now and then a reload instead) a few times a second, until
// it has killed HPCB_FAULT_KILLS times (300).
TEST_F(FaultE2eTest, ChurnUnderRandomKillsLosesNothing) {
  Boot();
  const int kills_wanted =
      std::getenv("HPCB_FAULT_KILLS") != nullptr ? std::atoi(std::getenv("HPCB_FAULT_KILLS")) : 300;
  std::vector<Submission> submissions;
  std::mutex mu;
  std::atomic<bool> stop{false};
  std::thread submitter([&] {
    for (int n = 0; !stop; ++n) {
      // At most 64 jobs ahead of the ones that ran: a queue that only grows
      // would measure how fast the daemon starts jobs, not what it loses.
      const auto ahead = [&] {
        std::error_code ec;
        const auto ran =
            std::distance(fs::directory_iterator(ledger_, ec), fs::directory_iterator());
        std::lock_guard<std::mutex> lock(mu);
        const auto acked = std::count_if(submissions.begin(), submissions.end(),
                                         [](const Submission& s) { return s.id != 0; });
        return static_cast<int>(acked - ran);
      };
      while (!stop && ahead() > 64)
        std::this_thread::sleep_for(milliseconds(20));
      Submission s = SubmitOne(n);
      std::lock_guard<std::mutex> lock(mu);
      submissions.push_back(std::move(s));
    }
  });
  std::mt19937 random(20261203);
  int role_kills = 0, launcher_kills = 0, group_kills = 0, reloads = 0;
  const auto started = Clock::now();
  // A bound on the whole, for a daemon too slow to come back, well inside
  // ctest's 600 s for this suite (the settling below takes up to 90 s).
  const auto until = started + seconds(std::min(330, 20 + kills_wanted * 2));
  while (role_kills + launcher_kills + group_kills < kills_wanted && Clock::now() < until) {
    // Each start of the roles lives a little longer than the launcher's
    // crash-loop bound (300 ms) before the next kill.
    std::this_thread::sleep_for(milliseconds(330 + random() % 150));
    const unsigned pick = random() % 20;
    if (pick < 2) {
      KillLauncherAndRestart(pick == 0 ? Kill::kLauncher : Kill::kGroup);
      if (HasFatalFailure()) break;
      ++(pick == 0 ? launcher_kills : group_kills);
    } else if (pick < 4) {
      if (!RolesStartAgainAfter([&] { daemon_.Reload(); })) {
        ADD_FAILURE() << "no roles after a reload\n" << daemon_.log().substr(0, 20000);
        break;
      }
      ++reloads;
    } else {
      if (!KillRole(pick % 2 == 0)) {
        ADD_FAILURE() << "the roles were not restarted\n" << daemon_.log().substr(0, 20000);
        break;
      }
      ++role_kills;
    }
  }
  stop = true;
  submitter.join();
  ASSERT_TRUE(Alive(daemon_.daemon_pid()) || daemon_.Start(Flags())) << daemon_.log();
  const bool settled = AllDone(submissions, seconds(90));
  std::size_t acked = 0;
  for (const Submission& s : submissions)
    acked += s.id ? 1 : 0;
  const std::vector<std::string> violations = Violations(submissions);
  const auto churn_s = std::chrono::duration_cast<seconds>(Clock::now() - started).count();
  std::cout << "FAULT-FIGURES churn_s=" << churn_s << " submissions=" << submissions.size()
            << " acked=" << acked << " role_kills=" << role_kills
            << " launcher_kills=" << launcher_kills << " group_kills=" << group_kills
            << " reloads=" << reloads << " violations=" << violations.size() << std::endl;
  EXPECT_TRUE(settled) << "not every accepted job finished";
  EXPECT_GE(role_kills + launcher_kills + group_kills, kills_wanted);
  if (kills_wanted >= 100) {
    EXPECT_GT(group_kills, 0);  // about one kill in twenty
  }
  std::string some;
  for (std::size_t i = 0; i < violations.size() && i < 20; ++i)
    some += "\n  " + violations[i];
  // What the daemon said about the first few, for whoever reads the failure.
  std::istringstream log(daemon_.log());
  std::string line, said;
  std::set<std::string> named;
  for (std::size_t i = 0; i < violations.size() && named.size() < 4; ++i) {
    std::smatch match;
    if (std::regex_search(violations[i], match, std::regex("\\(job ([0-9]+)\\)"))) {
      named.insert("job " + std::string(match[1]) + " ");
    }
  }
  while (std::getline(log, line)) {
    for (const std::string& job : named) {
      if ((line + " ").find(job) != std::string::npos) said += "\n    " + line;
    }
  }
  some += "\n  the daemon's log about them:" + said;
  if (!violations.empty()) {
    const std::string kept = "/tmp/hpcb-fault-" + std::to_string(::getpid()) + ".log";
    std::ofstream(kept) << daemon_.log();
    some += "\n  the whole log: " + kept;
  }
  EXPECT_TRUE(violations.empty()) << violations.size() << " violations:" << some;
}

// A start cut short while the job is on its way to exec, slowed by a PATH
// of thousands of entries: fifty times by SIGKILL of the whole process
// group and of every shepherd (each has a session of its own) and a fresh
// start, fifty times by a
// reload (the new executor finds the start in flight). The job child execs
// only once its shepherd has recorded it, so recovery's "never forked" is
// true, and recovery waits for a start in flight in its loop (nothing may
// sleep under its filter): no job runs twice, none is lost, and the daemon
// never exits.
TEST_F(FaultE2eTest, StartsCutShortByKillsAndReloadsNeverRunTwice) {
  Boot();
  std::string path = "PATH=x";
  for (int i = 0; i < 12000; ++i)
    path += ":x";
  path += ":/usr/bin:/bin";
  std::mt19937 random(20261205);
  std::vector<Submission> submissions;
  int kills = 0, reloads = 0;
  for (int round = 0; round < 100; ++round) {
    Submission s;
    s.token = "k" + std::to_string(round);
    CommandResult r = daemon_.Dispatch(
        {"new", "--max-mem", "0.1", "--", path, "sh", "-c", "echo x >>ledger/" + s.token},
        seconds(20));
    std::smatch match;
    if (r.exit_code == 0 && std::regex_search(r.out, match, std::regex("job ([0-9]+) "))) {
      s.id = std::stoull(match[1]);
    }
    submissions.push_back(s);
    std::this_thread::sleep_for(milliseconds(random() % 60));
    if (round % 2 == 1) {
      ASSERT_TRUE(RolesStartAgainAfter([&] { daemon_.Reload(); }))
          << "no roles after a reload\n"
          << daemon_.log().substr(0, 20000);
      ++reloads;
      continue;
    }
    KillLauncherAndRestart(Kill::kGroupAndShepherds);
    if (HasFatalFailure()) return;
    ++kills;
  }
  std::size_t twice = 0, never = 0, acked = 0;
  const bool settled = DaemonHarness::WaitFor(
      [&] {
        auto rows = Finished();
        if (!rows) return false;
        for (const Submission& s : submissions) {
          if (s.id != 0 &&
              (!rows->contains(s.id) || rows->at(s.id).state != protocol::JobState::kDone)) {
            return false;
          }
        }
        return true;
      },
      seconds(60));
  for (const Submission& s : submissions) {
    const std::size_t runs = Count(Slurp(ledger_ + "/" + s.token), "x");
    acked += s.id != 0 ? 1 : 0;
    twice += runs > 1 ? 1 : 0;
    never += s.id != 0 && runs == 0 ? 1 : 0;
    EXPECT_LE(runs, 1u) << s.token << " (job " << s.id << ") ran " << runs << " times";
  }
  std::cout << "FAULT-FIGURES group_kills=" << kills << " reloads=" << reloads << " acked=" << acked
            << " ran_twice=" << twice << " never_ran=" << never << std::endl;
  EXPECT_TRUE(settled) << "not every accepted job finished\n" << daemon_.log().substr(0, 20000);
  EXPECT_TRUE(Alive(daemon_.daemon_pid())) << "the daemon exited";
}

// A state directory with no room: the job stays queued, quietly (the
// broker backs off its starts, the executor says "full" once), and runs
// once there is room again. Root only: the state is an 8 MiB tmpfs.
TEST_F(FaultE2eTest, AFullStateDirectoryIsQuietAndTheJobRunsOnceThereIsRoom) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounts a tmpfs";
  const std::string state = daemon_.state();
  fs::create_directories(state);
  if (::system(("mount -t tmpfs -o size=8m,mode=0755 tmpfs " + state).c_str()) != 0) {
    GTEST_SKIP() << "cannot mount a tmpfs here";
  }
  struct Unmount {
    std::string path;
    DaemonHarness* daemon;
    ~Unmount() {
      daemon->Stop();
      (void)!::system(("umount -l " + path).c_str());
    }
  } unmount{state, &daemon_};
  (void)!::chown(state.c_str(), daemon_.client_uid(), daemon_.client_gid());
  Boot();
  // Fill it, as root, leaving room for the queue's and the specs' lines
  // but less than the executor wants (512 KiB here) to start a job.
  const std::string filler = state + "/filler";
  (void)!::system(
      ("dd if=/dev/zero of=" + filler + " bs=64k 2>/dev/null; truncate -s -256K " + filler)
          .c_str());
  CommandResult submit =
      daemon_.Dispatch({"new", "--max-mem", "0.1", "--", "echo", "after-room"}, seconds(20));
  ASSERT_EQ(submit.exit_code, 0) << submit.err << daemon_.log();
  const int id = DaemonHarness::JobIdIn(submit.out);
  auto lines = [&] {
    const std::string log = daemon_.log();
    return static_cast<std::size_t>(std::count(log.begin(), log.end(), '\n'));
  };
  const std::size_t before = lines();
  std::this_thread::sleep_for(seconds(8));
  const std::size_t during = lines() - before;
  EXPECT_LE(during, 5u * 8u) << "the log grew by " << during << " lines in 8 s:\n"
                             << daemon_.log().substr(
                                    daemon_.log().size() > 3000 ? daemon_.log().size() - 3000 : 0);
  const std::string queued = DaemonHarness::RowOfJob(daemon_.Dispatch({"list"}).out, id);
  EXPECT_NE(queued.find("queued"), std::string::npos) << queued;
  fs::remove(filler);
  const bool ran = DaemonHarness::WaitFor(
      [&] {
        return daemon_.ReadWorkFile("output." + std::to_string(id) + ".log") == "after-room\n";
      },
      seconds(30));
  EXPECT_TRUE(ran) << daemon_.log();
}

// A queued job whose directory was lost (an fsck after a disk error, a
// clean-up by hand) still runs once its turn comes: its dir is made again
// from its launch spec, and its output delivered.
TEST_F(FaultE2eTest, AQueuedJobWhoseDirectoryWasLostStillRuns) {
  Boot();
  CommandResult first =
      daemon_.Dispatch({"new", "--max-mem", "0.1", "--", "sleep", "2"}, seconds(20));
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const int first_id = DaemonHarness::JobIdIn(first.out);
  CommandResult second = daemon_.Dispatch(
      {"new", "--max-mem", "0.1", "--after", std::to_string(first_id), "--", "echo", "still-ran"},
      seconds(20));
  ASSERT_EQ(second.exit_code, 0) << second.err;
  const int id = DaemonHarness::JobIdIn(second.out);
  const std::string dir = daemon_.state() + "/jobs/" + std::to_string(id);
  ASSERT_TRUE(fs::exists(dir));
  fs::remove_all(dir);
  const bool ran = DaemonHarness::WaitFor(
      [&] {
        return daemon_.ReadWorkFile("output." + std::to_string(id) + ".log") == "still-ran\n";
      },
      seconds(30));
  EXPECT_TRUE(ran) << daemon_.log();
  EXPECT_NE(daemon_.log().find("was missing; made it again"), std::string::npos);
}

// A failed job's dependents end without running, and retention then drops
// their records. Killing every role meanwhile brings none of them back: a
// record dropped before the executor let go of the job's launch spec would
// be found at the restart as a job the queue file lost, rebuilt from the
// spec (which holds no dependencies) as queued, and run.
TEST_F(FaultE2eTest, DependentsEndedUnstartedStayEndedAcrossAKillOfEveryRole) {
  const std::vector<std::string> flags = {"--keep-finished", "1", "--max-queued-per-user",
                                          "100000"};
  ASSERT_TRUE(daemon_.Start(flags)) << daemon_.log();
  CommandResult failing = daemon_.Dispatch(
      {"new", "--max-mem", "0.1", "--", "sh", "-c", DaemonHarness::UntilReleased() + "; exit 3"});
  const int failing_id = DaemonHarness::JobIdIn(failing.out);
  ASSERT_GT(failing_id, 0) << failing.err;
  constexpr int kDependents = 300;
  for (int i = 0; i < kDependents; ++i) {
    CommandResult dependent =
        daemon_.Dispatch({"new", "--max-mem", "0.1", "--no-output", "--after",
                          std::to_string(failing_id), "--", "touch", "ran." + std::to_string(i)});
    ASSERT_EQ(dependent.exit_code, 0) << dependent.err;
  }
  daemon_.Release();
  ASSERT_TRUE(
      DaemonHarness::WaitFor([&] { return Count(daemon_.log(), "will not run") > 0; }, seconds(30)))
      << daemon_.log();
  ASSERT_NO_FATAL_FAILURE(KillEveryRole());
  ASSERT_TRUE(daemon_.Start(flags)) << daemon_.log();

  ASSERT_TRUE(DaemonHarness::WaitFor(
      [&] {
        CommandResult list = daemon_.Dispatch({"list"});
        return list.exit_code == 0 && list.out.find(" queued ") == std::string::npos &&
               list.out.find(" running ") == std::string::npos;
      },
      seconds(30)))
      << daemon_.Dispatch({"list"}).out << daemon_.log();
  EXPECT_EQ(daemon_.log().find("rebuilt from the root side's record as queued"), std::string::npos)
      << daemon_.log();
  std::size_t ran = 0;
  for (const auto& entry : fs::directory_iterator(daemon_.work()))
    ran += entry.path().filename().string().rfind("ran.", 0) == 0 ? 1 : 0;
  EXPECT_EQ(ran, 0u) << "dependents of a failed job ran after the restart";
}

// The state files, one at a time, damaged or deleted while the daemon is
// down: a finished job, a running one (it outlives the stop) and two queued
// behind it. Every accepted job still runs once with its exit code and
// output, or, where its own record is what was lost, says so.
class DamagedStateTest : public FaultE2eTest {
 protected:
  struct Jobs {
    Submission finished;
    std::uint64_t running = 0;  // holds both cpus until ExpectAllWell releases it; exit 5
    std::vector<Submission> queued;
  };

  Jobs Populate() {
    Jobs jobs;
    jobs.finished = SubmitOne(1000);
    EXPECT_TRUE(AllDone({jobs.finished}, seconds(20))) << daemon_.log();
    CommandResult r = daemon_.Dispatch({"new", "--cpu", "2", "--max-mem", "0.1", "--", "sh", "-c",
                                        DaemonHarness::UntilReleased() + "; echo long; exit 5"});
    std::smatch match;
    EXPECT_TRUE(std::regex_search(r.out, match, std::regex("job ([0-9]+) "))) << r.out << r.err;
    jobs.running = std::stoull(match[1]);
    // Running as the executor knows it: its spec says so (the executor
    // logs the start after saving it). Before that, the run record is the
    // only sign the job exec'd, and a test that deletes it would be
    // deleting the evidence, not damaging a running job's records.
    const std::regex started("job " + std::to_string(jobs.running) +
                             " started \\(pid [0-9]+, shepherd");
    EXPECT_TRUE(DaemonHarness::WaitFor([&] { return std::regex_search(daemon_.log(), started); },
                                       seconds(20)))
        << daemon_.log();
    for (int n = 1001; n <= 1002; ++n)
      jobs.queued.push_back(SubmitOne(n));
    return jobs;
  }

  std::string State(const std::string& name) const { return daemon_.state() + "/" + name; }

  void Garble(const std::string& path) {
    std::ofstream(path, std::ios::trunc) << "{\"not\": a record";
  }

  // After the damage: everything accepted ran once with its code and output.
  void ExpectAllWell(const Jobs& jobs) {
    daemon_.Release();
    std::vector<Submission> all = jobs.queued;
    all.push_back(jobs.finished);
    ASSERT_TRUE(AllDone(all, seconds(30))) << daemon_.log();
    std::vector<std::string> violations = Violations(all);
    std::string listed;
    for (const std::string& v : violations)
      listed += "\n  " + v;
    EXPECT_TRUE(violations.empty()) << listed << "\n" << daemon_.log();
    ASSERT_TRUE(DaemonHarness::WaitFor(
        [&] {
          auto rows = Finished();
          return rows && rows->contains(jobs.running) &&
                 rows->at(jobs.running).state == protocol::JobState::kDone;
        },
        seconds(20)));
    EXPECT_EQ(Finished()->at(jobs.running).exit_code, 5) << daemon_.log();
    EXPECT_EQ(Slurp(daemon_.work() + "/output." + std::to_string(jobs.running) + ".log"), "long\n");
  }
};

TEST_F(DamagedStateTest, ATruncatedQueueSnapshotLosesNothing) {
  Boot();
  Jobs jobs = Populate();
  daemon_.Stop();
  const std::string text = Slurp(State("broker/queue.json"));
  std::ofstream(State("broker/queue.json"), std::ios::trunc) << text.substr(0, text.size() / 2);
  Boot();
  ExpectAllWell(jobs);
  EXPECT_TRUE(fs::exists(State("broker/queue.json.corrupt"))) << "the damaged copy is kept";
}

TEST_F(DamagedStateTest, AGarbledQueueSnapshotLosesNothing) {
  Boot();
  Jobs jobs = Populate();
  daemon_.Stop();
  Garble(State("broker/queue.json"));
  Boot();
  ExpectAllWell(jobs);
}

TEST_F(DamagedStateTest, AGarbledFirstJournalLineLosesNothing) {
  Boot();
  Jobs jobs = Populate();
  daemon_.Stop();
  std::string journal = Slurp(State("broker/queue.journal"));
  ASSERT_FALSE(journal.empty()) << "the jobs were journalled after the last snapshot";
  journal.replace(0, journal.find('\n'), "{garbled");
  std::ofstream(State("broker/queue.journal"), std::ios::trunc) << journal;
  Boot();
  ExpectAllWell(jobs);
}

TEST_F(DamagedStateTest, DeletedBrokerFilesLoseNothingAndNoIdIsReused) {
  Boot();
  Jobs jobs = Populate();
  daemon_.Stop();
  fs::remove(State("broker/queue.json"));
  fs::remove(State("broker/queue.journal"));
  Boot();
  ExpectAllWell(jobs);
  Submission next = SubmitOne(2000);
  EXPECT_GT(next.id, jobs.queued.back().id) << "an id was handed out again";
}

TEST_F(DamagedStateTest, AQueuedJobWhoseSpecIsGarbledIsReportedLost) {
  Boot();
  Jobs jobs = Populate();
  daemon_.Stop();
  const std::uint64_t lost = jobs.queued[0].id;
  Garble(State("specs/" + std::to_string(lost) + ".json"));
  Boot();
  auto rows = Finished();
  ASSERT_TRUE(rows && rows->contains(lost)) << daemon_.log();
  EXPECT_EQ(rows->at(lost).reason, protocol::JobReason::kError);
  ASSERT_TRUE(rows->at(lost).detail);
  EXPECT_NE(rows->at(lost).detail->find("lost"), std::string::npos) << *rows->at(lost).detail;
  EXPECT_TRUE(fs::exists(State("specs/" + std::to_string(lost) + ".json.corrupt")));
  EXPECT_NE(daemon_.log().find("job " + std::to_string(lost) + ": its launch spec cannot be read"),
            std::string::npos);
  jobs.queued.erase(jobs.queued.begin());
  ExpectAllWell(jobs);
}

// A job's first spec is renamed into place before its fsync, so a power
// cut can leave it empty. Such a job was never acknowledged, and is dropped
// without a trace; an acknowledged one whose spec is found empty is still
// reported lost to its owner by the broker, which knows of it.
TEST_F(DamagedStateTest, AnEmptySpecIsDroppedAndOnlyAnAcknowledgedJobIsReportedLost) {
  Boot();
  Jobs jobs = Populate();
  daemon_.Stop();
  const std::uint64_t unacknowledged = jobs.queued.back().id + 1;
  const std::string spec = State("specs/" + std::to_string(unacknowledged) + ".json");
  std::ofstream(spec, std::ios::trunc).flush();
  fs::create_directory(State("jobs/" + std::to_string(unacknowledged)));
  const std::uint64_t lost = jobs.queued[0].id;
  std::ofstream(State("specs/" + std::to_string(lost) + ".json"), std::ios::trunc).flush();
  Boot();

  EXPECT_NE(
      daemon_.log().find("job " + std::to_string(unacknowledged) + ": its launch spec is empty"),
      std::string::npos)
      << daemon_.log();
  EXPECT_FALSE(fs::exists(spec));
  EXPECT_FALSE(fs::exists(spec + ".corrupt"));
  EXPECT_FALSE(fs::exists(State("jobs/" + std::to_string(unacknowledged))));
  auto rows = Finished();
  ASSERT_TRUE(rows && rows->contains(lost)) << daemon_.log();
  EXPECT_FALSE(rows->contains(unacknowledged)) << "a job nobody was told of is not reported";
  ASSERT_TRUE(rows->at(lost).detail);
  EXPECT_NE(rows->at(lost).detail->find("lost"), std::string::npos) << *rows->at(lost).detail;
  jobs.queued.erase(jobs.queued.begin());
  ExpectAllWell(jobs);
  Submission next = SubmitOne(2000);
  EXPECT_GT(next.id, unacknowledged) << "the dropped job's id was handed out again";
}

// kill -9 of every role right after the answers: each spec was flushed
// before its rename and the directory before the answers, so the restart
// finds every one as it was answered. An older release's journal that
// still holds lines stops the start, saying what to do, and is left alone;
// once it is gone the daemon starts and nothing was lost.
TEST_F(DamagedStateTest, AKillOfEveryRoleLosesNoSpecAndAnOlderJournalStopsTheStart) {
  Boot();
  Jobs jobs = Populate();
  ASSERT_NO_FATAL_FAILURE(KillEveryRole());
  const std::string journal = State("specs/journal");
  const std::string line = "0badc0de {\"id\":999,\"spec\":[]}\n";
  std::ofstream(journal) << line;
  EXPECT_FALSE(daemon_.Start(Flags()));
  EXPECT_NE(daemon_.log().find(journal + " holds launch specs an older hpc-batch"),
            std::string::npos)
      << daemon_.log();
  EXPECT_EQ(daemon_.WaitForExit(seconds(10)), 78)
      << "not restarted by systemd into the same refusal";
  EXPECT_EQ(Slurp(journal), line) << "the journal is left as it was";
  fs::remove(journal);
  ASSERT_TRUE(daemon_.Start(Flags())) << daemon_.log();
  EXPECT_EQ(daemon_.log().find("its launch spec is empty"), std::string::npos) << daemon_.log();
  EXPECT_EQ(daemon_.log().find("reported lost"), std::string::npos) << daemon_.log();
  ExpectAllWell(jobs);
}

TEST_F(DamagedStateTest, ARunningJobWhoseRunRecordIsDeletedKeepsItsExitCode) {
  Boot();
  Jobs jobs = Populate();
  daemon_.Stop();
  fs::remove(State("run/" + std::to_string(jobs.running) + ".json"));
  Boot();
  ExpectAllWell(jobs);
}

// A state directory that fills up: a submission is refused saying why and
// leaves nothing behind; a queued job whose turn comes stays queued, and
// runs once there is room again.
TEST_F(FaultE2eTest, AFullStateDirectoryRefusesCleanlyAndLosesNothing) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting a small filesystem needs root";
  const std::string mount = daemon_.state();  // where the harness points --state-dir
  fs::create_directories(mount);
  const std::string options = "size=24m,mode=0755,uid=" + std::to_string(daemon_.client_uid()) +
                              ",gid=" + std::to_string(daemon_.client_gid());
  ASSERT_EQ(std::system(("mount -t tmpfs -o " + options + " hpcb-statefs " + mount).c_str()), 0);
  struct Unmount {
    std::string path;
    ~Unmount() { (void)!std::system(("umount -l " + path + " 2>/dev/null").c_str()); }
  } unmount{mount};
  ASSERT_TRUE(daemon_.Start(Flags())) << daemon_.log();
  CommandResult holder = daemon_.Dispatch(
      {"new", "--cpu", "2", "--max-mem", "0.1", "--", "sh", "-c", "sleep 4; exit 0"});
  ASSERT_EQ(holder.exit_code, 0) << holder.err;
  Submission waiting = SubmitOne(3000);
  ASSERT_GT(waiting.id, 0u);
  // Fill it, as the daemon's user would see it.
  const std::string filler = mount + "/filler";
  (void)!std::system(
      ("dd if=/dev/zero of=" + filler + " bs=1M count=64 status=none 2>/dev/null").c_str());
  CommandResult refused = daemon_.Dispatch({"new", "--max-mem", "0.1", "--", "true"});
  EXPECT_NE(refused.exit_code, 0) << refused.out;
  EXPECT_NE(refused.err.find("No space left on device"), std::string::npos) << refused.err;
  std::size_t temps = 0;
  for (const auto& entry : fs::recursive_directory_iterator(mount)) {
    temps += entry.path().extension() == ".tmp" ? 1 : 0;
  }
  EXPECT_EQ(temps, 0u) << "a refused submission left temp files";
  EXPECT_FALSE(fs::exists(mount + "/jobs/" + std::to_string(waiting.id + 2)));
  // The holder ends; the waiting job's turn comes and goes by, queued.
  std::this_thread::sleep_for(seconds(6));
  CommandResult listed = daemon_.Dispatch({"list"});
  EXPECT_NE(DaemonHarness::RowOfJob(listed.out, static_cast<int>(waiting.id)).find("queued"),
            std::string::npos)
      << listed.out << daemon_.log();
  fs::remove(filler);
  ASSERT_TRUE(AllDone({waiting}, seconds(30))) << daemon_.log();
  std::vector<std::string> violations = Violations({waiting});
  EXPECT_TRUE(violations.empty()) << violations.front();
  daemon_.Stop();
}

// A destination that fills up: nothing half-written is left there, the
// output is kept and the job says why; once there is room, `dispatch
// output` delivers it byte for byte.
TEST_F(FaultE2eTest, AFullDestinationKeepsTheOutputWhole) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting a small filesystem needs root";
  const std::string dest = daemon_.work() + "/destfs";
  fs::create_directories(dest);
  const std::string options = "size=1m,mode=0755,uid=" + std::to_string(daemon_.client_uid()) +
                              ",gid=" + std::to_string(daemon_.client_gid());
  ASSERT_EQ(std::system(("mount -t tmpfs -o " + options + " hpcb-destfs " + dest).c_str()), 0);
  struct Unmount {
    std::string path;
    ~Unmount() { (void)!std::system(("umount -l " + path + " 2>/dev/null").c_str()); }
  } unmount{dest};
  Boot();
  // 3 MiB of numbered lines: more than the destination holds.
  CommandResult r = daemon_.Dispatch(
      {"new", "--max-mem", "0.1", "--output", dest, "--", "sh", "-c", "seq 1 450000"});
  std::smatch match;
  ASSERT_TRUE(std::regex_search(r.out, match, std::regex("job ([0-9]+) "))) << r.out << r.err;
  const std::string id = match[1];
  ASSERT_TRUE(DaemonHarness::WaitFor(
      [&] {
        return daemon_.Dispatch({"list", "--finished"})
                   .err.find("job " + id + ": could not save") != std::string::npos;
      },
      seconds(20)))
      << daemon_.log();
  EXPECT_NE(daemon_.Dispatch({"list", "--finished"}).err.find("No space left"), std::string::npos);
  EXPECT_FALSE(fs::exists(dest + "/output." + id + ".log")) << "a cut-short file was left";
  EXPECT_EQ(std::distance(fs::directory_iterator(dest), fs::directory_iterator()), 0)
      << "temp files were left at the destination";
  ASSERT_EQ(std::system(("mount -o remount,size=16m " + dest).c_str()), 0);
  CommandResult delivered = daemon_.Dispatch({"output", id});
  ASSERT_EQ(delivered.exit_code, 0) << delivered.err << daemon_.log();
  std::string expected;
  for (int i = 1; i <= 450000; ++i)
    expected += std::to_string(i) + "\n";
  EXPECT_TRUE(Slurp(dest + "/output." + id + ".log") == expected) << "not byte for byte";
  daemon_.Stop();
}

}  // namespace
}  // namespace hpcb::e2e
