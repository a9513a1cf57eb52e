// What the root side reads from a user's own connection: a submission
// (`dispatch new`) and a request for a finished job's output (`dispatch
// output`). The executor takes these off the client's socket itself, so
// what runs, and where output goes, is what the user sent, never what the
// broker says (docs/security/threat-model.md). The rest of the client
// protocol (client_messages.h) is the broker's and the client's alone and
// is not linked into the root binaries.
#ifndef HPCB_PROTOCOL_USER_REQUESTS_H_
#define HPCB_PROTOCOL_USER_REQUESTS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/result.h"
#include "protocol/codec.h"

namespace hpcb::protocol {

// Limits checked by Validate() on every decoded request.
inline constexpr std::size_t kMaxArgs = 4096;
inline constexpr std::size_t kMaxArgBytes = std::size_t{128} * 1024;
inline constexpr std::size_t kMaxPathBytes = 4096;
inline constexpr std::size_t kMaxEnvBytes = std::size_t{256} * 1024;  // sum of k+v+2
inline constexpr std::size_t kMaxDependencies = 64;                   // ids in --after
inline constexpr std::size_t kMaxNotifyBytes = 4096;                  // --notify's command

Result<void> CheckArgv(const std::vector<std::string>& argv);
Result<void> CheckPath(const std::string& path, const char* what);
// `--notify`'s command: 1 to kMaxNotifyBytes, no NUL.
Result<void> CheckNotifyCommand(const std::string& command);

// Letters, digits, `.`, `_`, `-` and `@`, a `$` at the end, not starting
// with `-`, at most 64 bytes: what useradd and directory services make.
// The name a client sends goes into its job's environment and the root
// side's log lines, where anything else could pass for something else.
bool PlausibleUserName(std::string_view name);

// What a job asks of the machine: the part of a submission the broker
// books and the root side keeps with the job (JobRequest, job_types.h).
struct ResourceRequest {
  std::optional<std::int64_t> cpu;
  std::int64_t gpu_cores = 0;
  std::optional<double> max_mem_gb;
  std::optional<std::int64_t> max_time_s;
  bool exclusive = false;
  bool numa_local_mem = false;
  bool numa_local_gpu = false;
  std::optional<std::string> min_gpu_link;  // NV, PIX, PXB, PHB or NODE
  HPCB_FIELDS(cpu, gpu_cores, max_mem_gb, max_time_s, exclusive, numa_local_mem, numa_local_gpu,
              min_gpu_link)
};

struct SubmitRequest : ResourceRequest {
  std::vector<std::string> argv;
  std::string cwd;
  bool forward_env = false;                // --env
  std::map<std::string, std::string> env;  // forwarded + leading NAME=VALUE
  std::optional<std::string> output;       // absolute; none = --no-output
  bool output_is_dir = false;              // `output` is a directory, as the client found it
  std::optional<std::string> error;        // --error: stderr apart, as `output`
  bool error_is_dir = false;
  // What the submitting session's environment says of its account (USER,
  // HOME, SHELL): only its job's USER, LOGNAME, HOME and SHELL come from here. Who
  // the job runs as (uid, gid, groups) the kernel says, on the connection.
  // Empty from a dispatch older than these fields.
  std::string user;
  std::string home;
  std::string shell;
  // Start only once these jobs ended: successfully (afterok), or however
  // they ended when `after_any`.
  std::vector<std::uint64_t> after;
  bool after_any = false;
  // Why the command cannot be executed, as dispatch found looking for it
  // as the user (client/exec_check.h): the job is recorded as one that
  // failed to start, and never runs.
  std::optional<std::string> exec_error;
  // `--name`: a label for list, and for kill/wait/attach --name. Root only
  // keeps it (launch spec, info.json): the broker checks it
  // (CheckJobName, client_messages.h) before the executor reads this
  // frame, which the broker cannot change.
  std::optional<std::string> name;
  // `--array`: the element indices (empty: not an array) and `%N`. Root
  // keeps the indices and starts only those; the broker checks both
  // (CheckArray, array_spec.h) and alone applies the throttle.
  std::vector<std::uint32_t> array;
  std::optional<std::uint32_t> array_throttle;
  // `--notify`: a shell command run as the user when the job ends
  // (NotifyRequest, launcher_messages.h). Root keeps it in the launch spec.
  std::optional<std::string> notify;

  static constexpr std::string_view kCmd = "new";
  template <class F>
  void Fields(F&& field) {
    HPCB_FIELD_LIST(argv, cwd);
    ResourceRequest::Fields(field);
    HPCB_FIELD_LIST(forward_env, env, output);
    HPCB_MISSABLE_FIELDS(output_is_dir, error, error_is_dir, user, home, shell);
    HPCB_FIELD_LIST(after, after_any);
    HPCB_MISSABLE_FIELDS(exec_error, name, array, array_throttle, notify);
  }
  Result<void> Validate() const;
};

// How a job's one output error begins when only --error's file could not
// be saved (its stdout was): "stderr to DEST: why".
inline constexpr std::string_view kStderrOnlyError = "stderr to ";

// `dispatch output ID [--to DIR]`: a finished job's kept output, delivered
// again to where it was going or (the owner only) to `to`.
struct OutputRequest {
  std::uint64_t id = 0;
  std::optional<std::string> to;  // absolute
  bool to_is_dir = false;         // as SubmitRequest::output_is_dir
  static constexpr std::string_view kCmd = "output";
  template <class F>
  void Fields(F&& field) {
    HPCB_FIELD_LIST(id, to);
    HPCB_MISSABLE_FIELDS(to_is_dir);
  }
  Result<void> Validate() const;
};

}  // namespace hpcb::protocol

#endif  // HPCB_PROTOCOL_USER_REQUESTS_H_
