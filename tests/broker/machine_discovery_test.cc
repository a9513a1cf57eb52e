#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "broker/placement.h"
#include "tests/broker/fake_machine.h"

namespace hpcb::broker {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;

class DiscoveryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "hpcb-discovery-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
    config_.sys_root = (root_ / "sys").string();
    config_.nvidia_smi = (root_ / "no-such-nvidia-smi").string();
    config_.reserve_cpu = 0;
    config_.reserve_mem_gib = 0;
  }
  void TearDown() override { fs::remove_all(root_); }

  static void Write(const fs::path& path, const std::string& text) {
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
  }

  // A node with the given cpulist; mem_gib < 0 writes no meminfo.
  void AddNode(int id, const std::string& cpulist, double mem_gib) {
    fs::path dir = root_ / "sys/devices/system/node" / ("node" + std::to_string(id));
    Write(dir / "cpulist", cpulist + "\n");
    if (mem_gib >= 0) {
      long long kb = static_cast<long long>(mem_gib * 1024 * 1024);
      Write(dir / "meminfo", "Node " + std::to_string(id) +
                                 " MemTotal:       " + std::to_string(kb) + " kB\nNode " +
                                 std::to_string(id) + " MemFree:        1 kB\n");
    }
  }

  // cpuN/topology/<file> holding `siblings`, for each cpu listed in it.
  void AddSiblings(const std::string& siblings, const std::vector<int>& cpus,
                   const std::string& file = "thread_siblings_list") {
    for (int cpu : cpus) {
      Write(root_ / "sys/devices/system/cpu" / ("cpu" + std::to_string(cpu)) / "topology" / file,
            siblings + "\n");
    }
  }

  // A shell script answering -L and topo -m with canned text, exiting
  // with `rc` (topo -m with `topo_rc` where given).
  void FakeNvidiaSmi(const std::string& list, const std::string& topo, int rc = 0,
                     std::optional<int> topo_rc = std::nullopt) {
    fs::path script = root_ / "nvidia-smi";
    Write(root_ / "list.txt", list);
    Write(root_ / "topo.txt", topo);
    Write(script, "#!/bin/sh\nif [ \"$1\" = -L ]; then cat '" + (root_ / "list.txt").string() +
                      "'; exit " + std::to_string(rc) + "; fi\ncat '" +
                      (root_ / "topo.txt").string() + "'\nexit " +
                      std::to_string(topo_rc.value_or(rc)) + "\n");
    fs::permissions(script, fs::perms::owner_all);
    config_.nvidia_smi = script.string();
  }

  Machine Discover(bool confine = true) {
    Result<Machine> machine = DiscoverMachine(config_, confine);
    EXPECT_TRUE(machine.has_value());
    return machine ? *machine : Machine{};
  }
  // What discovery logs.
  std::string LogOfDiscover(bool confine = true) {
    ::testing::internal::CaptureStderr();
    Discover(confine);
    return ::testing::internal::GetCapturedStderr();
  }

  fs::path root_;
  DaemonConfig config_;
};

TEST_F(DiscoveryTest, TwoNodesPerNodeMemory) {
  AddNode(0, "0-3", 32);
  AddNode(1, "4-7", 32);
  Machine machine = Discover();
  ASSERT_EQ(machine.nodes.size(), 2u);
  EXPECT_THAT(machine.nodes[1].cpus, ElementsAre(4, 5, 6, 7));
  EXPECT_DOUBLE_EQ(machine.nodes[0].mem_gib, 32);
  EXPECT_TRUE(machine.per_node_memory);
  EXPECT_TRUE(machine.gpus.ids.empty());  // missing nvidia-smi: no GPUs
  Pool pool(machine);
  EXPECT_EQ(pool.DefaultBudget(1, false, 2), 8);
  EXPECT_EQ(pool.DefaultBudget(2, false, 2), 16);
  EXPECT_EQ(pool.DefaultBudget(4, false, 2), 32);
  EXPECT_EQ(pool.DefaultBudget(8, true, 2), 64);
}

