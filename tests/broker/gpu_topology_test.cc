#include "broker/gpu_topology.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/broker/fake_machine.h"

namespace hpcb::broker {
namespace {

using ::testing::ElementsAre;
using testing::Gpus;
using testing::kTopo4;
using testing::Topo8;

std::vector<int> Choose(const GpuInfo& info, std::vector<int> free_gpus, int count,
                        bool numa_local = false, double limit = 20000) {
  GpuRequest request{count, numa_local, std::nullopt};
  return ChooseGpus(info, free_gpus, request, limit).value_or(std::vector<int>{-1});
}

TEST(GpuTopologyTest, ParsesPastNicColumnWithAnsiHeader) {
  GpuInfo info = Gpus(4, kTopo4);
  EXPECT_EQ(info.links.size(), 6u);
  EXPECT_EQ(info.links.at({0, 1}), "NV2");
  EXPECT_EQ(info.links.at({2, 3}), "NV2");
  EXPECT_EQ(info.links.at({0, 3}), "SYS");
  EXPECT_EQ(info.node_of, (std::map<int, int>{{0, 0}, {1, 0}, {2, 1}, {3, 1}}));
}

TEST(GpuTopologyTest, StripAnsiLeavesPlainTextAlone) {
  EXPECT_EQ(StripAnsi("\x1b[4mGPU0\x1b[0m X"), "GPU0 X");
  EXPECT_EQ(StripAnsi("plain"), "plain");
}

TEST(GpuTopologyTest, NoNumaColumnGivesLinksOnly) {
  GpuInfo info;
  ParseTopology("\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tPIX\t0-7\nGPU1\tPIX\t X \t0-7\n", info);
  EXPECT_EQ(info.links.size(), 1u);
  EXPECT_TRUE(info.node_of.empty());
}

TEST(GpuTopologyTest, NoHeaderGivesEmptyTopology) {
  for (const char* text : {"", "No devices found.", "Legend:\n  X    = Self\n  SYS  = x\n"}) {
    GpuInfo info;
    ParseTopology(text, info);
    EXPECT_TRUE(info.links.empty()) << text;
    EXPECT_TRUE(info.node_of.empty()) << text;
  }
}

TEST(GpuTopologyTest, ParsesGpuList) {
  EXPECT_THAT(ParseGpuList(testing::kList4), ElementsAre(0, 1, 2, 3));
  EXPECT_TRUE(ParseGpuList("No devices were found\n").empty());
}

TEST(GpuTopologyTest, RanksLinks) {
  EXPECT_EQ(LinkRank("NV12"), 0);
  EXPECT_EQ(LinkRank("NV"), 0);
  EXPECT_EQ(LinkRank("nv"), 0);
  EXPECT_EQ(LinkRank("PIX"), 1);
  EXPECT_EQ(LinkRank("PXB"), 2);
  EXPECT_EQ(LinkRank("PHB"), 3);
  EXPECT_EQ(LinkRank("NODE"), 4);
  EXPECT_EQ(LinkRank("SYS"), 5);
  EXPECT_EQ(LinkRank("weird"), 6);
}

TEST(GpuTopologyTest, WorstLinkLeadsThenWiderNvlink) {
  GpuInfo info;
  info.links = {{{0, 1}, "NV1"}, {{0, 2}, "SYS"}, {{1, 2}, "PIX"},
                {{0, 3}, "PIX"}, {{1, 3}, "PIX"}, {{2, 3}, "NV4"}};
  EXPECT_LT(QualityOf(info, {0, 1, 3}), QualityOf(info, {0, 1, 2}));
  EXPECT_LT(QualityOf(info, {2, 3}), QualityOf(info, {0, 1}));
  EXPECT_EQ(WorstLink(info, {0, 1, 2}), "SYS");
  EXPECT_EQ(WorstLink(info, {0}), std::nullopt);
}

TEST(GpuTopologyTest, Islands) {
  GpuInfo info = Gpus(8, Topo8());
  std::vector<int> all = {0, 1, 2, 3, 4, 5, 6, 7};
  EXPECT_EQ(Islands(info, all, 0), (std::vector<std::vector<int>>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  EXPECT_EQ(Islands(info, all, 5).size(), 1u);
  EXPECT_EQ(Islands(info, {0, 5}, 0).size(), 2u);
  EXPECT_EQ(Islands(info, all, -1).size(), 8u);
}

TEST(GpuTopologyTest, FourGpuChoices) {
  GpuInfo info = Gpus(4, kTopo4);
  EXPECT_THAT(Choose(info, {0, 1, 2, 3}, 1), ElementsAre(0));
  EXPECT_THAT(Choose(info, {1, 2, 3}, 1), ElementsAre(1));
  EXPECT_THAT(Choose(info, {0, 2, 3}, 2), ElementsAre(2, 3));
  EXPECT_THAT(Choose(info, {0, 1, 2, 3}, 3), ElementsAre(0, 1, 2));
  EXPECT_THAT(Choose(info, {0, 2}, 2), ElementsAre(0, 2));  // distant pair beats waiting
  EXPECT_THAT(Choose(info, {0, 1, 2, 3}, 4), ElementsAre(0, 1, 2, 3));
}

TEST(GpuTopologyTest, NoTopologyTakesIndexOrder) {
  GpuInfo info = Gpus(4, "");
  EXPECT_THAT(Choose(info, {0, 2, 3}, 2), ElementsAre(0, 2));
}

TEST(GpuTopologyTest, QuadChoicesSameWithAndWithoutScan) {
  GpuInfo info = Gpus(8, Topo8());
  for (double limit : {20000.0, 0.0}) {
    EXPECT_THAT(Choose(info, {0, 1, 2, 3, 5, 6, 7}, 2, false, limit), ElementsAre(5, 6));
    EXPECT_THAT(Choose(info, {0, 1, 2, 3, 7}, 4, false, limit), ElementsAre(0, 1, 2, 3));
    EXPECT_THAT(Choose(info, {2, 3, 4, 5, 6, 7}, 5, false, limit), ElementsAre(2, 4, 5, 6, 7));
  }
}

TEST(GpuTopologyTest, NumaLocalKeepsOneNode) {
  GpuInfo info = Gpus(8, Topo8());
  EXPECT_THAT(Choose(info, {3, 4, 5, 6, 7}, 2, true), ElementsAre(4, 5));
  GpuRequest request{2, true, std::nullopt};
  EXPECT_FALSE(ChooseGpus(info, {3, 7}, request));
  EXPECT_THAT(Choose(info, {3, 7}, 2, false), ElementsAre(3, 7));
}

TEST(GpuTopologyTest, LinkFloorWaitsForGoodPairs) {
  GpuInfo info = Gpus(8, Topo8());
  GpuRequest nv{2, false, LinkRank("NV")};
  EXPECT_FALSE(ChooseGpus(info, {3, 7}, nv));
  GpuRequest pxb{2, false, LinkRank("PXB")};
  EXPECT_FALSE(ChooseGpus(info, {3, 7}, pxb));
  EXPECT_THAT(ChooseGpus(info, {3, 4, 5}, nv).value(), ElementsAre(4, 5));
  GpuRequest single{1, false, LinkRank("NV")};
  EXPECT_THAT(ChooseGpus(info, {3}, single).value(), ElementsAre(3));
}

TEST(GpuTopologyTest, ZeroGpusNeverWaits) {
  GpuRequest request{0, true, std::nullopt};
  EXPECT_TRUE(ChooseGpus(GpuInfo{}, {}, request).has_value());
}

}  // namespace
}  // namespace hpcb::broker
