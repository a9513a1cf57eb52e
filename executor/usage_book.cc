#include "executor/usage_book.h"

namespace hpcb::executor {

void UsageBook::Set(std::uint64_t id, uid_t uid, std::uint64_t bytes) {
  Remove(id);
  jobs_[id] = {uid, bytes};
  totals_[uid] += bytes;
}

void UsageBook::Remove(std::uint64_t id) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return;
  auto total = totals_.find(it->second.first);
  total->second -= it->second.second;
  if (total->second == 0) totals_.erase(total);
  jobs_.erase(it);
}

std::uint64_t UsageBook::Of(uid_t uid) const {
  auto it = totals_.find(uid);
  return it == totals_.end() ? 0 : it->second;
}

}  // namespace hpcb::executor
