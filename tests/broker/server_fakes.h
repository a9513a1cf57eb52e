// Fakes for the broker server tests: user database, executor channel,
// scheduler (a plain CPU counter, fifo-strict).
#ifndef HPCB_TESTS_BROKER_SERVER_FAKES_H_
#define HPCB_TESTS_BROKER_SERVER_FAKES_H_

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "broker/executor_channel.h"
#include "broker/permissions.h"
#include "broker/scheduler.h"
#include "tests/testing/fake_clock.h"

namespace hpcb::broker {

class FakeUserDb : public UserDb {
 public:
  std::map<uid_t, std::string> names{{0, "root"}, {1000, "alice"}, {1001, "bob"}, {1002, "carol"}};
  std::map<std::string, std::set<uid_t>> members;

  std::optional<std::string> UserName(uid_t uid) const override {
    auto it = names.find(uid);
    if (it == names.end()) return std::nullopt;
    return it->second;
  }
  bool InGroup(uid_t uid, const std::string& group) const override {
    auto it = members.find(group);
    return it != members.end() && it->second.contains(uid);
  }
  bool GroupExists(const std::string& group) const override { return members.contains(group); }
};

// The executor as the core sees it. Every call is answered later, as the
// real channel's are: the answer waits in `pending` until Flush() (or the
// core's loop calling Pump/Expire) runs it.
class FakeExecutor : public ExecutorChannel {
 public:
  // Peer uid the "kernel" reports for the next Register.
  uid_t peer_uid = 1000;
  std::optional<std::string> register_error;
  std::optional<std::string> output_dir = "/tmp";
  // What a deliver_again fails with; none: it is delivered.
  std::optional<std::string> deliver_again_error;
  std::optional<std::string> start_error;
  ErrorCode start_error_code = ErrorCode::kFailedPrecondition;
  // A start made with a registration ends before the spawn (refused, or
  // failed setting up) and is answered with it, not on its own.
  bool start_refused_early = false;
  // What Hello/ListJobs report the executor holds.
  struct Held {
    std::vector<std::uint64_t> registered;
    std::vector<std::uint64_t> running;
    std::vector<std::uint64_t> exited;
  } hello;
  // Full records for some of those ids (else just id and state).
  std::map<std::uint64_t, protocol::JobSummary> summaries;
  std::uint64_t next_id = 1;  // the root side's high-water mark, plus one
  // Calls go unanswered until answered by hand (tests of calls in flight).
  bool hold_answers = false;
  std::vector<protocol::RegisterJob> registered;
  std::vector<protocol::StartJob> started;
  std::vector<protocol::SignalJob> signals;
  std::vector<std::uint64_t> forgotten;
  std::vector<protocol::JobExited> events;
  std::vector<std::function<void()>> pending;
  FakeUserDb users;

  // Runs every waiting answer, including those the answers cause.
  void Flush() {
    if (hold_answers) return;
    while (!pending.empty()) {
      std::vector<std::function<void()>> now;
      now.swap(pending);
      for (auto& answer : now)
        answer();
    }
  }

