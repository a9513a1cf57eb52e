#include "protocol/framing.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "protocol/client_framing.h"

namespace hpcb::protocol {
namespace {

struct SocketPair {
  UniqueFd a, b;
  explicit SocketPair(int type) {
    int fds[2];
    EXPECT_EQ(::socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, fds), 0);
    a.reset(fds[0]);
    b.reset(fds[1]);
  }
};

TEST(FrameDecoderTest, ReassemblesSplitFrames) {
  FrameDecoder decoder(100);
  std::string wire = EncodeFrame("hello") + EncodeFrame("");
  decoder.Feed(wire.substr(0, 3));
  EXPECT_FALSE(decoder.Next()->has_value());
  decoder.Feed(wire.substr(3));

  EXPECT_EQ(**decoder.Next(), "hello");
  EXPECT_EQ(**decoder.Next(), "");
  EXPECT_FALSE(decoder.Next()->has_value());
}

TEST(FrameDecoderTest, OversizedLengthIsRefusedBeforeBuffering) {
  FrameDecoder decoder(10);
  decoder.Feed(EncodeFrame(std::string(11, 'x')).substr(0, 4));

  auto next = decoder.Next();

  ASSERT_FALSE(next);
  EXPECT_EQ(next.error().message(), "frame of 11 bytes exceeds the 10-byte limit");
}

TEST(StreamFrameTest, ReadFrameSeesEofAndTruncation) {
  SocketPair pair(SOCK_STREAM);
  ASSERT_TRUE(WriteFrame(pair.a.get(), "abc"));
  ASSERT_TRUE(WriteAll(pair.a.get(), std::string("\x05\x00\x00\x00xy", 6)));
  pair.a.reset();

  EXPECT_EQ(**ReadFrame(pair.b.get(), 100), "abc");
  auto truncated = ReadFrame(pair.b.get(), 100);
  ASSERT_FALSE(truncated);
  EXPECT_EQ(truncated.error().code(), ErrorCode::kUnavailable);
}

TEST(StreamFrameTest, CleanEofIsNotAnError) {
  SocketPair pair(SOCK_STREAM);
  pair.a.reset();
  auto eof = ReadFrame(pair.b.get(), 100);
  ASSERT_TRUE(eof);
  EXPECT_FALSE(eof->has_value());
}

TEST(SeqPacketTest, LargeMessagesAreSplitAndReassembled) {
  SocketPair pair(SOCK_SEQPACKET);
  std::string big(300 * 1024, 'q');
  big[12345] = 'z';

  // A message larger than the socket buffer needs a concurrent reader.
  std::thread sender([&] { EXPECT_TRUE(SendMessage(pair.a.get(), big)); });
  auto got = ReceiveMessage(pair.b.get());
  sender.join();

  ASSERT_TRUE(got) << got.error().message();
  EXPECT_EQ(got->bytes, big);
}

TEST(SeqPacketTest, OversizedMessageIsRefused) {
  SocketPair pair(SOCK_SEQPACKET);
  std::thread sender([&] { EXPECT_TRUE(SendMessage(pair.a.get(), std::string(200 * 1024, 'q'))); });

  auto got = ReceiveMessage(pair.b.get(), 100 * 1024);
  sender.join();

  ASSERT_FALSE(got);
  EXPECT_NE(got.error().message().find("exceeds"), std::string::npos);
}

TEST(SeqPacketTest, PassesDescriptors) {
  SocketPair pair(SOCK_SEQPACKET);
  int pipe_fds[2];
  ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
  UniqueFd read_end(pipe_fds[0]), write_end(pipe_fds[1]);

  ASSERT_TRUE(SendMessage(pair.a.get(), "fd", {write_end.get()}));
  auto got = ReceiveMessage(pair.b.get());
  ASSERT_TRUE(got);
  ASSERT_EQ(got->fds.size(), 1u);
  ASSERT_EQ(::write(got->fds[0].get(), "x", 1), 1);
  char c = 0;

  EXPECT_EQ(::read(read_end.get(), &c, 1), 1);
  EXPECT_EQ(c, 'x');
}

TEST(SeqPacketTest, PacketWithoutFlagByteIsMalformed) {
  SocketPair pair(SOCK_SEQPACKET);
  ASSERT_EQ(::send(pair.a.get(), "xyz", 3, 0), 3);

  auto got = ReceiveMessage(pair.b.get());

  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().code(), ErrorCode::kInvalidArgument);
}

TEST(SeqPacketTest, PeerGoneIsUnavailable) {
  SocketPair pair(SOCK_SEQPACKET);
  pair.a.reset();
  auto got = ReceiveMessage(pair.b.get());
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().code(), ErrorCode::kUnavailable);
}

TEST(PeerCredentialsTest, ReportsOurOwnUid) {
  SocketPair pair(SOCK_STREAM);
  auto cred = PeerCredentials(pair.a.get());
  ASSERT_TRUE(cred);
  EXPECT_EQ(cred->uid, ::getuid());
  EXPECT_EQ(cred->pid, ::getpid());
}

}  // namespace
}  // namespace hpcb::protocol
