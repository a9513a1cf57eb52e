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

#include "protocol/base/result.h"
#include "protocol/base/unique_fd.h"
#include "protocol/codec.h"
#include "protocol/executor_messages.h"
#include "protocol/host/host_files.h"
#include "protocol/job_usage.h"
#include "protocol/launcher_messages.h"

namespace hpcb::executor {

using host::Sync;

struct LaunchSpec {
  std::uint64_t id = 0;
  protocol::UserIdentity who;
  std::string home;
  std::string shell;
  std::vector<std::string> argv;
  std::string cwd;
  std::map<std::string, std::string> env;  // dropped once started
  std::optional<std::string> output_dest;
  protocol::JobRequest request;                        // what the submission asked for
  std::optional<protocol::PlacementRecord> placement;  // once started
  protocol::SpecState state = protocol::SpecState::kRegistered;
  std::int64_t pid = 0;          // the job, its process group leader
  std::uint64_t proc_start = 0;  // its /proc start time (a pid reuse guard)
  std::int64_t shepherd = 0;     // its parent (launcher/job_shepherd.h)
  std::uint64_t shepherd_start = 0;
  double start_time = 0;
  // Once exited: as JobExited said it.
  std::optional<std::int64_t> exit_code;
  bool oom = false;
  double end_time = 0;
  std::optional<std::string> output_error;
  std::optional<protocol::JobUsage> usage;
  template <class F>
  void Fields(F&& field) {
    field("id", id);
    field("who", who);
    field("home", home);
    field("shell", shell);
    field("argv", argv);
    field("cwd", cwd);
    field("env", env);
    field("output_dest", output_dest);
    field("request", request);
    field("placement", placement);
    field("state", state);
    field("pid", pid);
    field("proc_start", proc_start);
    field("shepherd", shepherd);
    field("shepherd_start", shepherd_start);
    field("start_time", start_time);
    field("exit_code", exit_code);
    field("oom", oom);
    field("end_time", end_time);
    field("output_error", output_error);
    field("usage", usage, protocol::kMayBeMissing);  // specs written before accounting
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
// Ids of every file named `<id><suffix>` in the dir (others are ignored).
std::vector<std::uint64_t> ListIds(const std::string& path, std::string_view suffix = ".json");

}  // namespace hpcb::executor

#endif  // HPCB_EXECUTOR_LAUNCH_SPEC_H_
