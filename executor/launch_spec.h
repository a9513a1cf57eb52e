// The root-only record of a registered job: STATE/specs/<id>.json (0600).
// What runs, and as whom, comes from here, never from a later broker
// message.
#ifndef HPCB_EXECUTOR_LAUNCH_SPEC_H_
#define HPCB_EXECUTOR_LAUNCH_SPEC_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/result.h"
#include "common/host/host_files.h"
#include "protocol/codec.h"
#include "protocol/executor_messages.h"

namespace hpcb::executor {

using host::Sync;

// The broker may see the JobSummary part (list_jobs), never the rest.
struct LaunchSpec : protocol::JobSummary {
  std::string home;
  std::string shell;
  std::map<std::string, std::string> env;  // dropped once started
  std::int64_t pid = 0;                    // the job, its process group leader
  std::uint64_t proc_start = 0;            // its /proc start time (a pid reuse guard)
  std::int64_t shepherd = 0;               // its parent (launcher/job_shepherd.h)
  std::uint64_t shepherd_start = 0;
  std::optional<std::string> notify;         // SubmitRequest::notify
  std::optional<std::uint32_t> array_index;  // an array's element
  template <class F>
  void Fields(F&& field) {
    JobSummary::Fields(field);
    HPCB_FIELD_LIST(home, shell, env, pid, proc_start, shepherd, shepherd_start);
    // Not in specs older than --notify and arrays.
    HPCB_MISSABLE_FIELDS(notify, array_index);
  }
  Result<void> Validate() const;
};

// STATE/specs/<id>.json, written atomically (tmp, fsync, rename, and the
// specs dir's fsync unless `sync` leaves that to the caller), 0600.
// Returns the bytes written. The executor saves through its SpecStore
// (spec_store.h), which makes the turn's one directory fsync.
Result<std::uint64_t> SaveSpec(const std::string& specs_dir, const LaunchSpec& spec,
                               Sync sync = Sync::kNow);
Result<LaunchSpec> LoadSpec(const std::string& specs_dir, std::uint64_t id);
// Removes `id`'s file; one that is not there is removed already.
Result<void> RemoveSpec(const std::string& specs_dir, std::uint64_t id);
// Ids of every entry named `<prefix><id><suffix>` in the dir, the id as
// std::to_string writes it (no sign, no leading zero); others are ignored.
std::vector<std::uint64_t> ListIds(const std::string& path, std::string_view suffix = ".json",
                                   std::string_view prefix = "");

}  // namespace hpcb::executor

#endif  // HPCB_EXECUTOR_LAUNCH_SPEC_H_
