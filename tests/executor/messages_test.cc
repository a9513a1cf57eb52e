// Field validation of every broker->executor and executor->launcher message.
#include <gtest/gtest.h>

#include "protocol/executor_messages.h"
#include "protocol/launcher_messages.h"

namespace hpcb::protocol {
namespace {

TEST(LauncherMessagesTest, SpawnRoundTrip) {
  SpawnRequest spawn;
  spawn.id = 3;
  spawn.who = {1000, 1000, "alice", {1000, 27}};
  spawn.argv = {"echo", "hi"};
  spawn.cwd = "/home/alice";
  spawn.env = {"PATH=/bin", "X=1"};
  spawn.cpus = {0, 1};
  auto decoded = Decode<SpawnRequest>(Encode(spawn));
  ASSERT_TRUE(decoded) << decoded.error().message();
  EXPECT_EQ(decoded->who.groups, (std::vector<std::uint32_t>{1000, 27}));
  EXPECT_EQ(decoded->env, spawn.env);
}

TEST(LauncherMessagesTest, SpawnFieldChecks) {
  SpawnRequest spawn;
  spawn.id = 3;
  spawn.who = {1000, 1000, "alice", {}};
  spawn.argv = {"echo"};
  spawn.cwd = "/";
  spawn.cpus = {0};
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
  bad.cpus = {};
  EXPECT_FALSE(bad.Validate());
  bad = spawn;
  bad.cpus = {-1};
  EXPECT_FALSE(bad.Validate());
  bad = spawn;
  bad.who.user = "";
  EXPECT_FALSE(bad.Validate());
}

TEST(LauncherMessagesTest, DestinationAndDeliverNeedAbsolutePaths) {
  CheckDestRequest check{.req = 1, .id = 1, .who = {1000, 1000, "a", {}}, .path = "rel"};
  EXPECT_FALSE(check.Validate());
  check.path = "/tmp";
  EXPECT_TRUE(check.Validate());
  DeliverRequest deliver{
      .req = 1, .id = 1, .who = {1000, 1000, "a", {}}, .dest = "", .max_bytes = 1};
  EXPECT_FALSE(deliver.Validate());
  ChildExited exited{.req = 0, .pid = 0, .status = 0};
  EXPECT_FALSE(exited.Validate());
}

TEST(ExecutorMessagesTest, WrongTypesNameTheField) {
  auto start = Decode<StartJob>(
      R"({"type":"start","req":1,"id":"x","cpus":[0],"mems":[0],"memory_max":[],"gpus":[],"mem_by_node":[],"gpu_link":[],"spans_nodes":false})");
  ASSERT_FALSE(start);
  EXPECT_NE(start.error().message().find("'id'"), std::string::npos);
  auto reg = Decode<RegisterJob>(R"({"type":"register","req":1,"id":"1"})");
  ASSERT_FALSE(reg);
  EXPECT_NE(reg.error().message().find("'id'"), std::string::npos);
}

TEST(ExecutorMessagesTest, StartAndSignalRanges) {
  EXPECT_FALSE(Decode<StartJob>(
      R"({"req":1,"id":1,"cpus":[],"mems":[0],"memory_max":[],"gpus":[],"mem_by_node":[],"gpu_link":[],"spans_nodes":false})"));
  EXPECT_FALSE(Decode<StartJob>(
      R"({"req":1,"id":1,"cpus":[-3],"mems":[0],"memory_max":[],"gpus":[],"mem_by_node":[],"gpu_link":[],"spans_nodes":false})"));
  EXPECT_FALSE(Decode<StartJob>(
      R"({"req":1,"id":1,"cpus":[0],"mems":[0],"memory_max":[0],"gpus":[],"mem_by_node":[],"gpu_link":[],"spans_nodes":false})"));
  EXPECT_TRUE(Decode<StartJob>(
      R"({"req":1,"id":1,"cpus":[0],"mems":[0],"memory_max":[5],"gpus":[],"mem_by_node":[],"gpu_link":[],"spans_nodes":false})"));
  EXPECT_FALSE(Decode<SignalJob>(R"({"req":1,"id":1,"signal":"stop","note":"","limit_s":0})"));
  EXPECT_FALSE(
      Decode<SignalJob>(R"({"req":1,"id":1,"signal":"term","note":"rm -rf","limit_s":0})"));
}

}  // namespace
}  // namespace hpcb::protocol
