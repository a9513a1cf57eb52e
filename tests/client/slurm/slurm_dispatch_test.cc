// The real `dispatch` command line against stand-ins for Slurm's commands:
// each is a small script in a scratch directory (HPC_BATCH_SLURM_BIN) that
// logs its arguments and standard input and prints what the test set up.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "client/dispatch.h"
#include "client/slurm/slurm_mapping.h"
#include "protocol/client_messages.h"
#include "protocol/codec.h"

namespace hpcb::client {
namespace {

using Words = std::vector<std::string>;

struct SlurmOutcome {
  int code;
  std::string out;
  std::string err;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void WriteFile(const std::string& path, const std::string& text, mode_t mode = 0644) {
  std::ofstream(path, std::ios::binary) << text;
  ::chmod(path.c_str(), mode);
}

class SlurmDispatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir_template[] = "/tmp/hpcb-slurm-test-XXXXXX";
    dir_ = ::mkdtemp(dir_template);
    for (const char* name : {"HPC_BATCH_BACKEND", "HPC_BATCH_SLURM_BIN", "HPC_BATCH_CLIENT_CONFIG",
                             "HPC_BATCH_SOCKET"}) {
      const char* value = std::getenv(name);
      saved_.emplace_back(name, value ? std::optional<std::string>(value) : std::nullopt);
    }
    WriteFile(dir_ + "/client.conf", "backend = slurm\nslurm_bin = " + dir_ + "\n");
    ::setenv("HPC_BATCH_CLIENT_CONFIG", (dir_ + "/client.conf").c_str(), 1);
    ::unsetenv("HPC_BATCH_BACKEND");
    ::unsetenv("HPC_BATCH_SLURM_BIN");
    // Each tool logs one line of arguments per call (NUL-free, joined by
    // '|'), keeps its stdin, then prints TOOL.out and TOOL.err and exits
    // with TOOL.rc; `scontrol show job ID` prints show.ID.out if there is
    // one, else show.out.
    for (const char* tool : {"sbatch", "squeue", "sacct", "scancel", "scontrol"}) {
      const std::string base = dir_ + "/" + tool;
      WriteFile(base,
                "#!/bin/sh\n"
                "d=$(dirname \"$0\"); t=$(basename \"$0\")\n"
                "(IFS='|'; printf '%s\\n' \"$*\") >> \"$d/$t.args\"\n"
                "cat > \"$d/$t.stdin\"\n"
                "out=\"$d/$t.out\"; [ \"$t $1\" = 'scontrol show' ] && "
                "out=\"$d/show.out\"\n"
                "[ \"$t $1\" = 'scontrol show' ] && [ -f \"$d/show.$3.out\" ] && "
                "out=\"$d/show.$3.out\"\n"
                "[ -f \"$out\" ] && cat \"$out\"\n"
                "[ -f \"$d/$t.err\" ] && cat \"$d/$t.err\" >&2\n"
                "[ -f \"$d/$t.rc\" ] && exit \"$(cat \"$d/$t.rc\")\"\n"
                "exit 0\n",
                0755);
    }
  }

  void TearDown() override {
    for (const auto& [name, value] : saved_) {
      if (value) {
        ::setenv(name.c_str(), value->c_str(), 1);
      } else {
        ::unsetenv(name.c_str());
      }
    }
    std::string command = "rm -rf '" + dir_ + "'";
    EXPECT_EQ(std::system(command.c_str()), 0);
  }

  SlurmOutcome Dispatch(const Words& args) {
    std::ostringstream out;
    std::ostringstream err;
    int code = RunDispatch(args, Io{out, err, false});
    return {code, out.str(), err.str()};
  }

  // The logged argument lines of one tool.
  Words Calls(const std::string& tool) {
    Words lines;
    std::istringstream in(ReadFile(dir_ + "/" + tool + ".args"));
    for (std::string line; std::getline(in, line);)
      lines.push_back(line);
    return lines;
  }

  void Say(const std::string& file, const std::string& text) { WriteFile(dir_ + "/" + file, text); }

  // Job 5 as Slurm 22.05's `scontrol show job 5` prints it, fields in its
  // order: `nodes` is "(null)" until the job gets a node.
  std::string Record(const std::string& state, const std::string& exit = "0:0",
                     const std::string& nodes = "node1", const std::string& reason = "None",
                     const std::string& dependency = "(null)") {
    const std::string out = dir_ + "/output.5.log";
    const bool ran = nodes != "(null)";
    // Trap, as in Slurm: cancelling a queued job sets its StartTime.
    const bool queued = state == "PENDING";
    return "JobId=5 JobName=sleep 60\n"
           "   UserId=alice(1000) GroupId=alice(1000) MCS_label=N/A\n"
           "   Priority=4294901757 Nice=0 Account=(null) QOS=(null)\n"
           "   JobState=" +
           state + " Reason=" + reason + " Dependency=" + dependency +
           "\n"
           "   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=" +
           exit +
           "\n"
           "   RunTime=00:00:01 TimeLimit=00:05:00 TimeMin=N/A\n"
           "   SubmitTime=2024-05-01T10:00:00 EligibleTime=2024-05-01T10:00:00\n"
           "   AccrueTime=2024-05-01T10:00:00\n"
           "   StartTime=" +
           std::string(queued ? "Unknown" : "2024-05-01T10:00:00") +
           " EndTime=" + (queued ? "Unknown" : "2024-05-01T10:00:01") +
           " Deadline=N/A\n"
           "   SuspendTime=None SecsPreSuspend=0 LastSchedEval=2024-05-01T10:00:00 "
           "Scheduler=Main\n"
           "   Partition=debug AllocNode:Sid=login1:4242\n"
           "   ReqNodeList=(null) ExcNodeList=(null)\n"
           "   NodeList=" +
           nodes + "\n" + (ran ? "   BatchHost=" + nodes + "\n" : "") +
           "   NumNodes=1 NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:*\n"
           "   TRES=cpu=1,mem=100M,node=1,billing=1\n"
           "   Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=*\n"
           "   MinCPUsNode=1 MinMemoryNode=100M MinTmpDiskNode=0\n"
           "   Features=(null) DelayBoot=00:00:00\n"
           "   OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null)\n"
           "   Command=(null)\n"
           "   WorkDir=" +
           dir_ + "\n   StdErr=" + out + "\n   StdIn=/dev/null\n   StdOut=" + out +
           "\n   Power=\n\n";
  }

