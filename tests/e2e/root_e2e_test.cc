// Root-mode end-to-end checks: the real hpc-batchd as root with
// --no-cgroups, real users created here, the real dispatch run as them.
// Every test skips unless it runs as root. Accounts (created idempotently):
//   hpcb-alice (supplementary group hpcb-extra), hpcb-bob, hpcb-carol (in
//   the admin group hpcb-adm), and the broker's service user hpc-batch.
// The ForgedBroker tests replace hpc-batch-broker with tests/e2e/
// forged_broker.cc and send the root executor what a compromised broker
// could.
#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/base/unique_fd.h"
#include "protocol/client_framing.h"
#include "protocol/client_messages.h"
#include "protocol/codec.h"
#include "protocol/executor_messages.h"
#include "protocol/framing.h"
#include "tests/e2e/daemon_harness.h"
#include "tests/e2e/test_accounts.h"
#include "tests/testing/temp_dir.h"

namespace hpcb::e2e {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void WriteFile(const std::string& path, const std::string& text, mode_t mode, uid_t uid,
               gid_t gid) {
  {
    std::ofstream out(path, std::ios::trunc);
    out << text;
  }
  ::chmod(path.c_str(), mode);
  (void)!::chown(path.c_str(), uid, gid);
}

// "Key:\tvalue" lines of a /proc/PID/status-like text.
std::map<std::string, std::string> StatusFields(const std::string& text) {
  std::map<std::string, std::string> fields;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    fields[line.substr(0, colon)] = value;
  }
  return fields;
}

std::map<std::string, std::string> ProcStatus(pid_t pid) {
  return StatusFields(Slurp("/proc/" + std::to_string(pid) + "/status"));
}

std::set<std::string> Words(const std::string& text) {
  std::istringstream in(text);
  std::set<std::string> words;
  std::string word;
  while (in >> word)
    words.insert(word);
  return words;
}

class RootE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "root-mode e2e tests need root";
    EnsureAccounts();
    alice_ = Lookup(kAlice);
    bob_ = Lookup(kBob);
    carol_ = Lookup(kCarol);
    broker_ = Lookup(kBrokerUser);
    ASSERT_NE(alice_.uid, 0u) << "could not create " << kAlice;
    ASSERT_NE(bob_.uid, 0u) << "could not create " << kBob;
    ASSERT_NE(carol_.uid, 0u) << "could not create " << kCarol;
    ASSERT_NE(broker_.uid, 0u) << "could not create " << kBrokerUser;
  }

  // A fresh harness (its scratch dir) with a work dir per user.
  void MakeHarness(HarnessOptions options = {}) {
    options.daemon_as_root = true;
    daemon_ = std::make_unique<DaemonHarness>(std::move(options));
    MakeUserDir(alice_, 0700);
    MakeUserDir(bob_, 0755);
    MakeUserDir(carol_, 0755);
  }

  void Boot(HarnessOptions options = {}) {
    MakeHarness(std::move(options));
    ASSERT_TRUE(daemon_->Start({"--admin-group", kAdminGroup})) << daemon_->log();
    ASSERT_TRUE(DaemonHarness::RolePids(daemon_->log(), &executor_pid_, &broker_pid_))
        << daemon_->log();
  }

  void MakeUserDir(const Account& who, mode_t mode) {
    std::string dir = DirOf(who);
    fs::create_directories(dir);
    (void)!::chown(dir.c_str(), who.uid, who.gid);
    ::chmod(dir.c_str(), mode);
  }
  std::string DirOf(const Account& who) const { return daemon_->work() + "/" + who.name; }

  CommandResult As(const Account& who, const std::vector<std::string>& args,
                   seconds timeout = seconds(20)) {
    return daemon_->DispatchAs(who.name, DirOf(who), args, timeout);
  }

  // Submits as `who`; the job id, or -1 (with the failure recorded).
  int Submit(const Account& who, const std::vector<std::string>& args) {
    std::vector<std::string> full = {"new"};
    full.insert(full.end(), args.begin(), args.end());
    CommandResult submit = As(who, full);
    EXPECT_EQ(submit.exit_code, 0) << submit.out << submit.err << daemon_->log();
    return DaemonHarness::JobIdIn(submit.out);
  }

  // The `list --finished` line of job `id`, as `who` sees it.
  std::string FinishedRow(const Account& who, int id) {
    return DaemonHarness::RowOfJob(As(who, {"list", "--finished"}).out, id);
  }
  // The STATE column of that line ("queued", "running", "done", ...).
  std::string StateOf(const Account& who, int id) {
    std::istringstream words(FinishedRow(who, id));
    std::vector<std::string> all;
    std::string word;
    while (words >> word)
      all.push_back(word);
    return all.size() >= 2 ? all[all.size() - 2] : "";
  }
  bool Ended(const Account& who, int id) {
    std::string state = StateOf(who, id);
    return !state.empty() && state != "running" && state != "queued";
  }
  bool WaitFinished(const Account& who, int id, seconds timeout = seconds(15)) {
    return DaemonHarness::WaitFor([&] { return Ended(who, id); }, timeout);
  }
  bool Running(const Account& who, int id) { return StateOf(who, id) == "running"; }
  // Every file of the state directory that holds `text`.
  std::vector<std::string> FilesHolding(const std::string& text) const {
    std::vector<std::string> found;
    for (const auto& entry : fs::recursive_directory_iterator(daemon_->state())) {
      if (entry.is_regular_file() && Slurp(entry.path()).find(text) != std::string::npos) {
        found.push_back(entry.path());
      }
    }
    return found;
  }

  Account alice_, bob_, carol_, broker_;
  std::unique_ptr<DaemonHarness> daemon_;
  pid_t executor_pid_ = -1;
  pid_t broker_pid_ = -1;
};

// 1. Jobs run as the submitter, with the submitter's groups.
TEST_F(RootE2eTest, JobsRunAsTheSubmitterWithItsGroups) {
  Boot();
  int alice_job = Submit(alice_, {"--", "sh", "-c", "id -u; id -g; id -G"});
  int bob_job = Submit(bob_, {"--", "sh", "-c", "id -u; id -g; id -G"});
  ASSERT_GT(alice_job, 0);
  ASSERT_GT(bob_job, 0);

  for (const auto& [who, id] : {std::pair{alice_, alice_job}, std::pair{bob_, bob_job}}) {
    SCOPED_TRACE(who.name);
    ASSERT_TRUE(WaitFinished(who, id)) << daemon_->log();
    std::string path = DirOf(who) + "/output." + std::to_string(id) + ".log";
    std::istringstream out(Slurp(path));
    std::string uid, gid, groups;
    std::getline(out, uid);
    std::getline(out, gid);
    std::getline(out, groups);
    EXPECT_EQ(uid, std::to_string(who.uid)) << Slurp(path);
    EXPECT_EQ(gid, std::to_string(who.gid)) << Slurp(path);
    std::set<std::string> expected;
    for (gid_t g : GroupsOf(who))
      expected.insert(std::to_string(g));
    EXPECT_EQ(Words(groups), expected) << groups;
    struct stat st {};
    ASSERT_EQ(::lstat(path.c_str(), &st), 0) << path;
    EXPECT_TRUE(S_ISREG(st.st_mode));
    EXPECT_EQ(st.st_uid, who.uid) << "output is not owned by the user";
    EXPECT_EQ(st.st_gid, who.gid);
  }
  struct group* extra = ::getgrnam(kExtraGroup);
  ASSERT_NE(extra, nullptr);
  EXPECT_EQ(GroupsOf(alice_).count(extra->gr_gid), 1u) << "alice lacks " << kExtraGroup;
}

