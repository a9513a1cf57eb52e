#include "client/format.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>

namespace hpcb::client {
namespace {

using protocol::JobRow;

class UtcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("TZ", "UTC", 1);
    ::tzset();
  }
};

// 2026-07-27 14:03:12 UTC.
constexpr double kNow = 1785160992;

JobRow Row(std::uint64_t id, const std::string& state) {
  JobRow row;
  row.user = "alice";
  row.id = id;
  row.argv = {"echo", "hi"};
  row.state = *protocol::FromName<protocol::JobState>(state);
  row.max_time_s = 3600;
  row.max_mem_gb = 2.08;
  if (row.state != protocol::JobState::kQueued) {
    row.start_time = kNow - 90;
    row.uptime_s = 90;
  }
  return row;
}

TEST(ShellQuoteTest, MatchesPythonShlex) {
  EXPECT_EQ(ShellQuote("abc"), "abc");
  EXPECT_EQ(ShellQuote("a_b@%+=:,./-9"), "a_b@%+=:,./-9");
  EXPECT_EQ(ShellQuote(""), "''");
  EXPECT_EQ(ShellQuote("hello world"), "'hello world'");
  EXPECT_EQ(ShellQuote("it's"), "'it'\"'\"'s'");
  EXPECT_EQ(ShellQuote("$HOME"), "'$HOME'");
  EXPECT_EQ(ShellQuote("a*"), "'a*'");
  EXPECT_EQ(ShellQuote("\xc3\xa9"), "'\xc3\xa9'");
}

TEST(ShellQuoteTest, ControlCharactersNeverReachTheTerminal) {
  EXPECT_EQ(QuoteForDisplay("\x1b]0;owned\x07"), "$'\\e]0;owned\\x07'");
  EXPECT_EQ(QuoteForDisplay("a\nb"), "$'a\\nb'");
  EXPECT_EQ(QuoteForDisplay("it's\t"), "$'it\\'s\\t'");
  EXPECT_EQ(QuoteForDisplay("it's"), ShellQuote("it's"));
  EXPECT_EQ(JoinForDisplay({"echo", "\x1b[31mred"}), "echo $'\\e[31mred'");
  EXPECT_EQ(EscapeControl("/tmp/\x1b[2Jx"), "/tmp/\\e[2Jx");
  EXPECT_EQ(EscapeControl("plain"), "plain");
}

TEST(ShellQuoteTest, JoinsArgv) {
  EXPECT_EQ(ShellJoin({"sh", "-c", "echo queued-ran; echo to-stderr >&2"}),
            "sh -c 'echo queued-ran; echo to-stderr >&2'");
  EXPECT_EQ(ShellJoin({"echo", "hello world"}), "echo 'hello world'");
  EXPECT_EQ(ShellJoin({}), "");
  EXPECT_EQ(ShellJoin({"a", ""}), "a ''");
}

TEST(FormatTableTest, PadsColumnsAndStripsTrailingSpace) {
  EXPECT_EQ(FormatTable({{"A", "LONG"}, {"xxx", "y"}, {"z", "wwwww"}}),
            "A    LONG\nxxx  y\nz    wwwww\n");
  EXPECT_EQ(FormatTable({{"A", ""}, {"bb", ""}}), "A\nbb\n");
  EXPECT_EQ(FormatTable({}), "");
}

TEST_F(UtcTest, StartTimeSameDayShowsClock) {
  EXPECT_EQ(FormatStartTime(kNow, kNow), "14:03:12");
  EXPECT_EQ(FormatStartTime(kNow - 14 * 3600, kNow), "00:03:12");
  EXPECT_EQ(FormatStartTime(kNow + 0.9, kNow), "14:03:12");
}