  // scontrol whose `show job` prints show.N.out on its Nth call (the last
  // one once they run out) after running show.N.sh if there is one; with
  // a show.N.err, it prints that to stderr and fails instead.
  void ScriptShowJob() {
    WriteFile(
        dir_ + "/scontrol",
        "#!/bin/sh\n"
        "d=$(dirname \"$0\")\n"
        "(IFS='|'; printf '%s\\n' \"$*\") >> \"$d/scontrol.args\"\n"
        "n=$(grep -c '^show|job' \"$d/scontrol.args\")\n"
        "[ -f \"$d/show.$n.sh\" ] && sh \"$d/show.$n.sh\"\n"
        "while [ \"$n\" -gt 1 ] && [ ! -f \"$d/show.$n.out\" ] && [ ! -f \"$d/show.$n.err\" ]; do\n"
        "  n=$((n - 1))\n"
        "done\n"
        "[ -f \"$d/show.$n.err\" ] && cat \"$d/show.$n.err\" >&2 && exit 1\n"
        "cat \"$d/show.$n.out\"\n",
        0755);
  }

  std::string dir_;
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

TEST_F(SlurmDispatchTest, NewBuildsTheSbatchCallFromTheCommandLine) {
  Say("sbatch.out", "812\n");
  Say("sbatch.err", "sbatch: warning: a site warning\n");
  char cwd[4096];
  ASSERT_NE(::getcwd(cwd, sizeof cwd), nullptr);
  SlurmOutcome run = Dispatch({"new", "--cpu", "4", "--max-mem", "16", "--max-time", "2h",
                               "--numa-local-mem", "--exclusive", "--output", dir_, "--",
                               "OMP_NUM_THREADS=4", "./bench.sh", "--iterations", "10"});
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.out,
            "job 812 submitted to Slurm (4 cpu, max time 2h, memory 16G, exclusive)\n"
            "output will be saved to " +
                dir_ + "/output.812.log\n");
  EXPECT_EQ(run.err, "sbatch: warning: a site warning\n");
  ASSERT_EQ(Calls("sbatch").size(), 1u);
  EXPECT_EQ(Calls("sbatch")[0],
            "--parsable|--job-name=./bench.sh --iterations 10|--chdir=" + std::string(cwd) +
                "|--nodes=1|--ntasks=1|--cpus-per-task=4|--mem=16384M|--mem-"
                "bind=local|"
                "--time=120|--exclusive|--output=" +
                dir_ + "/output.%j.log|--export=NONE");
  std::string script = ReadFile(dir_ + "/sbatch.stdin");
  EXPECT_NE(script.find("\n  OMP_NUM_THREADS=4 \\\n"), std::string::npos) << script;
  EXPECT_NE(script.find(" ./bench.sh --iterations 10\n"), std::string::npos) << script;
}

TEST_F(SlurmDispatchTest, NewDefaultsToOutputInTheSubmitDirectory) {
  Say("sbatch.out", "9;cluster\n");
  char cwd[4096];
  ASSERT_NE(::getcwd(cwd, sizeof cwd), nullptr);
  SlurmOutcome run = Dispatch({"new", "--max-time", "30s", "--", "true"});
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.out,
            "job 9 submitted to Slurm (1 cpu, max time 1m, Slurm's default memory)\n"
            "output will be saved to " +
                std::string(cwd) + "/output.9.log\n");
  EXPECT_EQ(run.err,
            "dispatch: note: Slurm counts time limits in whole "
            "minutes: --max-time 30s "
            "becomes 1m\n");
  EXPECT_NE(Calls("sbatch")[0].find("|--output=" + std::string(cwd) + "/output.%j.log|"),
            std::string::npos);
}

TEST_F(SlurmDispatchTest, NoOutputAndEnv) {
  Say("sbatch.out", "10\n");
  SlurmOutcome run = Dispatch({"new", "--no-output", "--env", "--", "true"});
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.out,
            "job 10 submitted to Slurm (1 cpu, the partition's default time limit, "
            "Slurm's default memory)\n");
  std::string call = Calls("sbatch")[0];
  EXPECT_NE(call.find("|--output=/dev/null|--export=ALL"), std::string::npos) << call;
}

TEST_F(SlurmDispatchTest, UnmappableOptionsAreRefusedBeforeSbatchRuns) {
  SlurmOutcome run = Dispatch({"new", "--gpu-cores", "2", "--gpu-link", "nv", "--", "./train"});
  EXPECT_EQ(run.code, 1);
  EXPECT_EQ(run.out, "");
  EXPECT_EQ(run.err.rfind("dispatch: --gpu-link cannot be mapped to Slurm: ", 0), 0u) << run.err;
  EXPECT_TRUE(Calls("sbatch").empty());

  run = Dispatch({"new", "--output", "/nonexistent-dir/x/out.log", "--", "true"});
  EXPECT_EQ(run.code, 1);
  EXPECT_EQ(run.err,
            "dispatch: cannot save output there: /nonexistent-dir/x: "
            "No such file or directory\n");
  EXPECT_TRUE(Calls("sbatch").empty());

  run = Dispatch({"new", "--max-time", "0", "--", "true"});
  EXPECT_EQ(run.code, 2);
  EXPECT_EQ(run.err,
            "usage: dispatch new [options] [NAME=VALUE...] -- CMD [ARGS...]\n"
            "dispatch: error: argument --max-time: must be longer than 0\n");
  EXPECT_TRUE(Calls("sbatch").empty());
}

