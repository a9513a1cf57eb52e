// hpcb_sched_bench: mean time of one Schedule() pass per policy while the
// queue head is blocked, on a fake 2-node 64-cpu machine. That is the
// steady state of a busy broker: every tick re-examines the whole queue
// and starts nothing.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "broker/placement.h"

namespace {

using hpcb::broker::JobDemand;
using hpcb::broker::Machine;
using hpcb::broker::Policy;
using hpcb::broker::Pool;
using hpcb::broker::QueuedJob;
using hpcb::broker::RunningJob;

constexpr double kNow = 1000;

Machine FakeMachine() {
  Machine machine;
  for (int n = 0; n < 2; ++n) {
    hpcb::broker::NumaNode node;
    node.id = n;
    for (int c = 0; c < 32; ++c)
      node.cpus.push_back(n * 32 + c);
    node.mem_gib = 128;
    machine.nodes.push_back(node);
  }
  machine.per_node_memory = true;
  machine.machine_mem_gib = 256;
  return machine;
}

// Two 30-cpu jobs leave 2 cpus per node; the head wants a whole node and
// nothing behind it fits in 2 cpus.
struct Scenario {
  Pool live{FakeMachine()};
  std::vector<RunningJob> running;
  std::vector<QueuedJob> queue;
};

std::unique_ptr<Scenario> MakeScenario(std::size_t queued) {
  auto scenario = std::make_unique<Scenario>();
  for (std::uint64_t id = 1; id <= 2; ++id) {
    JobDemand demand;
    demand.cpu = 30;
    demand.mem_gib = 16;
    std::optional<hpcb::broker::Placement> placement = scenario->live.TryPlace(demand);
    if (!placement) std::abort();
    scenario->live.Reserve(*placement);
    scenario->running.push_back({id, *placement, kNow + 3600.0 * static_cast<double>(id)});
  }
  for (std::size_t i = 0; i < queued; ++i) {
    QueuedJob job;
    job.id = 100 + i;
    job.demand.cpu = i == 0 ? 32 : 4 + static_cast<int>(i % 8);
    job.demand.mem_gib = 8;
    job.max_time_s = i == 0 ? 3600 : 60;  // short enough for strict to try
    scenario->queue.push_back(job);
  }
  return scenario;
}

double MeanPassMicros(const std::string& name, std::size_t queued) {
  std::unique_ptr<Scenario> scenario = MakeScenario(queued);
  std::unique_ptr<Policy> policy = hpcb::broker::MakePolicy(name);
  auto pass = [&] {
    auto starts = policy->Schedule(scenario->queue, scenario->running, scenario->live, kNow);
    if (!starts.empty()) std::abort();  // the scenario must stay blocked
  };
  pass();  // easy-backfill freezes its budget here
  using Clock = std::chrono::steady_clock;
  int passes = 0;
  Clock::time_point start = Clock::now();
  Clock::duration elapsed{};
  while (passes < 20000 && (passes < 5 || elapsed < std::chrono::milliseconds(300))) {
    pass();
    ++passes;
    elapsed = Clock::now() - start;
  }
  return std::chrono::duration<double, std::micro>(elapsed).count() / passes;
}

}  // namespace

int main() {
  const std::vector<std::string> policies = {"fifo-strict", "easy-backfill", "strict-backfill"};
  const std::vector<std::size_t> sizes = {10, 1000, 10000, 100000};
  std::printf("mean Schedule() pass, head blocked, 2 nodes x 32 cpus (microseconds)\n");
  std::printf("%10s", "queued");
  for (const auto& name : policies)
    std::printf(" %16s", name.c_str());
  std::printf("\n");
  for (std::size_t size : sizes) {
    std::printf("%10zu", size);
    for (const auto& name : policies)
      std::printf(" %16.2f", MeanPassMicros(name, size));
    std::printf("\n");
  }
  return 0;
}
