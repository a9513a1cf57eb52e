#include "executor/turn_commit.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

namespace hpcb::executor {
namespace {

TEST(TurnCommitTest, AnswersComeBackInOrderWithTheirOwnCopiesOfTheFds) {
  TurnCommit turn;
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  ASSERT_TRUE(turn.Hold("first", {}));
  ASSERT_TRUE(turn.Hold("second", {pipe_fds[0]}));
  ::close(pipe_fds[0]);  // the caller's copy goes; the held one stays

  std::vector<TurnCommit::Answer> answers = turn.TakeAnswers();

  ASSERT_EQ(answers.size(), 2u);
  EXPECT_EQ(answers[0].text, "first");
  ASSERT_EQ(answers[1].fds.size(), 1u);
  EXPECT_GE(::fcntl(answers[1].fds[0].get(), F_GETFD), 0);
  EXPECT_TRUE(turn.TakeAnswers().empty());
  ::close(pipe_fds[1]);
}

TEST(TurnCommitTest, AnAnswerWhoseFdCannotBeCopiedIsNotHeld) {
  TurnCommit turn;
  EXPECT_FALSE(turn.Hold("bad", {-1}));
  EXPECT_TRUE(turn.TakeAnswers().empty());
}

}  // namespace
}  // namespace hpcb::executor
