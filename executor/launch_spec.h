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
  template <class A>
  void save(A& ar) const {
    using protocol::Put;
    Put(ar, "id", id);
    Put(ar, "who", who);
    Put(ar, "home", home);
    Put(ar, "shell", shell);
    Put(ar, "argv", argv);
    Put(ar, "cwd", cwd);
    Put(ar, "env", env);
    Put(ar, "output_dest", output_dest);
    Put(ar, "request", request);
    Put(ar, "placement", placement);
    Put(ar, "state", state);
    Put(ar, "pid", pid);
    Put(ar, "proc_start", proc_start);
    Put(ar, "shepherd", shepherd);
    Put(ar, "shepherd_start", shepherd_start);
    Put(ar, "start_time", start_time);
    Put(ar, "exit_code", exit_code);
    Put(ar, "oom", oom);
    Put(ar, "end_time", end_time);
    Put(ar, "output_error", output_error);
    Put(ar, "usage", usage);
  }
  template <class A>
  void load(A& ar) {
    using protocol::Get;
    Get(ar, "id", id);
    Get(ar, "who", who);
    Get(ar, "home", home);
    Get(ar, "shell", shell);
    Get(ar, "argv", argv);
    Get(ar, "cwd", cwd);
    Get(ar, "env", env);
    Get(ar, "output_dest", output_dest);
    Get(ar, "request", request);
    Get(ar, "placement", placement);
    Get(ar, "state", state);
    Get(ar, "pid", pid);
    Get(ar, "proc_start", proc_start);
    Get(ar, "shepherd", shepherd);
    Get(ar, "shepherd_start", shepherd_start);
    Get(ar, "start_time", start_time);
    Get(ar, "exit_code", exit_code);
    Get(ar, "oom", oom);
    Get(ar, "end_time", end_time);
    Get(ar, "output_error", output_error);
    protocol::GetIfPresent(ar, "usage", usage);  // specs written before accounting
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