TEST_F(UtcTest, StartTimeOtherDayShowsDate) {
  EXPECT_EQ(FormatStartTime(kNow - 86400, kNow), "2026-07-26 14:03");
  EXPECT_EQ(FormatStartTime(kNow - 15 * 3600, kNow), "2026-07-26 23:03");
  // Same day of year, previous year: the date (with year) is shown.
  EXPECT_EQ(FormatStartTime(kNow - 365 * 86400, kNow), "2025-07-27 14:03");
  EXPECT_NE(FormatStartTime(kNow - 365 * 86400, kNow), FormatStartTime(kNow, kNow));
}

TEST_F(UtcTest, StartTimeAbsent) {
  EXPECT_EQ(FormatStartTime(std::nullopt, kNow), "-");
}

TEST(FormatStartTimeTest, UsesLocalZone) {
  ::setenv("TZ", "Asia/Kolkata", 1);  // +05:30, no DST
  ::tzset();
  EXPECT_EQ(FormatStartTime(kNow, kNow), "19:33:12");
  ::setenv("TZ", "UTC", 1);
  ::tzset();
}

TEST(CellsTest, Uptime) {
  EXPECT_EQ(UptimeCell(Row(1, "queued")), "queued");
  EXPECT_EQ(UptimeCell(Row(1, "running")), "1m30s");
  JobRow never = Row(1, "done");
  never.start_time.reset();
  never.uptime_s.reset();
  EXPECT_EQ(UptimeCell(never), "-");
  JobRow fraction = Row(1, "done");
  fraction.uptime_s = 25.9;
  EXPECT_EQ(UptimeCell(fraction), "25s");
}

TEST(CellsTest, Memory) {
  JobRow row = Row(1, "running");
  EXPECT_EQ(MemCell(row), "2.08G");
  row.mem_spans_nodes = true;
  EXPECT_EQ(MemCell(row), "2.08G+");
  row.max_mem_gb = 16.0;
  EXPECT_EQ(MemCell(row), "16G+");
  row.mem_spans_nodes = false;
  row.max_mem_gb = 0.0;
  EXPECT_EQ(MemCell(row), "0G");
  row.max_mem_gb.reset();
  EXPECT_EQ(MemCell(row), "-");
}

TEST(CellsTest, Gpu) {
  JobRow row = Row(1, "running");
  EXPECT_EQ(GpuCell(row), "-");
  row.gpus = 1;
  EXPECT_EQ(GpuCell(row), "1");
  row.gpus = 2;
  row.gpu_link = "NV2";
  EXPECT_EQ(GpuCell(row), "2 NV2");
  row.gpu_link = "SYS";
  EXPECT_EQ(GpuCell(row), "2 SYS!");
  row.gpu_link = "PHB";
  EXPECT_EQ(GpuCell(row), "2 PHB!");
  row.gpu_link = "NODE";
  EXPECT_EQ(GpuCell(row), "2 NODE!");
  row.gpu_link = "PXB";
  EXPECT_EQ(GpuCell(row), "2 PXB");
  row.gpu_link = "NVLINK-C2C";
  EXPECT_EQ(GpuCell(row), "2 NVLINK-C2C");
}

TEST(CellsTest, ExitReasonElseCodeElseDash) {
  EXPECT_EQ(ExitCell(Row(1, "running")), "-");
  JobRow done = Row(1, "done");
  EXPECT_EQ(ExitCell(done), "-");
  done.exit_code = 0;
  EXPECT_EQ(ExitCell(done), "0");
  done.exit_code = -9;
  EXPECT_EQ(ExitCell(done), "-9");
  done.reason = protocol::JobReason::kTimeout;
  EXPECT_EQ(ExitCell(done), "timeout");
  JobRow running = Row(2, "running");
  running.exit_code = 3;
  EXPECT_EQ(ExitCell(running), "-");
}