TEST_F(SlurmDispatchTest, WhatSbatchRefusesIsReported) {
  Say("sbatch.err", "sbatch: error: Batch job submission failed: Invalid generic resource\n");
  Say("sbatch.rc", "1");
  SlurmOutcome run = Dispatch({"new", "--gpu-cores", "1", "--", "true"});
  EXPECT_EQ(run.code, 1);
  EXPECT_EQ(run.err,
            "dispatch: Slurm refused the job: sbatch: error: Batch job submission "
            "failed: Invalid generic resource\n");
}

TEST_F(SlurmDispatchTest, AMissingSlurmIsExplained) {
  ::setenv("HPC_BATCH_SLURM_BIN", "/nonexistent-slurm/bin", 1);
  SlurmOutcome run = Dispatch({"list"});
  EXPECT_EQ(run.code, 1);
  EXPECT_NE(run.err.find("cannot run /nonexistent-slurm/bin/squeue"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("HPC_BATCH_SLURM_BIN"), std::string::npos) << run.err;
}

TEST_F(SlurmDispatchTest, ListAsksSqueueForTheCallersJobs) {
  const char sep = slurm::kFieldSeparator;
  std::string row = std::string("5") + sep + "alice" + sep + "PENDING" + sep + "Priority" + sep +
                    "N/A" + sep + "0:00" + sep + "1:00:00" + sep + "2" + sep + "4G" + sep + "N/A" +
                    sep + "OK" + sep + "0" + sep + "/home/alice/output.%j.log" + sep + "(null)" +
                    sep + "./bench.sh\n";
  Say("squeue.out", row);
  SlurmOutcome run = Dispatch({"list"});
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.out,
            "USER   ID  COMMAND     START  UPTIME             MAX-TIME  MEM  "
            "EXCLUSIVE\n"
            "alice  5   ./bench.sh  -      queued (Priority)  1h        4G   no\n");
  Words calls = Calls("squeue");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].rfind("--noheader|--Format=JobArrayID:0", 0), 0u) << calls[0];
  EXPECT_NE(calls[0].find("|--user="), std::string::npos) << calls[0];

  run = Dispatch({"list", "--all", "--json"});
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(Calls("squeue")[1].find("--user="), std::string::npos);
  auto reply = protocol::Decode<protocol::ListReply>(run.out);
  ASSERT_TRUE(reply) << run.out;
  ASSERT_EQ(reply->jobs.size(), 1u);
  EXPECT_EQ(reply->jobs[0].id, 5u);
  EXPECT_EQ(reply->jobs[0].state, protocol::JobState::kQueued);
  EXPECT_EQ(reply->jobs[0].max_mem_gb, 4.0);
  EXPECT_EQ(reply->jobs[0].output_dest, "/home/alice/output.5.log");
  EXPECT_EQ(run.out.rfind("{\"ok\":true,\"jobs\":[{\"user\":\"alice\",\"id\":5,", 0), 0u);
}

TEST_F(SlurmDispatchTest, FinishedJobsNeedAccounting) {
  Say("sacct.err", "Slurm accounting storage is disabled\n");
  Say("sacct.rc", "1");
  SlurmOutcome run = Dispatch({"list", "--finished"});
  EXPECT_EQ(run.code, 1);
  EXPECT_EQ(run.out, "");
  EXPECT_NE(run.err.find("finished jobs come from Slurm's job accounting, which this cluster "
                         "does not keep"),
            std::string::npos)
      << run.err;
}

TEST_F(SlurmDispatchTest, FinishedJobsComeFromSacct) {
  auto record = [](const Words& fields) {
    std::string line;
    for (const std::string& f : fields) {
      line += (line.empty() ? "" : std::string(1, slurm::kFieldSeparator)) + f;
    }
    return line + "\n";
  };
  Say("sacct.out",
      record({"3", "alice", "COMPLETED", "2024-05-01T10:00:00", "00:00:05", "00:02:00", "1", "1G",
              "cpu=1", "0:0", "node1", "None", "", "echo hi"}) +
          record({"4", "alice", "RUNNING", "2024-05-01T10:00:00", "00:00:05", "00:02:00", "1", "1G",
                  "cpu=1", "0:0", "node1", "None", "", "sleep 9"}) +
          record({"6", "alice", "FAILED", "2024-05-01T10:00:00", "00:00:05", "00:02:00", "1", "1G",
                  "cpu=1", "2:0", "node1", "None", "", "false"}));
  SlurmOutcome run = Dispatch({"list", "--finished", "--json"});
  EXPECT_EQ(run.code, 0) << run.err;
  auto reply = protocol::Decode<protocol::ListReply>(run.out);
  ASSERT_TRUE(reply) << run.out;
  ASSERT_EQ(reply->jobs.size(), 2u);  // the running one is squeue's to report
  EXPECT_EQ(reply->jobs[0].id, 3u);
  EXPECT_EQ(reply->jobs[0].exit_code, 0);
  EXPECT_EQ(reply->jobs[1].id, 6u);
  EXPECT_EQ(reply->jobs[1].exit_code, 2);
  std::string call = Calls("sacct")[0];
  EXPECT_NE(call.find("--allocations"), std::string::npos) << call;
  EXPECT_NE(call.find("--starttime=now-7days"), std::string::npos) << call;
}

