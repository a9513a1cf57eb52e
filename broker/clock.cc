#include "broker/clock.h"

#include <time.h>

namespace hpcb::broker {

double SystemClock::Now() const {
  struct timespec ts {};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

}  // namespace hpcb::broker
