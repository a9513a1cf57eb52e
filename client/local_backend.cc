#include "client/local_backend.h"

#include <cerrno>
#include <utility>

#include "client/command_line.h"
#include "client/commands.h"
#include "client/output_place.h"
#include "client/transport.h"

namespace hpcb::client {

// request.env already holds the command's NAME=VALUE words, and
// request.after the --after ids looked up.
int LocalBackend::Submit(const protocol::SubmitRequest& request,
                         const std::map<std::string, std::string>& /*command_env*/,
                         const std::vector<TypedId>& /*after*/, bool wait, Io io) {
  if (wait) return RunSubmitAndWait(socket_, request, io);
  return RunSubmit(socket_, request, io);
}

int LocalBackend::List(const protocol::ListRequest& request, bool json, bool long_format, Io io) {
  return RunList(socket_, request, json, long_format, io);
}

Result<std::vector<protocol::JobRow>> LocalBackend::JobsNamed(const std::string& name) {
  protocol::ListRequest request;
  request.finished = true;
  request.name = name;
  HPCB_ASSIGN_OR_RETURN(protocol::ListReply reply, ListJobs(socket_, request));
  return std::move(reply.jobs);
}

Result<std::vector<protocol::JobRow>> LocalBackend::JobsWithIds(
    const std::vector<std::uint64_t>& ids) {
  HPCB_ASSIGN_OR_RETURN(protocol::ListReply reply,
                        ListJobs(socket_, protocol::ListRequest{false, true, ids}));
  return std::move(reply.jobs);
}

int LocalBackend::Attach(const TypedId& id, Io io) {
  return RunAttach(socket_, id.id, io);
}

int LocalBackend::Kill(const TypedId& id, Io io) {
  return RunKill(socket_, id.id, io);
}

namespace {

std::vector<std::uint64_t> OwnIds(const std::vector<TypedId>& ids) {
  std::vector<std::uint64_t> own;
  for (const TypedId& id : ids)
    own.push_back(id.id);
  return own;
}

}  // namespace

int LocalBackend::Hold(const std::vector<TypedId>& ids, bool hold, Io io) {
  return RunHold(socket_, OwnIds(ids), hold, io);
}

int LocalBackend::JobField(const protocol::JobFieldRequest& request, bool json, Io io) {
  return RunJobField(socket_, request, json, io);
}

int LocalBackend::Wait(const std::vector<TypedId>& ids, const WaitOptions& options, Io io) {
  return RunWait(socket_, OwnIds(ids), options, io);
}

int LocalBackend::Info(bool json, Io io) {
  return RunInfo(socket_, json, io);
}

int LocalBackend::Drain(bool on, Io io) {
  return RunDrain(socket_, on, io);
}

int LocalBackend::Output(const TypedId& id, const std::optional<std::string>& to, Io io) {
  protocol::OutputRequest request;
  request.id = id.id;
  if (to) {
    std::optional<std::string> cwd = CurrentDirectory();
    if (!cwd) {
      return ReportError(Error::FromErrno(errno, "cannot determine the current directory"), io);
    }
    request.to = MakeAbsolute(*to, *cwd);
    // As for `new --output`: checked here, as the user, and again by the
    // delivery, which runs as the user too.
    Result<bool> is_dir = CheckOutputPlace(*request.to, /*delivered_by_daemon=*/true);
    if (!is_dir) return ReportError(is_dir.error(), io);
    request.to_is_dir = *is_dir;
  }
  return RunOutput(socket_, request, io);
}

}  // namespace hpcb::client
