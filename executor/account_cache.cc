#include "executor/account_cache.h"

namespace hpcb::executor {

std::optional<protocol::LookUpUserReply> AccountCache::Find(uid_t uid,
                                                            Clock::time_point now) const {
  auto it = entries_.find(uid);
  if (it == entries_.end() || now - it->second.at >= kFreshFor || now < it->second.at) {
    return std::nullopt;
  }
  return it->second.found;
}

void AccountCache::Put(uid_t uid, const protocol::LookUpUserReply& found, Clock::time_point now) {
  if (found.error || found.who.uid != uid) return;
  if (entries_.size() >= kMaxEntries && !entries_.contains(uid)) {
    // Stale entries go first; if none is stale, the whole cache does (it
    // is only ever a shortcut).
    std::erase_if(entries_, [&](const auto& entry) { return now - entry.second.at >= kFreshFor; });
    if (entries_.size() >= kMaxEntries) entries_.clear();
  }
  entries_[uid] = Entry{found, now};
}

}  // namespace hpcb::executor