TEST_F(SlurmDispatchTest, KillCancelsAndSaysWhatHappened) {
  Say("show.out", Record("PENDING", "0:0", "(null)", "Priority"));
  SlurmOutcome run = Dispatch({"kill", "5"});
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.out, "job 5 removed from the queue\n");
  EXPECT_EQ(Calls("scancel"), (Words{"5"}));

  Say("show.out", Record("RUNNING"));
  run = Dispatch({"kill", "5"});
  EXPECT_EQ(run.out, "job 5: kill signal sent\n");

  // scancel reports a refusal on stderr and may still exit 0.
  Say("scancel.err", "scancel: error: Kill job error on job id 5: Access/permission denied\n");
  run = Dispatch({"kill", "5"});
  EXPECT_EQ(run.code, 1);
  EXPECT_EQ(run.err,
            "dispatch: Slurm refused to cancel job 5: scancel: error: Kill job error "
            "on job id 5: Access/permission denied\n");

  Say("show.out", Record("COMPLETED"));
  run = Dispatch({"kill", "5"});
  EXPECT_EQ(run.code, 1);
  EXPECT_EQ(run.err, "dispatch: job 5 already finished\n");
  EXPECT_EQ(Calls("scancel").size(), 3u);
}

// kill --name: squeue finds the caller's jobs of that name (finished ones
// too, while slurmctld remembers them), then each is cancelled as by id.
TEST_F(SlurmDispatchTest, KillByNameAsksSqueueForTheCallersJobsOfThatName) {
  constexpr char sep = slurm::kFieldSeparator;
  auto row = [](const char* id, const char* state, const char* name) {
    return std::string(id) + sep + "alice" + sep + state + sep + "None" + sep + "N/A" + sep +
           "0:00" + sep + "1:00:00" + sep + "1" + sep + "1G" + sep + "N/A" + sep + "OK" + sep +
           "0" + sep + "/dev/null" + sep + "dispatch command: sleep 60" + sep + name + "\n";
  };
  Say("squeue.out", row("5", "RUNNING", "train") + row("6", "COMPLETED", "train"));
  Say("show.out", Record("RUNNING"));
  SlurmOutcome run = Dispatch({"kill", "--name", "train"});
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.out, "job 5: kill signal sent\n");
  EXPECT_EQ(Calls("scancel"), (Words{"5"}));
  ASSERT_EQ(Calls("squeue").size(), 1u);
  EXPECT_NE(Calls("squeue")[0].find("|--user="), std::string::npos) << Calls("squeue")[0];
  EXPECT_NE(Calls("squeue")[0].find("|--name=train|--states=all"), std::string::npos)
      << Calls("squeue")[0];

  Say("squeue.out", "");
  run = Dispatch({"kill", "--name", "train"});
  EXPECT_EQ(run.code, 1);
  EXPECT_EQ(run.err, "dispatch: no job of yours is named 'train'\n");
}

TEST_F(SlurmDispatchTest, UnknownJobs) {
  Say("scontrol.err", "slurm_load_jobs error: Invalid job id specified\n");
  Say("scontrol.rc", "1");
  SlurmOutcome run = Dispatch({"kill", "77"});
  EXPECT_EQ(run.code, 1);
  EXPECT_EQ(run.err.rfind("dispatch: no such job 77 (", 0), 0u) << run.err;
  EXPECT_TRUE(Calls("scancel").empty());
}

TEST_F(SlurmDispatchTest, MaxTimeGetSetAdd) {
  Say("show.out", Record("RUNNING"));
  SlurmOutcome run = Dispatch({"job", "5", "max-time", "get"});
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.out, "job 5 max-time 5m\n");

  run = Dispatch({"job", "5", "max-time", "add", "1h"});
  EXPECT_EQ(run.code, 0) << run.err;
  run = Dispatch({"job", "5", "max-time", "set", "90s"});
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.err,
            "dispatch: note: Slurm counts time limits in whole minutes: 1m30s "
            "becomes 2m\n");
  Words calls = Calls("scontrol");
  ASSERT_EQ(calls.size(), 7u);  // show; show, update, show; show, update, show
  EXPECT_EQ(calls[2], "update|JobId=5|TimeLimit=+60");
  EXPECT_EQ(calls[5], "update|JobId=5|TimeLimit=2");
}

TEST_F(SlurmDispatchTest, MaxTimeRefusalsAreSlurms) {
  // `scontrol show` succeeds, `scontrol update` is refused.
  WriteFile(dir_ + "/scontrol",
            "#!/bin/sh\n"
            "d=$(dirname \"$0\")\n"
            "if [ \"$1\" = show ]; then cat \"$d/show.out\"; exit 0; fi\n"
            "echo 'Access/permission denied for job 5' >&2; exit 1\n",
            0755);
  Say("show.out", Record("RUNNING"));
  SlurmOutcome run = Dispatch({"job", "5", "max-time", "add", "1h"});
  EXPECT_EQ(run.code, 1);
  EXPECT_EQ(run.err.rfind("dispatch: Slurm refused to change job 5's time limit: "
                          "Access/permission denied for job 5",
                          0),
            0u)
      << run.err;
}

TEST_F(SlurmDispatchTest, WaitSaysHowTheJobEndedAsTheLocalBackendDoes) {
  Say("show.out", Record("FAILED", "3:0"));
  SlurmOutcome run = Dispatch({"wait", "5"});
  EXPECT_EQ(run.code, 3) << run.err;
  EXPECT_EQ(run.out, "");
  EXPECT_EQ(run.err, "job 5 finished: exit 3\n");

  Say("show.out", Record("CANCELLED by 0", "0:15"));
  run = Dispatch({"wait", "5"});
  EXPECT_EQ(run.code, 1);
  EXPECT_EQ(run.err, "job 5 finished: killed\n");

  // Cancelled before it got a node: StartTime is set, NodeList is not.
  Say("show.out", Record("CANCELLED by 1000", "0:0", "(null)"));
  run = Dispatch({"wait", "5"});
  EXPECT_EQ(run.code, 1);
  EXPECT_EQ(run.err, "job 5 did not run: killed while queued\n");

  Say("show.out", Record("COMPLETED"));
  run = Dispatch({"wait", "5", "5"});
  EXPECT_EQ(run.code, 0);
  EXPECT_EQ(run.err, "job 5 finished: exit 0\n");
}