TEST(CellsTest, UsageReadsLikeAStopwatchAndTheBudgets) {
  EXPECT_EQ(FormatSeconds(0.4234), "0.42s");
  EXPECT_EQ(FormatSeconds(12.34), "12.3s");
  EXPECT_EQ(FormatSeconds(125), "2m05s");
  EXPECT_EQ(FormatSeconds(3723), "1h02m03s");
  EXPECT_EQ(FormatPeak(std::nullopt), "-");
  EXPECT_EQ(FormatPeak(std::uint64_t{210} << 20), "0.21G");
  EXPECT_EQ(FormatPeak(std::uint64_t{7} << 29), "3.5G");
  JobRow row = Row(4, "done");
  EXPECT_EQ(UsageCells(row), (std::vector<std::string>{"-", "-", "-", "-"}));
  row.usage = protocol::JobUsage{.source = protocol::UsageSource::kCgroup,
                                 .wall_s = 2.0,
                                 .user_s = 3.5,
                                 .system_s = 0.5,
                                 .peak_memory_bytes = std::uint64_t{200} << 20};
  EXPECT_EQ(UsageCells(row), (std::vector<std::string>{"2.00s", "4.00s", "2.00", "0.2G"}));
}

TEST_F(UtcTest, LongAddsWhatFinishedJobsUsed) {
  protocol::ListReply reply;
  reply.now = kNow;
  JobRow done = Row(3, "done");
  done.exit_code = 0;
  done.usage = protocol::JobUsage{
      .wall_s = 90, .user_s = 170, .system_s = 10, .peak_memory_bytes = std::uint64_t{3} << 30};
  reply.jobs = {done, Row(4, "running")};
  Rendered r = RenderList(reply, true, true);
  EXPECT_EQ(
      r.out,
      "USER   ID  COMMAND  START     UPTIME  MAX-TIME  MEM    EXCLUSIVE  STATE    EXIT  WALL   "
      "CPU-TIME  CPUS-USED  PEAK-MEM\n"
      "alice  3   echo hi  14:01:42  1m30s   1h        2.08G  no         done     0     1m30s  "
      "3m00s     2.00       3G\n"
      "alice  4   echo hi  14:01:42  1m30s   1h        2.08G  no         running  -     -      "
      "-         -          -\n");
}

TEST(RenderListTest, EmptyIsNoJobs) {
  Rendered r = RenderList({}, false);
  EXPECT_EQ(r.out, "no jobs\n");
  EXPECT_EQ(r.err, "");
}

TEST_F(UtcTest, RendersDefaultColumns) {
  protocol::ListReply reply;
  reply.now = kNow;
  reply.jobs = {Row(1, "running"), Row(12, "queued")};
  reply.jobs[1].argv = {"sh", "-c", "echo a b"};
  reply.jobs[1].exclusive = true;
  Rendered r = RenderList(reply, false);
  EXPECT_EQ(r.out,
            "USER   ID  COMMAND           START     UPTIME  MAX-TIME  MEM    EXCLUSIVE\n"
            "alice  1   echo hi           14:01:42  1m30s   1h        2.08G  no\n"
            "alice  12  sh -c 'echo a b'  -         queued  1h        2.08G  yes\n");
  EXPECT_EQ(r.err, "");
}

TEST_F(UtcTest, FinishedAddsStateAndExit) {
  protocol::ListReply reply;
  reply.now = kNow;
  JobRow done = Row(3, "done");
  done.exit_code = 0;
  reply.jobs = {done};
  Rendered r = RenderList(reply, true);
  EXPECT_EQ(r.out,
            "USER   ID  COMMAND  START     UPTIME  MAX-TIME  MEM    EXCLUSIVE  STATE  EXIT\n"
            "alice  3   echo hi  14:01:42  1m30s   1h        2.08G  no         done   0\n");
}

