#include "executor/account_cache.h"

namespace hpcb::executor {

std::optional<protocol::LookUpUserReply> AccountCache::Find(uid_t uid,
                                                            Clock::time_point now) const {
  const protocol::LookUpUserReply* found = entries_.Find(uid, now);
  if (found == nullptr) return std::nullopt;
  return *found;
}

void AccountCache::Put(uid_t uid, const protocol::LookUpUserReply& found, Clock::time_point now) {
  if (found.error || found.who.uid != uid) return;
  entries_.Put(uid, found, now);
}

}  // namespace hpcb::executor
