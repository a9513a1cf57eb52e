// Fakes for the broker server tests: user database, executor channel,
// scheduler (a plain CPU counter, fifo-strict).
#ifndef HPCB_TESTS_BROKER_SERVER_FAKES_H_
#define HPCB_TESTS_BROKER_SERVER_FAKES_H_

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "broker/executor_channel.h"
#include "broker/permissions.h"
#include "broker/scheduler.h"

namespace hpcb::broker {

class FakeUserDb : public UserDb {
 public:
  std::map<uid_t, std::string> names{{0, "root"}, {1000, "alice"}, {1001, "bob"},
                                     {1002, "carol"}};
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

class FakeExecutor : public ExecutorChannel {
 public:
  // Peer uid the "kernel" reports for the next Register.
  uid_t peer_uid = 1000;
  std::optional<std::string> register_error;
  std::optional<std::string> output_dir = "/tmp";
  std::optional<std::string> start_error;
  protocol::HelloReply hello;
  std::vector<protocol::RegisterJob> registered;
  std::vector<protocol::StartJob> started;
  std::vector<protocol::SignalJob> signals;
  std::vector<std::uint64_t> forgotten;
  std::vector<protocol::JobExited> events;
  FakeUserDb users;

  Result<protocol::HelloReply> Hello() override { return hello; }
  Result<protocol::RegisterReply> Register(const protocol::RegisterJob& job, int) override {
    registered.push_back(job);
    protocol::RegisterReply reply;
    reply.id = job.id;
    reply.error = register_error;
    reply.uid = peer_uid;
    reply.gid = peer_uid;
    reply.user = users.UserName(peer_uid).value_or("?");
    // The real executor reads the destination from the client's frame; the
    // core tests always submit with --output /tmp.
    if (output_dir) reply.output_dest = *output_dir + "/output." + std::to_string(job.id) + ".log";
    // Like the real executor: a start that comes with the registration is
    // made exactly as a StartJob would be.
    if (job.start && !register_error) {
      Result<protocol::StartReply> outcome = Start(*job.start);
      if (outcome) reply.start = *outcome;
    }
    return reply;
  }
  Result<protocol::StartReply> Start(const protocol::StartJob& start) override {
    started.push_back(start);
    protocol::StartReply reply;
    reply.id = start.id;
    reply.error = start_error;
    reply.pid = 100 + static_cast<std::int64_t>(start.id);
    return reply;
  }
  Result<protocol::Ack> Signal(const protocol::SignalJob& signal) override {
    signals.push_back(signal);
    return protocol::Ack{signal.id, std::nullopt};
  }
  Result<protocol::Ack> Forget(std::uint64_t id) override {
    forgotten.push_back(id);
    return protocol::Ack{id, std::nullopt};
  }
  Result<UniqueFd> OpenOutput(std::uint64_t) override {
    return Error(ErrorCode::kNotFound, "no buffer");
  }
  Result<void> Pump() override { return Ok(); }
  std::vector<protocol::JobExited> TakeEvents() override {
    std::vector<protocol::JobExited> out;
    out.swap(events);
    return out;
  }
  int fd() const override { return -1; }
};

class FakeScheduler : public Scheduler {
 public:
  explicit FakeScheduler(int cpus) : total_(cpus) {
    for (int i = 0; i < cpus; ++i) free_.insert(i);
  }
  std::optional<double> budget = 2.5;
  bool backfill = false;  // skip a job that does not fit instead of stopping

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
  int TotalCpus() const override { return total_; }
  std::vector<Start> Schedule(const std::vector<QueuedJob>& queue,
                              const std::vector<RunningJob>&, double) override {
    std::vector<Start> out;
    for (const QueuedJob& job : queue) {
      if (static_cast<int>(free_.size()) < job.demand.cpu) {
        if (backfill) continue;
        break;
      }
      Start start;
      start.id = job.id;
      for (int i = 0; i < job.demand.cpu; ++i) start.placement.cpus.push_back(*std::next(free_.begin(), i));
      start.placement.mems = {0};
      start.placement.mem_by_node = {{-1, job.demand.mem_gib}};
      Reserve(start.placement);
      out.push_back(std::move(start));
    }
    return out;
  }
  void Reserve(const Placement& placement) override {
    for (int cpu : placement.cpus) free_.erase(cpu);
  }
  void Release(const Placement& placement) override {
    for (int cpu : placement.cpus) free_.insert(cpu);
  }
  int free_cpus() const { return static_cast<int>(free_.size()); }

 private:
  int total_;
  std::set<int> free_;
};

}  // namespace hpcb::broker

#endif  // HPCB_TESTS_BROKER_SERVER_FAKES_H_
