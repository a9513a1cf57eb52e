#include "client/command_line.h"

#include <gtest/gtest.h>

namespace hpcb::client {
namespace {

using Words = std::vector<std::string>;

TEST(SplitAtDoubleDashTest, NewWithDashSplitsAtFirstDash) {
  SplitArgs split = SplitAtDoubleDash({"new", "--cpu", "2", "--", "echo", "--", "-x"});
  EXPECT_EQ(split.options, (Words{"new", "--cpu", "2"}));
  ASSERT_TRUE(split.command.has_value());
  EXPECT_EQ(*split.command, (Words{"echo", "--", "-x"}));
}

TEST(SplitAtDoubleDashTest, OptionsAfterDashAreCommandWords) {
  SplitArgs split = SplitAtDoubleDash({"new", "--", "ls", "--cpu", "3"});
  EXPECT_EQ(split.options, (Words{"new"}));
  EXPECT_EQ(*split.command, (Words{"ls", "--cpu", "3"}));
}

TEST(SplitAtDoubleDashTest, EmptyCommandAfterDash) {
  SplitArgs split = SplitAtDoubleDash({"new", "--"});
  ASSERT_TRUE(split.command.has_value());
  EXPECT_TRUE(split.command->empty());
}

TEST(SplitAtDoubleDashTest, NoDashOrOtherSubcommandIsUntouched) {
  EXPECT_FALSE(SplitAtDoubleDash({"new", "echo"}).command.has_value());
  SplitArgs list = SplitAtDoubleDash({"list", "--", "x"});
  EXPECT_FALSE(list.command.has_value());
  EXPECT_EQ(list.options, (Words{"list", "--", "x"}));
  EXPECT_FALSE(SplitAtDoubleDash({}).command.has_value());
  EXPECT_FALSE(SplitAtDoubleDash({"--cpu", "new", "--", "x"}).command.has_value());
}

TEST(IsAssignmentTest, AcceptsShellNames) {
  for (const char* word : {"FOO=bar", "N=1", "_X=", "a_1=b", "EXPR=a=b", "x=./y"}) {
    EXPECT_TRUE(IsAssignment(word)) << word;
  }
}

TEST(IsAssignmentTest, RejectsPathsDigitsAndOptions) {
  for (const char* word :
       {"./x=y", "/usr/bin/x=y", "1FOO=bar", "-o=v", "=v", "FOO", "", "FO-O=1", "A.B=1", "--x=1"}) {
    EXPECT_FALSE(IsAssignment(word)) << word;
  }
}

TEST(PeelAssignmentsTest, PeelsOnlyLeadingAssignments) {
  PeeledCommand peeled = PeelAssignments({"FOO=bar", "N=1", "make", "CC=gcc"});
  EXPECT_EQ(peeled.env, (std::map<std::string, std::string>{{"FOO", "bar"}, {"N", "1"}}));
  EXPECT_EQ(peeled.argv, (Words{"make", "CC=gcc"}));
}

TEST(PeelAssignmentsTest, PathFirstWordKeepsEverything) {
  PeeledCommand peeled = PeelAssignments({"/bin/make", "CC=gcc"});
  EXPECT_TRUE(peeled.env.empty());
  EXPECT_EQ(peeled.argv, (Words{"/bin/make", "CC=gcc"}));
  EXPECT_EQ(PeelAssignments({"./x=y", "A=1"}).argv, (Words{"./x=y", "A=1"}));
  EXPECT_EQ(PeelAssignments({"1FOO=bar"}).argv, (Words{"1FOO=bar"}));
  EXPECT_EQ(PeelAssignments({"-o=v"}).argv, (Words{"-o=v"}));
}

TEST(PeelAssignmentsTest, EmptyAndEmbeddedEqualsValues) {
  PeeledCommand peeled = PeelAssignments({"FOO=", "EXPR=a=b", "run"});
  EXPECT_EQ(peeled.env.at("FOO"), "");
  EXPECT_EQ(peeled.env.at("EXPR"), "a=b");
  EXPECT_EQ(peeled.argv, (Words{"run"}));
}

TEST(PeelAssignmentsTest, AssignmentsOnlyLeaveEmptyCommand) {
  PeeledCommand peeled = PeelAssignments({"A=1", "B=2"});
  EXPECT_TRUE(peeled.argv.empty());
  EXPECT_EQ(peeled.env.size(), 2u);
}

TEST(PeelAssignmentsTest, LaterDuplicateWins) {
  EXPECT_EQ(PeelAssignments({"A=1", "A=2", "x"}).env.at("A"), "2");
}

TEST(MakeAbsoluteTest, JoinsAndNormalises) {
  EXPECT_EQ(MakeAbsolute(".", "/home/u"), "/home/u");
  EXPECT_EQ(MakeAbsolute("", "/home/u"), "/home/u");
  EXPECT_EQ(MakeAbsolute("results", "/home/u"), "/home/u/results");
  EXPECT_EQ(MakeAbsolute("results/", "/home/u"), "/home/u/results");
  EXPECT_EQ(MakeAbsolute("../v/run1.log", "/home/u"), "/home/v/run1.log");
  EXPECT_EQ(MakeAbsolute("/abs//x/./y", "/home/u"), "/abs/x/y");
  EXPECT_EQ(MakeAbsolute("../../..", "/a"), "/");
  EXPECT_EQ(MakeAbsolute("x", "/"), "/x");
}

}  // namespace
}  // namespace hpcb::client
