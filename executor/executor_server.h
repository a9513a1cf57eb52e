// The executor: the only reader of broker messages. Validates every field
// against facts it checks itself, keeps the root-only launch specs, makes
// job cgroups/dirs/links, and asks the launcher to act as users.
#ifndef HPCB_EXECUTOR_EXECUTOR_SERVER_H_
#define HPCB_EXECUTOR_EXECUTOR_SERVER_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "executor/job_dir.h"
#include "executor/launch_spec.h"
#include "protocol/base/result.h"
#include "protocol/base/unique_fd.h"
#include "protocol/daemon_config.h"
#include "protocol/executor_messages.h"
#include "protocol/framing.h"
#include "protocol/launcher_messages.h"

namespace hpcb::executor {

struct ExecutorFacts {
  bool as_root = false;
  uid_t self_uid = 0;
  std::optional<uid_t> broker_uid;  // root mode: --broker-user, never a submitter
  gid_t admin_gid = 0;
  int gpu_count = 0;
  std::set<int> cpus;
  std::set<int> nodes;
  std::string lang;
  std::string proc_root = "/proc";
};

class ExecutorServer {
 public:
  ExecutorServer(protocol::DaemonConfig config, ExecutorFacts facts, int launcher_fd,
                 int broker_fd);

  // Reads STATE/specs: registered, still-running and dead-on-arrival jobs.
  void Recover();
  // Serves until the broker or launcher goes away.
  Result<void> Run();

  // One broker message -> the reply text and any fds to pass with it.
  // Public for tests; never throws, never aborts on bad input.
  struct Reply {
    std::string text;
    std::vector<UniqueFd> fds;
  };
  Reply Handle(const protocol::Packet& packet);

  std::string specs_dir() const { return config_.state_dir + "/specs"; }
  std::string job_dir(std::uint64_t id) const {
    return config_.state_dir + "/jobs/" + std::to_string(id);
  }

 private:
  Reply OnHello(const std::string& text);
  Reply OnRegister(const std::string& text, const protocol::Packet& packet);
  Reply OnStart(const std::string& text);
  Reply OnSignal(const std::string& text);
  Reply OnForget(const std::string& text);
  Reply OnOpenOutput(const std::string& text);

  Result<protocol::StartReply> StartValidated(const protocol::StartJob& request);
  // RegisterJob::start: StartValidated, with a refusal turned into the
  // reply's error and the still-registered spec saved durably.
  protocol::StartReply StartAfterRegistering(const protocol::StartJob& request);
  Result<void> ValidatePlacement(const protocol::StartJob& request) const;
  Result<void> MakeJobDir(const LaunchSpec& spec);
  // info.json: the job as users see it, never its environment.
  static std::string InfoText(const LaunchSpec& spec);
  void WriteInfo(const LaunchSpec& spec);
  void AppendLine(const LaunchSpec& spec, const std::string& line);
  // Who owns the job's dir and files (root mode), for job_dir.h.
  std::optional<JobDirOwner> OwnerOf(const LaunchSpec& spec) const;
  // The job's output buffer, opened and checked through its dir's fd.
  Result<UniqueFd> OpenBuffer(const LaunchSpec& spec, int flags) const;
  std::optional<std::string> DeliverOutput(const LaunchSpec& spec);
  void Finish(std::uint64_t id, std::optional<std::int64_t> exit_code);
  void PollForeign();
  void OnLauncherEvent(const std::string& text);
  Result<protocol::Packet> AskLauncher(const std::string& text, const std::vector<int>& fds);
  void SendToBroker(const std::string& text);

  protocol::DaemonConfig config_;
  ExecutorFacts facts_;
  int launcher_fd_;
  int broker_fd_;
  std::map<std::uint64_t, LaunchSpec> jobs_;
  std::set<std::uint64_t> foreign_;  // running, not the launcher's children
  std::vector<std::uint64_t> dead_on_arrival_;
  std::deque<std::string> launcher_events_;
  // Job cgroups whose rmdir failed in Finish (EBUSY): retried from Run until
  // removed or past the deadline.
  std::map<std::uint64_t, std::chrono::steady_clock::time_point> cgroups_to_remove_;
  bool greeted_ = false;
};

// Exit code for the wire: status >= 0, negative signal.
std::int64_t ExitCodeFromStatus(int status);

}  // namespace hpcb::executor

#endif  // HPCB_EXECUTOR_EXECUTOR_SERVER_H_
