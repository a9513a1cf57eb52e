// What a role's seccomp filter does with a call it does not list.
//
// The sanitizer build (HPCB_SANITIZER_BUILD, the clang tree the fuzzers
// share) links runtimes that make calls no filter lists: LeakSanitizer's
// tracer, ASan's madvise and sigaltstack. There an unlisted call is logged
// and allowed, so that build can check memory through the end-to-end
// tests. Everywhere else it kills the process, and the root end-to-end test
// that traces the executor holds the list to exactly the calls it makes.
#ifndef HPCB_COMMON_HOST_UNLISTED_CALL_ACTION_H_
#define HPCB_COMMON_HOST_UNLISTED_CALL_ACTION_H_

#include <seccomp.h>

#include <cstdint>

namespace hpcb::host {

#ifdef HPCB_SANITIZER_BUILD
inline constexpr std::uint32_t kUnlistedCallAction = SCMP_ACT_LOG;
#else
inline constexpr std::uint32_t kUnlistedCallAction = SCMP_ACT_KILL_PROCESS;
#endif

}  // namespace hpcb::host

#endif  // HPCB_COMMON_HOST_UNLISTED_CALL_ACTION_H_