// One poll is one request to slurmctld, whatever the number of jobs: the
// jobs it shows that are not waited for are passed over.
TEST_F(SlurmDispatchTest, WaitForSeveralJobsFailsIfAnyFailed) {
  std::string six = Record("FAILED", "2:0");
  six.replace(six.find("JobId=5"), 7, "JobId=6");
  std::string four = Record("RUNNING");
  four.replace(four.find("JobId=5"), 7, "JobId=4");
  Say("show.out", four + Record("COMPLETED") + six);
  SlurmOutcome run = Dispatch({"wait", "5", "6"});
  EXPECT_EQ(run.code, 1);
  EXPECT_EQ(run.err, "job 5 finished: exit 0\njob 6 finished: exit 2\n");
  EXPECT_EQ(Calls("scontrol"), (Words{"show|job"}));
  EXPECT_TRUE(Calls("sacct").empty());
}

// Cancelled while queued, then forgotten by slurmctld: sacct's Start is
// the cancel's time, and only its NodeList says it never ran.
TEST_F(SlurmDispatchTest, ASacctJobCancelledWhileQueuedDidNotRun) {
  Say("scontrol.err", "slurm_load_jobs error: Invalid job id specified\n");
  Say("scontrol.rc", "1");
  Say("sacct.out", std::string("6\x1f"
                               "alice\x1f"
                               "CANCELLED by 1000\x1f"
                               "2024-05-01T10:03:00\x1f"
                               "00:00:00\x1f"
                               "00:05:00\x1f"
                               "0\x1f"
                               "100M\x1f"
                               "\x1f"
                               "0:0\x1f"
                               "None assigned\x1f"
                               "None\x1f"
                               "\x1f"
                               "sleep 60\n"));
  SlurmOutcome run = Dispatch({"wait", "6"});
  EXPECT_EQ(run.code, 1);
  EXPECT_EQ(run.err, "job 6 did not run: killed while queued\n");
}

// A job slurmctld has forgotten is looked up in sacct, alone.
TEST_F(SlurmDispatchTest, WaitAsksSacctOnlyForJobsSlurmctldForgot) {
  Say("show.out", Record("COMPLETED"));
  Say("sacct.out",
      "6\x1f"
      "alice\x1f"
      "COMPLETED\x1f"
      "2024-05-01T10:00:00\x1f"
      "00:00:01\x1f"
      "00:05:00\x1f"
      "1\x1f"
      "100M\x1f"
      "cpu=1\x1f"
      "0:0\x1f"
      "node1\x1f"
      "None\x1f"
      "\x1f"
      "true\n");
  SlurmOutcome run = Dispatch({"wait", "5", "6"});
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(Calls("scontrol"), (Words{"show|job"}));
  ASSERT_EQ(Calls("sacct").size(), 1u);
  EXPECT_NE(Calls("sacct")[0].find("--jobs=6"), std::string::npos) << Calls("sacct")[0];
}

TEST_F(SlurmDispatchTest, WaitTimeoutGivesUpWith124) {
  Say("show.out", Record("RUNNING"));
  SlurmOutcome run = Dispatch({"wait", "--timeout", "1s", "5"});
  EXPECT_EQ(run.code, 124);
  EXPECT_EQ(run.err, "dispatch: --timeout reached; still unfinished: job 5\n");
}

constexpr const char* kControllerDown =
    "slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n";

// slurmctld restarting: the wait keeps asking, as it does for the local
// daemon.
TEST_F(SlurmDispatchTest, WaitRidesOutAControllerRestart) {
  ScriptShowJob();
  Say("show.1.err", kControllerDown);
  Say("show.2.out", Record("COMPLETED"));
  SlurmOutcome run = Dispatch({"wait", "5"});
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.err, "job 5 finished: exit 0\n");
}

TEST_F(SlurmDispatchTest, WaitTimeoutWithTheControllerDownGivesUpWith124) {
  ScriptShowJob();
  Say("show.1.err", kControllerDown);
  SlurmOutcome run = Dispatch({"wait", "--timeout", "1s", "5"});
  EXPECT_EQ(run.code, 124) << run.err;
  EXPECT_EQ(run.err, "dispatch: --timeout reached; still unfinished: job 5\n");
}

TEST_F(SlurmDispatchTest, AJobWhoseDependencyFailedDidNotRun) {
  Say("show.out",
      Record("CANCELLED", "0:0", "(null)", "DependencyNeverSatisfied", "afterok:4(failed)"));
  SlurmOutcome run = Dispatch({"wait", "5"});
  EXPECT_EQ(run.code, 1);
  EXPECT_EQ(run.err,
            "job 5 did not run: its dependency afterok:4(failed) can "
            "never be met, so it did not "
            "run\n");
}

TEST_F(SlurmDispatchTest, NewWaitStreamsTheOutputThenExitsAsWaitDoes) {
  Say("sbatch.out", "5\n");
  Say("show.out", Record("FAILED", "4:0"));
  Say("output.5.log", "hello\n");
  SlurmOutcome run = Dispatch({"new", "--wait", "--output", dir_, "--", "true"});
  EXPECT_EQ(run.code, 4) << run.err;
  EXPECT_EQ(run.out, "hello\n");
  EXPECT_EQ(run.err,
            "job 5 submitted to Slurm (1 cpu, the partition's default "
            "time limit, Slurm's "
            "default memory)\n"
            "output will be saved to " +
                dir_ + "/output.5.log\njob 5 finished: exit 4\n");

  // --no-output: nothing to follow, only the wait.
  Say("show.out", Record("CANCELLED", "0:0", "(null)"));
  run = Dispatch({"new", "--wait", "--no-output", "--", "true"});
  EXPECT_EQ(run.code, 1);
  EXPECT_EQ(run.out, "");
  EXPECT_NE(run.err.find("\njob 5 did not run: killed while queued\n"), std::string::npos)
      << run.err;
}

