// The one seam between `dispatch`'s command line and what carries out a
// subcommand: the local hpc-batch daemon (LocalBackend) or a Slurm cluster
// (SlurmBackend). RunDispatch picks one per run from the client
// configuration; the subcommands parse and check their arguments the same
// way for both, then call it. Each method renders its result on `io` and
// returns the exit code.
#ifndef HPCB_CLIENT_BACKEND_H_
#define HPCB_CLIENT_BACKEND_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "client/array_ids.h"
#include "client/backend_config.h"
#include "client/io.h"
#include "client/wait.h"
#include "protocol/client_messages.h"

namespace hpcb::client {

class Backend {
 public:
  Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;
  Backend(Backend&&) = delete;
  Backend& operator=(Backend&&) = delete;
  virtual ~Backend() = default;

  // Whether the daemon delivers a job's output (and so needs to read the
  // output folder too); see CheckOutputPlace.
  virtual bool DaemonDeliversOutput() const = 0;

  // Whether an element's ARRAY_INDEX reaches the methods below as typed
  // (Slurm names an element so itself); else it is looked up first
  // (JobsWithIds) and they get the element's own id, without an index.
  virtual bool NamesElementsItself() const = 0;

  // `request` as `dispatch new` built it; `command_env` the leading
  // NAME=VALUE words of the command alone; `after`: --after/--after-any as
  // typed (request.after holds them looked up, unless NamesElementsItself);
  // `wait`: `new --wait`.
  virtual int Submit(const protocol::SubmitRequest& request,
                     const std::map<std::string, std::string>& command_env,
                     const std::vector<TypedId>& after, bool wait, Io io) = 0;
  // `long_format`: the usage columns (what finished jobs used).
  virtual int List(const protocol::ListRequest& request, bool json, bool long_format, Io io) = 0;
  // The caller's own jobs named `name` (a checked name): queued, running
  // and the finished ones still known, for kill, wait and attach --name
  // (job_names.h). Not rendered: the caller reports an Error.
  virtual Result<std::vector<protocol::JobRow>> JobsNamed(const std::string& name) = 0;
  // The rows of jobs `ids`, finished ones included, an array's id giving
  // its elements' rows (array_ids.h). Not rendered, as JobsNamed.
  virtual Result<std::vector<protocol::JobRow>> JobsWithIds(
      const std::vector<std::uint64_t>& ids) = 0;
  virtual int Attach(const TypedId& id, Io io) = 0;
  virtual int Kill(const TypedId& id, Io io) = 0;
  // `hold` (true) or `release`, job by job; 1 if any was refused.
  virtual int Hold(const std::vector<TypedId>& ids, bool hold, Io io) = 0;
  // `request.value` is set for set and add.
  virtual int JobField(const protocol::JobFieldRequest& request, bool json, Io io) = 0;
  virtual int Wait(const std::vector<TypedId>& ids, const WaitOptions& options, Io io) = 0;
  virtual int Info(bool json, Io io) = 0;
  // `drain` (on) or `resume` (off).
  virtual int Drain(bool on, Io io) = 0;
  // `to`: `output --to` as typed, made absolute and checked here.
  virtual int Output(const TypedId& id, const std::optional<std::string>& to, Io io) = 0;
};

// The backend `config` names.
std::unique_ptr<Backend> MakeBackend(const BackendConfig& config);

}  // namespace hpcb::client

#endif  // HPCB_CLIENT_BACKEND_H_
