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

}  // namespace hpcb::broker

#endif  // HPCB_BROKER_CLOCK_H_