TEST_F(SlurmDispatchTest, AfterBecomesASlurmDependency) {
  Say("sbatch.out", "7\n");
  SlurmOutcome run = Dispatch({"new", "--no-output", "--after", "4,6", "--", "./next"});
  EXPECT_EQ(run.code, 0) << run.err;
  run = Dispatch({"new", "--no-output", "--after-any", "4", "--", "./next"});
  EXPECT_EQ(run.code, 0) << run.err;
  Words calls = Calls("sbatch");
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_NE(calls[0].find("|--dependency=afterok:4:6|--kill-on-invalid-dep=yes|"),
            std::string::npos)
      << calls[0];
  EXPECT_NE(calls[1].find("|--dependency=afterany:4|--output"), std::string::npos) << calls[1];
}

// An array's element ARRAY_INDEX is Slurm's own name for it: it goes to
// scontrol, scancel and sbatch --dependency as it is, never looked up.
TEST_F(SlurmDispatchTest, ElementIdsGoToSlurmAsTheyAre) {
  Say("show.out", Record("PENDING", "0:0", "(null)", "Priority"));
  SlurmOutcome run = Dispatch({"kill", "12_3"});
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.out, "job 12_3 removed from the queue\n");
  EXPECT_EQ(Calls("scancel"), (Words{"12_3"}));
  run = Dispatch({"hold", "12_4"});
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.out, "job 12_4 held\n");
  EXPECT_EQ(Calls("scontrol"), (Words{"show|job|12_3", "show|job|12_4", "hold|12_4"}));

  Say("sbatch.out", "20\n");
  run = Dispatch({"new", "--no-output", "--after", "12_3,4", "--", "./next"});
  EXPECT_EQ(run.code, 0) << run.err;
  ASSERT_EQ(Calls("sbatch").size(), 1u);
  EXPECT_NE(Calls("sbatch")[0].find("|--dependency=afterok:12_3:4|"), std::string::npos)
      << Calls("sbatch")[0];

  // wait polls an element by its name: pending, it has no id of its own.
  Say("show.out", Record("COMPLETED", "0:0"));
  run = Dispatch({"wait", "12_3", "12_3"});
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.err, "job 12_3 finished: exit 0\n");
  EXPECT_EQ(Calls("scontrol").back(), "show|job|12_3");

  // An element slurmctld does not hold is "not found", said on stdout.
  Say("show.out", "Job 12_9 not found\n");
  Say("scontrol.rc", "1");
  run = Dispatch({"kill", "12_9"});
  EXPECT_EQ(run.code, 1);
  EXPECT_EQ(run.err.rfind("dispatch: no such job 12_9 (Slurm does not know it", 0), 0u) << run.err;
}

TEST_F(SlurmDispatchTest, APercentInTheOutputFolderIsShownAsItIs) {
  const std::string folder = dir_ + "/100%job";
  ASSERT_EQ(::mkdir(folder.c_str(), 0755), 0);
  Say("sbatch.out", "9\n");
  SlurmOutcome run = Dispatch({"new", "--output", folder, "--", "true"});
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.out.find("\noutput will be saved to " + folder + "/output.9.log\n"),
            std::string::npos)
      << run.out;
  EXPECT_NE(Calls("sbatch")[0].find("|--output=" + dir_ + "/100%%job/output.%j.log|"),
            std::string::npos);
}

TEST_F(SlurmDispatchTest, SlurmsMessagesKeepTheirLineBreaks) {
  Say("sbatch.err", "sbatch: error: first\nsbatch: error: second\n");
  Say("sbatch.rc", "1");
  SlurmOutcome run = Dispatch({"new", "--", "true"});
  EXPECT_EQ(run.code, 1);
  EXPECT_EQ(run.err,
            "dispatch: Slurm refused the job: sbatch: error: "
            "first\nsbatch: error: second\n");
}

TEST_F(SlurmDispatchTest, AnUnknownJobIsWordedAsKillWordsIt) {
  Say("scontrol.err", "slurm_load_jobs error: Invalid job id specified\n");
  Say("scontrol.rc", "1");
  Say("sacct.err", "Slurm accounting storage is disabled\n");
  Say("sacct.rc", "1");
  SlurmOutcome killed = Dispatch({"kill", "77"});
  SlurmOutcome waited = Dispatch({"wait", "77"});
  EXPECT_EQ(waited.code, 1);
  EXPECT_EQ(waited.err, killed.err);
  EXPECT_EQ(waited.err.rfind("dispatch: no such job 77 (", 0), 0u) << waited.err;
}

TEST_F(SlurmDispatchTest, AttachPrintsAFinishedJobsOutput) {
  Say("show.out", Record("COMPLETED"));
  Say("output.5.log", "line 1\nline 2\n");
  SlurmOutcome run = Dispatch({"attach", "5"});
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.out, "line 1\nline 2\n");
  EXPECT_EQ(run.err, "job 5 has finished; its output is at " + dir_ + "/output.5.log\n");
}

// An output file left by an earlier job of the same --output is not this
// job's: Slurm truncates it when the job starts.
TEST_F(SlurmDispatchTest, AttachWaitsForTheJobToStartBeforeReadingItsOutput) {
  ScriptShowJob();
  Say("output.5.log", "an earlier run's output, longer than this one's\n");
  Say("show.1.out", Record("PENDING", "0:0", "(null)", "Priority"));
  Say("show.2.sh", "printf 'new\\n' > '" + dir_ + "/output.5.log'\n");
  Say("show.2.out", Record("COMPLETED"));
  SlurmOutcome run = Dispatch({"attach", "5"});
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.out, "new\n");
}

// Requeued (or started after the file was opened): the file shrinks under
// us, and what is new is at its start.
TEST_F(SlurmDispatchTest, AttachReadsATruncatedOutputFromItsStart) {
  ScriptShowJob();
  Say("output.5.log", "first attempt, longer than the second\n");
  Say("show.1.out", Record("RUNNING"));
  Say("show.2.sh", "printf 'second\\n' > '" + dir_ + "/output.5.log'\n");
  Say("show.2.out", Record("COMPLETED"));
  SlurmOutcome run = Dispatch({"attach", "5"});
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.out, "first attempt, longer than the second\nsecond\n");
}

