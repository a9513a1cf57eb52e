#include "client/slurm/slurm_nodes.h"

#include <gtest/gtest.h>

namespace hpcb::client::slurm {
namespace {

TEST(SlurmNodesTest, NodesAreReadFromOneLineEach) {
  std::vector<SlurmNode> nodes = ParseScontrolNodes(
      "NodeName=a CPUAlloc=1 CPUTot=4 Gres=gpu:2,gpu:v100:1(S:0,1) GresUsed=gpu:1(IDX:0) "
      "RealMemory=2048 AllocMem=512 State=MIXED OS=Linux 6.1.0 #1 SMP\n"
      "\n"
      "NodeName=b CPUTot=2 RealMemory=0 State=DOWN+DRAIN+NOT_RESPONDING Reason=gone [root@x]\n");
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[0].name, "a");
  EXPECT_EQ(nodes[0].info.cpus.free, 3);
  EXPECT_EQ(nodes[0].info.gpus.total, 3);
  EXPECT_EQ(nodes[0].info.gpus.in_use, 1);
  EXPECT_EQ(nodes[0].info.mem_gib->total, 2.0);
  EXPECT_EQ(nodes[0].info.mem_gib->free, 1.5);
  EXPECT_EQ(nodes[1].info.node, 1);
  EXPECT_EQ(nodes[1].reason, "gone [root@x]");
  EXPECT_FALSE(IsDraining(nodes[0].state));
  EXPECT_TRUE(IsDraining(nodes[1].state));
  EXPECT_FALSE(DrainedByDispatch(nodes[1]));
}

// Reason is free text, last on scontrol's line: a word with '=' in it is
// part of it.
TEST(SlurmNodesTest, TheReasonRunsToTheEndOfTheLine) {
  std::vector<SlurmNode> nodes = ParseScontrolNodes(
      "NodeName=a Arch=x86_64 CPUTot=2 State=IDLE+DRAIN ThreadsPerCore=1 "
      "Reason=fan=broken see ticket=42 [root@2024-05-01T10:00:00]\n");
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_EQ(nodes[0].reason, "fan=broken see ticket=42 [root@2024-05-01T10:00:00]");
  EXPECT_EQ(nodes[0].state, "IDLE+DRAIN");
  EXPECT_EQ(nodes[0].info.cpus.total, 2);
}

TEST(SlurmNodesTest, OnlyDispatchsOwnDrainOfALiveNodeIsUndone) {
  SlurmNode node{"a", "IDLE+DRAIN", "dispatch drain", {}};
  EXPECT_TRUE(DrainedByDispatch(node));
  node.reason = "dispatch drain [slurm@2024-05-01T10:00:00]";
  EXPECT_TRUE(DrainedByDispatch(node));
  for (const char* other : {"dispatch drained for repairs", "dispatch drainage", "dispatch",
                            "bad DIMM dispatch drain", ""}) {
    node.reason = other;
    EXPECT_FALSE(DrainedByDispatch(node)) << other;
  }
  node.reason = "dispatch drain";
  for (const char* down : {"DOWN+DRAIN", "IDLE+DRAIN+FAIL", "DOWN+DRAIN+NOT_RESPONDING"}) {
    node.state = down;
    EXPECT_FALSE(DrainedByDispatch(node)) << down;
  }
}

TEST(SlurmNodesTest, DrainLeavesDownNodesAndOthersReasonsAlone) {
  EXPECT_TRUE(DrainableByDispatch({"a", "IDLE", "", {}}));
  EXPECT_TRUE(DrainableByDispatch({"a", "MIXED", "", {}}));
  EXPECT_FALSE(DrainableByDispatch({"a", "DOWN", "", {}}));
  EXPECT_FALSE(DrainableByDispatch({"a", "DOWN+NOT_RESPONDING", "", {}}));
  EXPECT_FALSE(DrainableByDispatch({"a", "IDLE+FAIL", "", {}}));
  EXPECT_FALSE(DrainableByDispatch({"a", "IDLE", "reboot pending [root@x]", {}}));
  EXPECT_FALSE(DrainableByDispatch({"a", "ALLOCATED+DRAIN", "", {}}));
}

TEST(SlurmNodesTest, QueueCountsAndPolicy) {
  protocol::InfoReply reply;
  CountQueue(
      "PENDING Dependency\nPENDING Resources\nRUNNING None\nCOMPLETING None\n"
      "COMPLETED None\n",
      &reply);
  EXPECT_EQ(reply.queued, 2);
  EXPECT_EQ(reply.waiting, 1);
  EXPECT_EQ(reply.running, 2);
  EXPECT_EQ(SchedulerTypeOf("SchedulerParameters     = (null)\nSchedulerType = sched/builtin\n"),
            "sched/builtin");
  EXPECT_EQ(SchedulerTypeOf(""), "");
}

TEST(SlurmNodesTest, EveryNodeDrainingIsADrainedCluster) {
  std::vector<SlurmNode> nodes = ParseScontrolNodes(
      "NodeName=a State=IDLE+DRAIN Reason=dispatch drain [root@x]\n"
      "NodeName=b State=DRAINED Reason=dispatch drain [root@x]\n");
  EXPECT_TRUE(InfoFrom(nodes, "sched/backfill").draining);
  EXPECT_TRUE(DrainedByDispatch(nodes[0]));
  EXPECT_EQ(NodeNames(nodes), "a,b");
  nodes[1].state = "IDLE";
  EXPECT_FALSE(InfoFrom(nodes, "sched/backfill").draining);
}

}  // namespace
}  // namespace hpcb::client::slurm
