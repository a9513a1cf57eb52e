// Kept outputs to deliver again on their own. A delivery that failed (the
// place was full, or closed to its owner) is tried again after a back-off,
// 10 s doubling to an hour, by the broker asking the executor for a
// `deliver_again` to the place the root side has on record: the broker
// keeps the timers and the root side only does what it is asked, so a
// compromised broker gains nothing it could not already ask for.
#ifndef HPCB_BROKER_OUTPUT_RETRIES_H_
#define HPCB_BROKER_OUTPUT_RETRIES_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace hpcb::broker {

class OutputRetries {
 public:
  static constexpr double kFirstRetryS = 10;
  static constexpr double kLongestRetryS = 3600;

  // A delivery of `id` failed with `error`: its next try is due `first_s`
  // from now, or, if it was tried before, after twice the last wait. Not
  // for an output over the delivery limit: retrying cannot shrink it.
  // One already being tried keeps waiting for that try's outcome.
  void Failed(std::uint64_t id, const std::string& error, double now,
              double first_s = kFirstRetryS);
  // After a start: tried once `first_s` from now whatever the error (an
  // admin may have raised the delivery limit), then as Failed says.
  void AfterStart(std::uint64_t id, double now, double first_s);
  // Delivered, or no longer kept (forgotten, sent elsewhere).
  void Drop(std::uint64_t id) { retries_.erase(id); }
  // The ids due at `now`; each waits for its outcome (Landed, then Failed
  // or Drop) before it is due again.
  std::vector<std::uint64_t> TakeDue(double now);
  // The try TakeDue handed out has its outcome.
  void Landed(std::uint64_t id);
  bool Scheduled(std::uint64_t id) const { return retries_.contains(id); }

 private:
  struct Retry {
    double due = 0;
    double wait_s = 0;
    bool in_flight = false;
  };
  std::map<std::uint64_t, Retry> retries_;
};

}  // namespace hpcb::broker

#endif  // HPCB_BROKER_OUTPUT_RETRIES_H_
