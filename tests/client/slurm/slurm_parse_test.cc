// Reading squeue, sacct and scontrol output (slurm_parse.h), from text
// shaped as Slurm 22.05 prints it.
#include "client/slurm/slurm_parse.h"

#include <gtest/gtest.h>

#include <ctime>
#include <string>
#include <vector>

#include "client/format.h"

namespace hpcb::client::slurm {
namespace {

using Words = std::vector<std::string>;

std::string Record(const Words& fields) {
  std::string line;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (i > 0) line += kFieldSeparator;
    line += fields[i];
  }
  return line + "\n";
}

TEST(SlurmTextTest, SqueueRows) {
  EXPECT_EQ(SqueueFormat().substr(0, 26),
            std::string("JobArrayID:0") + kFieldSeparator + ",UserName:0" + kFieldSeparator + ",");
  EXPECT_EQ(SqueueFormat().substr(SqueueFormat().size() - 7), ",Name:0");
  std::string text =
      Record({"12", "alice", "RUNNING", "None", "2024-05-01T10:00:00", "1:02:03", "2:00:00", "4",
              "16G", "gres:gpu:2", "NO", "0", "/home/alice/output.%j.log", "(null)",
              "./bench.sh --iterations 10"}) +
      Record({"13", "bob", "PENDING", "Resources", "2024-05-01T11:00:00", "0:00", "UNLIMITED", "1",
              "0", "N/A", "OK", "0", "/dev/null", "(null)", "sh -c 'echo a"}) +
      "b'\n" +  // a name with a newline, from a job dispatch did not submit
      Record({"14_3", "carol", "FAILED", "NonZeroExitCode", "2024-05-01T09:00:00", "0:05", "5:00",
              "2", "500M", "N/A", "OK", "768", "/scratch/%u/%x-%5j.out", "",
              std::string("odd") + kFieldSeparator + "name"});
  std::vector<SlurmJob> jobs = ParseSqueue(text);
  ASSERT_EQ(jobs.size(), 3u);
  const protocol::JobRow& a = jobs[0].row;
  EXPECT_EQ(a.id, 12u);
  EXPECT_EQ(a.user, "alice");
  EXPECT_EQ(a.state, protocol::JobState::kRunning);
  EXPECT_EQ(a.start_time, ParseSlurmTimestamp("2024-05-01T10:00:00"));
  EXPECT_EQ(a.uptime_s, 3723.0);
  EXPECT_EQ(a.max_time_s, 7200);
  EXPECT_EQ(a.cpu, 4);
  EXPECT_EQ(a.max_mem_gb, 16.0);
  EXPECT_EQ(a.gpus, 2);
  EXPECT_TRUE(a.exclusive);
  EXPECT_EQ(a.output_dest, "/home/alice/output.12.log");
  EXPECT_EQ(a.argv, (Words{"./bench.sh", "--iterations", "10"}));
  EXPECT_EQ(jobs[0].pending_reason, "");

  const protocol::JobRow& b = jobs[1].row;
  EXPECT_EQ(b.state, protocol::JobState::kQueued);
  EXPECT_FALSE(b.start_time);  // squeue's StartTime is only an estimate
  EXPECT_EQ(b.max_time_s, 0);
  EXPECT_FALSE(b.max_mem_gb);
  EXPECT_FALSE(b.exclusive);
  EXPECT_FALSE(b.output_dest);
  EXPECT_EQ(b.argv, (Words{"sh", "-c", "echo a\nb"}));
  EXPECT_EQ(jobs[1].pending_reason, "Resources");

  const protocol::JobRow& c = jobs[2].row;
  EXPECT_EQ(c.id, 14u);
  EXPECT_EQ(c.state, protocol::JobState::kDone);
  EXPECT_EQ(c.exit_code, 3);
  EXPECT_EQ(c.max_mem_gb, 500.0 / 1024.0);
  EXPECT_EQ(c.output_dest, "/scratch/carol/odd\x1fname-00014.out");
}

// A job dispatch submitted with --name: its Slurm name is the name, its
// comment the command line; any other comment leaves the name the command.
TEST(SlurmTextTest, ANamedJobsCommandComesFromItsComment) {
  auto row = [](const std::string& comment, const std::string& name) {
    return Record({"30", "alice", "PENDING", "None", "N/A", "0:00", "5:00", "1", "1G", "N/A", "OK",
                   "0", "/dev/null", comment, name});
  };
  std::vector<SlurmJob> jobs = ParseSqueue(row("dispatch command: sh -c 'echo a b'", "train") +
                                           row("(null)", "echo hi") + row("by hand", "echo hi"));
  ASSERT_EQ(jobs.size(), 3u);
  EXPECT_EQ(jobs[0].row.name, "train");
  EXPECT_EQ(jobs[0].row.argv, (Words{"sh", "-c", "echo a b"}));
  for (int i : {1, 2}) {
    EXPECT_EQ(jobs[i].row.name, std::nullopt);
    EXPECT_EQ(jobs[i].row.argv, (Words{"echo", "hi"}));
  }
  std::vector<SlurmJob> finished = ParseSacct(
      Record({"31", "alice", "COMPLETED", "2024-05-01T10:00:00", "00:00:05", "00:02:00", "1", "1G",
              "cpu=1", "0:0", "node1", "None", "dispatch command: true", "named"}));
  ASSERT_EQ(finished.size(), 1u);
  EXPECT_EQ(finished[0].row.name, "named");
  EXPECT_EQ(finished[0].row.argv, (Words{"true"}));
}

// squeue names an array's element ARRAY_INDEX and its pending elements
// together ARRAY_[4-100%8]; sacct an element's step ARRAY_INDEX.batch.
TEST(SlurmTextTest, ArrayElementsAreRowsOfTheirArray) {
  auto row = [](const std::string& id, const std::string& state) {
    return Record({id, "alice", state, "None", "N/A", "0:00", "5:00", "1", "1G", "N/A", "OK", "0",
                   "/dev/null", "(null)", "true"});
  };
  std::vector<SlurmJob> jobs =
      ParseSqueue(row("40_3", "RUNNING") + row("40_[4-100%8]", "PENDING") + row("41", "PENDING"));
  ASSERT_EQ(jobs.size(), 3u);
  EXPECT_EQ(jobs[0].row.id, 40u);
  EXPECT_EQ(jobs[0].row.array_id, 40u);
  EXPECT_EQ(jobs[0].row.array_index, 3u);
  EXPECT_EQ(jobs[1].row.array_id, 40u);
  EXPECT_EQ(jobs[1].row.array_index, std::nullopt);
  EXPECT_EQ(jobs[2].row.array_id, std::nullopt);
  std::vector<SlurmJob> finished = ParseSacct(
      Record({"42_7", "alice", "COMPLETED", "2024-05-01T10:00:00", "00:00:05", "00:02:00", "1",
              "1G", "cpu=1", "0:0", "node1", "None", "(null)", "true"}));
  ASSERT_EQ(finished.size(), 1u);
  EXPECT_EQ(finished[0].row.array_id, 42u);
  EXPECT_EQ(finished[0].row.array_index, 7u);
}

TEST(SlurmTextTest, SacctRows) {
  EXPECT_EQ(SacctFormat(),
            "JobID,User,State,Start,Elapsed,Timelimit,AllocCPUS,ReqMem,AllocTRES,ExitCode,"
            "NodeList,Reason,Comment,JobName");
  // As sacct 22.05 --parsable2 prints them; 21 was cancelled while queued,
  // and its Start is when that happened.
  std::string text =
      Record({"20", "alice", "COMPLETED", "2024-05-01T10:00:00", "00:00:05", "00:02:00", "2", "4G",
              "billing=2,cpu=2,gres/gpu=1,mem=4G,node=1", "0:0", "node1", "None", "", "echo hi"}) +
      Record({"21", "alice", "CANCELLED by 1000", "2024-05-01T10:03:00", "00:00:00", "UNLIMITED",
              "0", "1Gc", "", "0:0", "None assigned", "None", "", "sleep 100"}) +
      Record({"22", "alice", "TIMEOUT", "2024-05-01T10:00:00", "00:01:00", "00:01:00", "4", "1Gc",
              "cpu=4,gres/gpu:a100=2,gres/gpu=2", "0:15", "node[1-2]", "None", "", "./train"}) +
      Record({"23", "alice", "CANCELLED", "2024-05-01T10:04:00", "00:00:00", "00:02:00", "0", "1G",
              "", "0:0", "None assigned", "DependencyNeverSatisfied", "", "true"});
  std::vector<SlurmJob> jobs = ParseSacct(text);
  ASSERT_EQ(jobs.size(), 4u);
  EXPECT_FALSE(jobs[3].row.start_time);
  EXPECT_EQ(jobs[3].row.reason, protocol::JobReason::kDependency);
  EXPECT_EQ(jobs[0].row.state, protocol::JobState::kDone);
  EXPECT_EQ(jobs[0].row.exit_code, 0);
  EXPECT_EQ(jobs[0].row.uptime_s, 5.0);
  EXPECT_EQ(jobs[0].row.gpus, 1);
  EXPECT_EQ(jobs[0].row.max_mem_gb, 4.0);
  EXPECT_EQ(jobs[1].row.reason, protocol::JobReason::kKilled);
  EXPECT_FALSE(jobs[1].row.start_time);
  EXPECT_FALSE(jobs[1].row.exit_code);
  EXPECT_EQ(jobs[2].row.reason, protocol::JobReason::kTimeout);
  EXPECT_EQ(jobs[2].row.gpus, 2);
  EXPECT_EQ(jobs[2].row.max_mem_gb, 4.0);  // 1G per CPU, 4 CPUs
}

// As scontrol 22.05 prints it, with a working directory holding spaces.
constexpr const char* kScontrolShowJob =
    "JobId=7 JobName=echo 'a b=c'\n"
    "   UserId=alice(1000) GroupId=alice(1000) MCS_label=N/A\n"
    "   JobState=RUNNING Reason=None Dependency=(null)\n"
    "   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0\n"
    "   RunTime=00:00:01 TimeLimit=00:05:00 TimeMin=N/A\n"
    "   Partition=debug AllocNode:Sid=localhost:5204\n"
    "   Command=(null)\n"
    "   WorkDir=/home/alice/my runs\n"
    "   StdErr=/home/alice/my runs/output.7.log\n"
    "   StdIn=/dev/null\n"
    "   StdOut=/home/alice/my runs/output.7.log\n"
    "   Power=\n"
    "   \n";

TEST(SlurmTextTest, ScontrolShowJob) {
  auto fields = ParseScontrolRecord(kScontrolShowJob);
  EXPECT_EQ(fields["JobState"], "RUNNING");
  EXPECT_EQ(fields["ExitCode"], "0:0");
  EXPECT_EQ(fields["TimeLimit"], "00:05:00");
  EXPECT_EQ(fields["StdOut"], "/home/alice/my runs/output.7.log");
  EXPECT_EQ(fields["WorkDir"], "/home/alice/my runs");
  EXPECT_EQ(fields["AllocNode:Sid"], "localhost:5204");
  EXPECT_EQ(fields.count("'a"), 0u);
  EXPECT_EQ(fields["Power"], "");
}

TEST(SlurmTextTest, RowsFromScontrol) {
  protocol::JobRow running = RowFromShowJob(7, ParseScontrolRecord(kScontrolShowJob));
  EXPECT_EQ(running.id, 7u);
  EXPECT_EQ(running.user, "alice");
  EXPECT_EQ(running.state, protocol::JobState::kRunning);
  EXPECT_EQ(running.max_time_s, 300);

  std::map<std::string, std::string> job = {{"JobState", "CANCELLED"},
                                            {"Reason", "None"},
                                            {"StartTime", "2024-05-01T10:00:00"},
                                            {"NodeList", "(null)"},
                                            {"ExitCode", "0:0"}};
  protocol::JobRow cancelled = RowFromShowJob(7, job);
  EXPECT_EQ(cancelled.reason, protocol::JobReason::kKilled);
  EXPECT_FALSE(cancelled.start_time);
  EXPECT_FALSE(cancelled.exit_code);

  job["NodeList"] = "node1";
  job["ExitCode"] = "0:15";
  protocol::JobRow killed = RowFromShowJob(7, job);
  EXPECT_TRUE(killed.start_time);
  EXPECT_EQ(killed.exit_code, -15);

  job["NodeList"] = "(null)";
  job["Reason"] = "DependencyNeverSatisfied";
  EXPECT_EQ(RowFromShowJob(7, job).reason, protocol::JobReason::kDependency);
}

TEST(SlurmTextTest, OutputPatterns) {
  EXPECT_EQ(ExpandOutputPattern("/o/output.%j.log", 42, "u", "n"), "/o/output.42.log");
  EXPECT_EQ(ExpandOutputPattern("/o/slurm-%A_%a.out", 42, "u", "n"), std::nullopt);
  EXPECT_EQ(ExpandOutputPattern("/o/%N.out", 42, "u", "n"), std::nullopt);
  EXPECT_EQ(ExpandOutputPattern("/o/100%%-%u-%x-%3t", 42, "u", "n"), "/o/100%-u-n-000");
  EXPECT_EQ(ExpandOutputPattern("/o/a\\b%j", 42, "u", "n"), std::nullopt);
  EXPECT_EQ(ExpandOutputPattern("/o/%", 42, "u", "n"), std::nullopt);
}

TEST(SlurmTextTest, ScontrolRecordsSplitWhereALineIsNotIndented) {
  std::vector<std::string_view> records = SplitScontrolRecords(
      "JobId=7 JobName=a\n   JobState=RUNNING Reason=None\n   StdOut=/x y\n   Power=\n\n"
      "JobId=8 JobName=b\n   JobState=PENDING Reason=Priority\n\n");
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(ParseScontrolRecord(records[0]).at("StdOut"), "/x y");
  EXPECT_EQ(ParseScontrolRecord(records[1]).at("JobId"), "8");
  EXPECT_EQ(ParseScontrolRecord(records[1]).at("Reason"), "Priority");
  EXPECT_EQ(SplitScontrolRecords("No jobs in the system\n").size(), 1u);
  EXPECT_TRUE(SplitScontrolRecords("").empty());
}

}  // namespace
}  // namespace hpcb::client::slurm
