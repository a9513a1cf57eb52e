#include "protocol/codec.h"

#include <gtest/gtest.h>

#include "protocol/client_messages.h"

namespace hpcb::protocol {
namespace {

SubmitRequest ValidSubmit() {
  SubmitRequest r;
  r.argv = {"echo", "hello"};
  r.cwd = "/tmp";
  r.cpu = 2;
  r.output = "/tmp";
  return r;
}

TEST(CodecTest, SubmitRoundTrips) {
  SubmitRequest in = ValidSubmit();
  in.env = {{"A", "b=c"}};
  in.max_mem_gb = 1.5;

  auto out = Decode<SubmitRequest>(Encode(in));

  ASSERT_TRUE(out) << out.error().message();
  EXPECT_EQ(out->argv, in.argv);
  EXPECT_EQ(out->cpu, 2);
  EXPECT_EQ(out->max_mem_gb, 1.5);
  EXPECT_FALSE(out->max_time_s.has_value());
  EXPECT_EQ(out->env.at("A"), "b=c");
  EXPECT_EQ(out->output, "/tmp");
}

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from << " not in " << text;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

TEST(CodecTest, WrongTypeNamesTheField) {
  std::string text = Replace(Encode(ValidSubmit()), "\"gpu_cores\":0", "\"gpu_cores\":\"x\"");

  auto out = Decode<SubmitRequest>(text);

  ASSERT_FALSE(out);
  EXPECT_EQ(out.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(out.error().message(), "field 'gpu_cores' must be an integer");
}

TEST(CodecTest, MissingFieldIsNamed) {
  std::string text = Replace(Encode(ValidSubmit()), "\"cwd\":\"/tmp\",", "");

  auto out = Decode<SubmitRequest>(text);

  ASSERT_FALSE(out);
  EXPECT_EQ(out.error().message(), "field 'cwd' is missing");
}

// Fields a dispatch older than them does not send: decoded as absent.
TEST(CodecTest, AFieldThatMayBeMissingLoadsWithoutIt) {
  SubmitRequest in = ValidSubmit();
  in.exec_error = "cannot execute x";
  std::string text = Replace(Encode(in), "\"exec_error\":[\"cannot execute x\"]", "\"pad\":0");
  text = Replace(text, "\"user\":\"\",", "");

  auto out = Decode<SubmitRequest>(text);

  ASSERT_TRUE(out) << out.error().message();
  EXPECT_FALSE(out->exec_error.has_value());
  EXPECT_EQ(out->user, "");
}

TEST(CodecTest, AUserRequestIsWrittenWithItsCommand) {
  EXPECT_EQ(Encode(ValidSubmit()).rfind("{\"cmd\":\"new\",", 0), 0u) << Encode(ValidSubmit());
  EXPECT_EQ(Encode(OutputRequest{.id = 3}).rfind("{\"cmd\":\"output\",", 0), 0u);
}

TEST(CodecTest, BadOptionalIsNamed) {
  std::string text = Replace(Encode(ValidSubmit()), "\"cpu\":[2]", "\"cpu\":[2,3]");

  auto out = Decode<SubmitRequest>(text);

  ASSERT_FALSE(out);
  EXPECT_NE(out.error().message().find("field 'cpu'"), std::string::npos);
}

TEST(CodecTest, NestedFieldErrorsCarryThePath) {
  ListReply reply;
  reply.jobs.resize(1);
  reply.jobs[0].user = "ada";
  std::string text = Replace(Encode(reply), "\"user\":\"ada\"", "\"user\":7");

  auto out = Decode<ListReply>(text);

  ASSERT_FALSE(out);
  EXPECT_NE(out.error().message().find("field 'jobs."), std::string::npos) << out.error().message();
  EXPECT_NE(out.error().message().find("user' must be a string"), std::string::npos);
}

TEST(CodecTest, GarbageIsAnErrorNotACrash) {
  for (const char* bad : {"", "garbage", "[1,2]", "{", "null", "{\"argv\":", "\x01\x02"}) {
    auto out = Decode<SubmitRequest>(bad);
    EXPECT_FALSE(out) << bad;
  }
}

TEST(CodecTest, DeepNestingIsRefusedBeforeParsing) {
  std::string deep(100000, '[');

  auto out = Decode<SubmitRequest>(deep);

  ASSERT_FALSE(out);
  EXPECT_NE(out.error().message().find("nests deeper"), std::string::npos);
}

TEST(CodecTest, NestingCheckIgnoresBracketsInStrings) {
  EXPECT_TRUE(NestingWithin("{\"a\":\"[[[[[[[[[[[[[[[[[[[[[[\\\"[[[[\"}", 2));
  EXPECT_FALSE(NestingWithin("[[[", 2));
}

TEST(CodecTest, ValidateRunsAfterDecode) {
  SubmitRequest in = ValidSubmit();
  in.cpu = 0;

  auto out = Decode<SubmitRequest>(Encode(in));

  ASSERT_FALSE(out);
  EXPECT_EQ(out.error().message(), "resource requests must be positive");
}

TEST(CodecTest, PeekCommandReadsTheCommand) {
  EXPECT_EQ(*PeekCommand(Encode(ValidSubmit())), "new");
  EXPECT_FALSE(PeekCommand("{\"cmd\":3}"));
  EXPECT_EQ(PeekCommand("{}").error().message(), "field 'cmd' is missing");
}

}  // namespace
}  // namespace hpcb::protocol
