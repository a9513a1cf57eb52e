#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "broker/placement.h"
#include "tests/broker/fake_machine.h"

namespace hpcb::broker {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::Cpu;
using testing::Gpu;
using testing::Gpus;
using testing::kTopo4;
using testing::MakeMachine;
using testing::Topo8;

std::string Refusal(const Pool& pool, const JobDemand& demand) {
  Result<void> result = pool.Validate(demand);
  return result ? "ok" : result.error().message();
}

Placement Take(Pool& pool, const JobDemand& demand) {
  std::optional<Placement> placement = pool.TryPlace(demand);
  EXPECT_TRUE(placement.has_value());
  if (!placement) return {};
  pool.Reserve(*placement);
  return *placement;
}

TEST(PoolTest, DefaultBudgetsAreProportional) {
  Pool pool(MakeMachine(2, 4, 32));
  EXPECT_EQ(pool.DefaultBudget(1, false, 2), 8);
  EXPECT_EQ(pool.DefaultBudget(2, false, 2), 16);
  EXPECT_EQ(pool.DefaultBudget(4, false, 2), 32);
  EXPECT_EQ(pool.DefaultBudget(8, true, 2), 64);
  EXPECT_EQ(pool.DefaultBudget(1, false, 999), 32);
}

TEST(PoolTest, DefaultBudgetFloorsAndCaps) {
  EXPECT_EQ(Pool(MakeMachine(1, 64, 32)).DefaultBudget(1, false, 2), 2);
  EXPECT_EQ(Pool(MakeMachine(1, 4, 8)).DefaultBudget(1, false, 999), 8);
  EXPECT_EQ(Pool(MakeMachine(1, 3, 10)).DefaultBudget(1, false, 0), 3.33);
  EXPECT_EQ(Pool(MakeMachine(2, 4, 0)).DefaultBudget(1, false, 2), std::nullopt);
}

TEST(PoolTest, StingiestNodeDecidesTheBudget) {
  Machine machine = MakeMachine(2, 4, 32);
  machine.nodes[0].cpus = {2, 3};
  machine.nodes[0].mem_gib = 24;
  EXPECT_EQ(Pool(machine).DefaultBudget(4, false, 2), 24);
}

TEST(PoolTest, ValidationMessages) {
  Pool pool(MakeMachine(2, 4, 32, Gpus(4, kTopo4)));
  JobDemand five = Cpu(5);
  EXPECT_EQ(Refusal(pool, five),
            "--cpu 5 exceeds the largest NUMA node (4 cpus); jobs are always confined to a "
            "single node");
  EXPECT_EQ(Refusal(pool, Cpu(4)), "ok");
  JobDemand exclusive = Cpu(8);
  exclusive.exclusive = true;
  EXPECT_EQ(Refusal(pool, exclusive), "ok");
  exclusive.cpu = 9;
  EXPECT_EQ(Refusal(pool, exclusive), "--cpu 9 exceeds the 8 cores available to jobs");
  exclusive.cpu = 8;
  exclusive.numa_local_mem = true;
  EXPECT_THAT(Refusal(pool, exclusive), HasSubstr("exceeds the largest NUMA node (4 cpus)"));
  EXPECT_EQ(Refusal(pool, Gpu(5)), "--gpu-cores 5 exceeds the 4 gpus on this machine");
  EXPECT_EQ(Refusal(pool, Cpu(1, 48)), "ok");
  EXPECT_EQ(Refusal(pool, Cpu(1, 64)), "ok");
  EXPECT_EQ(Refusal(pool, Cpu(1, 65)), "--max-mem 65 exceeds the 64 GiB available to jobs");
  JobDemand local = Cpu(1, 32);
  local.numa_local_mem = true;
  EXPECT_EQ(Refusal(pool, local), "ok");
  local.mem_gib = 48;
  EXPECT_EQ(Refusal(pool, local),
            "--max-mem 48 exceeds the largest NUMA node (32 GiB) and --numa-local-mem keeps a "
            "job on one node; drop it to let the budget span nodes, or use --exclusive");
}

TEST(PoolTest, GpuValidationMessages) {
  Pool pool(MakeMachine(2, 4, 32, Gpus(8, Topo8())));
  JobDemand near = Gpu(4);
  near.numa_local_gpu = true;
  EXPECT_EQ(Refusal(pool, near), "ok");
  near.gpus = 5;
  EXPECT_EQ(Refusal(pool, near),
            "--gpu-cores 5 exceeds the 4 gpus on one NUMA node, and --numa-local-gpu keeps a "
            "job's gpus on one node; drop it to let them span nodes");
  EXPECT_EQ(Refusal(pool, Gpu(5)), "ok");
  JobDemand linked = Gpu(4);
  linked.min_gpu_link = "NV";
  EXPECT_EQ(Refusal(pool, linked), "ok");
  linked.gpus = 5;
  EXPECT_EQ(Refusal(pool, linked), "--gpu-cores 5 exceeds the 4 gpus this machine connects at NV or better");
}

TEST(PoolTest, GpuValidationWithoutTopology) {
  Pool pool(MakeMachine(2, 4, 32, Gpus(4, "")));
  JobDemand linked = Gpu(2);
  linked.min_gpu_link = "NV";
  EXPECT_EQ(Refusal(pool, linked),
            "--gpu-link NV needs the wiring that `nvidia-smi topo -m` reports, and this machine "
            "does not give it");
  linked.gpus = 1;
  EXPECT_EQ(Refusal(pool, linked), "ok");
  JobDemand near = Gpu(1);
  near.numa_local_gpu = true;
  EXPECT_THAT(Refusal(pool, near), HasSubstr("--numa-local-gpu needs to know which NUMA node"));
  near.gpus = 0;
  EXPECT_EQ(Refusal(pool, near), "ok");
}

TEST(PoolTest, AsymmetricNodesJudgedByLargest) {
  Machine machine = MakeMachine(2, 4, 32);
  machine.nodes[1].mem_gib = 64;
  Pool pool(machine);
  JobDemand local = Cpu(1, 48);
  local.numa_local_mem = true;
  EXPECT_EQ(Refusal(pool, local), "ok");
  local.mem_gib = 65;
  EXPECT_THAT(Refusal(pool, local), HasSubstr("largest NUMA node (64 GiB)"));
  EXPECT_EQ(Refusal(Pool(MakeMachine(2, 4, 0)), Cpu(1, 1000)), "ok");
}

TEST(PoolTest, CpuJobsFillNodesBestFit) {
  Pool pool(MakeMachine(2, 4, 32));
  EXPECT_THAT(Take(pool, Cpu(3)).cpus, ElementsAre(0, 1, 2));
  EXPECT_THAT(Take(pool, Cpu(3)).cpus, ElementsAre(4, 5, 6));
  EXPECT_FALSE(pool.TryPlace(Cpu(3)));
  EXPECT_TRUE(pool.TryPlace(Cpu(1)));
}

TEST(PoolTest, TwoMemoryHeavyJobsGoToDifferentNodes) {
  Pool pool(MakeMachine(2, 4, 32));
  Placement first = Take(pool, Cpu(1, 24));
  Placement second = Take(pool, Cpu(1, 24));
  EXPECT_THAT(first.mems, ElementsAre(0));
  EXPECT_THAT(second.mems, ElementsAre(1));
  EXPECT_EQ(second.mem_by_node, (std::map<int, double>{{1, 24}}));
}

TEST(PoolTest, BudgetSpreadsOverNodes) {
  Pool pool(MakeMachine(2, 4, 32));
  Placement placement = Take(pool, Cpu(1, 48));
  EXPECT_EQ(placement.mem_by_node, (std::map<int, double>{{0, 32}, {1, 16}}));
  EXPECT_THAT(placement.mems, ElementsAre(0, 1));
  EXPECT_TRUE(placement.spans_nodes);
  EXPECT_THAT(placement.cpus, ElementsAre(0));
  EXPECT_FALSE(pool.TryPlace(Cpu(1, 17)));
  pool.Release(placement);
  EXPECT_TRUE(pool.TryPlace(Cpu(1, 64)));
}

TEST(PoolTest, SpillingJobHomesOnNodeWithMostFreeMemory) {
  Pool pool(MakeMachine(2, 4, 32));
  Take(pool, Cpu(1, 20));
  Placement placement = Take(pool, Cpu(1, 40));
  EXPECT_EQ(placement.mem_by_node, (std::map<int, double>{{0, 8}, {1, 32}}));
  EXPECT_THAT(placement.cpus, ElementsAre(4));
}

TEST(PoolTest, NumaLocalMemWaitsInsteadOfSpanning) {
  Pool pool(MakeMachine(2, 4, 32));
  Take(pool, Cpu(1, 20));
  JobDemand local = Cpu(1, 30);
  local.numa_local_mem = true;
  Placement placement = Take(pool, local);
  EXPECT_THAT(placement.mems, ElementsAre(1));
  EXPECT_FALSE(pool.TryPlace(local));
  EXPECT_FALSE(pool.TryPlace(Cpu(1, 65)));
}

TEST(PoolTest, ExclusiveSpansAndBlocks) {
  Pool pool(MakeMachine(2, 4, 32));
  JobDemand exclusive = Cpu(8, 64);
  exclusive.exclusive = true;
  Placement busy = Take(pool, Cpu(1));
  EXPECT_FALSE(pool.TryPlace(exclusive));
  pool.Release(busy);
  Placement placement = Take(pool, exclusive);
  EXPECT_THAT(placement.cpus, ElementsAre(0, 1, 2, 3, 4, 5, 6, 7));
  EXPECT_TRUE(placement.exclusive);
  EXPECT_FALSE(pool.TryPlace(Cpu(0)));
  pool.Release(placement);
  EXPECT_TRUE(pool.TryPlace(Cpu(1)));
}

TEST(PoolTest, ExclusiveNumaLocalMemStaysOnOneNode) {
  Pool pool(MakeMachine(2, 4, 32));
  JobDemand exclusive = Cpu(4, 32);
  exclusive.exclusive = true;
  exclusive.numa_local_mem = true;
  Placement placement = Take(pool, exclusive);
  EXPECT_THAT(placement.cpus, ElementsAre(0, 1, 2, 3));
  EXPECT_THAT(placement.mems, ElementsAre(0));
}

TEST(PoolTest, MachineWideMemory) {
  Machine machine = MakeMachine(2, 4, 32);
  machine.per_node_memory = false;
  Pool pool(machine);
  Placement placement = Take(pool, Cpu(1, 48));
  EXPECT_EQ(placement.mem_by_node, (std::map<int, double>{{-1, 48}}));
  EXPECT_THAT(placement.mems, ElementsAre(0));
  EXPECT_FALSE(placement.spans_nodes);
  EXPECT_FALSE(pool.TryPlace(Cpu(1, 24)));
  pool.Release(placement);
  EXPECT_TRUE(pool.TryPlace(Cpu(1, 64)));
}

TEST(PoolTest, ForeignChargesFoldOntoHome) {
  Pool pool(MakeMachine(2, 4, 32));
  Placement legacy;
  legacy.cpus = {4};
  legacy.mem_by_node = {{-1, 16}};
  pool.Reserve(legacy);
  EXPECT_FALSE(pool.TryPlace(Cpu(1, 50)));
  pool.Release(legacy);
  EXPECT_TRUE(pool.TryPlace(Cpu(1, 64)));
}

TEST(PoolTest, ReleaseIgnoresWhatItDoesNotOwn) {
  Pool pool(MakeMachine(1, 2, 8, Gpus(4, "")));
  Placement bogus;
  bogus.cpus = {0, 99};
  bogus.gpus = {7};
  bogus.mem_by_node = {{0, 100}};
  pool.Release(bogus);
  EXPECT_FALSE(pool.TryPlace(Cpu(3)));
  EXPECT_FALSE(pool.TryPlace(Gpu(5)));
  EXPECT_FALSE(pool.TryPlace(Cpu(1, 9)));
}

TEST(PoolTest, GpusPullCpusToTheirNode) {
  Pool pool(MakeMachine(2, 4, 32, Gpus(4, kTopo4)));
  Placement one = Take(pool, Gpu(1));
  EXPECT_THAT(one.gpus, ElementsAre(0));
  EXPECT_THAT(Take(pool, Gpu(1)).gpus, ElementsAre(1));
  pool.Release(one);
  JobDemand pair = Gpu(2);
  pair.cpu = 2;
  Placement placement = Take(pool, pair);
  EXPECT_THAT(placement.gpus, ElementsAre(2, 3));
  EXPECT_THAT(placement.cpus, ElementsAre(4, 5));
  EXPECT_EQ(placement.gpu_link, "NV2");
}

TEST(PoolTest, WideGpuJobRecordsWorstLink) {
  Pool pool(MakeMachine(2, 4, 32, Gpus(4, kTopo4)));
  Placement placement = Take(pool, Gpu(3));
  EXPECT_THAT(placement.gpus, ElementsAre(0, 1, 2));
  EXPECT_EQ(placement.gpu_link, "SYS");
  EXPECT_FALSE(pool.TryPlace(Gpu(2)));
}

TEST(PoolTest, NumaLocalGpuPutsCpusOnGpuNode) {
  Pool pool(MakeMachine(2, 4, 32, Gpus(8, Topo8())));
  for (int g = 0; g < 3; ++g) Take(pool, Gpu(1));
  JobDemand near = Gpu(2);
  near.numa_local_gpu = true;
  Placement placement = Take(pool, near);
  EXPECT_THAT(placement.gpus, ElementsAre(4, 5));
  EXPECT_EQ(placement.cpus.front() / 4, 1);
}

TEST(PoolTest, MemoryOverridesGpuAffinity) {
  Pool pool(MakeMachine(2, 4, 32, Gpus(4, kTopo4)));
  Take(pool, Cpu(1, 20));  // node 0 keeps 12 GiB
  Take(pool, Cpu(1, 30));  // node 1 keeps 2 GiB
  Placement gpu_job = Take(pool, Gpu(2));
  EXPECT_THAT(gpu_job.gpus, ElementsAre(0, 1));
  JobDemand far = Gpu(2);
  far.mem_gib = 10;
  Placement placement = Take(pool, far);
  EXPECT_THAT(placement.gpus, ElementsAre(2, 3));
  EXPECT_THAT(placement.mems, ElementsAre(0));
}

// Upstream bug #1: the numa-local flags are inert for a job without GPUs.
TEST(PoolTest, NumaLocalWithoutGpusNeverWaitsOnTopology) {
  JobDemand demand = Cpu(1);
  demand.numa_local_gpu = true;
  demand.numa_local_mem = true;
  EXPECT_TRUE(Pool(MakeMachine(2, 4, 32)).TryPlace(demand));
  Pool gpu_box(MakeMachine(2, 4, 32, Gpus(4, "")));
  EXPECT_EQ(Refusal(gpu_box, demand), "ok");
  Take(gpu_box, Gpu(4));
  EXPECT_TRUE(gpu_box.TryPlace(demand));
}

TEST(PoolTest, CopiesAreIndependent) {
  Pool pool(MakeMachine(2, 4, 32));
  Pool twin = pool;
  JobDemand exclusive = Cpu(8);
  exclusive.exclusive = true;
  Take(twin, exclusive);
  EXPECT_TRUE(pool.TryPlace(Cpu(4)));
  EXPECT_EQ(pool.TotalCpus(), 8);
  EXPECT_TRUE(pool.tracks_memory());
  EXPECT_FALSE(pool.machine_has_gpus());
}

}  // namespace
}  // namespace hpcb::broker
