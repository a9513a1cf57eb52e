#include "client/info_format.h"

#include <gtest/gtest.h>

#include "client/format.h"

namespace hpcb::client {
namespace {

protocol::InfoReply TwoNodes() {
  protocol::InfoReply reply;
  reply.policy = "fifo-strict";
  reply.queued = 3;
  reply.waiting = 1;
  reply.running = 2;
  for (int node = 0; node < 2; ++node) {
    protocol::NodeInfo row;
    row.node = node;
    row.cpus = node == 0 ? protocol::Amounts<std::int64_t>{8, 2, 4, 2}
                         : protocol::Amounts<std::int64_t>{8, 0, 4, 4};
    row.mem_gib = protocol::Amounts<double>{16, 2, 4.5, 9.5};
    reply.nodes.push_back(row);
  }
  return reply;
}

TEST(RenderInfoTest, OneRowPerResourceAndNode) {
  const std::string text = RenderInfo(TwoNodes());
  EXPECT_EQ(text,
            "policy fifo-strict, 3 queued (1 waiting for dependencies), 2 running\n"
            "\n"
            "NODE  RESOURCE  TOTAL  RESERVED  IN-USE  FREE\n"
            "0     cpus      8      2         4       2\n"
            "0     mem       16G    2G        4.5G    9.5G\n"
            "1     cpus      8      0         4       4\n"
            "1     mem       16G    2G        4.5G    9.5G\n");
}

TEST(RenderInfoTest, SaysWhenDrainingAndShowsMachineWideMemoryAndGpus) {
  protocol::InfoReply reply = TwoNodes();
  reply.draining = true;
  reply.nodes[1].gpus = {2, 0, 1, 1};
  for (protocol::NodeInfo& node : reply.nodes)
    node.mem_gib.reset();
  reply.mem_gib = protocol::Amounts<double>{32, 4, 9, 19};
  const std::string text = RenderInfo(reply);
  EXPECT_NE(text.find("draining: queued jobs are not started"), std::string::npos) << text;
  EXPECT_NE(text.find("1     gpus      2      0         1       1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("0     gpus      0"), std::string::npos) << text;
  EXPECT_NE(text.find("all   mem       32G    4G        9G      19G\n"), std::string::npos) << text;
}

TEST(RenderListTest, AQueuedJobShowsWhatItWaitsForAndTheDrainIsNoted) {
  protocol::ListReply reply;
  reply.now = 1000;
  reply.draining = true;
  protocol::JobRow row;
  row.user = "alice";
  row.id = 4;
  row.argv = {"make"};
  row.after = {2, 3};
  reply.jobs.push_back(row);
  EXPECT_EQ(StartCell(row, 1000), "after 2,3");
  row.after_any = true;
  EXPECT_EQ(StartCell(row, 1000), "after-any 2,3");
  Rendered rendered = RenderList(reply, false);
  EXPECT_NE(rendered.out.find("after 2,3"), std::string::npos) << rendered.out;
  EXPECT_NE(rendered.out.find("draining: queued jobs are not started"), std::string::npos)
      << rendered.out;
  reply.draining = false;
  EXPECT_EQ(RenderList(reply, false).out.find("draining"), std::string::npos);
}

}  // namespace
}  // namespace hpcb::client