  std::optional<std::int64_t> hello_gpu_count;  // what the broker's hello said
  Result<protocol::HelloReply> Hello(std::int64_t gpu_count) override {
    hello_gpu_count = gpu_count;
    protocol::HelloReply reply;
    reply.jobs = hello.registered.size() + hello.running.size() + hello.exited.size();
    reply.next_id = next_id;
    return reply;
  }
  Result<protocol::ListJobsReply> ListJobs(std::uint64_t after, std::uint32_t limit) override {
    std::map<std::uint64_t, protocol::SpecState> all;
    for (std::uint64_t id : hello.registered)
      all[id] = protocol::SpecState::kRegistered;
    for (std::uint64_t id : hello.running)
      all[id] = protocol::SpecState::kRunning;
    for (std::uint64_t id : hello.exited)
      all[id] = protocol::SpecState::kExited;
    protocol::ListJobsReply reply;
    for (auto it = all.upper_bound(after); it != all.end(); ++it) {
      if (reply.jobs.size() == limit) {
        reply.more = true;
        break;
      }
      auto full = summaries.find(it->first);
      protocol::JobSummary summary =
          full != summaries.end() ? full->second : protocol::JobSummary{};
      summary.id = it->first;
      summary.state = it->second;
      reply.jobs.push_back(summary);
    }
    return reply;
  }
  void Register(protocol::RegisterJob job, int, Done<protocol::RegisterReply> done,
                Done<protocol::StartReply> started_done) override {
    registered.push_back(job);
    protocol::RegisterReply reply;
    reply.id = job.id;
    if (register_error) {
      reply.error =
          protocol::WireError::From(Error(ErrorCode::kFailedPrecondition, *register_error));
    }
    reply.uid = peer_uid;
    reply.gid = peer_uid;
    // The real executor reads the destination from the client's frame; the
    // core tests always submit with --output /tmp.
    if (output_dir) reply.output_dest = *output_dir + "/output." + std::to_string(job.id) + ".log";
    // Like the real executor: a start that comes with the registration is
    // made exactly as a StartJob would be. A refused one ends before the
    // spawn and rides in the registration's answer; one that spawns is
    // answered on its own, after it.
    if (job.start && !register_error) {
      started.push_back(*job.start);
      if (start_refused_early) {
        reply.start = StartAnswer(*job.start);
      } else {
        reply.starting = true;
      }
    }
    pending.push_back([done = std::move(done), reply] { done(reply); });
    if (reply.starting) {
      pending.push_back([started_done = std::move(started_done), answer = StartAnswer(*job.start)] {
        started_done(answer);
      });
    }
  }
  // The next this many StartJob calls get no answer: the channel's
  // timeout error instead.
  int starts_lost = 0;
  void Start(const protocol::StartJob& start, Done<protocol::StartReply> done) override {
    started.push_back(start);
    if (starts_lost > 0) {
      --starts_lost;
      pending.push_back(
          [done = std::move(done)] { done(Error(ErrorCode::kUnavailable, "no answer")); });
      return;
    }
    pending.push_back([done = std::move(done), reply = StartAnswer(start)] { done(reply); });
  }
  void Signal(const protocol::SignalJob& signal, Done<protocol::Ack> done) override {
    signals.push_back(signal);
    pending.push_back([done = std::move(done), id = signal.id] {
      done(protocol::Ack{0, id, std::nullopt});
    });
  }
  void Forget(std::uint64_t id, Done<protocol::Ack> done) override {
    forgotten.push_back(id);
    pending.push_back([this, done = std::move(done), id] {
      if (forgot_error) return done(Error(ErrorCode::kUnavailable, "no answer"));
      done(protocol::Ack{0, id, std::nullopt});
    });
  }
  // A forget's answer, when it runs, is the channel's "no answer" error.
  bool forgot_error = false;
  void OpenOutput(std::uint64_t, Done<UniqueFd> done) override {
    pending.push_back([done = std::move(done)] { done(Error(ErrorCode::kNotFound, "no buffer")); });
  }
  std::vector<std::uint64_t> delivered_again;
  void DeliverAgain(std::uint64_t id, int, Done<protocol::OutputReply> done) override {
    delivered_again.push_back(id);
    protocol::OutputReply reply;
    reply.id = id;
    if (deliver_again_error) {
      reply.error = protocol::WireError{static_cast<std::uint8_t>(ErrorCode::kFailedPrecondition),
                                        *deliver_again_error};
    } else {
      reply.output_dest = *output_dir + "/output." + std::to_string(id) + ".log";
    }
    pending.push_back([done = std::move(done), reply] { done(reply); });
  }
  void Query(std::uint64_t id, Done<std::optional<protocol::JobSummary>> done) override {
    Result<protocol::ListJobsReply> page = ListJobs(id - 1, 1);
    std::optional<protocol::JobSummary> found;
    if (page && !page->jobs.empty() && page->jobs[0].id == id) found = page->jobs[0];
    pending.push_back([done = std::move(done), found] { done(found); });
  }
  Result<void> Pump() override {
    Flush();
    return Ok();
  }
  void Expire() override { Flush(); }
  std::optional<std::chrono::steady_clock::time_point> NextDeadline() const override {
    return std::nullopt;
  }
  std::vector<protocol::JobExited> TakeEvents() override {
    std::vector<protocol::JobExited> out;
    out.swap(events);
    return out;
  }
  int fd() const override { return -1; }