// 2. Another user can neither see, attach to nor kill a job; its owner and
// the admin group can.
TEST_F(RootE2eTest, AnotherUserCannotSeeAttachOrKillAJob) {
  Boot();
  int id = Submit(
      alice_, {"--", "sh", "-c", "echo started; " + DaemonHarness::UntilReleased() + "; sleep 3"});
  ASSERT_GT(id, 0);
  ASSERT_TRUE(DaemonHarness::WaitFor([&] { return Running(alice_, id); }, seconds(10)))
      << As(alice_, {"list"}).out << daemon_->log();
  const std::string job = std::to_string(id);

  CommandResult list_all = As(bob_, {"list", "--all"});
  CommandResult bob_list = As(bob_, {"list"});
  CommandResult attach = As(bob_, {"attach", job}, seconds(10));
  CommandResult kill = As(bob_, {"kill", job});

  EXPECT_NE(list_all.exit_code, 0) << list_all.out;
  EXPECT_NE(list_all.err.find(kAdminGroup), std::string::npos) << list_all.err;
  EXPECT_EQ(list_all.out.find(kAlice), std::string::npos) << list_all.out;
  EXPECT_EQ(bob_list.out.find(kAlice), std::string::npos) << bob_list.out;
  EXPECT_NE(attach.exit_code, 0) << attach.out;
  EXPECT_FALSE(attach.err.empty());
  EXPECT_EQ(attach.out.find("started"), std::string::npos) << attach.out;
  EXPECT_NE(kill.exit_code, 0) << kill.out;
  EXPECT_NE(kill.err.find("belongs to"), std::string::npos) << kill.err;
  EXPECT_TRUE(Running(alice_, id)) << "bob's requests ended alice's job\n"
                                   << As(alice_, {"list"}).out;
  // Nor can bob read the job's buffer or info behind the daemon's back.
  for (const std::string& file : {daemon_->state() + "/jobs/" + job + "/output",
                                  daemon_->state() + "/jobs/" + job + "/info.json",
                                  daemon_->dir() + "/dev/jobs/" + job + "/output"}) {
    CommandResult peek = daemon_->RunAs(bob_.name, DirOf(bob_), "/bin/cat", {file});
    EXPECT_NE(peek.exit_code, 0) << file << ": " << peek.out;
    EXPECT_EQ(peek.out.find("started"), std::string::npos) << file;
    CommandResult owner = daemon_->RunAs(alice_.name, DirOf(alice_), "/bin/cat", {file});
    EXPECT_EQ(owner.exit_code, 0) << file << ": " << owner.err;
  }

  CommandResult admin = As(carol_, {"list", "--all"});
  EXPECT_EQ(admin.exit_code, 0) << admin.err;
  EXPECT_NE(admin.out.find(kAlice), std::string::npos) << admin.out;

  // Three seconds from here for alice's attach to find it running.
  daemon_->Release("go", DirOf(alice_));
  CommandResult own = As(alice_, {"attach", job}, seconds(15));
  EXPECT_EQ(own.exit_code, 0) << own.err;
  EXPECT_EQ(own.out, "started\n");

  int second = Submit(alice_, {"--", "sleep", "30"});
  ASSERT_TRUE(DaemonHarness::WaitFor([&] { return Running(alice_, second); }, seconds(10)));
  EXPECT_NE(As(bob_, {"kill", std::to_string(second)}).exit_code, 0);
  EXPECT_TRUE(Running(alice_, second));
  CommandResult own_kill = As(alice_, {"kill", std::to_string(second)});
  EXPECT_EQ(own_kill.exit_code, 0) << own_kill.err;
  EXPECT_TRUE(WaitFinished(alice_, second)) << daemon_->log();
  EXPECT_NE(FinishedRow(alice_, second).find("killed"), std::string::npos)
      << FinishedRow(alice_, second);
}

// 2b. A dependency must be a job the submitter may see (the attach rule),
// `wait` sees what `list` does, anyone may read `info` (which names no
// one), and only the admin group drains.
TEST_F(RootE2eTest, DependenciesWaitAndDrainFollowWhoMaySeeWhat) {
  Boot();
  int id = Submit(alice_, {"--", "sh", "-c", DaemonHarness::UntilReleased()});
  ASSERT_GT(id, 0);
  const std::string job = std::to_string(id);

  CommandResult bob_after = As(bob_, {"new", "--after", job, "--", "true"});
  CommandResult bob_wait = As(bob_, {"wait", job});
  int carol_job = Submit(carol_, {"--after", job, "--", "true"});
  CommandResult bob_info = As(bob_, {"info"});
  CommandResult bob_drain = As(bob_, {"drain"});

  EXPECT_EQ(bob_after.exit_code, 1) << bob_after.out;
  EXPECT_NE(bob_after.err.find("--after: job " + job + " belongs to " + kAlice), std::string::npos)
      << bob_after.err;
  EXPECT_EQ(bob_wait.exit_code, 1);
  EXPECT_NE(bob_wait.err.find("job " + job + " belongs to " + kAlice), std::string::npos)
      << bob_wait.err;
  EXPECT_GT(carol_job, 0) << "an admin may wait for anyone's job";
  EXPECT_EQ(bob_info.exit_code, 0) << bob_info.err;
  EXPECT_NE(bob_info.out.find("1 queued (1 waiting for dependencies), 1 running"),
            std::string::npos)
      << bob_info.out;
  EXPECT_EQ(bob_info.out.find(kAlice), std::string::npos) << bob_info.out;
  EXPECT_EQ(bob_drain.exit_code, 1);
  EXPECT_NE(bob_drain.err.find(kAdminGroup), std::string::npos) << bob_drain.err;
  EXPECT_EQ(As(carol_, {"drain"}).exit_code, 0);
  EXPECT_EQ(As(carol_, {"resume"}).exit_code, 0);
  daemon_->Release("go", DirOf(alice_));
  CommandResult carol_wait = As(carol_, {"wait", job, std::to_string(carol_job)}, seconds(30));
  EXPECT_EQ(carol_wait.exit_code, 0) << carol_wait.err << daemon_->log();
}

// 3. A symlink put at the destination while the job runs is not followed:
// neither a root-owned file nor a file of another user is written.
TEST_F(RootE2eTest, OutputNeverFollowsASymlinkAtTheDestination) {
  Boot();
  MakeUserDir(alice_, 0755);
  const std::string root_victim = daemon_->dir() + "/root-victim";
  WriteFile(root_victim, "root victim\n", 0644, 0, 0);
  const std::string bob_victim = DirOf(bob_) + "/bob-victim";
  // World-writable: only not following the link can protect it.
  WriteFile(bob_victim, "bob victim\n", 0666, bob_.uid, bob_.gid);

  struct Case {
    std::string victim;
    std::string dest;
    int id;
  };
  std::vector<Case> cases = {{root_victim, DirOf(alice_) + "/to-root.log", -1},
                             {bob_victim, DirOf(alice_) + "/to-bob.log", -1}};
  for (Case& c : cases) {
    c.id = Submit(alice_, {"--output", c.dest, "--", "sh", "-c",
                           "echo secret-output; " + DaemonHarness::UntilReleased()});
    ASSERT_GT(c.id, 0);
    ASSERT_EQ(::symlink(c.victim.c_str(), c.dest.c_str()), 0) << c.dest;
    (void)!::lchown(c.dest.c_str(), alice_.uid, alice_.gid);
  }
  daemon_->Release("go", DirOf(alice_));
  for (const Case& c : cases) {
    SCOPED_TRACE(c.victim);
    ASSERT_TRUE(WaitFinished(alice_, c.id, seconds(20))) << daemon_->log();
    EXPECT_EQ(Slurp(c.victim), c.victim == root_victim ? "root victim\n" : "bob victim\n");
    struct stat st {};
    ASSERT_EQ(::lstat(c.dest.c_str(), &st), 0);
    EXPECT_TRUE(S_ISLNK(st.st_mode)) << "the link at the destination was replaced";
    std::error_code ec;
    EXPECT_EQ(fs::read_symlink(c.dest, ec).string(), c.victim);
    std::string buffer = daemon_->state() + "/jobs/" + std::to_string(c.id) + "/output";
    EXPECT_EQ(Slurp(buffer), "secret-output\n")
        << "the undelivered output is not kept at " << buffer;
  }
  CommandResult finished = As(alice_, {"list", "--finished"});
  for (const Case& c : cases) {
    EXPECT_NE(
        finished.err.find("job " + std::to_string(c.id) + ": could not save output to " + c.dest),
        std::string::npos)
        << finished.err;
  }
  EXPECT_NE(daemon_->log().find("could not save output to"), std::string::npos) << daemon_->log();
}

