#include <gtest/gtest.h>

#include "broker/job_rules.h"

namespace hpcb::broker {
namespace {

JobRecord Job(std::uint64_t id, std::uint32_t uid, JobState state) {
  JobRecord job;
  job.id = id;
  job.uid = uid;
  job.user = "u" + std::to_string(uid);
  job.state = state;
  job.max_time_s = 60;
  return job;
}

protocol::JobFieldRequest Request(const char* field, const char* action,
                                  std::optional<std::int64_t> value = std::nullopt) {
  return protocol::JobFieldRequest{7, field, action, value};
}

TEST(ServerJobRulesTest, GetIsForEveryoneAndWorksOnDoneJobs) {
  JobRecord job = Job(7, 1000, JobState::kDone);
  Result<protocol::JobFieldReply> reply =
      ApplyJobField(job, Request("max-time", "get"), false, "wheel");
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->value, 60);
  EXPECT_FALSE(reply->before);
}

TEST(ServerJobRulesTest, SetAndAddAreAdminOnly) {
  JobRecord job = Job(7, 1000, JobState::kRunning);
  Result<protocol::JobFieldReply> reply =
      ApplyJobField(job, Request("max-time", "set", 120), false, "wheel");
  ASSERT_FALSE(reply);
  EXPECT_EQ(reply.error().message(), "'job max-time set' requires membership of group 'wheel'");
  EXPECT_EQ(job.max_time_s, 60);
}

TEST(ServerJobRulesTest, SetReplacesAndAddExtends) {
  JobRecord job = Job(7, 1000, JobState::kRunning);
  Result<protocol::JobFieldReply> added =
      ApplyJobField(job, Request("max-time", "add", 172800), true, "wheel");
  ASSERT_TRUE(added);
  EXPECT_EQ(added->before, 60);
  EXPECT_EQ(added->value, 172860);
  Result<protocol::JobFieldReply> set =
      ApplyJobField(job, Request("max-time", "set", 30), true, "wheel");
  ASSERT_TRUE(set);
  EXPECT_EQ(set->before, 172860);
  EXPECT_EQ(job.max_time_s, 30);
}

TEST(ServerJobRulesTest, RefusalsLeaveTheJobAlone) {
  JobRecord job = Job(7, 1000, JobState::kQueued);
  auto message = [&](const protocol::JobFieldRequest& request) {
    Result<protocol::JobFieldReply> reply = ApplyJobField(job, request, true, "wheel");
    return reply ? std::string("ok") : reply.error().message();
  };
  EXPECT_EQ(message(Request("cpu", "get")), "unknown field 'cpu'; try one of: max-time");
  EXPECT_EQ(message(Request("max-time", "mul", 2)),
            "cannot 'mul' max-time; try one of: get, set, add");
  EXPECT_EQ(message(Request("max-time", "set")), "max-time must be a whole number of seconds");
  EXPECT_EQ(message(Request("max-time", "set", 0)),
            "max-time must be positive; use 'set' to shorten a job");
  EXPECT_EQ(message(Request("max-time", "add", -1)),
            "max-time must be positive; use 'set' to shorten a job");
  job.term_time = 5;
  EXPECT_EQ(message(Request("max-time", "set", 10)), "job 7 is already being killed");
  job.state = JobState::kDone;
  EXPECT_EQ(message(Request("max-time", "add", 10)), "job 7 already finished");
  EXPECT_EQ(job.max_time_s, 60);
}

TEST(ServerJobRulesTest, RowsForQueuedRunningAndDoneJobs) {
  JobRecord queued = Job(1, 1000, JobState::kQueued);
  queued.argv = {"echo", "hi"};
  protocol::JobRow row = BuildRow(queued, 2000);
  EXPECT_EQ(row.state, protocol::JobState::kQueued);
  EXPECT_FALSE(row.start_time);
  EXPECT_FALSE(row.uptime_s);
  EXPECT_EQ(row.argv, queued.argv);

  JobRecord running = Job(2, 1000, JobState::kRunning);
  running.start_time = 1990;
  running.placement.mem_by_node = {{0, 8}, {1, 4}};
  row = BuildRow(running, 2000);
  ASSERT_TRUE(row.uptime_s);
  EXPECT_EQ(*row.start_time + *row.uptime_s, 2000);
  EXPECT_TRUE(row.mem_spans_nodes);

  JobRecord machine_wide = Job(3, 1000, JobState::kRunning);
  machine_wide.start_time = 1990;
  machine_wide.placement.mem_by_node = {{-1, 8}};
  EXPECT_FALSE(BuildRow(machine_wide, 2000).mem_spans_nodes);

  JobRecord done = Job(4, 1000, JobState::kDone);
  done.start_time = 1000;
  done.end_time = 1025;
  done.exit_code = 3;
  done.reason = protocol::JobReason::kTimeout;
  row = BuildRow(done, 5000);
  EXPECT_EQ(row.uptime_s, 25);
  EXPECT_EQ(row.exit_code, 3);
  EXPECT_EQ(row.reason, protocol::JobReason::kTimeout);

  JobRecord never = Job(5, 1000, JobState::kDone);
  never.reason = protocol::JobReason::kKilled;
  row = BuildRow(never, 5000);
  EXPECT_FALSE(row.start_time);
  EXPECT_FALSE(row.uptime_s);
}

TEST(ServerJobRulesTest, RetentionKeepsNewestPerUser) {
  std::map<std::uint64_t, JobRecord> jobs;
  for (std::uint64_t id = 1; id <= 4; ++id)
    jobs[id] = Job(id, 1000, JobState::kDone);
  jobs[5] = Job(5, 1001, JobState::kDone);
  jobs[6] = Job(6, 1000, JobState::kRunning);
  EXPECT_EQ(RetentionVictims(jobs, 2), (std::vector<std::uint64_t>{1, 2}));
  EXPECT_EQ(RetentionVictims(jobs, 0), (std::vector<std::uint64_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(RetentionVictims(jobs, -3), (std::vector<std::uint64_t>{1, 2, 3, 4, 5}));
  EXPECT_TRUE(RetentionVictims(jobs, 50).empty());
}

}  // namespace
}  // namespace hpcb::broker
