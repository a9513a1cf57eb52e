// The root-only record of a registered job: STATE/specs/<id>.json (0600).
// What runs, and as whom, comes from here, never from a later broker
// message.
#ifndef HPCB_EXECUTOR_LAUNCH_SPEC_H_
#define HPCB_EXECUTOR_LAUNCH_SPEC_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "protocol/base/result.h"
#include "protocol/codec.h"
#include "protocol/launcher_messages.h"

namespace hpcb::executor {

struct LaunchSpec {
  std::uint64_t id = 0;
  protocol::UserIdentity who;
  std::string home;
  std::string shell;
  std::vector<std::string> argv;
  std::string cwd;
  std::map<std::string, std::string> env;  // dropped once started
  std::optional<std::string> output_dest;
  std::string state = "registered";        // registered | running | exited
  std::int64_t pid = 0;
  std::uint64_t proc_start = 0;
  double start_time = 0;
  template <class A> void save(A& ar) const {
    using protocol::Put;
    Put(ar, "id", id); Put(ar, "who", who); Put(ar, "home", home); Put(ar, "shell", shell);
    Put(ar, "argv", argv); Put(ar, "cwd", cwd); Put(ar, "env", env);
    Put(ar, "output_dest", output_dest); Put(ar, "state", state); Put(ar, "pid", pid);
    Put(ar, "proc_start", proc_start); Put(ar, "start_time", start_time);
  }
  template <class A> void load(A& ar) {
    using protocol::Get;
    Get(ar, "id", id); Get(ar, "who", who); Get(ar, "home", home); Get(ar, "shell", shell);
    Get(ar, "argv", argv); Get(ar, "cwd", cwd); Get(ar, "env", env);
    Get(ar, "output_dest", output_dest); Get(ar, "state", state); Get(ar, "pid", pid);
    Get(ar, "proc_start", proc_start); Get(ar, "start_time", start_time);
  }
  Result<void> Validate() const;
};

// Whether a write must be on disk before it returns. kDeferred is only for
// a write that another durable one follows before anyone is told.
enum class Sync { kNow, kDeferred };

// STATE/specs/<id>.json, written atomically (tmp, fsync, rename, fsync of
// the specs dir; both fsyncs skipped when deferred), 0600.
Result<void> SaveSpec(const std::string& specs_dir, const LaunchSpec& spec,
                      Sync sync = Sync::kNow);
Result<LaunchSpec> LoadSpec(const std::string& specs_dir, std::uint64_t id);
void RemoveSpec(const std::string& specs_dir, std::uint64_t id);
// Ids of every well-named spec file (others are ignored).
std::vector<std::uint64_t> ListSpecs(const std::string& specs_dir);

// Writes `text` to `path` atomically with `mode`.
Result<void> WriteFileAtomic(const std::string& path, const std::string& text, unsigned mode,
                             Sync sync = Sync::kNow);

}  // namespace hpcb::executor

#endif  // HPCB_EXECUTOR_LAUNCH_SPEC_H_
