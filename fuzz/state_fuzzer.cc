// libFuzzer target: the state files the daemon reads back at start-up
// (STATE/specs/<id>.json and an older release's spec journal, the broker's
// queue.json and queue.journal). A
// file may be torn, corrupt or hand-edited; loading must report it, never
// crash, and never hand out an id it has seen taken.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <string_view>

#include "broker/queue_journal.h"
#include "broker/queue_store.h"
#include "common/base/log.h"
#include "common/host/run_record.h"
#include "executor/launch_spec.h"
#include "executor/spec_store.h"
#include "protocol/codec.h"

namespace {
using namespace hpcb;

void Write(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// The whole Load path on real files: snapshot and journal split at the
// first NUL byte of the input.
void LoadQueue(std::string_view bytes) {
  static const std::string dir = [] {
    char tmpl[] = "/tmp/hpcb-state-fuzz.XXXXXX";
    const char* made = ::mkdtemp(tmpl);
    if (made == nullptr) std::abort();
    return std::string(made);
  }();
  const std::size_t cut = bytes.find('\0');
  broker::QueueStore store(dir);
  Write(store.path(), bytes.substr(0, cut));
  Write(store.journal_path(), cut == std::string_view::npos ? "" : bytes.substr(cut + 1));
  Result<broker::QueueFile> loaded = store.Load();
  if (!loaded) return;
  // Load's promise: next_id is past every job it loaded and every id even a
  // torn journal mentions (a parsed snapshot is trusted for the rest).
  const std::string_view journal = cut == std::string_view::npos ? "" : bytes.substr(cut + 1);
  if (loaded->next_id < broker::HighestIdMentioned(journal)) __builtin_trap();
  for (const broker::JobRecord& job : loaded->jobs) {
    if (job.id >= loaded->next_id) __builtin_trap();
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const bool quiet = (SetLogLevel("error"), true);
  (void)quiet;
  if (size == 0) return 0;
  std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 5) {
    case 0: {
      auto spec = protocol::Decode<executor::LaunchSpec>(text);
      if (spec && !protocol::Decode<executor::LaunchSpec>(protocol::Encode(*spec)))
        __builtin_trap();
      break;
    }
    case 1: {
      std::map<std::uint64_t, broker::JobRecord> jobs;
      (void)broker::ReplayJournal(text, 0, jobs);
      break;
    }
    case 2:
      LoadQueue(text);
      break;
    case 3: {
      // An older release's spec journal: one that holds anything but zeros
      // and newlines stops the start and is left as it was; an empty one
      // goes.
      static const std::string dir = [] {
        char tmpl[] = "/tmp/hpcb-spec-fuzz.XXXXXX";
        const char* made = ::mkdtemp(tmpl);
        if (made == nullptr) std::abort();
        return std::string(made);
      }();
      Write(dir + "/journal", text);
      const bool drained = text.find_first_not_of(std::string_view("\n\0", 2)) == text.npos;
      const bool opened = static_cast<bool>(executor::SpecStore(dir).Open());
      if (opened != drained || (::access((dir + "/journal").c_str(), F_OK) == 0) == drained) {
        __builtin_trap();
      }
      ::unlink((dir + "/journal").c_str());
      break;
    }
    default: {
      // Written by a root shepherd, one line per state, read back by the
      // executor: what it takes must be a valid record of the job asked
      // for, and must read the same when written again.
      std::uint64_t id = 1;
      if (auto first = protocol::Decode<host::RunRecord>(text.substr(0, text.find('\n')))) {
        id = first->id;
      }
      auto record = host::ParseRunRecord(text, id);
      if (!record) break;
      if (record->id != id || !record->Validate()) __builtin_trap();
      auto again = host::ParseRunRecord(protocol::Encode(*record) + "\n", id);
      if (!again || again->pid != record->pid || again->status != record->status) __builtin_trap();
      break;
    }
  }
  return 0;
}