TEST_F(UtcTest, GpuColumnOnlyWhenSomeRowHasGpus) {
  protocol::ListReply reply;
  reply.now = kNow;
  reply.jobs = {Row(1, "running"), Row(2, "running")};
  EXPECT_EQ(RenderList(reply, false).out.find("GPU"), std::string::npos);
  reply.jobs[1].gpus = 3;
  reply.jobs[1].gpu_link = "SYS";
  Rendered r = RenderList(reply, false);
  EXPECT_NE(r.out.find("MEM    GPU     EXCLUSIVE"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2.08G  -       no"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2.08G  3 SYS!  no"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\n\n! these gpus reach each other across a host bridge or the "
                       "socket interconnect, so peer-to-peer copies are slower. Use "
                       "--gpu-link to wait for closer ones instead.\n"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("+ memory"), std::string::npos);
}

TEST_F(UtcTest, NameColumnOnlyWhenSomeRowHasAName) {
  protocol::ListReply reply;
  reply.now = kNow;
  reply.jobs = {Row(1, "running"), Row(2, "queued")};
  EXPECT_EQ(RenderList(reply, false).out.find("NAME"), std::string::npos);
  reply.jobs[1].name = "train";
  Rendered r = RenderList(reply, false);
  EXPECT_EQ(r.out,
            "USER   ID  NAME   COMMAND  START     UPTIME  MAX-TIME  MEM    EXCLUSIVE\n"
            "alice  1   -      echo hi  14:01:42  1m30s   1h        2.08G  no\n"
            "alice  2   train  echo hi  -         queued  1h        2.08G  no\n");
}

TEST_F(UtcTest, FootnotesInOrderAfterTable) {
  protocol::ListReply reply;
  reply.now = kNow;
  reply.jobs = {Row(1, "running")};
  reply.jobs[0].mem_spans_nodes = true;
  reply.jobs[0].gpus = 2;
  reply.jobs[0].gpu_link = "NODE";
  Rendered r = RenderList(reply, false);
  const std::string plus =
      "\n+ memory spans NUMA nodes; the remote part is slower to access. Use "
      "--numa-local-mem to wait for a node that fits instead.\n";
  std::size_t plus_at = r.out.find(plus);
  std::size_t bang_at = r.out.find("\n! these gpus");
  ASSERT_NE(plus_at, std::string::npos) << r.out;
  ASSERT_NE(bang_at, std::string::npos) << r.out;
  EXPECT_LT(plus_at, bang_at);
  EXPECT_NE(r.out.find("2.08G+  2 NODE!"), std::string::npos) << r.out;
}

TEST_F(UtcTest, StderrNotesForOomAndOutputErrors) {
  protocol::ListReply reply;
  reply.now = kNow;
  JobRow oom = Row(4, "done");
  oom.reason = protocol::JobReason::kOom;
  oom.mem_defaulted = true;
  JobRow asked = Row(5, "done");
  asked.reason = protocol::JobReason::kOom;
  asked.max_mem_gb = 16.0;
  JobRow lost = Row(6, "done");
  lost.exit_code = 0;
  lost.output_dest = "/home/a/output.6.log";
  lost.output_error = "Permission denied";
  JobRow stderr_lost = Row(7, "done");
  stderr_lost.output_dest = "/home/a/output.7.log";
  stderr_lost.error_dest = "/home/a/e.log";
  stderr_lost.output_error = "stderr to /home/a/e.log: Disk quota exceeded";
  reply.jobs = {oom, asked, lost, stderr_lost};
  Rendered r = RenderList(reply, true);
  EXPECT_EQ(r.err,
            "job 4: killed for exceeding its 2.08G memory budget (assigned by default); "
            "pass --max-mem to raise it\n"
            "job 5: killed for exceeding its 16G memory budget (requested); pass "
            "--max-mem to raise it\n"
            "job 6: could not save output to /home/a/output.6.log: Permission denied\n"
            "job 7: could not save stderr to /home/a/e.log: Disk quota exceeded\n");
  EXPECT_NE(r.out.find("done   oom"), std::string::npos) << r.out;
}

TEST(RenderSubmitTest, MemoryClauseVariants) {
  protocol::SubmitReply reply;
  reply.id = 1;
  reply.state = protocol::JobState::kRunning;
  reply.cpu = 1;
  reply.max_time_s = 3600;
  reply.max_mem_gb = 2.08;
  reply.mem_defaulted = true;
  reply.output_dest = "/w/output.1.log";
  EXPECT_EQ(RenderSubmit(reply, false, "/w"),
            "job 1 running (1 cpu, max time 1h, memory 2.08G (default))\n"
            "output will be saved to /w/output.1.log\n");
  reply.mem_defaulted = false;
  reply.max_mem_gb = 84;
  reply.state = protocol::JobState::kQueued;
  reply.cpu = 2;
  reply.max_time_s = 5400;
  EXPECT_EQ(RenderSubmit(reply, true, std::nullopt),
            "job 1 queued (2 cpu, max time 1h30m, memory 84G)\n");
  reply.max_mem_gb.reset();
  reply.output_dest.reset();
  EXPECT_EQ(RenderSubmit(reply, false, "/w/x.log"),
            "job 1 queued (2 cpu, max time 1h30m)\noutput will be saved to /w/x.log\n");
  EXPECT_EQ(RenderSubmit(reply, false, "/w/x.log", "/w/error.1.log"),
            "job 1 queued (2 cpu, max time 1h30m)\noutput will be saved to /w/x.log\n"
            "stderr will be saved to /w/error.1.log\n");
}

// On SMT the line says what --cpu became; without it (granted cpus equal
// to cores) it reads as before.
TEST(RenderSubmitTest, NamesWholeCoresUnderSmt) {
  protocol::SubmitReply reply;
  reply.id = 5;
  reply.state = protocol::JobState::kRunning;
  reply.cpu = 3;
  reply.granted_cpus = 4;
  reply.granted_cores = 2;
  reply.max_time_s = 3600;
  reply.max_mem_gb = 8;
  reply.mem_defaulted = true;
  EXPECT_EQ(RenderSubmit(reply, true, std::nullopt),
            "job 5 running (4 cpus = 2 cores, max time 1h, memory 8G (default))\n");
  reply.cpu = 1;
  reply.granted_cpus = 2;
  reply.granted_cores = 1;
  reply.state = protocol::JobState::kQueued;
  EXPECT_EQ(RenderSubmit(reply, true, std::nullopt),
            "job 5 queued (2 cpus = 1 core, max time 1h, memory 8G (default))\n");
  reply.cpu = 3;
  reply.granted_cpus = 3;
  reply.granted_cores = 3;
  EXPECT_EQ(RenderSubmit(reply, true, std::nullopt),
            "job 5 queued (3 cpu, max time 1h, memory 8G (default))\n");
}

TEST(RenderAttachNoticeTest, PerState) {
  protocol::AttachReply reply;
  reply.state = protocol::JobState::kQueued;
  EXPECT_EQ(RenderAttachNotice(7, reply), "job 7 is queued; waiting for it to start...\n");
  reply.state = protocol::JobState::kRunning;
  EXPECT_EQ(RenderAttachNotice(7, reply), "");
  reply.state = protocol::JobState::kDone;
  EXPECT_EQ(RenderAttachNotice(7, reply),
            "job 7 has finished; it ran with --no-output, so nothing was kept\n");
  reply.output_dest = "/w/output.7.log";
  EXPECT_EQ(RenderAttachNotice(7, reply), "job 7 has finished; its output is at /w/output.7.log\n");
}

TEST(RenderKillTest, RemovedOrSignalled) {
  EXPECT_EQ(RenderKill(7, {protocol::KillOutcome::kRemoved}), "job 7 removed from the queue\n");
  EXPECT_EQ(RenderKill(7, {protocol::KillOutcome::kKilling}), "job 7: kill signal sent\n");
}

TEST(RenderJobFieldTest, GetAndChange) {
  protocol::JobFieldReply get;
  get.value = 60;
  EXPECT_EQ(RenderJobField(7, "max-time", "get", get), "job 7 max-time 1m\n");
  protocol::JobFieldReply add;
  add.value = 172860;
  add.before = 60;
  EXPECT_EQ(RenderJobField(7, "max-time", "add", add), "job 7 max-time 1m -> 2d1m\n");
}

}  // namespace
}  // namespace hpcb::client
