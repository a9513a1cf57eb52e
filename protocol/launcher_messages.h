// Messages between the executor and the launcher (SOCK_SEQPACKET,
// framing.h). The executor sends one request and waits for its reply; the
// launcher may send ChildExited events at any time, so the executor queues
// events it reads while waiting.
//
// The launcher trusts only the executor (its own child over a socketpair),
// yet still refuses uid 0 / gid 0 when running as root.
#ifndef HPCB_PROTOCOL_LAUNCHER_MESSAGES_H_
#define HPCB_PROTOCOL_LAUNCHER_MESSAGES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "protocol/base/result.h"
#include "protocol/codec.h"

namespace hpcb::protocol {

// The PATH a job gets when neither it nor its environment names one.
inline constexpr const char* kCleanPath = "/usr/local/bin:/usr/bin:/bin";

// The identity a launcher child takes before doing anything for a user.
struct UserIdentity {
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
  std::string user;
  std::vector<std::uint32_t> groups;  // supplementary, from getgrouplist
  template <class A> void save(A& ar) const {
    Put(ar, "uid", uid); Put(ar, "gid", gid); Put(ar, "user", user);
    Put(ar, "groups", groups);
  }
  template <class A> void load(A& ar) {
    Get(ar, "uid", uid); Get(ar, "gid", gid); Get(ar, "user", user);
    Get(ar, "groups", groups);
  }
  Result<void> Validate() const;
};

// executor -> launcher. fds: [buffer (O_WRONLY|O_APPEND)] or, with
// cgroups, [buffer, job cgroup directory]. Reply: SpawnReply.
struct SpawnRequest {
  std::uint64_t id = 0;
  UserIdentity who;
  std::vector<std::string> argv;
  std::string cwd;
  std::vector<std::string> env;  // "K=V", final
  std::vector<int> cpus;         // affinity (always set explicitly)
  template <class A> void save(A& ar) const {
    Put(ar, "type", std::string("spawn")); Put(ar, "id", id); Put(ar, "who", who);
    Put(ar, "argv", argv); Put(ar, "cwd", cwd); Put(ar, "env", env);
    Put(ar, "cpus", cpus);
  }
  template <class A> void load(A& ar) {
    Get(ar, "id", id); Get(ar, "who", who); Get(ar, "argv", argv);
    Get(ar, "cwd", cwd); Get(ar, "env", env); Get(ar, "cpus", cpus);
  }
  Result<void> Validate() const;
};

struct SpawnReply {
  std::uint64_t id = 0;
  std::int64_t pid = 0;
  std::optional<std::string> error;  // "failed to start job: ..."
  template <class A> void save(A& ar) const {
    Put(ar, "type", std::string("spawn_reply")); Put(ar, "id", id);
    Put(ar, "pid", pid); Put(ar, "error", error);
  }
  template <class A> void load(A& ar) {
    Get(ar, "id", id); Get(ar, "pid", pid); Get(ar, "error", error);
  }
  Result<void> Validate() const { return Ok(); }
};

// executor -> launcher: resolve and check an output destination as the
// user. Reply: CheckDestReply.
struct CheckDestRequest {
  std::uint64_t id = 0;
  UserIdentity who;
  std::string path;
  template <class A> void save(A& ar) const {
    Put(ar, "type", std::string("check_dest")); Put(ar, "id", id);
    Put(ar, "who", who); Put(ar, "path", path);
  }
  template <class A> void load(A& ar) {
    Get(ar, "id", id); Get(ar, "who", who); Get(ar, "path", path);
  }
  Result<void> Validate() const;
};

struct CheckDestReply {
  std::uint64_t id = 0;
  std::string dest;
  std::optional<std::string> error;
  template <class A> void save(A& ar) const {
    Put(ar, "type", std::string("check_dest_reply")); Put(ar, "id", id);
    Put(ar, "dest", dest); Put(ar, "error", error);
  }
  template <class A> void load(A& ar) {
    Get(ar, "id", id); Get(ar, "dest", dest); Get(ar, "error", error);
  }
  Result<void> Validate() const { return Ok(); }
};

// executor -> launcher, fds: [buffer, read-only]. Copies it to `dest` as
// the user. Reply: DeliverReply.
struct DeliverRequest {
  std::uint64_t id = 0;
  UserIdentity who;
  std::string dest;
  template <class A> void save(A& ar) const {
    Put(ar, "type", std::string("deliver")); Put(ar, "id", id);
    Put(ar, "who", who); Put(ar, "dest", dest);
  }
  template <class A> void load(A& ar) {
    Get(ar, "id", id); Get(ar, "who", who); Get(ar, "dest", dest);
  }
  Result<void> Validate() const;
};

struct DeliverReply {
  std::uint64_t id = 0;
  std::optional<std::string> error;
  template <class A> void save(A& ar) const {
    Put(ar, "type", std::string("deliver_reply")); Put(ar, "id", id);
    Put(ar, "error", error);
  }
  template <class A> void load(A& ar) { Get(ar, "id", id); Get(ar, "error", error); }
  Result<void> Validate() const { return Ok(); }
};

// launcher -> executor, unsolicited: a child of the launcher was reaped.
// `status` is the raw wait status.
struct ChildExited {
  std::int64_t pid = 0;
  std::int64_t status = 0;
  template <class A> void save(A& ar) const {
    Put(ar, "type", std::string("child_exited")); Put(ar, "pid", pid);
    Put(ar, "status", status);
  }
  template <class A> void load(A& ar) { Get(ar, "pid", pid); Get(ar, "status", status); }
  Result<void> Validate() const;
};

}  // namespace hpcb::protocol

#endif  // HPCB_PROTOCOL_LAUNCHER_MESSAGES_H_
