#include "protocol/queued_frame.h"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include "common/base/unique_fd.h"
#include "protocol/client_framing.h"
#include "protocol/framing.h"

namespace hpcb::protocol {
namespace {

struct StreamPair {
  StreamPair() {
    int fds[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    server.reset(fds[0]);
    client.reset(fds[1]);
  }
  UniqueFd server, client;
};

TEST(QueuedFrameTest, PeekLeavesTheFrameForTheTaker) {
  StreamPair p;
  ASSERT_TRUE(WriteFrame(p.client.get(), R"({"cmd":"new"})"));
  auto peeked = PeekQueuedFrame(p.server.get());
  ASSERT_TRUE(peeked && *peeked);
  EXPECT_EQ(**peeked, R"({"cmd":"new"})");
  auto taken = TakeQueuedFrame(p.server.get());
  ASSERT_TRUE(taken) << taken.error().message();
  EXPECT_EQ(*taken, **peeked);
  auto again = TakeQueuedFrame(p.server.get());
  ASSERT_FALSE(again) << "one frame, taken once";
}

TEST(QueuedFrameTest, HalfAFrameIsNotYetAndNeverBlocks) {
  StreamPair p;
  auto empty = PeekQueuedFrame(p.server.get());
  ASSERT_TRUE(empty);
  EXPECT_FALSE(*empty);
  ASSERT_TRUE(WriteAll(p.client.get(), std::string("\x05\x00\x00\x00"
                                                   "ab",
                                                   6)));
  auto half = PeekQueuedFrame(p.server.get());
  ASSERT_TRUE(half);
  EXPECT_FALSE(*half);
  ASSERT_TRUE(WriteAll(p.client.get(), "cde"));
  auto whole = PeekQueuedFrame(p.server.get());
  ASSERT_TRUE(whole && *whole);
  EXPECT_EQ(**whole, "abcde");
}

TEST(QueuedFrameTest, TheLargestRequestFitsTheSocketQueueWhole) {
  StreamPair p;
  std::string big(kMaxRequestFrame, 'x');
  ASSERT_TRUE(WriteFrame(p.client.get(), big));  // would block if it did not fit
  auto peeked = PeekQueuedFrame(p.server.get());
  ASSERT_TRUE(peeked && *peeked);
  EXPECT_EQ((*peeked)->size(), kMaxRequestFrame);
}

TEST(QueuedFrameTest, OversizedLengthAndClosedPeerAreErrors) {
  StreamPair p;
  ASSERT_TRUE(WriteAll(p.client.get(), std::string("\xff\xff\xff\x7f", 4)));
  auto big = PeekQueuedFrame(p.server.get());
  ASSERT_FALSE(big);
  EXPECT_NE(big.error().message().find("exceeds"), std::string::npos);
  EXPECT_FALSE(TakeQueuedFrame(p.server.get()));
  StreamPair q;
  q.client.reset();
  auto closed = PeekQueuedFrame(q.server.get());
  ASSERT_FALSE(closed);
  EXPECT_EQ(closed.error().code(), ErrorCode::kUnavailable);
}

TEST(QueuedFrameTest, DiscardDropsAtMostTheLimit) {
  StreamPair p;
  ASSERT_TRUE(WriteAll(p.client.get(), "0123456789"));
  DiscardQueued(p.server.get(), 4);
  char rest[16];
  EXPECT_EQ(::recv(p.server.get(), rest, sizeof rest, MSG_DONTWAIT), 6);
}

}  // namespace
}  // namespace hpcb::protocol
