// The error vocabulary, end to end: real dispatch against a real daemon in
// user mode. Each mistake must be said in words that name what was wrong,
// with exit status 2 for a mistake on the command line (with the usage of
// the subcommand it was made in) and 1 for a refusal by the daemon.
#include <grp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <regex>
#include <string>
#include <vector>

#include "tests/e2e/daemon_harness.h"

namespace hpcb::e2e {
namespace {

struct BadCall {
  std::vector<std::string> args;
  int exit_code;
  // stderr exactly, or, for a figure that depends on the machine, a
  // regular expression after "~".
  std::string err;
};

const std::string kTop =
    "usage: dispatch [-h] [--version] "
    "{new,list,attach,kill,job,output,wait,hold,release,info,drain,resume} ...\n";
const std::string kNew = "usage: dispatch new [options] [NAME=VALUE...] -- CMD [ARGS...]\n";
const std::string kDuration = " (use seconds or e.g. 45m, 2h, 1h30m, 1d)";
const std::string kAttach = "usage: dispatch attach (ID | --name NAME)\n";
const std::string kKill = "usage: dispatch kill (ID | --name NAME)\n";
const std::string kWait = "usage: dispatch wait (ID [ID...] | --name NAME) [--timeout DURATION]\n";
const std::string kBadName =
    "argument --name: a job name is 1 to 64 letters, digits and ._-+@:= (no spaces, '/' or ','), "
    "not starting with '-'";

std::string Usage(const std::string& usage, const std::string& error) {
  return usage + "dispatch: error: " + error + "\n";
}
std::string New(const std::string& error) {
  return Usage(kNew, error);
}
std::string Refused(const std::string& error) {
  return "dispatch: " + error + "\n";
}

const std::vector<BadCall>& Table() {
  static const std::vector<BadCall> kTable = {
      {{}, 2, Usage(kTop, "the following arguments are required: command")},
      {{"--bogus"}, 2, Usage(kTop, "the following arguments are required: command")},
      {{"lsit"},
       2,
       Usage(kTop,
             "argument command: invalid choice: 'lsit' (choose from 'new', 'list', 'attach', "
             "'kill', 'job', 'output', 'wait', 'hold', 'release', 'info', 'drain', 'resume')")},
      {{"new"}, 2, New("no command given after --")},
      {{"new", "--"}, 2, New("no command given after --")},
      {{"new", "--cpu", "0", "--", "true"}, 2, New("argument --cpu: must be 1 or more, not '0'")},
      {{"new", "--cpu", "-2", "--", "true"}, 2, New("argument --cpu: must be 1 or more, not '-2'")},
      {{"new", "--cpu", "x", "--", "true"}, 2, New("argument --cpu: invalid int value: 'x'")},
      {{"new", "--gpu-cores", "-1", "--", "true"},
       2,
       New("argument --gpu-cores: must be 0 or more, not '-1'")},
      {{"new", "--max-mem", "nan", "--", "true"},
       2,
       New("argument --max-mem: must be a positive number of GiB, not 'nan'")},
      {{"new", "--max-mem", "0", "--", "true"},
       2,
       New("argument --max-mem: must be a positive number of GiB, not '0'")},
      {{"new", "--max-mem", "1G", "--", "true"},
       2,
       New("argument --max-mem: invalid float value: '1G'")},
      {{"new", "--max-time", "0", "--", "true"},
       2,
       New("argument --max-time: must be longer than 0")},
      {{"new", "--max-time", "1.5h", "--", "true"},
       2,
       New("argument --max-time: invalid duration: '1.5h'" + kDuration)},
      {{"new", "--max-time", "", "--", "true"},
       2,
       New("argument --max-time: invalid duration: ''" + kDuration)},
      {{"new", "--gpu-link", "XX", "--", "true"},
       2,
       New("argument --gpu-link: invalid choice: 'XX' (choose from 'NV', 'PIX', 'PXB', 'PHB', "
           "'NODE')")},
      {{"new", "--output", "", "--", "true"},
       2,
       New("argument --output: expected a directory or a file, not ''")},
      {{"new", "--no-output", "--output", "/tmp", "--", "true"},
       2,
       New("--output and --no-output cannot be combined")},
      {{"new", "--after", "x", "--", "true"},
       2,
       New("argument --after: 'x' is not a job id (expected ID[,ID...])")},
      {{"new", "--after", "0", "--", "true"},
       2,
       New("argument --after: '0' is not a job id (expected ID[,ID...])")},
      {{"new", "--after", "1", "--after-any", "2", "--", "true"},
       2,
       New("--after and --after-any cannot be combined in one job")},
      {{"new", "--bogus", "--", "true"}, 2, New("unrecognized arguments: --bogus")},
      {{"new", "--output", "/dev/null", "--", "true"},
       1,
       Refused("cannot save output there: cannot write to /dev (/dev/null is not a regular "
               "file; --no-output discards the output)")},
      {{"new", "--output", "/nonexistent/dir/x.log", "--", "true"},
       1,
       Refused("cannot save output there: /nonexistent/dir: No such file or directory")},
      {{"new", "--after", "999", "--", "true"}, 1, Refused("--after: no such job 999")},
      {{"new", "--max-mem", "100000", "--", "true"},
       1,
       "~dispatch: --max-mem 100000 exceeds the [0-9]+(\\.[0-9]{1,2})? GiB available to jobs\n"},
      {{"new", "--cpu", "4096", "--", "true"},
       1,
       "~dispatch: --cpu 4096 exceeds the [0-9]+ (cores|cpus \\([0-9]+ cores\\)) available to "
       "jobs\n"},
      {{"list", "--bogus"},
       2,
       Usage("usage: dispatch list [--all] [--finished] [--json] [-l]\n",
             "unrecognized arguments: --bogus")},
      {{"list", "extra"},
       2,
       Usage("usage: dispatch list [--all] [--finished] [--json] [-l]\n",
             "unrecognized arguments: extra")},
      {{"attach"}, 2, Usage(kAttach, "the following arguments are required: ID")},
      {{"attach", "x"}, 2, Usage(kAttach, "argument ID: invalid job id: 'x'")},
      {{"attach", "999"}, 1, Refused("no such job 999")},
      {{"kill", "-1"}, 2, Usage(kKill, "argument ID: invalid job id: '-1'")},
      {{"kill", "0"}, 2, Usage(kKill, "argument ID: invalid job id: '0'")},
      {{"kill", "999"}, 1, Refused("no such job 999")},
      {{"kill", "3", "--name", "x"}, 2, Usage(kKill, "give job ids or --name, not both")},
      {{"kill", "--name", "a/b"}, 2, Usage(kKill, kBadName)},
      {{"kill", "--name", "nosuch"}, 1, Refused("no job of yours is named 'nosuch'")},
      {{"attach", "--name", ""}, 2, Usage(kAttach, kBadName)},
      {{"wait", "--name", "nosuch"}, 1, Refused("no job of yours is named 'nosuch'")},
      {{"new", "--name", "two words", "--", "true"}, 2, New(kBadName)},
      {{"new", "--name", std::string(65, 'n'), "--", "true"}, 2, New(kBadName)},
      {{"new", "--array", "5-1", "--", "true"},
       2,
       New("argument --array: '5-1' ends before it starts")},
      {{"new", "--array", "1-3%0", "--", "true"},
       2,
       New("argument --array: '%0': after % comes how many may run at once, 1 or more")},
      {{"new", "--array", "0-10000", "--", "true"},
       2,
       New("argument --array: more than 10000 elements, the most one array may have")},
      {{"new", "--array", "1-3", "--wait", "--", "true"},
       2,
       New("--wait and --array cannot be combined")},
      {{"kill", "999_2"}, 1, Refused("no such job 999_2")},
      {{"kill", "3_x"}, 2, Usage(kKill, "argument ID: invalid job id: '3_x'")},
      {{"hold"},
       2,
       Usage("usage: dispatch hold ID [ID...]\n", "the following arguments are required: ID")},
      {{"hold", "x"},
       2,
       Usage("usage: dispatch hold ID [ID...]\n", "argument ID: invalid job id: 'x'")},
      {{"hold", "999"}, 1, Refused("no such job 999")},
      {{"release", "999", "998"}, 1, Refused("no such job 999") + Refused("no such job 998")},
      {{"wait"}, 2, Usage(kWait, "the following arguments are required: ID")},
      {{"wait", "abc"}, 2, Usage(kWait, "argument ID: invalid job id: 'abc'")},
      {{"wait", "999"}, 1, Refused("no such job 999")},
      {{"wait", "1", "--timeout", "soon"},
       2,
       Usage(kWait, "argument --timeout: invalid duration: 'soon'" + kDuration)},
      {{"job", "999", "max-time", "get"}, 1, Refused("no such job 999")},
      {{"job", "1", "bogus", "get"},
       2,
       Usage("usage: dispatch job ID max-time get|set|add [DURATION] [--json]\n",
             "argument FIELD: invalid choice: 'bogus' (choose from 'max-time')")},
      {{"job", "1", "max-time", "frob"},
       2,
       Usage("usage: dispatch job ID max-time get|set|add [DURATION] [--json]\n",
             "argument ACTION: invalid choice: 'frob' (choose from 'get', 'set', 'add')")},
      {{"job", "1", "max-time", "set"},
       2,
       Usage("usage: dispatch job ID max-time get|set|add [DURATION] [--json]\n",
             "the following arguments are required: DURATION")},
      {{"output"},
       2,
       Usage("usage: dispatch output ID [--to DIR|FILE]\n",
             "the following arguments are required: ID")},
      {{"output", "x"},
       2,
       Usage("usage: dispatch output ID [--to DIR|FILE]\n", "argument ID: invalid job id: 'x'")},
      {{"output", "999"}, 1, Refused("no such job 999")},
      {{"info", "--bogus"},
       2,
       Usage("usage: dispatch info [--json]\n", "unrecognized arguments: --bogus")},
  };
  return kTable;
}

class ErrorTableTest : public ::testing::Test {
 protected:
  DaemonHarness daemon_;
};

TEST_F(ErrorTableTest, EveryMistakeIsNamedWithItsExitStatus) {
  ASSERT_TRUE(daemon_.Start()) << daemon_.log();
  ASSERT_GE(Table().size(), 40u);
  for (const BadCall& call : Table()) {
    std::string shown = "dispatch";
    for (const std::string& arg : call.args)
      shown += " '" + arg + "'";
    SCOPED_TRACE(shown);
    CommandResult result = daemon_.Dispatch(call.args);
    EXPECT_EQ(result.exit_code, call.exit_code) << result.err;
    EXPECT_EQ(result.out, "");
    if (call.err.starts_with("~")) {
      EXPECT_TRUE(std::regex_match(result.err, std::regex(call.err.substr(1)))) << result.err;
    } else {
      EXPECT_EQ(result.err, call.err);
    }
  }
  const std::string listed = daemon_.Dispatch({"list", "--finished", "--json"}).out;
  EXPECT_NE(listed.find("\"jobs\":[]"), std::string::npos) << "a refused call submitted a job";
}

// Delivery opens the folder for reading: one its owner may write into but
// not read (0311) is refused at submission, not after the job ran.
TEST_F(ErrorTableTest, AFolderItsOwnerCannotReadIsRefusedAtSubmission) {
  ASSERT_TRUE(daemon_.Start()) << daemon_.log();
  const std::string locked = daemon_.work() + "/locked";
  ASSERT_EQ(::mkdir(locked.c_str(), 0700), 0);
  ASSERT_EQ(::chown(locked.c_str(), daemon_.client_uid(), daemon_.client_gid()), 0);
  ASSERT_EQ(::chmod(locked.c_str(), 0311), 0);
  CommandResult refused = daemon_.Dispatch({"new", "--output", locked, "--", "true"});
  EXPECT_EQ(refused.exit_code, 1) << refused.err;
  EXPECT_EQ(refused.err, "dispatch: cannot save output there: cannot read " + locked + "\n");
}

// A daemon refused for its --admin-group names the default groups that do
// exist, sorted, in user mode as as root.
TEST_F(ErrorTableTest, AMissingAdminGroupIsRefusedWithTheGroupsThatExistSorted) {
  std::vector<std::string> existing;
  for (const char* group : {"wheel", "sudo", "adm", "staff"}) {
    if (::getgrnam(group) != nullptr) existing.emplace_back(group);
  }
  std::sort(existing.begin(), existing.end());
  std::string want = "--admin-group 'hpcb-no-such-group' does not exist on this system";
  for (std::size_t i = 0; i < existing.size(); ++i)
    want += (i == 0 ? "; try one of: " : ", ") + existing[i];
  (void)daemon_.StartNoProbe({"--admin-group", "hpcb-no-such-group"});
  EXPECT_EQ(daemon_.WaitForExit(std::chrono::seconds(20)), 78) << daemon_.log();
  EXPECT_NE(daemon_.log().find(want + "\n"), std::string::npos) << want << "\n" << daemon_.log();
}

// Said, though the call succeeds: a --max-time cut to the daemon's
// --max-lifetime, and a submission to a drained machine.
TEST_F(ErrorTableTest, WhatTheDaemonChangedIsSaidOnStderr) {
  // The client's own primary group as --admin-group: it may drain.
  struct group* admins = ::getgrgid(daemon_.client_gid());
  ASSERT_NE(admins, nullptr);
  ASSERT_TRUE(daemon_.Start({"--max-lifetime", "1h", "--admin-group", admins->gr_name}))
      << daemon_.log();
  CommandResult cut =
      daemon_.Dispatch({"new", "--max-time", "99999d", "--max-mem", "0.25", "--", "true"});
  EXPECT_EQ(cut.exit_code, 0) << cut.err;
  EXPECT_EQ(cut.err,
            "dispatch: --max-time cut to 1h, the longest this daemon allows (its "
            "--max-lifetime)\n");
  ASSERT_EQ(daemon_.Dispatch({"drain"}).exit_code, 0);
  CommandResult drained = daemon_.Dispatch({"new", "--max-mem", "0.25", "--", "true"});
  EXPECT_EQ(drained.exit_code, 0) << drained.err;
  EXPECT_EQ(
      drained.err,
      "dispatch: the machine is drained: job 2 waits until an admin runs 'dispatch resume'\n");
}

}  // namespace
}  // namespace hpcb::e2e