TEST_F(SlurmDispatchTest, NewWaitDoesNotPrintAQueuedJobsOldOutputFile) {
  ScriptShowJob();
  Say("sbatch.out", "5\n");
  Say("output.5.log", "stale\n");
  Say("show.1.out", Record("CANCELLED by 1000", "0:0", "(null)"));
  SlurmOutcome run = Dispatch({"new", "--wait", "--output", dir_, "--", "true"});
  EXPECT_EQ(run.code, 1) << run.err;
  EXPECT_EQ(run.out, "");
  EXPECT_NE(run.err.find("job 5 did not run: killed while queued\n"), std::string::npos) << run.err;
}

TEST_F(SlurmDispatchTest, TheLocalBackendWaitsThroughTheDaemonNotSlurm) {
  Say("client.conf", "backend = local\n");
  ::setenv("HPC_BATCH_SOCKET", (dir_ + "/no-daemon.sock").c_str(), 1);
  SlurmOutcome run = Dispatch({"wait", "5"});
  EXPECT_EQ(run.code, 1);
  EXPECT_NE(run.err.find("cannot reach the hpc-batch daemon"), std::string::npos) << run.err;
  EXPECT_TRUE(Calls("scontrol").empty());
}

// Two nodes: n1 in use, n2 drained by `dispatch drain`.
constexpr const char* kNodes =
    "NodeName=n1 Arch=x86_64 CoresPerSocket=4 CPUAlloc=2 CPUEfctv=7 CPUTot=8 "
    "CPULoad=0.00 "
    "Gres=gpu:a100:2(S:0-1) GresUsed=gpu:a100:1(IDX:0) RealMemory=16384 "
    "AllocMem=4096 "
    "FreeMem=9000 MemSpecLimit=1024 State=MIXED ThreadsPerCore=1 "
    "Partitions=debug\n"
    "NodeName=n2 Arch=x86_64 CPUAlloc=0 CPUTot=4 Gres=(null) RealMemory=8192 "
    "AllocMem=0 "
    "State=IDLE+DRAIN Partitions=debug Reason=dispatch drain "
    "[root@2024-05-01T10:00:00]\n";

class SlurmNodesDispatchTest : public SlurmDispatchTest {
 protected:
  // scontrol as info, drain and resume use it: `--oneliner show node`
  // prints nodes.out, `show config` config.out; `update` prints
  // update.err and exits with update.rc.
  void SetUp() override {
    SlurmDispatchTest::SetUp();
    WriteFile(dir_ + "/scontrol",
              "#!/bin/sh\n"
              "d=$(dirname \"$0\")\n"
              "(IFS='|'; printf '%s\\n' \"$*\") >> \"$d/scontrol.args\"\n"
              "case \"$1 $2\" in\n"
              "  '--oneliner show') cat \"$d/nodes.out\" ;;\n"
              "  'show config') cat \"$d/config.out\" ;;\n"
              "  update*) [ -f \"$d/update.err\" ] && cat \"$d/update.err\" >&2\n"
              "           [ -f \"$d/update.rc\" ] && exit \"$(cat "
              "\"$d/update.rc\")\" ;;\n"
              "esac\n"
              "exit 0\n",
              0755);
    Say("nodes.out", kNodes);
    Say("config.out",
        "Configuration data as of 2024-05-01T10:00:00\n"
        "SchedulerTimeSlice      = 30 sec\n"
        "SchedulerType           = sched/backfill\n");
    Say("squeue.out", "PENDING Dependency\nPENDING Priority\nRUNNING None\n");
  }
};

TEST_F(SlurmNodesDispatchTest, InfoShowsSlurmsNodesAsTheLocalInfoShowsNumaNodes) {
  SlurmOutcome run = Dispatch({"info"});
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.out,
            "policy sched/backfill, 2 queued (1 waiting for dependencies), 1 "
            "running\n"
            "\n"
            "NODE  RESOURCE  TOTAL  RESERVED  IN-USE  FREE\n"
            "n1    cpus      8      1         2       5\n"
            "n1    mem       16G    1G        4G      11G\n"
            "n1    gpus      2      0         1       1\n"
            "n2    cpus      4      0         0       4\n"
            "n2    mem       8G     0G        0G      8G\n"
            "n2    gpus      0      0         0       0\n"
            "node n2: idle+drain (dispatch drain [root@2024-05-01T10:00:00])\n");
  EXPECT_EQ(Calls("squeue"), (Words{"--noheader|--all|--format=%T %r"}));

  run = Dispatch({"info", "--json"});
  EXPECT_EQ(run.code, 0) << run.err;
  auto reply = protocol::Decode<protocol::InfoReply>(run.out);
  ASSERT_TRUE(reply) << run.out;
  EXPECT_EQ(reply->policy, "sched/backfill");
  EXPECT_EQ(reply->queued, 2);
  EXPECT_EQ(reply->waiting, 1);
  EXPECT_EQ(reply->running, 1);
  EXPECT_FALSE(reply->draining);
  ASSERT_EQ(reply->nodes.size(), 2u);
  EXPECT_EQ(reply->nodes[1].node, 1);
  EXPECT_EQ(reply->nodes[0].gpus.in_use, 1);
}

TEST_F(SlurmNodesDispatchTest, DrainDrainsTheNodesNotYetDrained) {
  SlurmOutcome run = Dispatch({"drain"});
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.out, "draining: queued jobs will not be started; running jobs finish\n");
  EXPECT_EQ(Calls("scontrol").back(), "update|NodeName=n1|State=DRAIN|Reason=dispatch drain");

  Say("nodes.out",
      "NodeName=n1 CPUTot=8 State=MIXED+DRAIN Reason=dispatch "
      "drain [root@x]\n");
  run = Dispatch({"drain"});
  EXPECT_EQ(run.out, "already draining\n");
  EXPECT_EQ(Calls("scontrol").back(), "--oneliner|show|node");
}

