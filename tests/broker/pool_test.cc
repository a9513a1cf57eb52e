#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "broker/placement.h"
#include "tests/broker/fake_machine.h"

namespace hpcb::broker {
namespace {

using testing::Cpu;
using ::testing::ElementsAre;
using testing::ExpectOwnCores;
using testing::Gpu;
using testing::Gpus;
using ::testing::HasSubstr;
using testing::kTopo4;
using testing::MakeMachine;
using testing::MakeSmtMachine;
using testing::Topo8;

std::string Refusal(const Pool& pool, const JobDemand& demand) {
  Result<void> result = pool.Validate(demand);
  return result ? "ok" : result.error().message();
}

JobDemand Exclusive(int cpu, double mem = 0) {
  JobDemand demand = Cpu(cpu, mem);
  demand.exclusive = true;
  return demand;
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
  // More than the whole machine: still the node is the limit that matters.
  EXPECT_EQ(Refusal(pool, Cpu(9)),
            "--cpu 9 exceeds the largest NUMA node (4 cpus); jobs are always confined to a "
            "single node");
  JobDemand exclusive = Cpu(8);
  exclusive.exclusive = true;
  EXPECT_EQ(Refusal(pool, exclusive), "ok");
  exclusive.cpu = 9;
  EXPECT_EQ(Refusal(pool, exclusive), "--cpu 9 exceeds the 8 cores available to jobs");
  exclusive.cpu = 8;
  exclusive.numa_local_mem = true;
  EXPECT_EQ(Refusal(pool, exclusive),
            "--cpu 8 exceeds the largest NUMA node (4 cpus); --numa-local-mem keeps this "
            "exclusive job on one node");
  // Without --cpu it asks for what it may have: the largest node.
  EXPECT_EQ(pool.ExclusiveCpus(exclusive), 4);
  exclusive.numa_local_mem = false;
  EXPECT_EQ(pool.ExclusiveCpus(exclusive), 8);
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
  EXPECT_EQ(Refusal(pool, linked),
            "--gpu-cores 5 exceeds the 4 gpus this machine connects at NV or better");
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
  for (int g = 0; g < 3; ++g)
    Take(pool, Gpu(1));
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

// The numa-local flags are inert for a job without GPUs (docs/user-guide.md, "GPUs and NUMA
// locality").
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

// 2 nodes x 4 cores x 2 threads: node 0 holds cores {0,8} {1,9} {2,10}
// {3,11}, node 1 holds {4,12} .. {7,15}.
TEST(PoolSmtTest, CpuCountsRoundUpToWholeCores) {
  Machine machine = MakeSmtMachine(2, 4, 2, 32);
  Pool pool(machine);
  EXPECT_EQ(pool.TotalCpus(), 16);
  EXPECT_EQ(pool.TotalCores(), 8);
  EXPECT_EQ(pool.Grant(Cpu(1)), (CpuGrant{2, 1}));
  EXPECT_EQ(pool.Grant(Cpu(3)), (CpuGrant{4, 2}));
  EXPECT_EQ(pool.Grant(Cpu(4)), (CpuGrant{4, 2}));
  EXPECT_EQ(pool.Grant(Exclusive(16)), (CpuGrant{16, 8}));
  Placement three = Take(pool, Cpu(3));
  EXPECT_THAT(three.cpus, ElementsAre(0, 1, 8, 9));
  EXPECT_EQ(three.cores, 2);
  // Best fit still packs node 0 first, a core at a time.
  Placement a = Take(pool, Cpu(1));
  Placement b = Take(pool, Cpu(1));
  Placement c = Take(pool, Cpu(1));
  EXPECT_THAT(a.cpus, ElementsAre(2, 10));
  EXPECT_THAT(b.cpus, ElementsAre(3, 11));
  EXPECT_THAT(c.cpus, ElementsAre(4, 12));
  EXPECT_FALSE(pool.TryPlace(Cpu(7)));  // node 1 has 3 free cores = 6 cpus
  Placement six = Take(pool, Cpu(6));
  EXPECT_THAT(six.cpus, ElementsAre(5, 6, 7, 13, 14, 15));
  EXPECT_FALSE(pool.TryPlace(Cpu(1)));
  ExpectOwnCores(machine, {&three, &a, &b, &c, &six});
  pool.Release(a);
  EXPECT_THAT(Take(pool, Cpu(1)).cpus, ElementsAre(2, 10));
}

// 2 nodes x 2 cores x 4 threads: node 0 holds {0,4,8,12} {1,5,9,13}.
TEST(PoolSmtTest, FourWayCoresAreNeverSplit) {
  Machine machine = MakeSmtMachine(2, 2, 4, 32);
  Pool pool(machine);
  EXPECT_EQ(pool.Grant(Cpu(1)), (CpuGrant{4, 1}));
  EXPECT_EQ(pool.Grant(Cpu(5)), (CpuGrant{8, 2}));
  std::vector<Placement> held;
  for (int i = 0; i < 4; ++i)
    held.push_back(Take(pool, Cpu(1)));
  EXPECT_FALSE(pool.TryPlace(Cpu(1)));
  EXPECT_THAT(held[0].cpus, ElementsAre(0, 4, 8, 12));
  EXPECT_THAT(held[1].cpus, ElementsAre(1, 5, 9, 13));
  ExpectOwnCores(machine, {&held[0], &held[1], &held[2], &held[3]});
  pool.Release(held[1]);
  pool.Release(held[2]);
  // One free core on each node: a 5-cpu job needs two on one node.
  EXPECT_FALSE(pool.TryPlace(Cpu(5)));
  Placement four = Take(pool, Cpu(4));
  EXPECT_EQ(four.cpus.size(), 4u);
  ExpectOwnCores(machine, {&held[0], &held[3], &four});
}

TEST(PoolSmtTest, ValidationCountsCpusAndNamesCores) {
  Pool pool(MakeSmtMachine(2, 2, 4, 32));
  EXPECT_EQ(Refusal(pool, Cpu(8)), "ok");
  EXPECT_EQ(Refusal(pool, Cpu(9)),
            "--cpu 9 exceeds the largest NUMA node (8 cpus); jobs are always confined to a "
            "single node");
  EXPECT_EQ(Refusal(pool, Exclusive(16)), "ok");
  EXPECT_EQ(Refusal(pool, Exclusive(17)),
            "--cpu 17 exceeds the 16 cpus (4 cores) available to jobs");
}

TEST(PoolSmtTest, ExclusiveSpansInWholeCores) {
  Machine machine = MakeSmtMachine(2, 4, 2, 32);
  Pool pool(machine);
  EXPECT_EQ(pool.Grant(Exclusive(10)), (CpuGrant{10, 5}));
  EXPECT_EQ(pool.Grant(Exclusive(9)), (CpuGrant{10, 5}));
  Placement wide = Take(pool, Exclusive(9));
  EXPECT_THAT(wide.cpus, ElementsAre(0, 1, 2, 3, 4, 8, 9, 10, 11, 12));
  EXPECT_EQ(wide.cores, 5);
  EXPECT_THAT(wide.mems, ElementsAre(0, 1));
  ExpectOwnCores(machine, {&wide});
  EXPECT_FALSE(pool.TryPlace(Cpu(1)));
  pool.Release(wide);
  Placement all = Take(pool, Exclusive(16, 64));
  EXPECT_EQ(all.cpus.size(), 16u);
  EXPECT_EQ(all.cores, 8);
  pool.Release(all);
  Placement busy = Take(pool, Cpu(1));
  EXPECT_FALSE(pool.TryPlace(Exclusive(1)));
  pool.Release(busy);
  Placement small = Take(pool, Exclusive(1));
  EXPECT_THAT(small.cpus, ElementsAre(0, 8));
}

// Memory shares follow what a job is given: a --cpu 1 job holds two of a
// node's eight cpus, so four of them fill the node's memory between them.
TEST(PoolSmtTest, DefaultBudgetIsTheShareOfWholeCores) {
  Pool pool(MakeSmtMachine(2, 4, 2, 32));
  EXPECT_EQ(pool.DefaultBudget(1, false, 2), 8);
  EXPECT_EQ(pool.DefaultBudget(2, false, 2), 8);
  EXPECT_EQ(pool.DefaultBudget(3, false, 2), 16);
  EXPECT_EQ(pool.DefaultBudget(8, false, 2), 32);
  EXPECT_EQ(pool.DefaultBudget(16, true, 2), 64);
  Machine wide = MakeSmtMachine(2, 4, 2, 32);
  wide.per_node_memory = false;
  EXPECT_EQ(Pool(wide).DefaultBudget(1, false, 2), 8);
  EXPECT_EQ(Pool(wide).DefaultBudget(3, false, 2), 16);
}

// A placement from before the unit changed holds one thread of core
// {0,8}: its sibling is not handed to anyone until it is released.
TEST(PoolSmtTest, AHalfHeldCoreIsNotFree) {
  Machine machine = MakeSmtMachine(1, 2, 2, 0);
  Pool pool(machine);
  Placement legacy;
  legacy.cpus = {0};
  pool.Reserve(legacy);
  Placement next = Take(pool, Cpu(1));
  EXPECT_THAT(next.cpus, ElementsAre(1, 3));
  EXPECT_FALSE(pool.TryPlace(Cpu(1)));
  pool.Release(legacy);
  EXPECT_THAT(Take(pool, Cpu(1)).cpus, ElementsAre(0, 2));
}

// Cores of different sizes (hybrid parts): the smallest core that covers
// the rest of a request, else the largest.
TEST(PoolSmtTest, MixedCoreSizesWasteLittle) {
  Machine machine = MakeMachine(1, 0, 0);
  machine.nodes[0].cpus = {0, 1, 2, 3, 4, 5};
  machine.nodes[0].cores = {{0, 1}, {2, 3}, {4}, {5}};
  Pool pool(machine);
  EXPECT_EQ(pool.TotalCores(), 4);
  EXPECT_THAT(Take(pool, Cpu(1)).cpus, ElementsAre(4));
  EXPECT_THAT(Take(pool, Cpu(3)).cpus, ElementsAre(0, 1, 5));
  EXPECT_THAT(Take(pool, Cpu(1)).cpus, ElementsAre(2, 3));
}

// Sibling groups are cut to the node's cpus: a cpu the reserve or another
// node took never comes back through its sibling's group.
TEST(PoolSmtTest, GroupsAreCutToTheNodesCpus) {
  Machine machine = MakeMachine(2, 0, 0);
  machine.nodes[0].cpus = {0, 1};
  machine.nodes[0].cores = {{0, 1, 2}};
  machine.nodes[1].cpus = {2, 3};
  machine.nodes[1].cores = {{2, 3}};
  Pool pool(machine);
  EXPECT_EQ(pool.TotalCpus(), 4);
  EXPECT_EQ(pool.TotalCores(), 2);
  EXPECT_THAT(Take(pool, Cpu(1)).cpus, ElementsAre(0, 1));
  EXPECT_THAT(Take(pool, Cpu(1)).cpus, ElementsAre(2, 3));
}

TEST(PoolSmtTest, GpuJobsGetWholeCoresNearTheirGpus) {
  Machine machine = MakeSmtMachine(2, 4, 2, 32, Gpus(4, kTopo4));
  Pool pool(machine);
  Placement first = Take(pool, Gpu(2));
  JobDemand pair = Gpu(2);
  pair.cpu = 3;
  Placement second = Take(pool, pair);
  EXPECT_THAT(second.gpus, ElementsAre(2, 3));
  EXPECT_THAT(second.cpus, ElementsAre(4, 5, 12, 13));
  ExpectOwnCores(machine, {&first, &second});
}

}  // namespace
}  // namespace hpcb::broker
