#include "as_user/user_side_ops.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "common/base/unique_fd.h"
#include "tests/testing/temp_dir.h"

namespace hpcb::as_user {
namespace {

TEST(DeliverTest, CopiesWholeBufferAndTruncates) {
  testing::TempDir dir;
  testing::WriteText(dir.path() + "/buffer", "hello\nworld\n");
  testing::WriteText(dir.path() + "/dest", "old content that is longer than the new one\n");
  UniqueFd buffer(::open((dir.path() + "/buffer").c_str(), O_RDONLY));
  ASSERT_TRUE(DeliverHere(buffer.get(), dir.path() + "/dest", 1 << 20));
  EXPECT_EQ(testing::ReadText(dir.path() + "/dest"), "hello\nworld\n");
}
TEST(DeliverTest, SymlinkAtDestinationIsNotFollowed) {
  testing::TempDir dir;
  testing::WriteText(dir.path() + "/buffer", "secret?\n");
  testing::WriteText(dir.path() + "/victim", "untouched");
  ASSERT_EQ(::symlink((dir.path() + "/victim").c_str(), (dir.path() + "/dest").c_str()), 0);
  UniqueFd buffer(::open((dir.path() + "/buffer").c_str(), O_RDONLY));
  auto delivered = DeliverHere(buffer.get(), dir.path() + "/dest", 1 << 20);
  ASSERT_FALSE(delivered);
  EXPECT_NE(delivered.error().message().find("symbolic link"), std::string::npos)
      << delivered.error().message();
  EXPECT_EQ(testing::ReadText(dir.path() + "/victim"), "untouched");
}
TEST(DeliverTest, AFifoAtTheDestinationIsRefusedWithoutBlocking) {
  testing::TempDir dir;
  testing::WriteText(dir.path() + "/buffer", "out\n");
  ASSERT_EQ(::mkfifo((dir.path() + "/dest").c_str(), 0600), 0);
  UniqueFd buffer(::open((dir.path() + "/buffer").c_str(), O_RDONLY));
  auto delivered = DeliverHere(buffer.get(), dir.path() + "/dest", 1 << 20);
  ASSERT_FALSE(delivered);
  EXPECT_NE(delivered.error().message().find("not a regular file"), std::string::npos)
      << delivered.error().message();
}
TEST(DeliverTest, OutputOverTheLimitIsNotDeliveredAndLeavesNothing) {
  testing::TempDir dir;
  testing::WriteText(dir.path() + "/buffer", std::string(5000, 'x'));
  UniqueFd buffer(::open((dir.path() + "/buffer").c_str(), O_RDONLY));
  auto delivered = DeliverHere(buffer.get(), dir.path() + "/dest", 4096);
  ASSERT_FALSE(delivered);
  EXPECT_NE(delivered.error().message().find("over the delivery limit"), std::string::npos)
      << delivered.error().message();
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()),
                          std::filesystem::directory_iterator()),
            1)
      << "only the buffer: no destination, no temp file";
}
TEST(DeliverTest, AnotherFileHardLinkedAtTheDestinationIsRefused) {
  testing::TempDir dir;
  testing::WriteText(dir.path() + "/buffer", "new\n");
  testing::WriteText(dir.path() + "/other", "other\n");
  ASSERT_EQ(::link((dir.path() + "/other").c_str(), (dir.path() + "/dest").c_str()), 0);
  UniqueFd buffer(::open((dir.path() + "/buffer").c_str(), O_RDONLY));
  auto delivered = DeliverHere(buffer.get(), dir.path() + "/dest", 1 << 20);
  ASSERT_FALSE(delivered);
  EXPECT_NE(delivered.error().message().find("hard links"), std::string::npos);
  EXPECT_EQ(testing::ReadText(dir.path() + "/other"), "other\n");
}
// A forgotten job's dir, emptied as its user: everything below goes, the
// dir itself stays (root removes its name).
TEST(EmptyDirTest, EmptiesANestedTreeAndKeepsTheDir) {
  testing::TempDir dir;
  const std::string top = dir.path() + "/7";
  testing::WriteText(top + "/output", "x");
  testing::WriteText(top + "/a/b/c/deep", "x");
  testing::WriteText(top + "/a/.hidden", "x");
  std::filesystem::create_directories(top + "/empty/too");
  UniqueFd fd(::open(top.c_str(), O_RDONLY | O_DIRECTORY));

  Result<void> emptied = EmptyDirHere(fd.get());

  ASSERT_TRUE(emptied) << emptied.error().message();
  ASSERT_TRUE(std::filesystem::is_directory(top));
  EXPECT_TRUE(std::filesystem::is_empty(top));
}
TEST(EmptyDirTest, ALinkToOutsideGoesAsALinkAndWhatItPointsAtStays) {
  testing::TempDir dir;
  const std::string top = dir.path() + "/7";
  const std::string outside = dir.path() + "/outside";
  testing::WriteText(outside + "/keep", "keep\n");
  std::filesystem::create_directories(top + "/a");
  ASSERT_EQ(::symlink(outside.c_str(), (top + "/dirlink").c_str()), 0);
  ASSERT_EQ(::symlink((outside + "/keep").c_str(), (top + "/a/filelink").c_str()), 0);
  UniqueFd fd(::open(top.c_str(), O_RDONLY | O_DIRECTORY));

  Result<void> emptied = EmptyDirHere(fd.get());

  ASSERT_TRUE(emptied) << emptied.error().message();
  EXPECT_TRUE(std::filesystem::is_empty(top));
  EXPECT_EQ(testing::ReadText(outside + "/keep"), "keep\n");
}
TEST(EmptyDirTest, ATreeDeeperThanTheBoundStaysAndIsNamed) {
  testing::TempDir dir;
  const std::string top = dir.path() + "/7";
  std::filesystem::create_directories(top);
  testing::WriteText(top + "/shallow", "x");
  UniqueFd level(::open(top.c_str(), O_RDONLY | O_DIRECTORY));
  for (int i = 0; i <= kMaxEmptyDepth; ++i) {
    ASSERT_EQ(::mkdirat(level.get(), "d", 0700), 0);
    level.reset(::openat(level.get(), "d", O_RDONLY | O_DIRECTORY));
    ASSERT_TRUE(level.valid());
  }
  UniqueFd fd(::open(top.c_str(), O_RDONLY | O_DIRECTORY));

  Result<void> emptied = EmptyDirHere(fd.get());

  ASSERT_FALSE(emptied);
  EXPECT_NE(emptied.error().message().find("d/d/d/"), std::string::npos)
      << emptied.error().message();
  EXPECT_NE(emptied.error().message().find("nested too deep"), std::string::npos)
      << emptied.error().message();
  EXPECT_FALSE(std::filesystem::exists(top + "/shallow"));
  EXPECT_TRUE(std::filesystem::is_directory(top + "/d"));
}