TEST_F(DiscoveryTest, ReserveTakesLowestNodeAndCpus) {
  AddNode(0, "0-3", 32);
  AddNode(1, "4-7", 32);
  config_.reserve_cpu = 2;
  config_.reserve_mem_gib = 8;
  Machine machine = Discover();
  EXPECT_THAT(machine.nodes[0].cpus, ElementsAre(2, 3));
  EXPECT_DOUBLE_EQ(machine.nodes[0].mem_gib, 24);
  EXPECT_THAT(machine.nodes[1].cpus, ElementsAre(4, 5, 6, 7));
  EXPECT_DOUBLE_EQ(machine.nodes[1].mem_gib, 32);
  EXPECT_EQ(Pool(machine).DefaultBudget(4, false, 2), 24);
  // What `dispatch info` shows as held back.
  EXPECT_EQ(machine.nodes[0].reserved_cpus, 2);
  EXPECT_DOUBLE_EQ(machine.nodes[0].reserved_mem_gib, 8);
  EXPECT_EQ(machine.nodes[1].reserved_cpus, 0);
  EXPECT_DOUBLE_EQ(machine.nodes[1].reserved_mem_gib, 0);
}

TEST_F(DiscoveryTest, ReserveSpillsButNeverStrandsANode) {
  AddNode(0, "0,1", 8);
  AddNode(1, "2-5", 8);
  config_.reserve_cpu = 4;
  Machine machine = Discover();
  EXPECT_THAT(machine.nodes[0].cpus, ElementsAre(1));
  EXPECT_THAT(machine.nodes[1].cpus, ElementsAre(5));
}

TEST_F(DiscoveryTest, HugeReserveKeepsOneCpuAndHalfTheMemory) {
  AddNode(0, "0,1", 8);
  config_.reserve_cpu = 99;
  config_.reserve_mem_gib = 99;
  Machine machine = Discover();
  EXPECT_THAT(machine.nodes[0].cpus, ElementsAre(1));
  EXPECT_DOUBLE_EQ(machine.nodes[0].mem_gib, 4);
}

TEST_F(DiscoveryTest, FourNodesSkippingMemoryOnlyNode) {
  for (int n = 0; n < 4; ++n)
    AddNode(n, std::to_string(2 * n) + "-" + std::to_string(2 * n + 1), 16);
  AddNode(4, "", 64);
  Machine machine = Discover();
  ASSERT_EQ(machine.nodes.size(), 4u);
  EXPECT_EQ(machine.nodes[3].id, 3);
  EXPECT_EQ(Pool(machine).TotalCpus(), 8);
}

TEST_F(DiscoveryTest, WithoutCgroupsMemoryIsMachineWide) {
  AddNode(0, "0-3", 32);
  AddNode(1, "4-7", 32);
  config_.reserve_mem_gib = 8;
  Machine machine = Discover(/*confine=*/false);
  EXPECT_FALSE(machine.per_node_memory);
  EXPECT_DOUBLE_EQ(machine.machine_mem_gib, 56);
  EXPECT_DOUBLE_EQ(machine.nodes[0].reserved_mem_gib, 8) << "taken from node 0's share";
}

TEST_F(DiscoveryTest, MissingMeminfoFallsBackToMachineMemory) {
  AddNode(0, "0-3", 32);
  AddNode(1, "4-7", -1);
  Machine machine = Discover();
  EXPECT_FALSE(machine.per_node_memory);
  EXPECT_GT(machine.machine_mem_gib, 0);
  EXPECT_EQ(machine.nodes[0].mem_gib, 0);
}

TEST_F(DiscoveryTest, NoNodesMeansOneNodeWithEveryCpu) {
  Machine machine = Discover();
  ASSERT_EQ(machine.nodes.size(), 1u);
  EXPECT_EQ(machine.nodes[0].id, 0);
  EXPECT_EQ(static_cast<long>(machine.nodes[0].cpus.size()), sysconf(_SC_NPROCESSORS_CONF));
  EXPECT_FALSE(machine.per_node_memory);
}

TEST_F(DiscoveryTest, FourGpusFromFakeNvidiaSmi) {
  AddNode(0, "0-3", 32);
  AddNode(1, "4-7", 32);
  FakeNvidiaSmi(testing::kList4, testing::kTopo4);
  Machine machine = Discover();
  EXPECT_THAT(machine.gpus.ids, ElementsAre(0, 1, 2, 3));
  EXPECT_EQ(machine.gpus.links.size(), 6u);
  EXPECT_EQ(machine.gpus.node_of.at(3), 1);
}

