// hpcb_queue_depth_bench [DEEPEST] [after|busy]: what one submission costs
// the broker's core at 0, 10k, 50k and DEEPEST (100k) jobs already queued:
// each waiting on a job that never ends (`after`, the default), or queued
// behind it on a machine it fills (`busy`).
// The executor, the scheduler and the clock are the unit tests' fakes, so
// only the core's own work per submission is timed; each depth's figure is
// the mean over 1000 submissions made there. A core whose cost grows with
// the queue shows it here as a ratio to the empty queue well above 1.
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "broker/broker_core.h"
#include "broker/clock.h"
#include "protocol/client_messages.h"
#include "protocol/codec.h"
#include "tests/broker/server_fakes.h"

namespace {

using namespace hpcb;
using namespace hpcb::broker;

struct Bench {
  FakeUserDb users;
  FakeScheduler scheduler{2};
  FakeExecutor executor;
  FakeClock clock;
  Permissions permissions{users, "wheel"};
  std::unique_ptr<BrokerCore> core;
  std::string waiting;  // a submission that waits on job 1

  explicit Bench(bool busy) {
    CoreOptions options;
    options.max_lifetime_s = 3600;
    options.max_queued_per_user = 1000000;
    core = std::make_unique<BrokerCore>(options, scheduler, executor, clock, permissions, nullptr);
    if (!core->Start({})) std::abort();
    protocol::SubmitRequest blocker;
    blocker.argv = {"sleep", "infinity"};
    blocker.cwd = "/tmp";
    blocker.cpu = 2;
    blocker.output = "/tmp";
    Submit(protocol::Encode(blocker));
    protocol::SubmitRequest request;
    request.argv = {"true"};
    request.cwd = "/tmp";
    request.cpu = 1;
    request.output = "/tmp";
    if (!busy) request.after = {1};
    waiting = protocol::Encode(request);
  }

  void Submit(const std::string& text) {
    bool answered = false;
    core->Handle(Peer{1000, -1}, text, [&answered](const Response&) { answered = true; });
    executor.Flush();
    core->Flush();
    if (!answered) std::abort();
  }
};

}  // namespace

int main(int argc, char** argv) {
  const std::size_t deepest = argc > 1 ? std::stoul(argv[1]) : 100000;
  const bool busy = argc > 2 && std::string(argv[2]) == "busy";
  constexpr int kSample = 1000;
  Bench bench(busy);
  std::size_t queued = 0;
  double empty_us = 0;
  std::printf("jobs queued %s\n", busy ? "behind a full machine" : "after a job that never ends");
  std::printf("%-10s %-14s %s\n", "queued", "us/submission", "vs empty");
  for (std::size_t depth : {std::size_t{0}, std::size_t{10000}, std::size_t{50000}, deepest}) {
    if (depth > deepest) break;
    while (queued < depth) {
      bench.Submit(bench.waiting);
      ++queued;
    }
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kSample; ++i)
      bench.Submit(bench.waiting);
    queued += kSample;
    const double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
            .count() /
        kSample;
    if (depth == 0) empty_us = us;
    std::printf("%-10zu %-14.1f %.2fx\n", depth, us, us / empty_us);
  }
  return 0;
}
