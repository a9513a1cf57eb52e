#include "executor/dest_cache.h"

namespace hpcb::executor {

DestCache::Key DestCache::KeyOf(const protocol::UserIdentity& who, const std::string& path) {
  return Key{who.uid, who.gid, who.groups, path};
}

bool DestCache::FreshDirectory(const protocol::UserIdentity& who, const std::string& path,
                               Clock::time_point now) const {
  auto it = entries_.find(KeyOf(who, path));
  return it != entries_.end() && now >= it->second && now - it->second < kFreshFor;
}

void DestCache::Put(const protocol::UserIdentity& who, const std::string& path, std::uint64_t id,
                    const protocol::CheckDestReply& reply, Clock::time_point now) {
  if (reply.error || reply.dest != protocol::ResolveDestination(path, true, id)) return;
  if (entries_.size() >= kMaxEntries && !entries_.contains(KeyOf(who, path))) {
    // Stale entries go first; if none is stale, the whole cache does (it
    // is only ever a shortcut).
    std::erase_if(entries_, [&](const auto& entry) { return now - entry.second >= kFreshFor; });
    if (entries_.size() >= kMaxEntries) entries_.clear();
  }
  entries_[KeyOf(who, path)] = now;
}

}  // namespace hpcb::executor
