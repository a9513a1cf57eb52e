#include "executor/spec_store.h"

#include <unistd.h>

#include <cerrno>

#include "common/host/host_files.h"
#include "protocol/framing.h"

namespace hpcb::executor {

Result<void> SpecStore::Open() {
  for (const char* name : {"journal.old", "journal"}) {
    const std::string path = dir_ + "/" + name;
    Result<std::string> text = host::ReadSmallFile(path, 256u << 20);
    if (!text && text.error().code() == ErrorCode::kNotFound) continue;
    if (!text) return text.error().WithContext("read " + path);
    // Preallocated zeros and blanked lines are all a drained journal holds.
    if (text->find_first_not_of(std::string_view("\n\0", 2)) != std::string::npos) {
      return Error(ErrorCode::kFailedPrecondition,
                   path +
                       " holds launch specs an older hpc-batch had not yet written to their "
                       "files; start that release once and stop it cleanly (it writes them "
                       "back and empties the journal), then start this one");
    }
    if (::unlink(path.c_str()) != 0) return Error::FromErrno(errno, "remove " + path);
    pending_ = true;
  }
  return Commit();
}

Result<std::uint64_t> SpecStore::Save(const LaunchSpec& spec, Flush flush) {
  HPCB_ASSIGN_OR_RETURN(std::uint64_t bytes, SaveSpec(dir_, spec, host::Sync::kDeferred));
  if (flush == Flush::kBeforeAnswers) pending_ = true;
  return bytes;
}

Result<void> SpecStore::Forget(std::uint64_t id) {
  HPCB_TRY(RemoveSpec(dir_, id));
  pending_ = true;
  return Ok();
}

Result<void> SpecStore::Commit() {
  if (!pending_) return Ok();
  HPCB_TRY(protocol::SyncDirectory(dir_));
  pending_ = false;
  return Ok();
}

}  // namespace hpcb::executor
