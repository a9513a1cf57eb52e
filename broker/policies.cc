// The three scheduling policies. Each returns starts already reserved in
// the live pool; none reorders the queue.
#include <algorithm>
#include <limits>
#include <optional>
#include <utility>

#include "broker/placement.h"

namespace hpcb::broker {
namespace {

// Starts queue[0..] in order until one does not fit; returns the index of
// the blocked job (queue.size() when everything started).
std::size_t StartPrefix(const std::vector<QueuedJob>& queue, Pool& live,
                        std::vector<Start>& starts) {
  std::size_t i = 0;
  for (; i < queue.size(); ++i) {
    std::optional<Placement> placement = live.TryPlace(queue[i].demand);
    if (!placement) break;
    live.Reserve(*placement);
    starts.push_back({queue[i].id, std::move(*placement)});
  }
  return i;
}

class FifoStrict : public Policy {
 public:
  std::vector<Start> Schedule(const std::vector<QueuedJob>& queue,
                              const std::vector<RunningJob>& /*running*/, Pool& live,
                              double /*now*/) override {
    std::vector<Start> starts;
    StartPrefix(queue, live, starts);
    return starts;
  }
};

// The budget is frozen when a head first blocks and only ever shrinks:
// capacity freed afterwards is held for the head. That is what keeps the
// head from starving without runtime estimates. The budget is always a
// subset of what is free in the live pool, so a placement found in it can
// be reserved in both.
class EasyBackfill : public Policy {
 public:
  std::vector<Start> Schedule(const std::vector<QueuedJob>& queue,
                              const std::vector<RunningJob>& /*running*/, Pool& live,
                              double /*now*/) override {
    std::vector<Start> starts;
    if (queue.empty()) {
      Forget();
      return starts;
    }
    bool same_head = head_ == queue.front().id && budget_;
    if (same_head && !live.TryPlace(queue.front().demand)) {
      Backfill(queue, 1, live, starts);
      return starts;
    }
    Forget();
    std::size_t blocked = StartPrefix(queue, live, starts);
    if (blocked == queue.size()) return starts;
    head_ = queue[blocked].id;
    budget_.emplace(live);
    Backfill(queue, blocked + 1, live, starts);
    return starts;
  }

 private:
  void Forget() {
    head_.reset();
    budget_.reset();
  }

  void Backfill(const std::vector<QueuedJob>& queue, std::size_t from, Pool& live,
                std::vector<Start>& starts) {
    for (std::size_t i = from; i < queue.size(); ++i) {
      const JobDemand& demand = queue[i].demand;
      if (demand.exclusive) continue;
      std::optional<Placement> placement = budget_->TryPlace(demand);
      if (!placement) continue;
      budget_->Reserve(*placement);
      live.Reserve(*placement);
      starts.push_back({queue[i].id, std::move(*placement)});
    }
  }

  std::optional<std::uint64_t> head_;
  std::optional<Pool> budget_;
};

// Stateless: the head's guaranteed start is recomputed every pass from the
// running jobs' deadlines, and only jobs that end by then may jump it.
class StrictBackfill : public Policy {
 public:
  std::vector<Start> Schedule(const std::vector<QueuedJob>& queue,
                              const std::vector<RunningJob>& running, Pool& live,
                              double now) override {
    std::vector<Start> starts;
    std::size_t blocked = StartPrefix(queue, live, starts);
    if (blocked == queue.size()) return starts;
    double reservation = Reservation(queue, running, starts, live, queue[blocked], now);
    if (reservation == kNever) return starts;
    for (std::size_t i = blocked + 1; i < queue.size(); ++i) {
      if (now + static_cast<double>(queue[i].max_time_s) > reservation) continue;
      std::optional<Placement> placement = live.TryPlace(queue[i].demand);
      if (!placement) continue;
      live.Reserve(*placement);
      starts.push_back({queue[i].id, std::move(*placement)});
    }
    return starts;
  }

 private:
  static constexpr double kNever = std::numeric_limits<double>::infinity();

  // Releases jobs into a scratch pool in deadline order until the head
  // fits; that deadline is when the head is guaranteed to start.
  static double Reservation(const std::vector<QueuedJob>& queue,
                            const std::vector<RunningJob>& running,
                            const std::vector<Start>& started, const Pool& live,
                            const QueuedJob& head, double now) {
    std::vector<std::pair<double, const Placement*>> ending;
    ending.reserve(running.size() + started.size());
    for (const RunningJob& job : running)
      ending.emplace_back(job.deadline, &job.placement);
    // `started` is the prefix just placed, so started[k] is queue[k].
    for (std::size_t k = 0; k < started.size(); ++k) {
      ending.emplace_back(now + static_cast<double>(queue[k].max_time_s), &started[k].placement);
    }
    std::stable_sort(ending.begin(), ending.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    Pool scratch = live;
    for (const auto& [deadline, placement] : ending) {
      scratch.Release(*placement);
      if (scratch.TryPlace(head.demand)) return deadline;
    }
    return kNever;
  }
};

}  // namespace

std::unique_ptr<Policy> MakePolicy(const std::string& name) {
  if (name == "fifo-strict") return std::make_unique<FifoStrict>();
  if (name == "easy-backfill") return std::make_unique<EasyBackfill>();
  if (name == "strict-backfill") return std::make_unique<StrictBackfill>();
  return nullptr;
}

}  // namespace hpcb::broker
