// The account lookup's child: the account, and with an output path that
// path's check made as the account, in the same child, with nothing the
// lookup left open carried across the identity change.
#include "launcher/account_lookup.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "launcher/user_helper.h"
#include "protocol/codec.h"
#include "tests/testing/temp_dir.h"

namespace hpcb::launcher {
namespace {

// What `child` answered, once it has exited.
Result<std::string> AnswerOf(HelperChild& child) {
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = ::read(child.answer.get(), buf, sizeof buf)) > 0;)
    text.append(buf, n);
  int status = 0;
  ::waitpid(child.pid, &status, 0);
  return ParseHelperAnswer(text);
}

// Runs the lookup as the launcher does: in a helper that keeps the
// launcher's identity, the answer read back through its pipe. Before the
// lookup, as an NSS module might, `leave_open` opens a descriptor (the
// answer says whether it was still open when the check ran) and
// `with_thread` leaves a second thread running. `proc_root` is where
// fs.suid_dumpable is read.
Result<protocol::LookUpUserReply> LookUpInHelper(
    uid_t uid, const std::optional<protocol::OutputToCheck>& output, bool as_root,
    bool leave_open = false, bool with_thread = false, const std::string& proc_root = "/proc") {
  Result<HelperChild> child = StartUserHelper(
      protocol::UserIdentity{}, false, {}, [&](const std::vector<int>&) -> Result<std::string> {
        const int left = leave_open ? ::open("/dev/null", O_RDONLY) : -1;
        if (with_thread) std::thread([] { ::pause(); }).detach();
        HPCB_ASSIGN_OR_RETURN(
            protocol::LookUpUserReply found,
            LookUpAccountHere(uid, output, 7,
                              OutputCheckSetting{as_root, proc_root, kHelperAnswerFd}));
        if (left >= 0 && ::fcntl(left, F_GETFD) != -1) {
          return Error(ErrorCode::kInternal, "the lookup's descriptor was still open");
        }
        return protocol::Encode(found);
      });
  if (!child) return child.error();
  HPCB_ASSIGN_OR_RETURN(std::string answer, AnswerOf(*child));
  return protocol::Decode<protocol::LookUpUserReply>(answer);
}

TEST(AccountLookupTest, WithoutAnOutputPathOnlyTheAccount) {
  Result<protocol::LookUpUserReply> found = LookUpInHelper(::getuid(), std::nullopt, false);
  ASSERT_TRUE(found) << found.error().message();
  EXPECT_EQ(found->who.uid, ::getuid());
  EXPECT_FALSE(found->output);
}

TEST(AccountLookupTest, TheOutputPathIsResolvedAndCheckedInTheSameChild) {
  testing::TempDir dir;
  Result<protocol::LookUpUserReply> found = LookUpInHelper(
      ::getuid(), protocol::OutputToCheck{dir.path(), ::getgid()}, false, /*leave_open=*/true);
  ASSERT_TRUE(found) << found.error().message();
  ASSERT_TRUE(found->output);
  EXPECT_FALSE(found->output->error) << found->output->error->message;
  EXPECT_EQ(found->output->dest, dir.path() + "/output.7.log");
}

TEST(AccountLookupTest, AFailedCheckIsTheOutputsErrorNotTheLookups) {
  testing::TempDir dir;
  Result<protocol::LookUpUserReply> found = LookUpInHelper(
      ::getuid(), protocol::OutputToCheck{dir.path() + "/missing/x.log", ::getgid()}, false);
  ASSERT_TRUE(found) << found.error().message();
  EXPECT_EQ(found->who.uid, ::getuid());
  ASSERT_TRUE(found->output);
  ASSERT_TRUE(found->output->error);
  EXPECT_NE(found->output->error->message.find("cannot save output there"), std::string::npos)
      << found->output->error->message;
}