 private:
  protocol::StartReply StartAnswer(const protocol::StartJob& start) const {
    protocol::StartReply reply;
    reply.id = start.id;
    if (start_error) {
      reply.error = protocol::WireError::From(Error(start_error_code, *start_error));
    }
    reply.pid = 100 + static_cast<std::int64_t>(start.id);
    return reply;
  }
};

class FakeScheduler : public Scheduler {
 public:
  explicit FakeScheduler(int cpus) : total_(cpus) {
    machine_.nodes.emplace_back();
    for (int i = 0; i < cpus; ++i) {
      free_.insert(i);
      machine_.nodes[0].cpus.push_back(i);
    }
    machine_.machine_mem_gib = 16;
  }
  std::optional<double> budget = 2.5;
  bool backfill = false;  // skip a job that does not fit instead of stopping
  // What Grant() rounds a request to: this many cpus per core. Placements
  // the fake makes hold one cpu per core whatever it says, so a reply
  // shows which of the two the core used.
  int threads_per_core = 1;

  Result<void> Validate(const JobDemand& demand) const override {
    if (demand.cpu > total_) {
      return InvalidArgument("--cpu " + std::to_string(demand.cpu) + " exceeds the " +
                             std::to_string(total_) + " cores available to jobs");
    }
    return Ok();
  }
  std::optional<double> DefaultBudget(int cpu, bool) const override {
    if (!budget) return std::nullopt;
    return *budget * cpu;
  }
  CpuGrant Grant(const JobDemand& demand) const override {
    return {demand.cpu * threads_per_core, demand.cpu};
  }
  int ExclusiveCpus(const JobDemand& /*demand*/) const override { return total_; }
  bool FitsNow(const JobDemand& demand) const override {
    return static_cast<int>(free_.size()) >= demand.cpu;
  }
  // One node holding every cpu, memory booked machine-wide.
  const Machine& machine() const override { return machine_; }
  std::vector<Start> Schedule(const std::vector<QueuedJob>& queue, const std::vector<RunningJob>&,
                              double) override {
    std::vector<Start> out;
    for (const QueuedJob& job : queue) {
      if (static_cast<int>(free_.size()) < job.demand.cpu) {
        if (backfill) continue;
        break;
      }
      Start start;
      start.id = job.id;
      for (int i = 0; i < job.demand.cpu; ++i)
        start.placement.cpus.push_back(*std::next(free_.begin(), i));
      start.placement.cores = job.demand.cpu;
      start.placement.mems = {0};
      start.placement.mem_by_node = {{-1, job.demand.mem_gib}};
      Reserve(start.placement);
      out.push_back(std::move(start));
    }
    return out;
  }
  void Reserve(const Placement& placement) override {
    for (int cpu : placement.cpus)
      free_.erase(cpu);
  }
  void Release(const Placement& placement) override {
    for (int cpu : placement.cpus)
      free_.insert(cpu);
  }
  int free_cpus() const { return static_cast<int>(free_.size()); }

 private:
  int total_;
  std::set<int> free_;
  Machine machine_;
};

}  // namespace hpcb::broker

#endif  // HPCB_TESTS_BROKER_SERVER_FAKES_H_
