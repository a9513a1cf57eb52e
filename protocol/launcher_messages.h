// Messages between the executor and the launcher (SOCK_SEQPACKET,
// framing.h; type/req envelope and coded errors, envelope.h).
//
// The launcher answers every request asynchronously: each one runs in a
// child of its own (a job's shepherd, or a helper that has dropped to the
// user), tracked with a deadline, so a request that waits on something a
// user controls (a FIFO as the output file, a stopped job child, a slow
// filesystem) holds up only itself. Replies come in whatever order the
// work finishes; ChildExited is an event (req 0).
//
// The launcher trusts only the executor (its own child over a socketpair),
// yet still refuses uid 0 / gid 0 when running as root, and builds every
// path it writes as root from its own configuration and a job id.
#ifndef HPCB_PROTOCOL_LAUNCHER_MESSAGES_H_
#define HPCB_PROTOCOL_LAUNCHER_MESSAGES_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/base/result.h"
#include "protocol/codec.h"
#include "protocol/envelope.h"
#include "protocol/job_types.h"

namespace hpcb::protocol {

HPCB_WIRE_ENUM(LauncherKind, (kSpawn, "spawn"), (kSpawnReply, "spawn_reply"), (kDeliver, "deliver"),
               (kDeliverReply, "deliver_reply"), (kChildExited, "child_exited"),
               (kRefused, "refused"), (kNotify, "notify"), (kEmptyDir, "empty_dir"));

// executor -> launcher. fds: [stdout's buffer, stderr's (the same file
// unless --error), both O_WRONLY|O_APPEND], then, with cgroups, the job
// cgroup directory. The launcher forks the job's
// shepherd, which starts the job and stays its parent (job_shepherd.h).
// Reply: SpawnReply, once the job has exec'd or has failed to.
struct SpawnRequest {
  static constexpr LauncherKind kKind = LauncherKind::kSpawn;
  std::uint64_t req = 0;
  std::uint64_t id = 0;
  UserIdentity who;
  std::vector<std::string> argv;
  std::string cwd;
  std::vector<std::string> env;  // "K=V", final
  // The launcher acts on cpus (the job's affinity, always set) and gpus
  // (every other card is hidden); the shepherd keeps the whole of it in
  // the run record, the one record of the start until the executor saves
  // the job as running.
  PlacementRecord placement;
  HPCB_FIELDS(id, who, argv, cwd, env, placement)
  Result<void> Validate() const;
};

struct SpawnReply {
  static constexpr LauncherKind kKind = LauncherKind::kSpawnReply;
  std::uint64_t req = 0;
  std::uint64_t id = 0;
  std::int64_t pid = 0;            // the job (its process group leader)
  std::int64_t shepherd = 0;       // its parent, the launcher's child
  std::optional<WireError> error;  // "failed to start job: ..."
  HPCB_FIELDS(id, pid, shepherd, error)
};

// Where job `id`'s output sent to `path` goes: an existing directory gets
// DIR/<stem>.<id>.log (output, or error for --error's stderr; an array's
// element's DIR/<stem>.<id>_<index>.log), anything else is the exact path. Pure; the client's check
// as the user (client::CheckOutputPlace) says which `path` is.
std::string ResolveDestination(const std::string& path, bool is_dir, std::uint64_t id,
                               std::string_view stem = "output",
                               std::optional<std::uint32_t> array_index = std::nullopt);

// executor -> launcher, fds: [buffer, read-only]. Copies at most
// `max_bytes` of it to `dest` as the user. Reply: DeliverReply.
struct DeliverRequest {
  static constexpr LauncherKind kKind = LauncherKind::kDeliver;
  std::uint64_t req = 0;
  std::uint64_t id = 0;
  UserIdentity who;
  std::string dest;
  std::uint64_t max_bytes = 0;
  HPCB_FIELDS(id, who, dest, max_bytes)
  Result<void> Validate() const;
};

// The answer to a DeliverRequest, a NotifyRequest or an EmptyDirRequest.
struct DeliverReply {
  static constexpr LauncherKind kKind = LauncherKind::kDeliverReply;
  std::uint64_t req = 0;
  std::optional<WireError> error;
  HPCB_FIELDS(error)
};

// executor -> launcher, no fds: job `id` ended, so its `--notify` command
// (the user's own, from their submission, kept in the launch spec) runs
// as the user: `/bin/sh -c command` in `cwd`, with `env` alone and stdin,
// stdout and stderr on /dev/null, in a process group of its own, which is
// killed when the shell exits or kNotifySeconds after it started.
// Reply: DeliverReply, an error unless the shell exited 0.
inline constexpr int kNotifySeconds = 10;
struct NotifyRequest {
  static constexpr LauncherKind kKind = LauncherKind::kNotify;
  std::uint64_t req = 0;
  std::uint64_t id = 0;
  UserIdentity who;
  std::string command;
  std::string cwd;
  std::vector<std::string> env;  // "K=V", final
  HPCB_FIELDS(id, who, command, cwd, env)
  Result<void> Validate() const;
};

// executor -> launcher, fds: [job `id`'s directory, O_DIRECTORY|
// O_NOFOLLOW, owned by `who`]. A forgotten job's user left more in it than
// root made there: a helper that has become `who` removes everything below
// it, through descriptors, never following a link nor leaving the
// directory's filesystem, and is killed after kEmptyDirSeconds. The
// directory itself stays (its name is root's to remove). Reply:
// DeliverReply, an error when something was left.
inline constexpr int kEmptyDirSeconds = 600;
struct EmptyDirRequest {
  static constexpr LauncherKind kKind = LauncherKind::kEmptyDir;
  std::uint64_t req = 0;
  std::uint64_t id = 0;
  UserIdentity who;
  HPCB_FIELDS(id, who)
  Result<void> Validate() const;
};

// launcher -> executor, an event (req 0): a child of the launcher that is
// not one of its helpers (a job's shepherd) was reaped. `status` is the
// raw wait status.
struct ChildExited {
  static constexpr LauncherKind kKind = LauncherKind::kChildExited;
  std::uint64_t req = 0;
  std::int64_t pid = 0;
  std::int64_t status = 0;
  HPCB_FIELDS(pid, status)
  Result<void> Validate() const;
};

// launcher -> executor: the answer to a request the launcher could not
// decode or does not take (with the req it could read, else 0).
struct Refused {
  static constexpr LauncherKind kKind = LauncherKind::kRefused;
  std::uint64_t req = 0;
  WireError error;
  HPCB_FIELDS(error)
};

}  // namespace hpcb::protocol

#endif  // HPCB_PROTOCOL_LAUNCHER_MESSAGES_H_
