#include "broker/machine_info.h"

#include <gtest/gtest.h>

namespace hpcb::broker {
namespace {

// Two nodes of 4 cpus; node 0 lost 2 cpus and 2 GiB to the reserve; one
// GPU on each node.
Machine TwoNodes() {
  Machine machine;
  machine.per_node_memory = true;
  NumaNode zero;
  zero.id = 0;
  zero.cpus = {2, 3};
  zero.reserved_cpus = 2;
  zero.mem_gib = 14;
  zero.reserved_mem_gib = 2;
  NumaNode one;
  one.id = 1;
  one.cpus = {4, 5, 6, 7};
  one.mem_gib = 16;
  machine.nodes = {zero, one};
  machine.gpus.ids = {0, 1};
  machine.gpus.node_of = {{0, 0}, {1, 1}};
  return machine;
}

TEST(DescribeMachineTest, CountsWhatJobsHoldPerNode) {
  Placement job;
  job.cpus = {3, 4};
  job.mem_by_node = {{0, 1.5}, {1, 0.25}};
  job.gpus = {1};
  protocol::InfoReply reply;

  DescribeMachine(TwoNodes(), {&job}, reply);

  ASSERT_EQ(reply.nodes.size(), 2u);
  const protocol::NodeInfo& zero = reply.nodes[0];
  EXPECT_EQ(zero.cpus.total, 4);
  EXPECT_EQ(zero.cpus.reserved, 2);
  EXPECT_EQ(zero.cpus.in_use, 1);
  EXPECT_EQ(zero.cpus.free, 1);
  ASSERT_TRUE(zero.mem_gib);
  EXPECT_EQ(zero.mem_gib->total, 16);
  EXPECT_EQ(zero.mem_gib->reserved, 2);
  EXPECT_EQ(zero.mem_gib->in_use, 1.5);
  EXPECT_EQ(zero.mem_gib->free, 12.5);
  EXPECT_EQ(zero.gpus.in_use, 0);
  EXPECT_EQ(zero.gpus.free, 1);
  const protocol::NodeInfo& one = reply.nodes[1];
  EXPECT_EQ(one.cpus.in_use, 1);
  EXPECT_EQ(one.cpus.free, 3);
  EXPECT_EQ(one.gpus.in_use, 1);
  EXPECT_EQ(one.gpus.free, 0);
  EXPECT_FALSE(reply.mem_gib) << "memory is per node";
}

TEST(DescribeMachineTest, MachineWideMemoryIsOneTotal) {
  Machine machine = TwoNodes();
  machine.per_node_memory = false;
  machine.machine_mem_gib = 30;
  machine.machine_reserved_mem_gib = 1;
  Placement job;
  job.mem_by_node = {{-1, 4}};
  protocol::InfoReply reply;

  DescribeMachine(machine, {&job}, reply);

  EXPECT_FALSE(reply.nodes[0].mem_gib);
  ASSERT_TRUE(reply.mem_gib);
  EXPECT_EQ(reply.mem_gib->total, 33) << "offered, plus the machine's and the nodes' reserve";
  EXPECT_EQ(reply.mem_gib->reserved, 3);
  EXPECT_EQ(reply.mem_gib->in_use, 4);
  EXPECT_EQ(reply.mem_gib->free, 26);
}

}  // namespace
}  // namespace hpcb::broker
