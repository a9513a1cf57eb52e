// A bounded map whose entries are good for kFreshFor after they were put:
// what the account and destination caches share (account_cache.h,
// dest_cache.h say what each keeps, and why a stale answer is harmless).
#ifndef HPCB_EXECUTOR_FRESH_CACHE_H_
#define HPCB_EXECUTOR_FRESH_CACHE_H_

#include <chrono>
#include <cstddef>
#include <map>

namespace hpcb::executor {

template <class Key, class Value>
class FreshCache {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::seconds kFreshFor{2};
  // Bounds memory whatever is put in it.
  static constexpr std::size_t kMaxEntries = 256;

  // The value put for `key` if it is younger than kFreshFor, else null.
  const Value* Find(const Key& key, Clock::time_point now) const {
    auto it = entries_.find(key);
    if (it == entries_.end() || now < it->second.at || now - it->second.at >= kFreshFor) {
      return nullptr;
    }
    return &it->second.value;
  }

  void Put(const Key& key, Value value, Clock::time_point now) {
    if (entries_.size() >= kMaxEntries && !entries_.contains(key)) {
      // Stale entries go first; if none is stale, the whole cache does (it
      // is only ever a shortcut).
      std::erase_if(entries_,
                    [&](const auto& entry) { return now - entry.second.at >= kFreshFor; });
      if (entries_.size() >= kMaxEntries) entries_.clear();
    }
    entries_.insert_or_assign(key, Entry{std::move(value), now});
  }

 private:
  struct Entry {
    Value value;
    Clock::time_point at;
  };
  std::map<Key, Entry> entries_;
};

}  // namespace hpcb::executor

#endif  // HPCB_EXECUTOR_FRESH_CACHE_H_
