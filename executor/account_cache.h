// What the launcher's account lookup answered for a uid, reused for a
// short while.
//
// The bargain: the lookup runs NSS as root in a child the launcher forks
// (a slow directory service must cost one request its deadline, never a
// loop), so each lookup is a fork and a round trip on the submit path. A
// burst from one user needs it once: an answer is reused for kFreshFor.
// The price is that a change to the account (its groups, home or shell)
// applies to submissions made kFreshFor after it, not at once. Who submits
// is never cached: it comes from SO_PEERCRED on each connection, and a
// cached answer is only ever used for the uid it was given for. Refusals
// are not cached.
#ifndef HPCB_EXECUTOR_ACCOUNT_CACHE_H_
#define HPCB_EXECUTOR_ACCOUNT_CACHE_H_

#include <sys/types.h>

#include <optional>

#include "executor/fresh_cache.h"
#include "protocol/launcher_messages.h"

namespace hpcb::executor {

class AccountCache {
 public:
  using Entries = FreshCache<uid_t, protocol::LookUpUserReply>;
  using Clock = Entries::Clock;
  static constexpr std::chrono::seconds kFreshFor = Entries::kFreshFor;
  // Bounds memory whatever the number of users submitting.
  static constexpr std::size_t kMaxEntries = Entries::kMaxEntries;

  // The answer for `uid` if it is younger than kFreshFor.
  std::optional<protocol::LookUpUserReply> Find(uid_t uid, Clock::time_point now) const;

  // Keeps `found` (an answer without error, for `uid`).
  void Put(uid_t uid, const protocol::LookUpUserReply& found, Clock::time_point now);

 private:
  Entries entries_;
};

}  // namespace hpcb::executor

#endif  // HPCB_EXECUTOR_ACCOUNT_CACHE_H_
