#include "executor/spec_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "executor/launch_spec.h"
#include "tests/testing/temp_dir.h"

namespace hpcb::executor {
namespace {

namespace fs = std::filesystem;

LaunchSpec Spec(std::uint64_t id) {
  LaunchSpec spec;
  spec.id = id;
  spec.who = {1000, 1000, "alice", {1000}};
  spec.argv = {"echo", "job " + std::to_string(id)};
  spec.cwd = "/tmp";
  return spec;
}

class SpecStoreTest : public ::testing::Test {
 protected:
  std::string Path(const std::string& name) const { return dir_.path() + "/" + name; }
  bool Exists(const std::string& name) const { return ::access(Path(name).c_str(), F_OK) == 0; }

  testing::TempDir dir_;
};

TEST_F(SpecStoreTest, ASaveIsItsFileAtOnceAndAsksTheTurnForACommit) {
  SpecStore store(dir_.path());
  ASSERT_TRUE(store.Open());
  LaunchSpec spec = Spec(1);
  Result<std::uint64_t> bytes = store.Save(spec);
  ASSERT_TRUE(bytes);
  EXPECT_EQ(*bytes, protocol::Encode(spec).size());
  Result<LaunchSpec> loaded = LoadSpec(dir_.path(), 1);
  ASSERT_TRUE(loaded);
  EXPECT_EQ(loaded->argv, spec.argv);
  EXPECT_TRUE(store.commit_pending());
  ASSERT_TRUE(store.Commit());
  EXPECT_FALSE(store.commit_pending());
}

// A spec saved by a release from before accounting has no "usage"; one
// without a field that was always there is refused, naming it.
TEST_F(SpecStoreTest, ASpecFromBeforeAccountingLoadsAndOneWithoutItsArgvDoesNot) {
  LaunchSpec spec = Spec(4);
  std::string text = protocol::Encode(spec);
  const std::string usage = ",\"usage\":[]";
  ASSERT_NE(text.find(usage), std::string::npos) << text;
  testing::WriteText(Path("4.json"), text.replace(text.find(usage), usage.size(), ""));
  Result<LaunchSpec> loaded = LoadSpec(dir_.path(), 4);
  ASSERT_TRUE(loaded) << loaded.error().message();
  EXPECT_EQ(loaded->argv, spec.argv);

  text = protocol::Encode(Spec(5));
  const std::string argv = "\"argv\":[\"echo\",\"job 5\"],";
  ASSERT_NE(text.find(argv), std::string::npos) << text;
  testing::WriteText(Path("5.json"), text.replace(text.find(argv), argv.size(), ""));
  Result<LaunchSpec> refused = LoadSpec(dir_.path(), 5);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message(), "field 'argv' is missing");
}

// Fields are read by name: a spec the previous release wrote, in its order
// (who, home and shell before argv; state after the placement), loads.
TEST_F(SpecStoreTest, ASpecInThePreviousReleasesFieldOrderLoads) {
  testing::WriteText(
      Path("4.json"),
      R"({"id":4,"who":{"uid":1000,"gid":1000,"user":"alice","groups":[1000]},"home":"/home/a",)"
      R"("shell":"/bin/sh","argv":["echo","hi"],"cwd":"/tmp","env":[{"key":"A","value":"b"}],)"
      R"("output_dest":["/tmp/output.4.log"],"request":{"cpu":[2],"gpu_cores":0,"max_mem_gb":[],)"
      R"("max_time_s":[],"exclusive":false,"numa_local_mem":false,"numa_local_gpu":false,)"
      R"("min_gpu_link":[],"submit_time":1.5},"placement":[],"state":"registered","pid":0,)"
      R"("proc_start":0,"shepherd":0,"shepherd_start":0,"start_time":0.0,"exit_code":[],)"
      R"("oom":false,"end_time":0.0,"output_error":[],"usage":[]})");
  Result<LaunchSpec> loaded = LoadSpec(dir_.path(), 4);
  ASSERT_TRUE(loaded) << loaded.error().message();
  EXPECT_EQ(loaded->who.user, "alice");
  EXPECT_EQ(loaded->home, "/home/a");
  EXPECT_EQ(loaded->env.at("A"), "b");
  EXPECT_EQ(loaded->request.cpu, 2);
  EXPECT_EQ(loaded->request.submit_time, 1.5);
  EXPECT_EQ(loaded->output_dest, "/tmp/output.4.log");
  EXPECT_EQ(loaded->state, protocol::SpecState::kRegistered);
}

TEST_F(SpecStoreTest, APlainEndAsksForNoCommitOfItsOwn) {
  SpecStore store(dir_.path());
  LaunchSpec spec = Spec(1);
  ASSERT_TRUE(store.Save(spec, SpecStore::Flush::kSoon));
  EXPECT_TRUE(LoadSpec(dir_.path(), 1));
  EXPECT_FALSE(store.commit_pending());
}

TEST_F(SpecStoreTest, ASaveWithoutTheEnvironmentReplacesTheFileThatHeldIt) {
  SpecStore store(dir_.path());
  LaunchSpec spec = Spec(1);
  spec.env = {{"TOKEN", "hunter2-secret"}};
  ASSERT_TRUE(store.Save(spec));
  EXPECT_NE(testing::ReadText(Path("1.json")).find("hunter2-secret"), std::string::npos);
  spec.env.clear();
  ASSERT_TRUE(store.Save(spec));
  EXPECT_EQ(testing::ReadText(Path("1.json")).find("hunter2-secret"), std::string::npos);
  for (const auto& entry : fs::directory_iterator(dir_.path())) {
    EXPECT_EQ(entry.path().filename(), "1.json") << "no temp file is left";
  }
}

TEST_F(SpecStoreTest, AForgottenJobsFileGoes) {
  SpecStore store(dir_.path());
  ASSERT_TRUE(store.Save(Spec(1)));
  ASSERT_TRUE(store.Commit());
  ASSERT_TRUE(store.Forget(1));
  EXPECT_FALSE(Exists("1.json"));
  EXPECT_TRUE(store.commit_pending());
  EXPECT_TRUE(store.Forget(2)) << "a job with no file is forgotten all the same";
}

TEST_F(SpecStoreTest, AFileThatCannotBeWrittenFailsTheSave) {
  SpecStore store(dir_.path() + "/missing");
  Result<std::uint64_t> saved = store.Save(Spec(1));
  ASSERT_FALSE(saved);
  EXPECT_NE(saved.error().message().find("missing"), std::string::npos) << saved.error().message();
  EXPECT_FALSE(store.commit_pending());
}

TEST_F(SpecStoreTest, AnOlderReleasesDrainedJournalIsRemoved) {
  testing::WriteText(Path("journal"), std::string(4096, '\0'));
  testing::WriteText(Path("journal.old"), "\n\n\n");
  SpecStore store(dir_.path());
  ASSERT_TRUE(store.Open());
  EXPECT_FALSE(Exists("journal"));
  EXPECT_FALSE(Exists("journal.old"));
}

TEST_F(SpecStoreTest, AnOlderReleasesJournalWithLinesStopsTheStartAndIsLeftAsItIs) {
  const std::string line = "0badc0de {\"id\":1,\"spec\":[]}\n";
  testing::WriteText(Path("journal"), line);
  SpecStore store(dir_.path());
  Result<void> opened = store.Open();
  ASSERT_FALSE(opened);
  EXPECT_NE(opened.error().message().find(Path("journal")), std::string::npos)
      << opened.error().message();
  EXPECT_NE(opened.error().message().find("stop it cleanly"), std::string::npos)
      << opened.error().message();
  EXPECT_EQ(testing::ReadText(Path("journal")), line);
}

TEST_F(SpecStoreTest, AJournalThatCannotBeReadStopsTheStart) {
  fs::create_directory(Path("journal"));  // read(2) fails: EISDIR
  SpecStore store(dir_.path());
  Result<void> opened = store.Open();
  ASSERT_FALSE(opened);
  EXPECT_NE(opened.error().message().find("journal"), std::string::npos)
      << opened.error().message();
}

// Only the names the root side makes: the id as std::to_string writes it,
// between the prefix and the suffix asked for.
TEST(ListIdsTest, ListsOnlyNamesMadeFromAnIdSorted) {
  testing::TempDir dir;
  for (const char* name : {"12.json", "3.json", "007.json", "0.json", "-4.json", "x.json",
                           "5.json.corrupt", "6", ".json", "job-8", "job-09"}) {
    std::ofstream(dir.path() + "/" + name) << "";
  }
  EXPECT_EQ(ListIds(dir.path()), (std::vector<std::uint64_t>{3, 12}));
  EXPECT_EQ(ListIds(dir.path(), ""), (std::vector<std::uint64_t>{6}));
  EXPECT_EQ(ListIds(dir.path(), "", "job-"), (std::vector<std::uint64_t>{8}));
  EXPECT_TRUE(ListIds(dir.path() + "/absent").empty());
}

}  // namespace
}  // namespace hpcb::executor
