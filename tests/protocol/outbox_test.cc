#include "protocol/outbox.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "protocol/framing.h"

namespace hpcb::protocol {
namespace {

struct Channel {
  UniqueFd a, b;
  Channel() {
    int fds[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds), 0);
    a.reset(fds[0]);
    b.reset(fds[1]);
  }
};

// A hang is the failure these tests look for: SIGALRM's default action
// ends the test binary, so ctest reports it instead of waiting forever.
class OutboxTest : public ::testing::Test {
 protected:
  void SetUp() override { ::alarm(60); }
  void TearDown() override { ::alarm(0); }
};

std::string Message(char side, int n, std::size_t size) {
  std::string text = std::string(1, side) + std::to_string(n) + ":";
  text.resize(size, 'x');
  return text;
}

// Reads and flushes both ends until each has received `expected`
// messages, checking they arrive whole and in order.
void DrainBoth(Outbox& from_a, Outbox& from_b, int a_fd, int b_fd, int expected, std::size_t size) {
  int got_at_a = 0;
  int got_at_b = 0;
  while (got_at_a < expected || got_at_b < expected) {
    struct pollfd fds[2] = {
        {a_fd, static_cast<short>(POLLIN | (from_a.wants_write() ? POLLOUT : 0)), 0},
        {b_fd, static_cast<short>(POLLIN | (from_b.wants_write() ? POLLOUT : 0)), 0}};
    ASSERT_GT(::poll(fds, 2, 5000), 0) << "stalled at " << got_at_a << "/" << got_at_b;
    if (fds[0].revents & POLLOUT) {
      ASSERT_TRUE(from_a.Flush());
    }
    if (fds[1].revents & POLLOUT) {
      ASSERT_TRUE(from_b.Flush());
    }
    if (fds[0].revents & POLLIN) {
      Result<Packet> packet = ReceiveMessage(a_fd);
      ASSERT_TRUE(packet) << packet.error().message();
      ASSERT_EQ(packet->bytes, Message('b', got_at_a, size));
      ++got_at_a;
    }
    if (fds[1].revents & POLLIN) {
      Result<Packet> packet = ReceiveMessage(b_fd);
      ASSERT_TRUE(packet) << packet.error().message();
      ASSERT_EQ(packet->bytes, Message('a', got_at_b, size));
      ++got_at_b;
    }
  }
  EXPECT_FALSE(from_a.wants_write());
  EXPECT_FALSE(from_b.wants_write());
}

TEST_F(OutboxTest, TenThousandEachWayWithNeitherSideReadingDoesNotBlock) {
  // The deadlock this replaces: both ends send a burst larger than the
  // socket holds, and a blocking send waits for a reader that is itself
  // sending. Here every Send returns, and the rest waits in the box.
  Channel channel;
  Outbox from_a(channel.a.get());
  Outbox from_b(channel.b.get());
  constexpr int kCount = 10000;
  constexpr std::size_t kSize = 512;
  for (int i = 0; i < kCount; ++i) {
    ASSERT_TRUE(from_a.Send(Message('a', i, kSize)));
    ASSERT_TRUE(from_b.Send(Message('b', i, kSize)));
  }
  // More than the socket holds: some of it had to wait.
  EXPECT_TRUE(from_a.wants_write());
  EXPECT_TRUE(from_b.wants_write());
  EXPECT_GT(from_a.queued_bytes(), std::size_t{1} << 20);
  DrainBoth(from_a, from_b, channel.a.get(), channel.b.get(), kCount, kSize);
}

TEST_F(OutboxTest, AMessageOfManyPacketsQueuedBehindOthersArrivesWhole) {
  Channel channel;
  Outbox from_a(channel.a.get());
  Outbox from_b(channel.b.get());
  for (int i = 0; i < 2000; ++i)
    ASSERT_TRUE(from_a.Send(Message('a', i, 1000)));
  ASSERT_TRUE(from_a.wants_write());
  const std::string big(300 * 1024, 'B');
  ASSERT_TRUE(from_a.Send(big));
  for (int i = 0; i < 2000; ++i) {
    ASSERT_TRUE(from_a.Flush());
    Result<Packet> packet = ReceiveMessage(channel.b.get());
    ASSERT_TRUE(packet);
    ASSERT_EQ(packet->bytes, Message('a', i, 1000));
  }
  // ReceiveMessage reads a message whole, waiting for its later packets,
  // so the reader runs beside the loop that flushes them.
  std::string received;
  std::thread reader([&] {
    Result<Packet> packet = ReceiveMessage(channel.b.get());
    if (packet) received = packet->bytes;
  });
  while (from_a.wants_write()) {
    struct pollfd out = {channel.a.get(), POLLOUT, 0};
    ASSERT_GT(::poll(&out, 1, 5000), 0);
    ASSERT_TRUE(from_a.Flush());
  }
  reader.join();
  EXPECT_EQ(received, big);
  EXPECT_FALSE(from_b.wants_write());
}

TEST_F(OutboxTest, ADescriptorThatHadToWaitIsKeptAfterTheCallerClosesIt) {
  Channel channel;
  Outbox from_a(channel.a.get());
  while (!from_a.wants_write())
    ASSERT_TRUE(from_a.Send(std::string(4096, 'f')));
  int pipe_fds[2];
  ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
  UniqueFd read_end(pipe_fds[0]);
  UniqueFd write_end(pipe_fds[1]);
  ASSERT_TRUE(from_a.Send("with a pipe", {read_end.get()}));
  read_end.reset();  // the box holds its own copy
  ASSERT_EQ(::write(write_end.get(), "ok", 2), 2);
  for (;;) {
    ASSERT_TRUE(from_a.Flush());
    Result<Packet> packet = ReceiveMessage(channel.b.get());
    ASSERT_TRUE(packet);
    if (packet->bytes != "with a pipe") {
      EXPECT_TRUE(packet->fds.empty());
      continue;
    }
    ASSERT_EQ(packet->fds.size(), 1u);
    char got[2] = {};
    ASSERT_EQ(::read(packet->fds[0].get(), got, 2), 2);
    EXPECT_EQ(std::string(got, 2), "ok");
    break;
  }
}

TEST_F(OutboxTest, APeerThatWentAwayIsAnErrorNotAWait) {
  Channel channel;
  Outbox from_a(channel.a.get());
  while (!from_a.wants_write())
    ASSERT_TRUE(from_a.Send(std::string(4096, 'g')));
  channel.b.reset();
  EXPECT_FALSE(from_a.Flush());
  EXPECT_FALSE(from_a.wants_write());
  EXPECT_FALSE(from_a.Send("after"));
}

}  // namespace
}  // namespace hpcb::protocol
