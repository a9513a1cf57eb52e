#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "broker/job_record.h"
#include "broker/queue_store.h"
#include "protocol/codec.h"
#include "tests/testing/temp_dir.h"

namespace hpcb::broker {
namespace {

using testing::TempDir;

JobRecord SampleJob() {
  JobRecord job;
  job.id = 7;
  job.user = "alice";
  job.uid = 1000;
  job.gid = 1000;
  job.argv = {"echo", "hello world"};
  job.cwd = "/home/alice";
  job.demand.cpu = 2;
  job.demand.gpus = 1;
  job.demand.mem_gib = 16;
  job.demand.numa_local_mem = true;
  job.demand.min_gpu_link = "NV";
  job.max_mem_gb = 16;
  job.mem_defaulted = true;
  job.max_time_s = 3600;
  job.state = JobState::kRunning;
  job.submit_time = 1000.5;
  job.start_time = 1001.25;
  job.placement.cpus = {2, 3};
  job.placement.mems = {0, 1};
  job.placement.mem_by_node = {{0, 8.5}, {1, 7.5}};
  job.placement.gpus = {1};
  job.placement.spans_nodes = true;
  job.term_time = 1500;
  job.kill_at = 1510;
  job.output_dest = "/home/alice/output.7.log";
  return job;
}

void ExpectSame(const JobRecord& a, const JobRecord& b) {
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.user, b.user);
  EXPECT_EQ(a.uid, b.uid);
  EXPECT_EQ(a.argv, b.argv);
  EXPECT_EQ(a.demand.cpu, b.demand.cpu);
  EXPECT_EQ(a.demand.gpus, b.demand.gpus);
  EXPECT_EQ(a.demand.mem_gib, b.demand.mem_gib);
  EXPECT_EQ(a.demand.numa_local_mem, b.demand.numa_local_mem);
  EXPECT_EQ(a.demand.min_gpu_link, b.demand.min_gpu_link);
  EXPECT_EQ(a.max_mem_gb, b.max_mem_gb);
  EXPECT_EQ(a.mem_defaulted, b.mem_defaulted);
  EXPECT_EQ(a.max_time_s, b.max_time_s);
  EXPECT_EQ(a.state, b.state);
  EXPECT_EQ(a.submit_time, b.submit_time);
  EXPECT_EQ(a.start_time, b.start_time);
  EXPECT_EQ(a.placement.cpus, b.placement.cpus);
  EXPECT_EQ(a.placement.mems, b.placement.mems);
  EXPECT_EQ(a.placement.mem_by_node, b.placement.mem_by_node);
  EXPECT_EQ(a.placement.gpus, b.placement.gpus);
  EXPECT_EQ(a.placement.spans_nodes, b.placement.spans_nodes);
  EXPECT_EQ(a.term_time, b.term_time);
  EXPECT_EQ(a.kill_at, b.kill_at);
  EXPECT_EQ(a.output_dest, b.output_dest);
  EXPECT_EQ(a.output_error, b.output_error);
}

TEST(ServerJobRecordTest, RoundTripsThroughJson) {
  const JobRecord job = SampleJob();
  Result<JobRecord> back = protocol::Decode<JobRecord>(protocol::Encode(job));
  ASSERT_TRUE(back) << back.error().message();
  ExpectSame(job, *back);
}

TEST(ServerJobRecordTest, RefusesUnknownStateAndDuplicateIds) {
  std::string text = protocol::Encode(SampleJob());
  const std::string running = "\"state\":\"running\"";
  ASSERT_NE(text.find(running), std::string::npos) << text;
  text.replace(text.find(running), running.size(), "\"state\":\"zombie\"");
  Result<JobRecord> zombie = protocol::Decode<JobRecord>(text);
  ASSERT_FALSE(zombie);
  EXPECT_NE(zombie.error().message().find("'state'"), std::string::npos)
      << zombie.error().message();
  QueueFile file;
  file.jobs = {SampleJob(), SampleJob()};
  EXPECT_FALSE(protocol::Decode<QueueFile>(protocol::Encode(file)));
}

TEST(ServerJobRecordTest, DependenciesRoundTripAndOldRecordsLoadWithout) {
  JobRecord job = SampleJob();
  job.after = {3, 5};
  job.after_any = true;
  Result<JobRecord> back = protocol::Decode<JobRecord>(protocol::Encode(job));
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(back->after, (std::vector<std::uint64_t>{3, 5}));
  EXPECT_TRUE(back->after_any);

  // A record from before dependencies existed has neither field.
  std::string old = protocol::Encode(SampleJob());
  for (const std::string field : {",\"after\":[]", ",\"after_any\":false"}) {
    ASSERT_NE(old.find(field), std::string::npos) << old;
    old.erase(old.find(field), field.size());
  }
  Result<JobRecord> loaded = protocol::Decode<JobRecord>(old);
  ASSERT_TRUE(loaded) << loaded.error().message();
  EXPECT_TRUE(loaded->after.empty());
  EXPECT_FALSE(loaded->after_any);
}

TEST(ServerJobRecordTest, TheNameRoundTripsAndOldRecordsLoadWithout) {
  JobRecord job = SampleJob();
  job.name = "train-1";
  Result<JobRecord> back = protocol::Decode<JobRecord>(protocol::Encode(job));
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(back->name, "train-1");

  std::string old = protocol::Encode(SampleJob());
  const std::string field = ",\"name\":[]";
  ASSERT_NE(old.find(field), std::string::npos) << old;
  old.erase(old.find(field), field.size());
  Result<JobRecord> loaded = protocol::Decode<JobRecord>(old);
  ASSERT_TRUE(loaded) << loaded.error().message();
  EXPECT_EQ(loaded->name, std::nullopt);
}

TEST(ServerJobRecordTest, AnArrayElementRoundTripsAndOldRecordsLoadAsNone) {
  JobRecord job = SampleJob();
  job.array_id = 12;
  job.array_index = 7;
  job.array_throttle = 2;
  Result<JobRecord> back = protocol::Decode<JobRecord>(protocol::Encode(job));
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(back->array_id, 12u);
  EXPECT_EQ(back->array_index, 7u);
  EXPECT_EQ(back->array_throttle, 2u);

  std::string old = protocol::Encode(SampleJob());
  for (const std::string field :
       {",\"array_id\":[]", ",\"array_index\":0", ",\"array_throttle\":[]"}) {
    ASSERT_NE(old.find(field), std::string::npos) << old;
    old.erase(old.find(field), field.size());
  }
  Result<JobRecord> loaded = protocol::Decode<JobRecord>(old);
  ASSERT_TRUE(loaded) << loaded.error().message();
  EXPECT_EQ(loaded->array_id, std::nullopt);
  EXPECT_EQ(loaded->array_throttle, std::nullopt);
}

TEST(ServerQueueStoreTest, DrainingIsKeptAndOldSnapshotsLoadAsNotDraining) {
  TempDir dir;
  QueueStore store(dir.path());
  QueueFile file;
  file.draining = true;
  ASSERT_TRUE(store.Save(file));
  Result<QueueFile> loaded = store.Load();
  ASSERT_TRUE(loaded) << loaded.error().message();
  EXPECT_TRUE(loaded->draining);

  std::ofstream(store.path()) << R"({"next_id":4,"jobs":[],"journal_seq":0})";
  loaded = store.Load();
  ASSERT_TRUE(loaded) << loaded.error().message();
  EXPECT_FALSE(loaded->draining);
  EXPECT_EQ(loaded->next_id, 4u);
}

TEST(ServerQueueStoreTest, MissingFileIsAnEmptyQueue) {
  TempDir dir;
  Result<QueueFile> loaded = QueueStore(dir.path()).Load();
  ASSERT_TRUE(loaded);
  EXPECT_EQ(loaded->next_id, 1u);
  EXPECT_TRUE(loaded->jobs.empty());
}

TEST(ServerQueueStoreTest, SavesAtomicallyWithMode0600AndReloads) {
  TempDir dir;
  QueueStore store(dir.path());
  QueueFile file;
  file.next_id = 3;  // behind the job's id: the loader moves it past
  file.jobs = {SampleJob()};
  ASSERT_TRUE(store.Save(file));
  struct stat st {};
  ASSERT_EQ(::stat(store.path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_FALSE(std::filesystem::exists(store.path() + ".tmp"));
  Result<QueueFile> loaded = store.Load();
  ASSERT_TRUE(loaded) << loaded.error().message();
  EXPECT_EQ(loaded->next_id, 8u);
  ASSERT_EQ(loaded->jobs.size(), 1u);
  ExpectSame(SampleJob(), loaded->jobs[0]);
}

TEST(ServerQueueStoreTest, CorruptFileIsRenamedAndIdsAreNotReused) {
  TempDir dir;
  QueueStore store(dir.path());
  {
    std::ofstream out(store.path());
    out << "{\"next_id\": 12, \"jobs\": [{\"id\": 41, \"user\": ";
  }
  Result<QueueFile> loaded = store.Load();
  ASSERT_TRUE(loaded);
  EXPECT_TRUE(loaded->jobs.empty());
  EXPECT_EQ(loaded->next_id, 42u);
  EXPECT_TRUE(std::filesystem::exists(store.path() + ".corrupt"));
  EXPECT_FALSE(std::filesystem::exists(store.path()));
}

TEST(ServerQueueStoreTest, HighestIdMentioned) {
  EXPECT_EQ(HighestIdMentioned(""), 0u);
  EXPECT_EQ(HighestIdMentioned("garbage"), 0u);
  EXPECT_EQ(HighestIdMentioned("{\"next_id\":5}"), 5u);
  EXPECT_EQ(HighestIdMentioned("{\"next_id\":5,\"jobs\":[{\"id\": 9}]}"), 10u);
}

}  // namespace
}  // namespace hpcb::broker
