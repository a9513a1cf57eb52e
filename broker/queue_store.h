// QueueStore: the broker's queue file (STATE/broker/queue.json), written
// atomically (temp file, fsync, rename, fsync of the directory), mode 0600.
#ifndef HPCB_BROKER_QUEUE_STORE_H_
#define HPCB_BROKER_QUEUE_STORE_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "broker/job_record.h"
#include "protocol/base/result.h"

namespace hpcb::broker {

// The highest "id"/"next_id" number in `text`, so that a corrupt file
// still never lets an id be reused. 0 when there is none.
std::uint64_t HighestIdMentioned(std::string_view text);

class QueueStore {
 public:
  explicit QueueStore(std::string dir) : dir_(std::move(dir)) {}

  std::string path() const { return dir_ + "/queue.json"; }

  // Missing file: empty queue. Corrupt file: logged at ERROR, renamed to
  // queue.json.corrupt, empty queue whose next_id is past every id the
  // file mentions. Only I/O failures other than ENOENT are errors.
  Result<QueueFile> Load() const;
  Result<void> Save(const QueueFile& file) const;

 private:
  std::string dir_;
};

}  // namespace hpcb::broker

#endif  // HPCB_BROKER_QUEUE_STORE_H_