TEST_F(DiscoveryTest, EightGpusFromFakeNvidiaSmi) {
  AddNode(0, "0-3", 32);
  AddNode(1, "4-7", 32);
  FakeNvidiaSmi(testing::List8(), testing::Topo8());
  Machine machine = Discover();
  EXPECT_EQ(machine.gpus.ids.size(), 8u);
  EXPECT_EQ(machine.gpus.links.size(), 28u);
  EXPECT_EQ(machine.gpus.links.at({4, 7}), "NV12");
}

TEST_F(DiscoveryTest, FailingNvidiaSmiMeansNoGpus) {
  AddNode(0, "0-3", 32);
  FakeNvidiaSmi(testing::kList4, testing::kTopo4, /*rc=*/9);
  EXPECT_TRUE(Discover().gpus.ids.empty());
}

// -L answers but topo -m fails, as on a driver without topology support.
TEST_F(DiscoveryTest, MissingTopologyWithSeveralGpusIsWarnedAbout) {
  AddNode(0, "0-3", 32);
  FakeNvidiaSmi(testing::kList4, "", 0, 3);
  ::testing::internal::CaptureStderr();
  Machine machine = Discover();
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(machine.gpus.ids.size(), 4u);
  EXPECT_TRUE(machine.gpus.links.empty());
  EXPECT_NE(log.find("gpu topology unavailable"), std::string::npos) << log;
  EXPECT_NE(log.find("multi-gpu jobs will get the lowest free indices"), std::string::npos) << log;

  // One GPU has no interconnect to straddle.
  Write(root_ / "list.txt", "GPU 0: Fake (UUID: GPU-0)\n");
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(Discover().gpus.ids.size(), 1u);
  EXPECT_EQ(::testing::internal::GetCapturedStderr().find("gpu topology unavailable"),
            std::string::npos);
}