// A down node, or one with an administrator's Reason, keeps its Reason: a
// drain would overwrite it, and a later resume would bring the node back.
TEST_F(SlurmNodesDispatchTest, DrainLeavesDownNodesAndOthersReasonsAlone) {
  Say("nodes.out",
      "NodeName=n1 CPUTot=8 State=IDLE Partitions=debug\n"
      "NodeName=n2 CPUTot=8 State=DOWN+NOT_RESPONDING Partitions=debug "
      "Reason=PSU=dead [root@2024-05-01T10:00:00]\n"
      "NodeName=n3 CPUTot=8 State=IDLE+FAIL Partitions=debug Reason=ecc [root@x]\n"
      "NodeName=n4 CPUTot=8 State=IDLE Partitions=debug Reason=reboot soon [root@x]\n");
  SlurmOutcome run = Dispatch({"drain"});
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(Calls("scontrol").back(), "update|NodeName=n1|State=DRAIN|Reason=dispatch drain");
  EXPECT_EQ(run.err,
            "dispatch: note: node n2 is left as it is: it is DOWN+NOT_RESPONDING (PSU=dead "
            "[root@2024-05-01T10:00:00])\n"
            "dispatch: note: node n3 is left as it is: it is IDLE+FAIL (ecc [root@x])\n"
            "dispatch: note: node n4 is left as it is: it is IDLE (reboot soon [root@x])\n");
}

TEST_F(SlurmNodesDispatchTest, ResumeNeverResumesADownNode) {
  Say("nodes.out",
      "NodeName=n1 CPUTot=8 State=DOWN+DRAIN Partitions=debug Reason=dispatch drain "
      "[root@x]\n"
      "NodeName=n2 CPUTot=8 State=IDLE+DRAIN Partitions=debug Reason=dispatch drained for "
      "repairs [root@x]\n");
  SlurmOutcome run = Dispatch({"resume"});
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.out, "not draining\n");
  EXPECT_EQ(Calls("scontrol").back(), "--oneliner|show|node");
  EXPECT_NE(run.err.find("node n1 stays DOWN+DRAIN (dispatch drain [root@x])"), std::string::npos)
      << run.err;
  EXPECT_NE(run.err.find("node n2 stays IDLE+DRAIN"), std::string::npos) << run.err;
}

TEST_F(SlurmNodesDispatchTest, ResumeUndoesOnlyDispatchsDrain) {
  Say("nodes.out",
      std::string(kNodes) + "NodeName=n3 CPUTot=4 State=DOWN+DRAIN Reason=bad DIMM [root@x]\n");
  SlurmOutcome run = Dispatch({"resume"});
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.out, "resumed: queued jobs are started again\n");
  EXPECT_EQ(run.err,
            "dispatch: note: node n3 stays DOWN+DRAIN (bad DIMM [root@x]): resume only undoes "
            "`dispatch drain` on a node that is not down; 'scontrol update NodeName=n3 "
            "State=RESUME' resumes it\n");
  EXPECT_EQ(Calls("scontrol").back(), "update|NodeName=n2|State=RESUME");

  Say("nodes.out", "NodeName=n1 CPUTot=8 State=IDLE\n");
  run = Dispatch({"resume"});
  EXPECT_EQ(run.out, "not draining\n");
}

TEST_F(SlurmNodesDispatchTest, ARefusedDrainSaysWhatSlurmSaid) {
  Say("update.err", "slurm_update error: Invalid user id\n");
  Say("update.rc", "1");
  SlurmOutcome run = Dispatch({"drain"});
  EXPECT_EQ(run.code, 1);
  EXPECT_EQ(run.out, "");
  EXPECT_EQ(run.err,
            "dispatch: Slurm refused to drain n1: slurm_update error: Invalid user "
            "id (draining "
            "and resuming nodes takes root, SlurmUser or a Slurm administrator)\n");
}

TEST_F(SlurmDispatchTest, OutputSaysWhereAFinishedJobsOutputIs) {
  Say("show.out", Record("COMPLETED"));
  Say("output.5.log", "hello\n");
  SlurmOutcome run = Dispatch({"output", "5"});
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.out, "job 5's output is at " + dir_ + "/output.5.log\n");

  run = Dispatch({"output", "5", "--to", dir_});
  EXPECT_EQ(run.code, 1);
  EXPECT_EQ(run.err.rfind("dispatch: output --to is not available with the Slurm backend: ", 0), 0u)
      << run.err;

  Say("show.out", Record("RUNNING"));
  run = Dispatch({"output", "5"});
  EXPECT_EQ(run.code, 1);
  EXPECT_EQ(run.err, "dispatch: job 5 has not finished; Slurm writes its output to " + dir_ +
                         "/output.5.log as it runs ('dispatch attach 5' follows it)\n");

  Say("show.out", Record("CANCELLED", "0:0", "(null)"));
  ASSERT_EQ(::unlink((dir_ + "/output.5.log").c_str()), 0);
  run = Dispatch({"output", "5"});
  EXPECT_EQ(run.code, 1);
  EXPECT_EQ(run.err.rfind("dispatch: job 5's output was to go to " + dir_ +
                              "/output.5.log, which "
                              "cannot be found here",
                          0),
            0u)
      << run.err;
}

TEST_F(SlurmDispatchTest, ABrokenConfigurationStopsEveryCommand) {
  Say("client.conf", "backend = pbs\n");
  SlurmOutcome run = Dispatch({"list"});
  EXPECT_EQ(run.code, 1);
  EXPECT_EQ(run.err, "dispatch: " + dir_ +
                         "/client.conf:1: unknown backend 'pbs' (choose local "
                         "or slurm)\n");
}

}  // namespace
}  // namespace hpcb::client