// With a second thread, blocking signals in one would not keep the user
// from signalling the other after the drop: the check is left to
// check_dest's helper, forked from the single-threaded launcher.
TEST(AccountLookupTest, AChildWithAThreadLeftBehindLeavesTheCheckToCheckDest) {
  testing::TempDir dir;
  Result<protocol::LookUpUserReply> found =
      LookUpInHelper(::getuid(), protocol::OutputToCheck{dir.path(), ::getgid()}, false,
                     /*leave_open=*/false, /*with_thread=*/true);
  ASSERT_TRUE(found) << found.error().message();
  EXPECT_EQ(found->who.uid, ::getuid());
  EXPECT_FALSE(found->output) << "checked with a second thread running";
}

TEST(AccountLookupTest, SingleThreadedCountsThisProcesssThreads) {
  Result<HelperChild> child =
      StartUserHelper(protocol::UserIdentity{}, false, {}, [](const std::vector<int>&) {
        const bool alone = SingleThreaded();
        std::thread([] { ::pause(); }).detach();
        return Result<std::string>(std::string(alone ? "1" : "0") + (SingleThreaded() ? "1" : "0"));
      });
  ASSERT_TRUE(child) << child.error().message();
  Result<std::string> answer = AnswerOf(*child);
  ASSERT_TRUE(answer) << answer.error().message();
  EXPECT_EQ(*answer, "10") << "alone, then with a second thread";
}

TEST(AccountLookupTest, AnUnknownUidIsTheLookupsError) {
  Result<protocol::LookUpUserReply> found =
      LookUpInHelper(4000000001U, protocol::OutputToCheck{"/tmp", 1}, false);
  ASSERT_FALSE(found);
  EXPECT_NE(found.error().message().find("4000000001"), std::string::npos)
      << found.error().message();
}

// As root the check runs as the account, with the submitter's gid: nobody
// can write a directory open to all, and not root's own.
TEST(AccountLookupTest, AsRootTheCheckRunsAsTheAccount) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to change identity";
  const struct passwd* nobody = ::getpwnam("nobody");
  ASSERT_NE(nobody, nullptr);
  testing::TempDir open_dir;
  ASSERT_EQ(::chmod(open_dir.path().c_str(), 01777), 0);
  testing::TempDir roots_dir;
  ASSERT_EQ(::chmod(roots_dir.path().c_str(), 0755), 0);

  Result<protocol::LookUpUserReply> found =
      LookUpInHelper(nobody->pw_uid, protocol::OutputToCheck{open_dir.path(), nobody->pw_gid}, true,
                     /*leave_open=*/true);
  ASSERT_TRUE(found) << found.error().message();
  ASSERT_TRUE(found->output);
  EXPECT_FALSE(found->output->error) << found->output->error->message;
  EXPECT_EQ(found->output->dest, open_dir.path() + "/output.7.log");

  found = LookUpInHelper(nobody->pw_uid, protocol::OutputToCheck{roots_dir.path(), nobody->pw_gid},
                         true);
  ASSERT_TRUE(found) << found.error().message();
  ASSERT_TRUE(found->output);
  ASSERT_TRUE(found->output->error) << "nobody was let write root's directory";
  EXPECT_NE(found->output->error->message.find("cannot write"), std::string::npos)
      << found->output->error->message;

  // fs.suid_dumpable 1, read again in the child: no drop here at all.
  testing::TempDir proc;
  std::filesystem::create_directories(proc.path() + "/sys/fs");
  std::ofstream(proc.path() + "/sys/fs/suid_dumpable") << "1\n";
  found = LookUpInHelper(nobody->pw_uid, protocol::OutputToCheck{open_dir.path(), nobody->pw_gid},
                         true, false, false, proc.path());
  ASSERT_TRUE(found) << found.error().message();
  EXPECT_FALSE(found->output) << "checked as the user with fs.suid_dumpable at 1";

  // The identity rule holds for the account found: never gid 0.
  found = LookUpInHelper(nobody->pw_uid, protocol::OutputToCheck{open_dir.path(), 0}, true);
  ASSERT_TRUE(found) << found.error().message();
  ASSERT_TRUE(found->output);
  ASSERT_TRUE(found->output->error);
  EXPECT_NE(found->output->error->message.find("gid 0"), std::string::npos)
      << found->output->error->message;
}

}  // namespace
}  // namespace hpcb::launcher
