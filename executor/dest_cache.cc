#include "executor/dest_cache.h"

namespace hpcb::executor {

DestCache::Key DestCache::KeyOf(const protocol::UserIdentity& who, const std::string& path) {
  return Key{who.uid, who.gid, who.groups, path};
}

bool DestCache::FreshDirectory(const protocol::UserIdentity& who, const std::string& path,
                               Clock::time_point now) const {
  return entries_.Find(KeyOf(who, path), now) != nullptr;
}

void DestCache::Put(const protocol::UserIdentity& who, const std::string& path, std::uint64_t id,
                    const protocol::CheckDestReply& reply, Clock::time_point now) {
  if (reply.error || reply.dest != protocol::ResolveDestination(path, true, id)) return;
  entries_.Put(KeyOf(who, path), true, now);
}

}  // namespace hpcb::executor