TEST_F(DiscoveryTest, ResourcesLineNamesTheReserve) {
  AddNode(0, "0-3", 32);
  AddNode(1, "4-7", 32);
  config_.reserve_cpu = 1;
  config_.reserve_mem_gib = 2;
  const std::string log = LogOfDiscover();
  EXPECT_NE(log.find("resources available to jobs: 7 cpus over 2 NUMA node(s), 0 gpu(s)"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("; reserved for the system: 1 cpu, 2 GiB"), std::string::npos) << log;
}

// The line says what was held back, not what was asked: a node keeps one
// core, and no more than half of a node's memory is reserved.
TEST_F(DiscoveryTest, ResourcesLineNamesWhatWasHeldBack) {
  AddNode(0, "0-1", 8);
  config_.reserve_cpu = 2;
  config_.reserve_mem_gib = 6;
  const std::string log = LogOfDiscover();
  EXPECT_NE(log.find("--reserve-cpu 2 holds back 1 cpu (whole cores"), std::string::npos) << log;
  EXPECT_NE(log.find("resources available to jobs: 1 cpu over 1 NUMA node(s)"), std::string::npos)
      << log;
  EXPECT_NE(log.find("; reserved for the system: 1 cpu, 4 GiB"), std::string::npos) << log;
  // Jobs not held to nodes (--no-cgroups): the memory was held back all the same.
  const std::string unconfined = LogOfDiscover(/*confine=*/false);
  EXPECT_NE(unconfined.find("; reserved for the system: 1 cpu, 4 GiB"), std::string::npos)
      << unconfined;
}

// Adjacent siblings, as AMD parts and qemu number them.
TEST_F(DiscoveryTest, TwoWaySiblingsBecomeCores) {
  AddNode(0, "0-7", 32);
  AddNode(1, "8-15", 32);
  for (int core = 0; core < 8; ++core) {
    AddSiblings(std::to_string(2 * core) + "-" + std::to_string(2 * core + 1),
                {2 * core, 2 * core + 1});
  }
  Machine machine = Discover();
  ASSERT_EQ(machine.nodes.size(), 2u);
  EXPECT_THAT(machine.nodes[0].cores, ElementsAre(ElementsAre(0, 1), ElementsAre(2, 3),
                                                  ElementsAre(4, 5), ElementsAre(6, 7)));
  EXPECT_THAT(machine.nodes[1].cores.front(), ElementsAre(8, 9));
  Pool pool(machine);
  EXPECT_EQ(pool.TotalCores(), 8);
  EXPECT_EQ(pool.DefaultBudget(1, false, 2), 8);
  EXPECT_EQ(pool.Grant(testing::Cpu(3)), (CpuGrant{4, 2}));
}

// x86 numbering, four threads a core: core k is {k, k+4, k+8, k+12}.
TEST_F(DiscoveryTest, FourWayInterleavedSiblings) {
  AddNode(0, "0-1,4-5,8-9,12-13", 32);
  AddNode(1, "2-3,6-7,10-11,14-15", 32);
  for (int core = 0; core < 4; ++core) {
    AddSiblings(std::to_string(core) + "," + std::to_string(core + 4) + "," +
                    std::to_string(core + 8) + "," + std::to_string(core + 12),
                {core, core + 4, core + 8, core + 12});
  }
  Machine machine = Discover();
  EXPECT_THAT(machine.nodes[0].cores,
              ElementsAre(ElementsAre(0, 4, 8, 12), ElementsAre(1, 5, 9, 13)));
  EXPECT_THAT(machine.nodes[1].cores,
              ElementsAre(ElementsAre(2, 6, 10, 14), ElementsAre(3, 7, 11, 15)));
}

TEST_F(DiscoveryTest, CoreCpusListIsPreferred) {
  AddNode(0, "0-3", 8);
  AddSiblings("0", {0});
  AddSiblings("1", {1});
  AddSiblings("0-1", {0, 1}, "core_cpus_list");
  Machine machine = Discover();
  EXPECT_THAT(machine.nodes[0].cores,
              ElementsAre(ElementsAre(0, 1), ElementsAre(2), ElementsAre(3)));
}

TEST_F(DiscoveryTest, ThreadUnitIgnoresSiblings) {
  AddNode(0, "0-3", 8);
  AddSiblings("0-1", {0, 1});
  AddSiblings("2-3", {2, 3});
  config_.cpu_unit = "thread";
  config_.reserve_cpu = 1;
  Machine machine = Discover();
  EXPECT_THAT(machine.nodes[0].cpus, ElementsAre(1, 2, 3));
  EXPECT_THAT(machine.nodes[0].cores, ElementsAre(ElementsAre(1), ElementsAre(2), ElementsAre(3)));
  EXPECT_EQ(Pool(machine).Grant(testing::Cpu(1)), (CpuGrant{1, 1}));
}

// --reserve-cpu 3 on 2-way SMT holds back two whole cores; a node keeps
// one core however much is asked.
TEST_F(DiscoveryTest, ReserveTakesWholeCores) {
  AddNode(0, "0-3", 8);
  AddNode(1, "4-7", 8);
  for (int core = 0; core < 4; ++core) {
    AddSiblings(std::to_string(2 * core) + "-" + std::to_string(2 * core + 1),
                {2 * core, 2 * core + 1});
  }
  config_.reserve_cpu = 3;
  Machine machine = Discover();
  EXPECT_THAT(machine.nodes[0].cpus, ElementsAre(2, 3));
  EXPECT_THAT(machine.nodes[1].cpus, ElementsAre(6, 7));
  EXPECT_THAT(machine.nodes[1].cores, ElementsAre(ElementsAre(6, 7)));
  config_.reserve_cpu = 1;
  machine = Discover();
  EXPECT_THAT(machine.nodes[0].cpus, ElementsAre(2, 3));
  EXPECT_THAT(machine.nodes[1].cpus, ElementsAre(4, 5, 6, 7));
}

// A sibling the node does not hold (here: offline, so not in its cpulist)
// does not join the core.
TEST_F(DiscoveryTest, SiblingsOutsideTheNodeAreDropped) {
  AddNode(0, "0,2", 8);
  AddSiblings("0-1", {0});
  AddSiblings("2-3", {2});
  Machine machine = Discover();
  EXPECT_THAT(machine.nodes[0].cores, ElementsAre(ElementsAre(0), ElementsAre(2)));
}

}  // namespace
}  // namespace hpcb::broker
