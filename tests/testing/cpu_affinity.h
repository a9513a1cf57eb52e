// The CPUs a test may pin a job to: this process's own affinity, which on
// a CI runner need not include CPU 0.
#ifndef HPCB_TESTS_TESTING_CPU_AFFINITY_H_
#define HPCB_TESTS_TESTING_CPU_AFFINITY_H_

#include <sched.h>

namespace hpcb::testing {

// The lowest CPU this process may run on (0 if its affinity is unreadable).
inline int FirstAllowedCpu() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &set)) return cpu;
    }
  }
  return 0;
}

}  // namespace hpcb::testing

#endif  // HPCB_TESTS_TESTING_CPU_AFFINITY_H_
