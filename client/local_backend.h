// The backend that talks to the local hpc-batch daemon over its socket
// (commands.h, wait.h): one request per subcommand.
#ifndef HPCB_CLIENT_LOCAL_BACKEND_H_
#define HPCB_CLIENT_LOCAL_BACKEND_H_

#include <string>
#include <utility>

#include "client/backend.h"

namespace hpcb::client {

class LocalBackend final : public Backend {
 public:
  explicit LocalBackend(std::string socket) : socket_(std::move(socket)) {}

  bool DaemonDeliversOutput() const override { return true; }
  bool NamesElementsItself() const override { return false; }
  int Submit(const protocol::SubmitRequest& request,
             const std::map<std::string, std::string>& command_env,
             const std::vector<TypedId>& after, bool wait, Io io) override;
  int List(const protocol::ListRequest& request, bool json, bool long_format, Io io) override;
  // One list request, filtered by the daemon to the caller's jobs with
  // that name.
  Result<std::vector<protocol::JobRow>> JobsNamed(const std::string& name) override;
  Result<std::vector<protocol::JobRow>> JobsWithIds(const std::vector<std::uint64_t>& ids) override;
  // The ids below are jobs' own (an element's looked up): no index.
  int Attach(const TypedId& id, Io io) override;
  int Kill(const TypedId& id, Io io) override;
  int Hold(const std::vector<TypedId>& ids, bool hold, Io io) override;
  int JobField(const protocol::JobFieldRequest& request, bool json, Io io) override;
  int Wait(const std::vector<TypedId>& ids, const WaitOptions& options, Io io) override;
  int Info(bool json, Io io) override;
  int Drain(bool on, Io io) override;
  int Output(const TypedId& id, const std::optional<std::string>& to, Io io) override;

 private:
  std::string socket_;
};

}  // namespace hpcb::client

#endif  // HPCB_CLIENT_LOCAL_BACKEND_H_