// 3a'. --error: stderr has a buffer and a destination of its own, held to
// the output's rules. Delivered as the owner (their file, the output apart);
// a symlink put at its destination is not followed, and the stderr is kept
// in the job's `error` buffer, said in list --finished.
TEST_F(RootE2eTest, StderrApartIsDeliveredAsTheOwnerAndNeverFollowsASymlink) {
  Boot();
  MakeUserDir(alice_, 0755);
  const std::string root_victim = daemon_->dir() + "/root-victim";
  WriteFile(root_victim, "root victim\n", 0644, 0, 0);
  const std::string linked = DirOf(alice_) + "/linked.err";
  const int plain = Submit(
      alice_, {"--error", DirOf(alice_), "--", "sh", "-c", "echo out-plain; echo err-plain >&2"});
  const int hijacked =
      Submit(alice_, {"--error", linked, "--", "sh", "-c",
                      "echo out-linked; echo secret-err >&2; " + DaemonHarness::UntilReleased()});
  ASSERT_GT(plain, 0);
  ASSERT_GT(hijacked, 0);
  ASSERT_EQ(::symlink(root_victim.c_str(), linked.c_str()), 0);
  (void)!::lchown(linked.c_str(), alice_.uid, alice_.gid);
  daemon_->Release("go", DirOf(alice_));
  ASSERT_TRUE(WaitFinished(alice_, plain, seconds(20))) << daemon_->log();
  ASSERT_TRUE(WaitFinished(alice_, hijacked, seconds(20))) << daemon_->log();

  const std::string err_file = DirOf(alice_) + "/error." + std::to_string(plain) + ".log";
  EXPECT_TRUE(DaemonHarness::WaitFor([&] { return Slurp(err_file) == "err-plain\n"; }, seconds(10)))
      << Slurp(err_file);
  struct stat st {};
  ASSERT_EQ(::stat(err_file.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, alice_.uid);
  EXPECT_EQ(Slurp(DirOf(alice_) + "/output." + std::to_string(plain) + ".log"), "out-plain\n");

  EXPECT_EQ(Slurp(root_victim), "root victim\n");
  ASSERT_EQ(::lstat(linked.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode)) << "the link at stderr's destination was replaced";
  EXPECT_EQ(Slurp(daemon_->state() + "/jobs/" + std::to_string(hijacked) + "/error"),
            "secret-err\n")
      << "the undelivered stderr is not kept";
  EXPECT_EQ(Slurp(DirOf(alice_) + "/output." + std::to_string(hijacked) + ".log"), "out-linked\n");
  CommandResult finished = As(alice_, {"list", "--finished"});
  EXPECT_NE(finished.err.find("job " + std::to_string(hijacked) + ": could not save stderr to " +
                              linked + ": "),
            std::string::npos)
      << finished.err;
}

// 3a. A --notify command runs as its job's owner, never as root, and one
// user's hanging command does not delay another user's.
TEST_F(RootE2eTest, NotifyRunsAsTheOwnerAndOneUsersHangingCommandDelaysNoOtherUser) {
  Boot();
  const int hung = Submit(alice_, {"--notify", "date +%s.%N > alice.hung; sleep 60", "--", "true"});
  // After the first: two jobs running side by side may end, and so notify,
  // in either order.
  const int queued =
      Submit(alice_, {"--after", std::to_string(hung), "--notify",
                      "date +%s.%N > alice.next; id -u > alice.notified", "--", "true"});
  ASSERT_GT(queued, 0);
  ASSERT_TRUE(WaitFinished(alice_, hung)) << daemon_->log();
  ASSERT_TRUE(WaitFinished(alice_, queued)) << daemon_->log();
  // Times are compared by the commands' own clocks (`date`, the realtime
  // clock): how long the test's steps take on a loaded machine says
  // nothing of the order the executor ran them in.
  const auto started_at = [&](const std::string& file) {
    return std::strtod(Slurp(file).c_str(), nullptr);
  };
  const std::string alice_hung = DirOf(alice_) + "/alice.hung";
  ASSERT_TRUE(DaemonHarness::WaitFor([&] { return started_at(alice_hung) > 0; }, seconds(10)))
      << daemon_->log();
  const double bob_submitted =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  ASSERT_LT(bob_submitted - started_at(alice_hung), 7.0)
      << "too slow to submit bob's job while alice's command still hung";
  const int bobs = Submit(bob_, {"--notify",
                                 "date +%s.%N > bob.start; id -u > bob.notified; "
                                 "id -G >> bob.notified",
                                 "--", "true"});
  ASSERT_GT(bobs, 0);

  const std::string bob_file = DirOf(bob_) + "/bob.notified";
  ASSERT_TRUE(DaemonHarness::WaitFor(
      [&] {
        const std::string text = Slurp(bob_file);
        return std::count(text.begin(), text.end(), '\n') == 2;
      },
      seconds(30)))
      << daemon_->log();
  EXPECT_EQ(Slurp(bob_file).substr(0, Slurp(bob_file).find('\n')), std::to_string(bob_.uid));
  // Its groups are the job's: bob's group first, never root's.
  std::istringstream bob_lines(Slurp(bob_file));
  std::string uid_line, groups_line;
  std::getline(bob_lines, uid_line);
  std::getline(bob_lines, groups_line);
  std::istringstream groups(groups_line);
  std::string first_group, group;
  groups >> first_group;
  EXPECT_EQ(first_group, std::to_string(bob_.gid)) << groups_line;
  for (std::istringstream rest(groups_line); rest >> group;)
    EXPECT_NE(group, "0") << groups_line;
  struct stat st {};
  ASSERT_EQ(::stat(bob_file.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, bob_.uid);
  const std::string alice_file = DirOf(alice_) + "/alice.notified";
  ASSERT_TRUE(DaemonHarness::WaitFor([&] { return !Slurp(alice_file).empty(); }, seconds(25)))
      << daemon_->log();
  EXPECT_EQ(Slurp(alice_file), std::to_string(alice_.uid) + "\n");
  const double alice_next = started_at(DirOf(alice_) + "/alice.next");
  ASSERT_GT(alice_next, 0);
  EXPECT_GE(alice_next - started_at(alice_hung), 9.5) << "alice's second ran beside her first";
  // Submitted while alice's hung, bob's ran before her queue moved on.
  const double bob_start = started_at(DirOf(bob_) + "/bob.start");
  EXPECT_GT(bob_start, 0);
  EXPECT_LT(bob_start, alice_next) << "bob's command waited for alice's hanging one";
}

// 3a'. Once a user helper has exec'd hpc-batch-as-user, its user may trace
// it (read its descriptors, copy them out with pidfd_getfd): all it may
// hold of the launcher's is its answer pipe. Not the launcher's stdin,
// stdout or stderr (the service's log, where a copied descriptor would
// let the user forge the daemon's lines or shut the journal's stream for
// every role), nor its session (a terminal the daemon runs in).
TEST_F(RootE2eTest, AUserHelpersProgramHoldsNoneOfTheLaunchersStdioOrSession) {
  Boot();
  // The command's parent is the helper's program, a process of alice's.
  const int id = Submit(alice_, {"--notify",
                                 "for fd in 0 1 2; do readlink /proc/$PPID/fd/$fd; done > "
                                 "helper.fds; cut -d' ' -f6 /proc/$PPID/stat > helper.sid; "
                                 "echo $PPID > helper.pid",
                                 "--", "true"});
  ASSERT_GT(id, 0);
  const std::string at = DirOf(alice_) + "/helper.";
  ASSERT_TRUE(DaemonHarness::WaitFor([&] { return !Slurp(at + "pid").empty(); }, seconds(15)))
      << daemon_->log();
  EXPECT_EQ(Slurp(at + "fds"), "/dev/null\n/dev/null\n/dev/null\n")
      << "the helper holds the launcher's stdio";
  EXPECT_EQ(Slurp(at + "sid"), Slurp(at + "pid")) << "the helper is in the launcher's session";
}

// 3b. Things another user plants where the output is to go, in a shared
// sticky directory like /tmp: a file anyone may write, a FIFO, a symlink,
// a hard link to one of their files. None is written, read or waited on;
// the output is kept and the job says why.
TEST_F(RootE2eTest, NothingAnotherUserPlantsAtTheDestinationIsWrittenOrWaitedOn) {
  Boot();
  const std::string shared = daemon_->dir() + "/shared";
  fs::create_directories(shared);
  ::chmod(shared.c_str(), 01777);
  const std::string bobs = DirOf(bob_) + "/bobs-own";
  WriteFile(bobs, "bob's own\n", 0666, bob_.uid, bob_.gid);
  struct Plant {
    std::string name;
    std::function<void(const std::string&)> make;  // as root, owned by bob after
  };
  const std::vector<Plant> plants = {
      {"file", [&](const std::string& p) { WriteFile(p, "planted\n", 0666, bob_.uid, bob_.gid); }},
      {"fifo",
       [&](const std::string& p) {
         ::mkfifo(p.c_str(), 0666);
         ::chmod(p.c_str(), 0666);
         (void)!::chown(p.c_str(), bob_.uid, bob_.gid);
       }},
      {"symlink",
       [&](const std::string& p) {
         (void)!::symlink(bobs.c_str(), p.c_str());
         (void)!::lchown(p.c_str(), bob_.uid, bob_.gid);
       }},
      {"hardlink", [&](const std::string& p) { (void)!::link(bobs.c_str(), p.c_str()); }},
  };
  std::vector<std::pair<std::string, int>> jobs;
  for (const Plant& plant : plants) {
    const std::string dest = shared + "/out-" + plant.name + ".log";
    plant.make(dest);
    jobs.emplace_back(dest, Submit(alice_, {"--output", dest, "--", "echo", "secret-output"}));
  }
  for (const auto& [dest, id] : jobs) {
    SCOPED_TRACE(dest);
    ASSERT_TRUE(WaitFinished(alice_, id, seconds(20))) << daemon_->log();
    struct stat st {};
    ASSERT_EQ(::lstat(dest.c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, bob_.uid) << "the planted thing was replaced";
    if (S_ISREG(st.st_mode)) {
      EXPECT_EQ(Slurp(dest).find("secret-output"), std::string::npos)
          << "bob can read alice's output";
    }
    EXPECT_NE(FinishedRow(alice_, id).find("done"), std::string::npos);
    EXPECT_EQ(Slurp(daemon_->state() + "/jobs/" + std::to_string(id) + "/output"),
              "secret-output\n")
        << "the output was not kept";
  }
  EXPECT_EQ(Slurp(bobs), "bob's own\n");
  CommandResult finished = As(alice_, {"list", "--finished"});
  for (const auto& [dest, id] : jobs) {
    EXPECT_NE(finished.err.find("job " + std::to_string(id) + ": could not save output to " + dest),
              std::string::npos)
        << finished.err;
  }
  // A FIFO never held anyone up: another user's job still runs at once.
  int after = Submit(carol_, {"--", "true"});
  EXPECT_TRUE(WaitFinished(carol_, after, seconds(10)));
}

// 3c. A tree of another user's files that the job's owner moved into the
// job's directory survives the directory's removal: the job's user's
// helper empties it, and deletes nothing its user could not have deleted.
TEST_F(RootE2eTest, AForeignTreeMovedIntoAJobDirIsLeftAlone) {
  Boot();
  (void)As(alice_, {"list"});
  const int first = Submit(alice_, {"--", "sleep", "2"});
  ASSERT_GT(first, 0);
  const std::string job_dir = daemon_->state() + "/jobs/" + std::to_string(first);
  // bob's directory, group-writable for a group alice is in (so she may
  // move it), holding one of his own that only he may write, with his file.
  const std::string tree = DirOf(alice_) + "/bobs-tree";
  fs::create_directories(tree + "/sub");
  (void)!::chown(tree.c_str(), bob_.uid, ::getgrnam(kExtraGroup)->gr_gid);
  ::chmod(tree.c_str(), 02770);
  (void)!::chown((tree + "/sub").c_str(), bob_.uid, bob_.gid);
  ::chmod((tree + "/sub").c_str(), 0755);
  WriteFile(tree + "/sub/precious", "bob's data\n", 0644, bob_.uid, bob_.gid);
  CommandResult moved = daemon_->RunAs(kAlice, DirOf(alice_), "/bin/mv", {tree, job_dir + "/"});
  ASSERT_EQ(moved.exit_code, 0) << moved.err;
  ASSERT_TRUE(WaitFinished(alice_, first, seconds(15)));
  // Retention (--keep-finished 0 below) forgets the first job's directory.
  daemon_->Stop();
  ASSERT_TRUE(daemon_->Start({"--admin-group", kAdminGroup, "--keep-finished", "0"}))
      << daemon_->log();
  ASSERT_GT(Submit(alice_, {"--", "true"}), 0);
  ASSERT_TRUE(
      DaemonHarness::WaitFor([&] { return !fs::exists(job_dir + "/info.json"); }, seconds(10)))
      << "the first job was not forgotten\n"
      << daemon_->log();
  ASSERT_TRUE(DaemonHarness::WaitFor(
      [&] { return daemon_->log().find("left for an admin") != std::string::npos; }, seconds(10)))
      << daemon_->log();
  EXPECT_EQ(Slurp(job_dir + "/bobs-tree/sub/precious"), "bob's data\n") << "bob's file was deleted";
  EXPECT_NE(daemon_->log().find("remove " + job_dir), std::string::npos) << daemon_->log();
}

// 3d. A value forwarded in a job's environment is in no file of the state
// directory once the job has started, nor after it ended.
TEST_F(RootE2eTest, AForwardedSecretLeavesNoTraceInTheStateDirectory) {
  Boot();
  const std::string secret = "s3cr3t-" + std::to_string(::getpid()) + "-xyzzy";
  const int id = Submit(alice_, {"--", "MY_SECRET=" + secret, "sh", "-c", "sleep 2"});
  ASSERT_GT(id, 0);
  ASSERT_TRUE(DaemonHarness::WaitFor([&] { return Running(alice_, id); }, seconds(10)));
  std::vector<std::string> running = FilesHolding(secret);
  EXPECT_TRUE(running.empty()) << "while it runs, in " << running.front();
  ASSERT_TRUE(WaitFinished(alice_, id, seconds(15)));
  daemon_->Stop();
  std::vector<std::string> after = FilesHolding(secret);
  EXPECT_TRUE(after.empty()) << "after it ended, in " << after.front();
}

// 3d'. The same for a job that was still queued across a restart: the clean
// stop wrote its spec, environment and all, to its file; once the job runs
// that file must not keep it.
TEST_F(RootE2eTest, AForwardedSecretOfAJobQueuedAcrossARestartLeavesNoTrace) {
  Boot();
  const std::string secret = "s3cr3t-" + std::to_string(::getpid()) + "-queued";
  const int blocker = Submit(alice_, {"--cpu", std::to_string(::sysconf(_SC_NPROCESSORS_ONLN)),
                                      "--", "sh", "-c", DaemonHarness::UntilReleased()});
  ASSERT_GT(blocker, 0);
  const int id = Submit(alice_, {"--", "MY_SECRET=" + secret, "sh", "-c", "sleep 2"});
  ASSERT_GT(id, 0);
  ASSERT_FALSE(Running(alice_, id)) << "it was to wait behind the blocker";
  daemon_->Stop();
  ASSERT_TRUE(daemon_->Start({"--admin-group", kAdminGroup})) << daemon_->log();
  EXPECT_FALSE(FilesHolding(secret).empty()) << "a queued job's spec keeps what it was forwarded";
  daemon_->Release("go", DirOf(alice_));
  ASSERT_TRUE(DaemonHarness::WaitFor([&] { return Running(alice_, id); }, seconds(15)))
      << daemon_->log();
  std::vector<std::string> running = FilesHolding(secret);
  EXPECT_TRUE(running.empty()) << "while it runs, in " << running.front();
  ASSERT_TRUE(WaitFinished(alice_, id, seconds(15)));
}

// 3e. Control characters in a job's command never reach a terminal raw:
// an admin listing every job sees them spelled out.
TEST_F(RootE2eTest, ControlCharactersInArgvAreEscapedInTheList) {
  Boot();
  // The escape is sh's $0, so the job runs its 5 s (`sleep 5 ESC...` would
  // fail at once and could be gone before the list).
  const int id = Submit(bob_, {"--", "sh", "-c", "sleep 5", "\x1b]0;owned\x07\x1b[2J"});
  ASSERT_GT(id, 0);
  CommandResult listed = As(carol_, {"list", "--all"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_EQ(listed.out.find('\x1b'), std::string::npos)
      << "an escape sequence reached the terminal";
  EXPECT_NE(listed.out.find("$'\\e]0;owned\\x07\\e[2J'"), std::string::npos) << listed.out;
  (void)As(bob_, {"kill", std::to_string(id)});
}

// 4. The executor is confined (seccomp, no_new_privs, three capabilities),
// the broker unprivileged and filtered; the launcher and jobs are not.
TEST_F(RootE2eTest, RolesAreConfinedAndJobsAreNot) {
  HarnessOptions options;
  Boot(options);
  auto executor = ProcStatus(executor_pid_);
  auto broker = ProcStatus(broker_pid_);
  auto launcher = ProcStatus(daemon_->daemon_pid());
  ASSERT_FALSE(executor.empty()) << daemon_->log();
  ASSERT_FALSE(broker.empty()) << daemon_->log();
  EXPECT_EQ(executor["Seccomp"], "2");
  EXPECT_EQ(executor["NoNewPrivs"], "1");
  EXPECT_EQ(executor["CapEff"], "0000000000000023");  // chown, dac_override, kill
  EXPECT_EQ(executor["CapPrm"], "0000000000000023");
  std::string u = std::to_string(broker_.uid);
  EXPECT_EQ(Words(broker["Uid"]), std::set<std::string>{u}) << broker["Uid"];
  EXPECT_EQ(broker["CapEff"], "0000000000000000");
  EXPECT_EQ(broker["CapPrm"], "0000000000000000");
  EXPECT_EQ(broker["Seccomp"], "2");
  EXPECT_EQ(launcher["Seccomp"], "0");

  const std::string grep = "grep -E '^(Uid|CapEff|CapPrm|Seccomp|NoNewPrivs):' /proc/self/status";
  int id = Submit(alice_, {"--", "sh", "-c", grep});
  ASSERT_GT(id, 0);
  ASSERT_TRUE(WaitFinished(alice_, id)) << daemon_->log();
  auto job = StatusFields(Slurp(DirOf(alice_) + "/output." + std::to_string(id) + ".log"));
  EXPECT_EQ(job["CapEff"], "0000000000000000");
  EXPECT_EQ(job["Seccomp"], "0");
  // The same as the user gets outside the daemon.
  CommandResult direct = daemon_->RunAs(alice_.name, DirOf(alice_), "/bin/sh", {"-c", grep});
  ASSERT_EQ(direct.exit_code, 0) << direct.err;
  EXPECT_EQ(job, StatusFields(direct.out));
}

// 4a'. A launcher of the previous release (still running after a package
// upgrade, restarting its roles from the new files) passes the daemon's
// flags, not one config message: the executor must not refuse with 78,
// which systemd would not restart, but fail, so that the old launcher
// gives up and systemd starts the new one.
TEST_F(RootE2eTest, AnExecutorStartedByAnOlderLauncherEndsTheDaemonForSystemdToRestart) {
  testing::TempDir scratch;
  const std::string wrapper = scratch.path() + "/executor-without-ids";
  WriteFile(wrapper,
            "#!/bin/bash\n# Started as the previous launcher would: with flags.\nexec " +
                std::string(HPCB_EXECUTOR) + " --no-cgroups --state-dir /var/lib/hpc-batch\n",
            0755, 0, 0);
  HarnessOptions options;
  options.replace_binaries = {{"hpc-batch-executor", wrapper}};
  MakeHarness(options);
  (void)daemon_->StartNoProbe({"--admin-group", kAdminGroup});
  EXPECT_EQ(daemon_->WaitForExit(seconds(30)), 1) << daemon_->log();
  EXPECT_NE(daemon_->log().find("another release"), std::string::npos) << daemon_->log();
}

// fs.suid_dumpable=1 would let a job's user trace a process of theirs
// whose memory is a copy of the launcher's (a job child before its exec, a
// path-check or delivery helper): the daemon refuses to start on such a
// host, and a running one refuses each of those children while it is 1.
// (A submission forks none: dispatch checks its output path itself.)
TEST_F(RootE2eTest, SuidDumpableOneRefusesTheDaemonAndEachChildThatBecomesAUser) {
  MakeHarness();
  const std::string proc = daemon_->dir() + "/fake-proc";
  testing::WriteText(proc + "/sys/fs/suid_dumpable", "1\n");
  (void)daemon_->StartNoProbe({"--admin-group", kAdminGroup, "--proc-root", proc});
  EXPECT_EQ(daemon_->WaitForExit(seconds(30)), 78) << daemon_->log();
  EXPECT_NE(daemon_->log().find("fs.suid_dumpable is 1"), std::string::npos) << daemon_->log();
  // A refused start leaves nothing behind.
  EXPECT_FALSE(fs::exists(daemon_->state())) << daemon_->state();
  EXPECT_FALSE(fs::exists(daemon_->dir() + "/dev")) << daemon_->dir();

  MakeHarness();
  const std::string live_proc = daemon_->dir() + "/fake-proc";
  const std::string live = live_proc + "/sys/fs/suid_dumpable";
  testing::WriteText(live, "0\n");
  ASSERT_TRUE(daemon_->Start({"--admin-group", kAdminGroup, "--proc-root", live_proc}))
      << daemon_->log();
  // The target's start waits for the blocker, which ends only once the
  // setting is 1.
  const std::string flag = DirOf(alice_) + "/release";
  const int blocker = Submit(alice_, {"--no-output", "--", "sh", "-c",
                                      "while [ ! -e " + flag + " ]; do sleep 0.05; done"});
  ASSERT_GT(blocker, 0);
  const int refused = Submit(alice_, {"--after", std::to_string(blocker), "--", "true"});
  ASSERT_GT(refused, 0);

  testing::WriteText(live, "1\n");

  testing::WriteText(flag, "");
  (void)!::chown(flag.c_str(), alice_.uid, alice_.gid);
  ASSERT_TRUE(WaitFinished(alice_, refused, seconds(30))) << daemon_->log();
  EXPECT_NE(FinishedRow(alice_, refused).find("error"), std::string::npos)
      << FinishedRow(alice_, refused);
  // The delivery of its output is a child that becomes alice too: refused
  // as well, the output kept.
  const std::string kept = "job " + std::to_string(refused) + ": could not save output";
  auto delivery_refused = [&] {
    std::istringstream lines(daemon_->log());
    std::string line;
    while (std::getline(lines, line)) {
      if (line.find(kept) != std::string::npos &&
          line.find("fs.suid_dumpable is 1") != std::string::npos) {
        return true;
      }
    }
    return false;
  };
  EXPECT_TRUE(DaemonHarness::WaitFor(delivery_refused, seconds(15))) << daemon_->log();

  testing::WriteText(live, "2\n");
  CommandResult again = As(alice_, {"output", std::to_string(refused)});
  EXPECT_EQ(again.exit_code, 0) << again.out << again.err;
  const std::string path = DirOf(alice_) + "/output." + std::to_string(refused) + ".log";
  EXPECT_TRUE(DaemonHarness::WaitFor(
      [&] { return Slurp(path).find("fs.suid_dumpable is 1") != std::string::npos; }, seconds(15)))
      << Slurp(path);
  // The job itself is not left sealed: it starts with no signal blocked,
  // and its /proc entry is alice's (a non-dumpable process's is root's).
  // Each is the job's own process, exec'd directly (a shell would clear
  // its mask itself).
  const int mask = Submit(alice_, {"--", "grep", "^SigBlk", "/proc/self/status"});
  const int owner = Submit(alice_, {"--", "stat", "-c", "owner %u", "/proc/self/"});
  ASSERT_GT(mask, 0);
  ASSERT_GT(owner, 0);
  for (int id : {mask, owner}) {
    ASSERT_TRUE(WaitFinished(alice_, id)) << daemon_->log();
    EXPECT_EQ(FinishedRow(alice_, id).find("error"), std::string::npos) << FinishedRow(alice_, id);
  }
  const std::string mask_out = DirOf(alice_) + "/output." + std::to_string(mask) + ".log";
  const std::string owner_out = DirOf(alice_) + "/output." + std::to_string(owner) + ".log";
  EXPECT_TRUE(DaemonHarness::WaitFor(
      [&] { return Slurp(mask_out).find("SigBlk:\t0000000000000000") != std::string::npos; },
      seconds(15)))
      << Slurp(mask_out);
  EXPECT_TRUE(DaemonHarness::WaitFor(
      [&] {
        return Slurp(owner_out).find("owner " + std::to_string(alice_.uid)) != std::string::npos;
      },
      seconds(15)))
      << Slurp(owner_out);
}

// 4a. The executor looks no name up: the launcher passes it the admin
// group's gid, which a job's directory is given, and (in the release build,
// a static PIE) it maps no shared object, so no NSS module can be in it.
TEST_F(RootE2eTest, TheExecutorGetsItsIdsFromTheLauncherAndLoadsNoLibrary) {
  Boot();
  const int id = Submit(bob_, {"--", "sleep", "5"});
  ASSERT_GT(id, 0);
  struct stat st {};
  ASSERT_EQ(::stat((daemon_->state() + "/jobs/" + std::to_string(id)).c_str(), &st), 0);
  const struct group* admin = ::getgrnam(kAdminGroup);
  ASSERT_NE(admin, nullptr);
  EXPECT_EQ(st.st_gid, admin->gr_gid) << "the job dir's group is the admin group";
  EXPECT_EQ(st.st_uid, bob_.uid);
  const std::string maps = Slurp("/proc/" + std::to_string(executor_pid_) + "/maps");
  ASSERT_FALSE(maps.empty());
#ifdef HPCB_STATIC_EXECUTOR_BUILD
  EXPECT_EQ(maps.find(".so"), std::string::npos) << maps;
#endif
  EXPECT_EQ(maps.find("libnss_"), std::string::npos) << maps;
  (void)As(bob_, {"kill", std::to_string(id)});
}

// 4b. The executor's seccomp list is exactly what it needs. Traced (strace
// -D, so its pid and parent stay the launcher's) through every operation
// -- submission, start, attach, a reload with a job running, a kill that
// escalates, an exec failure, a delivery that fails and is redone with
// `dispatch output --to`, retention forgetting jobs -- it makes no call the
// list lacks, and every listed call but the rare ones at least once.
std::string FindInPath(const std::string& name) {
  for (const char* dir : {"/usr/bin", "/bin", "/usr/sbin", "/usr/local/bin"}) {
    std::string path = std::string(dir) + "/" + name;
    if (::access(path.c_str(), X_OK) == 0) return path;
  }
  return "";
}

// Syscall names each traced process made after its seccomp filter was in
// place ("PID name(..." and "PID <... name resumed>" lines).
std::map<std::string, int> CallsAfterConfinement(const std::string& trace) {
  std::set<std::string> confined;
  std::map<std::string, int> calls;
  std::istringstream lines(trace);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string pid, call;
    if (!(words >> pid)) continue;
    std::getline(words, call);
    call.erase(0, call.find_first_not_of(' '));
    if (call.rfind("<... ", 0) == 0) call = call.substr(5);
    std::size_t name_end = call.find_first_of("( ");
    if (name_end == std::string::npos || name_end == 0) continue;
    std::string name = call.substr(0, name_end);
    if (!std::isalpha(static_cast<unsigned char>(name[0]))) continue;  // "--- SIG..." and "+++"
    if (name == "seccomp" && call.find("SECCOMP_SET_MODE_FILTER") != std::string::npos &&
        call.size() >= 4 && call.compare(call.size() - 4, 4, " = 0") == 0) {
      confined.insert(pid);
      continue;
    }
    if (confined.count(pid)) ++calls[name];
  }
  return calls;
}

TEST_F(RootE2eTest, ExecutorFilterListsExactlyTheCallsItMakes) {
  const std::string strace = FindInPath("strace");
  if (strace.empty())
    GTEST_SKIP() << "strace is not installed (scripts/install-deps.sh installs it)";
  std::string listed;
  {
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(HPCB_EXECUTOR " --print-allowlist", "r"),
                                               ::pclose);
    ASSERT_TRUE(pipe);
    char buf[4096];
    while (std::size_t n = std::fread(buf, 1, sizeof buf, pipe.get()))
      listed.append(buf, n);
  }
  std::set<std::string> allowed, needed;
  {
    std::istringstream lines(listed);
    std::string line;
    while (std::getline(lines, line)) {
      std::istringstream fields(line);
      std::string name, kind;
      fields >> name >> kind;
      allowed.insert(name);
      if (kind == "needed") needed.insert(name);
    }
  }
  ASSERT_GT(needed.size(), 10u) << listed;

  testing::TempDir scratch;
  const std::string trace = scratch.path() + "/trace";
  const std::string wrapper = scratch.path() + "/traced-executor";
  WriteFile(
      wrapper,
      "#!/bin/sh\nexec " + strace + " -D -f -qq -A -o " + trace + " " + HPCB_EXECUTOR + " \"$@\"\n",
      0755, 0, 0);
  HarnessOptions options;
  options.replace_binaries = {{"hpc-batch-executor", wrapper}};
  MakeHarness(options);
  ASSERT_TRUE(daemon_->Start({"--admin-group", kAdminGroup, "--keep-finished", "1"}))
      << daemon_->log();

  const std::string home = DirOf(alice_);
  auto wait = [&](int id) {
    EXPECT_TRUE(WaitFinished(alice_, id, seconds(30))) << id << daemon_->log();
  };
  wait(Submit(alice_, {"--", "echo", "hello"}));
  const int across = Submit(alice_, {"--", "sh", "-c", "echo started; sleep 6; echo done"});
  EXPECT_TRUE(DaemonHarness::WaitFor([&] { return Running(alice_, across); }, seconds(10)));
  EXPECT_EQ(As(alice_, {"attach", std::to_string(across)}, seconds(15)).out, "started\ndone\n");
  const int reloaded = Submit(
      alice_, {"--", "sh", "-c", DaemonHarness::UntilReleased("reload") + "; echo after reload"});
  EXPECT_TRUE(DaemonHarness::WaitFor([&] { return Running(alice_, reloaded); }, seconds(10)));
  daemon_->Reload();
  EXPECT_TRUE(DaemonHarness::WaitFor([&] { return Running(alice_, reloaded); }, seconds(10)));
  daemon_->Release("reload", home);
  wait(reloaded);
  EXPECT_EQ(Slurp(home + "/output." + std::to_string(reloaded) + ".log"), "after reload\n");

  // Ignores SIGTERM: the broker escalates to SIGKILL after its grace (10 s).
  const int stubborn = Submit(alice_, {"--", "sh", "-c", "trap '' TERM; echo ready; sleep 30"});
  EXPECT_TRUE(DaemonHarness::WaitFor([&] { return Running(alice_, stubborn); }, seconds(10)));
  EXPECT_EQ(As(alice_, {"kill", std::to_string(stubborn)}).exit_code, 0);
  wait(stubborn);
  // A start that fails in the launcher: dispatch finds the script, whose
  // interpreter then is not there.
  WriteFile(home + "/no-interpreter", "#!/nonexistent/interpreter\n", 0755, alice_.uid, alice_.gid);
  wait(Submit(alice_, {"--", home + "/no-interpreter"}));

  const std::string locked = home + "/locked";
  MakeUserDir(alice_, 0700);
  fs::create_directories(locked);
  (void)!::chown(locked.c_str(), alice_.uid, alice_.gid);
  const int kept = Submit(alice_, {"--output", locked, "--", "sh", "-c",
                                   DaemonHarness::UntilReleased() + "; echo kept"});
  ::chmod(locked.c_str(), 0500);
  daemon_->Release("go", home);
  wait(kept);
  CommandResult redone = As(alice_, {"output", std::to_string(kept), "--to", home + "/redone.log"});
  EXPECT_EQ(redone.exit_code, 0) << redone.err;
  EXPECT_EQ(Slurp(home + "/redone.log"), "kept\n");
  EXPECT_NE(As(alice_, {"new", "--output", "/nonexistent/x", "--", "true"}).exit_code, 0);
  wait(Submit(alice_, {"--", "true"}));  // retention forgets the others
  // The scenario goes on past a failure: the trace says which call it was.
  daemon_->Stop();
  // strace -D is no child of the daemon: it may still be writing the
  // executor's last calls when the daemon is gone. Bounded: a missing
  // exit_group still fails below.
  (void)DaemonHarness::WaitFor(
      [&] { return Slurp(trace).find("exit_group(") != std::string::npos; }, seconds(10));

  std::map<std::string, int> calls = CallsAfterConfinement(Slurp(trace));
  ASSERT_FALSE(calls.empty()) << "no confined executor in the trace:\n"
                              << Slurp(trace).substr(0, 4000);
  for (const auto& [name, count] : calls) {
    EXPECT_TRUE(allowed.count(name))
        << name << " (" << count << " calls) is not on the list: the filter kills";
  }
  for (const std::string& name : needed) {
    EXPECT_TRUE(calls.count(name)) << name << " is on the list but the executor never made it";
  }
}

// 5. A job keeps what a user can do: perf_event_open and ptrace of its
// own child behave exactly as for the same user outside the daemon.
TEST_F(RootE2eTest, JobCanUsePerfAndPtraceAsItsUserCan) {
  HarnessOptions options;
  options.extra_binaries = {HPCB_PROBE};
  Boot(options);
  const std::string probe = daemon_->bin() + "/" + fs::path(HPCB_PROBE).filename().string();

  CommandResult direct = daemon_->RunAs(alice_.name, DirOf(alice_), probe, {});
  int id = Submit(alice_, {"--", probe});
  ASSERT_GT(id, 0);
  ASSERT_TRUE(WaitFinished(alice_, id)) << daemon_->log();

  ASSERT_EQ(direct.exit_code, 0) << direct.err;
  std::string in_job = Slurp(DirOf(alice_) + "/output." + std::to_string(id) + ".log");
  EXPECT_EQ(in_job, direct.out) << "perf_event_paranoid="
                                << Slurp("/proc/sys/kernel/perf_event_paranoid");
  EXPECT_NE(direct.out.find("uid " + std::to_string(alice_.uid)), std::string::npos) << direct.out;
  std::cout << "probe as " << kAlice << ":\n" << direct.out;
}

// 6. A forged broker.
class ForgedBrokerTest : public RootE2eTest {
 protected:
  void SetUp() override {
    RootE2eTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    char pattern[] = "/tmp/hpcb-forged.XXXXXX";
    control_dir_ = ::mkdtemp(pattern);
    replies_ = control_dir_ + "/replies.log";
    std::string control_path = control_dir_ + "/control";
    listen_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    struct sockaddr_un addr {};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", control_path.c_str());
    ASSERT_EQ(::bind(listen_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ASSERT_EQ(::listen(listen_.get(), 1), 0);

    HarnessOptions options;
    options.replace_binaries["hpc-batch-broker"] = HPCB_FORGED_BROKER;
    options.daemon_env = {"HPCB_FORGED_CONTROL=" + control_path, "HPCB_FORGED_REPLIES=" + replies_};
    MakeHarness(options);
    rootonly_ = daemon_->dir() + "/rootonly";
    fs::create_directories(rootonly_);
    ::chmod(rootonly_.c_str(), 0755);
    ASSERT_TRUE(daemon_->StartNoProbe({"--admin-group", kAdminGroup})) << daemon_->log();
    struct pollfd pfd {
      listen_.get(), POLLIN, 0
    };
    ASSERT_EQ(::poll(&pfd, 1, 10000), 1) << "the forged broker did not connect\n" << daemon_->log();
    control_.reset(::accept4(listen_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    ASSERT_TRUE(control_.valid());
    ASSERT_TRUE(DaemonHarness::WaitFor(
        [&] { return DaemonHarness::RolePids(daemon_->log(), &executor_pid_, &broker_pid_); },
        std::chrono::seconds(10)))
        << daemon_->log();
    // Meaningful only if the forged broker runs as the service user.
    ASSERT_TRUE(DaemonHarness::WaitFor(
        [&] {
          return Words(ProcStatus(broker_pid_)["Uid"]) ==
                 std::set<std::string>{std::to_string(broker_.uid)};
        },
        std::chrono::seconds(5)))
        << ProcStatus(broker_pid_)["Uid"] << daemon_->log();
  }

  void TearDown() override {
    control_.reset();
    if (daemon_) daemon_->Stop();
    listen_.reset();
    if (!control_dir_.empty()) {
      std::error_code ignored;
      fs::remove_all(control_dir_, ignored);
    }
  }

  // One command to the forged broker; its one-line answer.
  std::string Ask(const std::string& line) {
    std::string text = line + "\n";
    if (!protocol::WriteAll(control_.get(), text)) return "ERROR control write";
    std::string answer;
    auto deadline = std::chrono::steady_clock::now() + seconds(30);
    while (answer.find('\n') == std::string::npos && std::chrono::steady_clock::now() < deadline) {
      struct pollfd pfd {
        control_.get(), POLLIN, 0
      };
      if (::poll(&pfd, 1, 200) <= 0) continue;
      char buf[4096];
      ssize_t got = ::read(control_.get(), buf, sizeof buf);
      if (got <= 0) return "ERROR control closed";
      answer.append(buf, static_cast<std::size_t>(got));
    }
    if (answer.find('\n') == std::string::npos) return "ERROR control timeout";
    return answer.substr(0, answer.find('\n'));
  }

  void Hello() {
    std::string reply = Ask("send " + protocol::Encode(protocol::Hello{}));
    auto envelope = protocol::PeekEnvelope(reply);
    ASSERT_TRUE(envelope && envelope->type == "hello_reply") << reply << daemon_->log();
  }

  bool ExecutorAlive() {
    return ::kill(executor_pid_, 0) == 0 && !ProcStatus(executor_pid_).empty();
  }

  // A client connection made by `who` (its peer credentials), carrying
  // `frame` as its first frame, unread.
  UniqueFd ConnectAs(const Account& who, const std::string& frame) {
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) return UniqueFd();
    UniqueFd ours(pair[0]);
    UniqueFd theirs(pair[1]);
    std::string socket_path = daemon_->socket();
    pid_t pid = ::fork();
    if (pid == 0) {
      ours.reset();
      if (who.uid != 0 && (::initgroups(who.name.c_str(), who.gid) != 0 ||
                           ::setresgid(who.gid, who.gid, who.gid) != 0 ||
                           ::setresuid(who.uid, who.uid, who.uid) != 0)) {
        ::_exit(126);
      }
      int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      struct sockaddr_un addr {};
      addr.sun_family = AF_UNIX;
      std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", socket_path.c_str());
      if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
        ::_exit(125);
      if (!protocol::WriteFrame(fd, frame)) ::_exit(124);
      if (!protocol::SendMessage(theirs.get(), "fd", {fd})) ::_exit(123);
      ::_exit(0);
    }
    theirs.reset();
    UniqueFd result;
    struct pollfd pfd {
      ours.get(), POLLIN, 0
    };
    if (pid > 0 && ::poll(&pfd, 1, 10000) == 1) {
      auto packet = protocol::ReceiveMessage(ours.get());
      if (packet && packet->fds.size() == 1) result = std::move(packet->fds[0]);
    }
    if (pid > 0) {
      if (!DaemonHarness::WaitFor([&] { return ::waitpid(pid, nullptr, WNOHANG) == pid; },
                                  seconds(5))) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
      }
    }
    return result;
  }

  std::string SubmitFrame(const Account& who, std::vector<std::string> argv,
                          std::optional<std::string> output) {
    protocol::SubmitRequest submit;
    submit.argv = std::move(argv);
    submit.cwd = who.uid == 0 ? "/" : DirOf(who);
    submit.output = std::move(output);
    submit.output_is_dir = submit.output && fs::is_directory(*submit.output);
    submit.user = who.name;
    return protocol::Encode(submit);
  }

  std::string RegisterJson(int id, const std::string& extra = "") {
    return "{\"type\":\"register\",\"req\":" + std::to_string(id) +
           ",\"id\":" + std::to_string(id) + ",\"start\":[]" + extra + "}";
  }

  std::string StartJson(int id, std::vector<int> cpus, std::vector<int> mems = {}) {
    protocol::StartJob start;
    start.id = static_cast<std::uint64_t>(id);
    start.placement.cpus = std::move(cpus);
    start.placement.mems = std::move(mems);
    return protocol::Encode(start);
  }

  // Registers a job of `who` whose connection carries `frame`; `extra`
  // is spliced into the register message. The decoded reply.
  protocol::RegisterReply Register(int id, const UniqueFd& client, const std::string& extra = "") {
    EXPECT_TRUE(client.valid()) << "no client connection";
    std::string reply = Ask("accept " + RegisterJson(id, extra));
    auto decoded = protocol::Decode<protocol::RegisterReply>(reply);
    EXPECT_TRUE(decoded) << reply;
    return decoded ? *decoded : protocol::RegisterReply{};
  }

  bool LogHas(const std::string& text) { return daemon_->log().find(text) != std::string::npos; }

  // Starts a registered job on cpu 0 and waits for its exited event.
  void RunToEnd(int id) {
    std::string reply = Ask("send " + StartJson(id, {0}));
    auto started = protocol::Decode<protocol::StartReply>(reply);
    ASSERT_TRUE(started) << reply;
    ASSERT_FALSE(started->error) << started->error->message;
    std::string event = Ask("event");
    auto exited = protocol::Decode<protocol::JobExited>(event);
    ASSERT_TRUE(exited) << event << daemon_->log();
    EXPECT_EQ(exited->id, static_cast<std::uint64_t>(id));
  }

  std::string control_dir_;
  std::string replies_;
  std::string rootonly_;  // root's, 0755: no user may write in it
  UniqueFd listen_;
  UniqueFd control_;
};

// (a) A message over the internal cap is refused; the executor goes on.
TEST_F(ForgedBrokerTest, OversizedFrameIsRefusedAndTheExecutorGoesOn) {
  std::string reply =
      Ask("oversized " + std::to_string(protocol::kMaxInternalMessage + 200 * 1024));
  auto ack = protocol::Decode<protocol::Ack>(reply);
  ASSERT_TRUE(ack) << reply << daemon_->log();
  ASSERT_TRUE(ack->error);
  EXPECT_NE(ack->error->message.find("exceeds"), std::string::npos) << ack->error->message;
  EXPECT_TRUE(LogHas("refused a broker message")) << daemon_->log();
  EXPECT_TRUE(ExecutorAlive());
  Hello();
  EXPECT_NE(Slurp(replies_).find("hello_reply"), std::string::npos) << Slurp(replies_);
}

// (b) A connection whose peer is root is refused.
TEST_F(ForgedBrokerTest, RootPeerIsRefused) {
  Hello();
  Account root{"root", 0, 0};
  UniqueFd client = ConnectAs(root, SubmitFrame(root, {"id"}, std::nullopt));

  protocol::RegisterReply reply = Register(2, client);

  ASSERT_TRUE(reply.error) << "a job registered as uid " << reply.uid;
  EXPECT_NE(reply.error->message.find("uid 0"), std::string::npos) << reply.error->message;
  EXPECT_TRUE(LogHas("refused register of job 2")) << daemon_->log();
  EXPECT_TRUE(LogHas("uid 0")) << daemon_->log();
  EXPECT_FALSE(fs::exists(daemon_->state() + "/jobs/2"));
  EXPECT_TRUE(ExecutorAlive());
}

// (c) A socket the broker made itself (peer: the broker's service uid).
TEST_F(ForgedBrokerTest, BrokersOwnSocketIsRefused) {
  Hello();

  std::string text = Ask("pair " + RegisterJson(3));

  auto reply = protocol::Decode<protocol::RegisterReply>(text);
  ASSERT_TRUE(reply) << text;
  ASSERT_TRUE(reply->error) << "a job registered as the broker's uid " << reply->uid;
  EXPECT_NE(reply->error->message.find("not a connection accepted on"), std::string::npos)
      << reply->error->message;
  EXPECT_TRUE(LogHas("refused register of job 3")) << daemon_->log();
  EXPECT_FALSE(fs::exists(daemon_->state() + "/jobs/3"));
}

// (d) Identity fields the broker adds are ignored: the peer is bob.
TEST_F(ForgedBrokerTest, ForgedIdentityFieldsAreIgnored) {
  Hello();
  const std::string out = DirOf(bob_) + "/d.log";
  const std::string pwned = DirOf(alice_) + "/pwned";
  UniqueFd client = ConnectAs(bob_, SubmitFrame(bob_, {"id", "-u"}, out));
  std::string a = std::to_string(alice_.uid);
  std::string forged = ",\"uid\":" + a + ",\"gid\":" + std::to_string(alice_.gid) + ",\"user\":\"" +
                       kAlice + "\",\"argv\":[\"sh\",\"-c\",\"id -u >" + pwned +
                       "\"],\"cwd\":\"/\",\"output\":\"" + DirOf(alice_) + "/d.log\"";

  protocol::RegisterReply reply = Register(4, client, forged);

  std::cout << "forged identity fields: "
            << (reply.error ? "refused: " + reply.error->message : "ignored") << "\n";
  if (reply.error) {
    EXPECT_TRUE(LogHas("refused register of job 4")) << daemon_->log();
    return;
  }
  EXPECT_EQ(reply.uid, bob_.uid);
  EXPECT_EQ(reply.gid, bob_.gid);
  EXPECT_NE(reply.uid, alice_.uid);
  RunToEnd(4);
  EXPECT_EQ(Slurp(out), std::to_string(bob_.uid) + "\n");
  struct stat st {};
  ASSERT_EQ(::lstat(out.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, bob_.uid);
  EXPECT_FALSE(fs::exists(pwned));
  EXPECT_FALSE(fs::exists(DirOf(alice_) + "/d.log"));
}

// (e) An output path the broker adds, in a directory bob cannot write, is
// refused (naming it) or ignored (the output never lands there).
TEST_F(ForgedBrokerTest, ForgedOutputPathIsRefusedOrIgnored) {
  Hello();
  const std::vector<std::string> foreign = {DirOf(alice_) + "/stolen.log",
                                            rootonly_ + "/stolen.log"};
  int id = 5;
  for (const std::string& path : foreign) {
    SCOPED_TRACE(path);
    const std::string own = DirOf(bob_) + "/e" + std::to_string(id) + ".log";
    UniqueFd client = ConnectAs(bob_, SubmitFrame(bob_, {"echo", "forged-e"}, own));

    protocol::RegisterReply reply = Register(id, client, ",\"output\":\"" + path + "\"");

    std::cout << "forged output " << path << ": "
              << (reply.error ? "refused: " + reply.error->message : "ignored") << "\n";
    if (reply.error) {
      EXPECT_NE(reply.error->message.find(fs::path(path).parent_path().string()), std::string::npos)
          << reply.error->message;
      EXPECT_TRUE(LogHas("refused register of job " + std::to_string(id))) << daemon_->log();
    } else {
      EXPECT_NE(reply.output_dest.value_or(""), path);
      RunToEnd(id);
      EXPECT_EQ(Slurp(own), "forged-e\n");
    }
    EXPECT_FALSE(fs::exists(path)) << "output landed in a directory bob cannot write";
    ++id;
  }
}

// (e, client side) bob's own frame, made without dispatch's check, naming
// a directory he cannot write: the root side resolves no user path, so it
// is registered; its delivery, made as bob, fails naming the place, and
// nothing lands there.
TEST_F(ForgedBrokerTest, OutputInADirectoryTheUserCannotWriteNeverLandsThere) {
  Hello();
  const std::string path = DirOf(alice_) + "/stolen.log";
  UniqueFd client = ConnectAs(bob_, SubmitFrame(bob_, {"echo", "x"}, path));

  protocol::RegisterReply reply = Register(8, client);
  ASSERT_FALSE(reply.error) << reply.error->message;
  std::string reply_text = Ask("send " + StartJson(8, {0}));
  ASSERT_TRUE(protocol::Decode<protocol::StartReply>(reply_text)) << reply_text;
  std::string event = Ask("event");
  auto exited = protocol::Decode<protocol::JobExited>(event);
  ASSERT_TRUE(exited) << event << daemon_->log();
  ASSERT_TRUE(exited->output_error) << event;
  EXPECT_NE(exited->output_error->find(DirOf(alice_)), std::string::npos) << event;
  EXPECT_FALSE(fs::exists(path));
}

// A start message written out by hand: `id` and the placement's first
// fields as given, the rest well formed.
std::string WithPlacement(const std::string& id, const std::string& placement) {
  return "{\"type\":\"start\",\"req\":1," + id + ",\"placement\":{" + placement +
         ",\"mem_by_node\":[],\"gpu_link\":[],\"spans_nodes\":false},\"memory_max\":[]}";
}

// (f) Placements outside the machine and wrongly typed fields are refused.
TEST_F(ForgedBrokerTest, BadPlacementsAndTypesAreRefused) {
  Hello();
  UniqueFd client = ConnectAs(bob_, SubmitFrame(bob_, {"true"}, std::nullopt));
  protocol::RegisterReply registered = Register(7, client);
  ASSERT_FALSE(registered.error) << registered.error->message << daemon_->log();

  struct Case {
    std::string json;
    std::string mentions;
  };
  const std::vector<Case> cases = {
      {StartJson(7, {999}), "cpus"},
      {StartJson(7, {0}, {7}), "mems"},
      {StartJson(7, {-1}), "cpus"},
      {WithPlacement("\"id\":\"7\"", "\"cpus\":[0],\"mems\":[],\"gpus\":[]"), "id"},
      {WithPlacement("\"id\":7", "\"cpus\":\"0\",\"mems\":[],\"gpus\":[]"), "cpus"},
      {WithPlacement("\"id\":7", "\"cpus\":[0],\"mems\":[],\"gpus\":{\"a\":1}"), "gpus"},
      {"{\"type\":\"signal\",\"req\":1,\"id\":7,\"signal\":9,\"note\":\"\",\"limit_s\":0}",
       "signal"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.json);
    std::string text = Ask("send " + c.json);
    auto ack = protocol::Decode<protocol::Ack>(text);
    ASSERT_TRUE(ack) << text;
    ASSERT_TRUE(ack->error) << text;
    EXPECT_NE(ack->error->message.find(c.mentions), std::string::npos) << ack->error->message;
  }
  EXPECT_TRUE(LogHas("refused start of job 7")) << daemon_->log();
  EXPECT_TRUE(LogHas("refused start: ")) << daemon_->log();
  EXPECT_TRUE(ExecutorAlive());
  // None of them started it.
  protocol::ListJobs list;
  list.req = 99;
  list.after = 6;
  list.limit = 1;
  std::string listed = Ask("send " + protocol::Encode(list));
  auto reply = protocol::Decode<protocol::ListJobsReply>(listed);
  ASSERT_TRUE(reply) << listed;
  ASSERT_EQ(reply->jobs.size(), 1u) << listed;
  EXPECT_EQ(reply->jobs[0].id, 7u);
  EXPECT_EQ(reply->jobs[0].state, protocol::SpecState::kRegistered) << listed;
}

// (g) A socket the broker connected to a user's own service that echoes
// what it reads: the submission the broker wrote comes back as if from that
// user. Refused: it is not a connection accepted on the daemon's socket.
TEST_F(ForgedBrokerTest, ASocketToAUsersEchoServiceIsRefused) {
  Hello();
  const std::string path = DirOf(alice_) + "/echo.sock";
  ::unlink("/tmp/hpcb-echo-pwned");
  // alice's service: accepts one connection and echoes it back.
  const pid_t service = ::fork();
  if (service == 0) {
    if (::setgid(alice_.gid) != 0 || ::setuid(alice_.uid) != 0) ::_exit(1);
    int listener = ::socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un addr {};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
    if (::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) ::_exit(1);
    ::chmod(path.c_str(), 0777);
    ::listen(listener, 1);
    ::alarm(20);
    int client = ::accept(listener, nullptr, nullptr);
    char buf[65536];
    for (ssize_t n; (n = ::read(client, buf, sizeof buf)) > 0;) {
      if (::write(client, buf, static_cast<size_t>(n)) != n) break;
    }
    ::_exit(0);
  }
  ASSERT_TRUE(DaemonHarness::WaitFor([&] { return fs::exists(path); }, seconds(5)));
  // alice's home dir is 0700 in these tests: the broker user must reach it.
  ::chmod(DirOf(alice_).c_str(), 0711);

  std::string text = Ask("echo " + path + " " + RegisterJson(9));
  ::kill(service, SIGKILL);
  ::waitpid(service, nullptr, 0);

  auto reply = protocol::Decode<protocol::RegisterReply>(text);
  ASSERT_TRUE(reply) << text << daemon_->log();
  ASSERT_TRUE(reply->error) << "a job registered as uid " << reply->uid;
  EXPECT_NE(reply->error->message.find("not a connection accepted on"), std::string::npos)
      << reply->error->message;
  EXPECT_FALSE(fs::exists(daemon_->state() + "/specs/9.json"));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(fs::exists("/tmp/hpcb-echo-pwned")) << "a job ran as the service's user";
}

}  // namespace
}  // namespace hpcb::e2e
