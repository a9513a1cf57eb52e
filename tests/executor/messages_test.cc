// Field validation of every broker->executor and executor->launcher message.
#include <gtest/gtest.h>

#include "common/host/run_record.h"
#include "executor/launch_spec.h"
#include "protocol/executor_messages.h"
#include "protocol/launcher_messages.h"
#include "protocol/user_requests.h"

namespace hpcb::protocol {
namespace {

// Launch specs, run records and queued submissions outlive the release
// that wrote them, and the wire enums are their names: a change in this
// text is a format change (a new field must be kMayBeMissing to read old
// files). It also holds the field lists to what the hand-written ones were.
TEST(RecordFormatTest, FilesOnDiskKeepTheirKeysInOrder) {
  EXPECT_EQ(
      Encode(host::RunRecord{}),
      R"({"id":0,"pid":0,"shepherd":0,"shepherd_start":0,"pid_start":0,"start_time":0.0,"status":[],"end_time":[],"user_s":0.0,"system_s":0.0,"max_rss_kib":0,"placement":[]})");
  EXPECT_EQ(
      Encode(executor::LaunchSpec{}),
      R"({"id":0,"state":"registered","who":{"uid":0,"gid":0,"user":"","groups":[]},"output_dest":[],"argv":[],"cwd":"","request":{"cpu":[],"gpu_cores":0,"max_mem_gb":[],"max_time_s":[],"exclusive":false,"numa_local_mem":false,"numa_local_gpu":false,"min_gpu_link":[],"submit_time":0.0},"placement":[],"start_time":0.0,"exit_code":[],"oom":false,"end_time":0.0,"output_error":[],"usage":[],"name":[],"error_dest":[],"array":[],"array_started":[],"home":"","shell":"","env":[],"pid":0,"proc_start":0,"shepherd":0,"shepherd_start":0,"notify":[],"array_index":[]})");
  EXPECT_EQ(
      Encode(SubmitRequest{}),
      R"({"cmd":"new","argv":[],"cwd":"","cpu":[],"gpu_cores":0,"max_mem_gb":[],"max_time_s":[],"exclusive":false,"numa_local_mem":false,"numa_local_gpu":false,"min_gpu_link":[],"forward_env":false,"env":[],"output":[],"output_is_dir":false,"error":[],"error_is_dir":false,"user":"","home":"","shell":"","after":[],"after_any":false,"exec_error":[],"name":[],"array":[],"array_throttle":[],"notify":[]})");
  EXPECT_EQ(NameList<ExecutorKind>(),
            "hello, hello_reply, list_jobs, list_jobs_reply, register, register_reply, start, "
            "start_reply, signal, forget, open_output, ack, exited, deliver_again or output_reply");
  EXPECT_EQ(
      NameList<LauncherKind>(),
      "spawn, spawn_reply, deliver, deliver_reply, child_exited, refused, notify or empty_dir");
  EXPECT_EQ(NameList<SignalNote>(), ", timeout or killed");
}

TEST(LauncherMessagesTest, SpawnRoundTrip) {
  SpawnRequest spawn;
  spawn.id = 3;
  spawn.who = {1000, 1000, "alice", {1000, 27}};
  spawn.argv = {"echo", "hi"};
  spawn.cwd = "/home/alice";
  spawn.env = {"PATH=/bin", "X=1"};
  spawn.placement.cpus = {0, 1};
  auto decoded = Decode<SpawnRequest>(Encode(spawn));
  ASSERT_TRUE(decoded) << decoded.error().message();
  EXPECT_EQ(decoded->who.groups, (std::vector<std::uint32_t>{1000, 27}));
  EXPECT_EQ(decoded->env, spawn.env);
}

// The least a valid spawn holds.
SpawnRequest MinimalSpawn() {
  SpawnRequest spawn;
  spawn.id = 3;
  spawn.who = {1000, 1000, "alice", {}};
  spawn.argv = {"echo"};
  spawn.cwd = "/";
  spawn.placement.cpus = {0};
  return spawn;
}

TEST(LauncherMessagesTest, SpawnFieldChecks) {
  const SpawnRequest spawn = MinimalSpawn();
  EXPECT_TRUE(spawn.Validate());
  auto bad = spawn;
  bad.id = 0;
  EXPECT_FALSE(bad.Validate());
  bad = spawn;
  bad.cwd = "relative";
  EXPECT_FALSE(bad.Validate());
  bad = spawn;
  bad.argv = {};
  EXPECT_FALSE(bad.Validate());
  bad = spawn;
  bad.env = {"NOEQUALS"};
  EXPECT_FALSE(bad.Validate());
  bad = spawn;
  bad.placement.cpus = {};
  EXPECT_FALSE(bad.Validate());
  bad = spawn;
  bad.placement.cpus = {-1};
  EXPECT_FALSE(bad.Validate());
  bad = spawn;
  bad.who.user = "";
  EXPECT_FALSE(bad.Validate());
  bad = spawn;
  bad.placement = PlacementRecord{.cpus = {0}, .mems = {0}, .mem_by_node = {{0, -2.0}}};
  EXPECT_FALSE(bad.Validate()) << "the placement is checked as the run record will hold it";
}

// What a placement may hold is bounded by the machine once its ids are
// checked against it, so the run record that keeps it stays readable.
TEST(PlacementRecordTest, MemoryIsChargedOnlyToItsOwnNodesAndLinkNamesAreShort) {
  PlacementRecord placement{.cpus = {0}, .mems = {0, 1}, .mem_by_node = {{0, 1.0}, {1, 2.0}}};
  EXPECT_TRUE(placement.Validate());
  placement.mem_by_node = {{-1, 4.0}};  // machine-wide (no per-node memory)
  EXPECT_TRUE(placement.Validate());
  placement.mem_by_node = {{0, 1.0}, {7, 1.0}};
  Result<void> stray = placement.Validate();
  ASSERT_FALSE(stray);
  EXPECT_NE(stray.error().message().find("not in mems"), std::string::npos);
  placement.mem_by_node = {{0, 1.0}};
  placement.gpu_link = "NV18";
  EXPECT_TRUE(placement.Validate());
  placement.gpu_link = std::string(100000, 'x');
  EXPECT_FALSE(placement.Validate());
}

TEST(LauncherMessagesTest, ThePlacementRidesTheSpawnIntoTheRunRecord) {
  SpawnRequest spawn = MinimalSpawn();
  spawn.placement = PlacementRecord{.cpus = {2}, .mems = {1}, .mem_by_node = {{1, 4.0}}};
  auto decoded = Decode<SpawnRequest>(Encode(spawn));
  ASSERT_TRUE(decoded) << decoded.error().message();
  EXPECT_EQ(decoded->placement.mems, std::vector<int>{1});
  EXPECT_EQ(decoded->placement.mem_by_node, (std::map<int, double>{{1, 4.0}}));
}

TEST(RunRecordTest, ARecordFromBeforeThePlacementFieldStillLoads) {
  // As a shepherd of the previous release wrote it, for a job that kept
  // running across the upgrade.
  host::RunRecord before;
  before.id = 7;
  before.pid = 40;
  before.shepherd = 39;
  std::string text = Encode(before);
  const std::string field = R"(,"placement":[])";
  ASSERT_NE(text.find(field), std::string::npos) << text;
  text.erase(text.find(field), field.size());
  Result<host::RunRecord> old = Decode<host::RunRecord>(text);
  ASSERT_TRUE(old) << old.error().message() << "\n" << text;
  EXPECT_EQ(old->pid, 40);
  EXPECT_FALSE(old->placement);
  host::RunRecord record = *old;
  record.placement = PlacementRecord{.cpus = {-1}};
  EXPECT_FALSE(record.Validate()) << "a placement naming no cpu is refused";
}

TEST(LauncherMessagesTest, DeliverNeedsAnAbsolutePath) {
  DeliverRequest deliver{
      .req = 1, .id = 1, .who = {1000, 1000, "a", {}}, .dest = "", .max_bytes = 1};
  EXPECT_FALSE(deliver.Validate());
  deliver.dest = "rel";
  EXPECT_FALSE(deliver.Validate());
  deliver.dest = "/tmp/out.log";
  EXPECT_TRUE(deliver.Validate());
  ChildExited exited{.req = 0, .pid = 0, .status = 0};
  EXPECT_FALSE(exited.Validate());
}

TEST(LauncherMessagesTest, NotifyCarriesABoundedCommandAndAnAbsoluteCwd) {
  NotifyRequest hook{.req = 1,
                     .id = 4,
                     .who = {1000, 1000, "a", {}},
                     .command = "echo $HPC_BATCH_JOB_ID",
                     .cwd = "/tmp",
                     .env = {"HPC_BATCH_JOB_ID=4"}};

  Result<NotifyRequest> decoded = Decode<NotifyRequest>(Encode(hook));

  ASSERT_TRUE(decoded) << decoded.error().message();
  EXPECT_EQ(decoded->command, hook.command);
  EXPECT_EQ(decoded->env, hook.env);
  for (auto broken :
       {+[](NotifyRequest& r) { r.command.clear(); },
        +[](NotifyRequest& r) { r.command.assign(kMaxNotifyBytes + 1, 'x'); },
        +[](NotifyRequest& r) { r.command += std::string(1, '\0'); },
        +[](NotifyRequest& r) { r.cwd = "tmp"; }, +[](NotifyRequest& r) { r.env = {"NO_EQUALS"}; },
        +[](NotifyRequest& r) { r.id = 0; }}) {
    NotifyRequest bad = hook;
    broken(bad);
    EXPECT_FALSE(Decode<NotifyRequest>(Encode(bad)));
  }
}

TEST(LauncherMessagesTest, EmptyDirNamesAJobAndAUser) {
  EmptyDirRequest request{.req = 1, .id = 4, .who = {1000, 1000, "a", {}}};

  Result<EmptyDirRequest> decoded = Decode<EmptyDirRequest>(Encode(request));

  ASSERT_TRUE(decoded) << decoded.error().message();
  EXPECT_EQ(decoded->id, 4u);
  EXPECT_EQ(decoded->who.uid, 1000u);
  EmptyDirRequest bad = request;
  bad.id = 0;
  EXPECT_FALSE(Decode<EmptyDirRequest>(Encode(bad)));
  bad = request;
  bad.who.user.clear();
  EXPECT_FALSE(Decode<EmptyDirRequest>(Encode(bad)));
}

TEST(ExecutorMessagesTest, WrongTypesNameTheField) {
  auto start = Decode<StartJob>(
      R"({"type":"start","req":1,"id":"x","placement":{"cpus":[0],"mems":[0],"gpus":[],"mem_by_node":[],"gpu_link":[],"spans_nodes":false},"memory_max":[]})");
  ASSERT_FALSE(start);
  EXPECT_NE(start.error().message().find("'id'"), std::string::npos);
  auto reg = Decode<RegisterJob>(R"({"type":"register","req":1,"id":"1"})");
  ASSERT_FALSE(reg);
  EXPECT_NE(reg.error().message().find("'id'"), std::string::npos);
}

TEST(ExecutorMessagesTest, StartAndSignalRanges) {
  auto start = [](const std::string& cpus, const std::string& memory_max) {
    return R"({"req":1,"id":1,"placement":{"cpus":)" + cpus +
           R"(,"mems":[0],"gpus":[],"mem_by_node":[],"gpu_link":[],"spans_nodes":false},)" +
           R"("memory_max":)" + memory_max + R"(,"array":[],"array_index":0})";
  };
  EXPECT_FALSE(Decode<StartJob>(start("[]", "[]")));
  EXPECT_FALSE(Decode<StartJob>(start("[-3]", "[]")));
  EXPECT_FALSE(Decode<StartJob>(start("[0]", "[0]")));
  const auto good = Decode<StartJob>(start("[0]", "[5]"));
  EXPECT_TRUE(good) << good.error().message();
  EXPECT_FALSE(Decode<SignalJob>(R"({"req":1,"id":1,"signal":"stop","note":"","limit_s":0})"));
  EXPECT_FALSE(
      Decode<SignalJob>(R"({"req":1,"id":1,"signal":"term","note":"rm -rf","limit_s":0})"));
}

}  // namespace
}  // namespace hpcb::protocol
