#include "executor/turn_commit.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "protocol/host/host_files.h"
#include "tests/testing/temp_dir.h"

namespace hpcb::executor {
namespace {

TEST(TurnCommitTest, AnswersComeBackInOrderWithTheirOwnCopiesOfTheFds) {
  TurnCommit turn("/nonexistent");
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  ASSERT_TRUE(turn.Hold("first", {}));
  ASSERT_TRUE(turn.Hold("second", {pipe_fds[0]}));
  ::close(pipe_fds[0]);  // the caller's copy goes; the held one stays

  ASSERT_TRUE(turn.Flush()) << "nothing renamed: the directory is never opened";
  std::vector<TurnCommit::Answer> answers = turn.TakeAnswers();

  ASSERT_EQ(answers.size(), 2u);
  EXPECT_EQ(answers[0].text, "first");
  ASSERT_EQ(answers[1].fds.size(), 1u);
  EXPECT_GE(::fcntl(answers[1].fds[0].get(), F_GETFD), 0);
  EXPECT_TRUE(turn.TakeAnswers().empty());
  ::close(pipe_fds[1]);
}

TEST(TurnCommitTest, ATurnThatRenamedSyncsItsDirectoryOnceAndThenHasNothingToDo) {
  testing::TempDir dir;
  TurnCommit turn(dir.path());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(host::WriteFileAtomic(dir.path() + "/" + std::to_string(i) + ".json", "{}", 0600,
                                      host::Sync::kDeferred));
    turn.Renamed();
  }
  EXPECT_TRUE(turn.Flush());
  EXPECT_EQ(::access((dir.path() + "/0.json").c_str(), F_OK), 0);
  EXPECT_NE(::access((dir.path() + "/0.json.tmp").c_str(), F_OK), 0);
}

TEST(TurnCommitTest, AFreshFileIsInPlaceAtOnceAndSyncedByTheFlush) {
  testing::TempDir dir;
  TurnCommit turn(dir.path());
  Result<UniqueFd> file = host::WriteFreshFile(dir.path() + "/7.json", "{\"id\":7}", 0600);
  ASSERT_TRUE(file) << file.error().message();
  // Where a crash of the process (not of the machine) would find it.
  Result<std::string> text = host::ReadSmallFile(dir.path() + "/7.json");
  ASSERT_TRUE(text);
  EXPECT_EQ(*text, "{\"id\":7}");
  EXPECT_NE(::access((dir.path() + "/7.json.tmp").c_str(), F_OK), 0);
  turn.RenamedUnsynced(std::move(*file));
  EXPECT_TRUE(turn.Flush());
  EXPECT_TRUE(turn.Flush()) << "flushed once; nothing left";
}

TEST(TurnCommitTest, AFileThatCannotBeSyncedFailsTheFlushAndStaysPending) {
  testing::TempDir dir;
  TurnCommit turn(dir.path());
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  ::close(pipe_fds[1]);
  turn.RenamedUnsynced(UniqueFd(pipe_fds[0]));  // fsync of a pipe: EINVAL
  EXPECT_FALSE(turn.Flush());
  EXPECT_FALSE(turn.Flush()) << "a failed flush leaves the file unsynced, not forgotten";
}

TEST(TurnCommitTest, AMissingDirectoryFailsTheFlushOfATurnThatRenamed) {
  testing::TempDir dir;
  TurnCommit turn(dir.path() + "/gone");
  EXPECT_TRUE(turn.Flush()) << "nothing renamed, nothing to sync";
  turn.Renamed();
  EXPECT_FALSE(turn.Flush());
  EXPECT_FALSE(turn.Flush()) << "a failed flush leaves the renames unsynced, not forgotten";
}

}  // namespace
}  // namespace hpcb::executor
