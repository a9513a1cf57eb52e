// UsageBook: the bytes each user holds in the state directory, job by job:
// its launch spec and, once it has ended, an output buffer that could not
// be delivered. The executor refuses a registration that would take a
// user past --max-user-state-mib, so that one user's queue (or undelivered
// output) cannot fill the disk everyone's jobs and records live on.
//
// What it does not count: the buffer of a job still running, which grows
// as the job writes. That is bounded only by the filesystem.
#ifndef HPCB_EXECUTOR_USAGE_BOOK_H_
#define HPCB_EXECUTOR_USAGE_BOOK_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <utility>

namespace hpcb::executor {

class UsageBook {
 public:
  // The job now holds `bytes` for `uid` (replacing what it held before).
  void Set(std::uint64_t id, uid_t uid, std::uint64_t bytes);
  void Remove(std::uint64_t id);
  std::uint64_t Of(uid_t uid) const;

 private:
  std::map<std::uint64_t, std::pair<uid_t, std::uint64_t>> jobs_;
  std::map<uid_t, std::uint64_t> totals_;
};

}  // namespace hpcb::executor

#endif  // HPCB_EXECUTOR_USAGE_BOOK_H_
