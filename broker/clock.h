// Clock: wall time behind an interface so tests can move it by hand.
#ifndef HPCB_BROKER_CLOCK_H_
#define HPCB_BROKER_CLOCK_H_

namespace hpcb::broker {

class Clock {
 public:
  virtual ~Clock() = default;
  // Epoch seconds (wall clock), as stored in job records.
  virtual double Now() const = 0;
};

class SystemClock : public Clock {
 public:
  double Now() const override;
};

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

#endif  // HPCB_BROKER_CLOCK_H_