// The command line is the launcher's (launcher_server.cc); anything else
// is refused by name, and nothing is touched.
TEST(RunRequestTest, AMalformedRequestIsRefusedByName) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{},
                                             {"remove"},
                                             {"deliver", "/tmp/x"},
                                             {"deliver", "/tmp/x", "12k"},
                                             {"notify", "/", "-1", "true"},
                                             {"notify", "/", "86401", "true"},
                                             {"empty", "extra"}}) {
    Result<void> run = RunRequest(args, {});
    ASSERT_FALSE(run);
    EXPECT_EQ(run.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(run.error().message().find("not a request"), std::string::npos)
        << run.error().message();
  }
}

TEST(RunRequestTest, AnAnswerSaysOkOrCarriesTheErrorsCode) {
  EXPECT_EQ(EncodeAnswer(Ok()), "O");
  const std::string refused = EncodeAnswer(Error(ErrorCode::kPermissionDenied, "nope"));
  ASSERT_EQ(refused.size(), 6u);
  EXPECT_EQ(refused[0], 'E');
  EXPECT_EQ(static_cast<ErrorCode>(refused[1]), ErrorCode::kPermissionDenied);
  EXPECT_EQ(refused.substr(2), "nope");
}

}  // namespace
}  // namespace hpcb::as_user
