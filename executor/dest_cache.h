// Which output directories the launcher's user helper recently found
// writable for a user, reused for a short while.
//
// The bargain: the check runs as the user in a child the launcher forks
// (root must never resolve a user's path), so each check is a fork and a
// round trip on the submit path, and a burst from one user in one
// directory needs it once: an answer is reused for kFreshFor. The check
// only gives the user an early, clear error; the delivery itself checks
// everything again as the user. So the price of a stale answer is that a
// directory made unwritable in the last two seconds is reported when the
// job ends (the output is kept, `dispatch output --to` delivers it
// elsewhere) rather than at submission. Only directories are cached (a
// file name is checked each time: what is there may change with each
// job), only for the exact identity (uid, gid and groups) they were
// checked as, and refusals are not cached.
#ifndef HPCB_EXECUTOR_DEST_CACHE_H_
#define HPCB_EXECUTOR_DEST_CACHE_H_

#include <string>
#include <tuple>
#include <vector>

#include "executor/fresh_cache.h"
#include "protocol/launcher_messages.h"

namespace hpcb::executor {

class DestCache {
 public:
  using Key = std::tuple<std::uint32_t, std::uint32_t, std::vector<std::uint32_t>, std::string>;
  using Entries = FreshCache<Key, bool>;  // the value: found a writable directory
  using Clock = Entries::Clock;
  static constexpr std::chrono::seconds kFreshFor = Entries::kFreshFor;
  // Bounds memory whatever the number of users and directories.
  static constexpr std::size_t kMaxEntries = Entries::kMaxEntries;

  // True if `path` was found a writable directory for `who` within kFreshFor.
  bool FreshDirectory(const protocol::UserIdentity& who, const std::string& path,
                      Clock::time_point now) const;

  // Keeps the helper's answer for job `id`: remembered only if it says
  // `path` is a writable directory (its destination is inside it).
  void Put(const protocol::UserIdentity& who, const std::string& path, std::uint64_t id,
           const protocol::CheckDestReply& reply, Clock::time_point now);

 private:
  static Key KeyOf(const protocol::UserIdentity& who, const std::string& path);
  Entries entries_;
};

}  // namespace hpcb::executor

#endif  // HPCB_EXECUTOR_DEST_CACHE_H_
