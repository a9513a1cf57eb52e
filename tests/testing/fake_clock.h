// FakeClock: the broker's Clock (broker/clock.h), moved by hand.
#ifndef HPCB_TESTS_TESTING_FAKE_CLOCK_H_
#define HPCB_TESTS_TESTING_FAKE_CLOCK_H_

#include "broker/clock.h"

namespace hpcb::broker {

class FakeClock : public Clock {
 public:
  explicit FakeClock(double now = 1000) : now_(now) {}
  double Now() const override { return now_; }
  void Advance(double seconds) { now_ += seconds; }
  void Set(double now) { now_ = now; }

 private:
  double now_;
};

}  // namespace hpcb::broker

#endif  // HPCB_TESTS_TESTING_FAKE_CLOCK_H_
