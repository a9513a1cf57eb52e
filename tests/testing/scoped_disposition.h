// One signal's disposition, set for the life of the object and put back
// after: for tests that start something the way a parent that ignores or
// catches signals would.
#ifndef HPCB_TESTS_TESTING_SCOPED_DISPOSITION_H_
#define HPCB_TESTS_TESTING_SCOPED_DISPOSITION_H_

#include <signal.h>

namespace hpcb::testing {

class ScopedDisposition {
 public:
  ScopedDisposition(int sig, void (*handler)(int)) : sig_(sig) {
    struct sigaction act {};
    act.sa_handler = handler;
    ::sigaction(sig_, &act, &old_);
  }
  ~ScopedDisposition() { ::sigaction(sig_, &old_, nullptr); }
  ScopedDisposition(const ScopedDisposition&) = delete;
  ScopedDisposition& operator=(const ScopedDisposition&) = delete;

 private:
  int sig_;
  struct sigaction old_ {};
};

}  // namespace hpcb::testing

#endif  // HPCB_TESTS_TESTING_SCOPED_DISPOSITION_H_
