#include "client/commands.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <ctime>

#include "client/format.h"
#include "client/info_format.h"
#include "client/transport.h"
#include "client/wait.h"
#include "common/base/unique_fd.h"
#include "common/units.h"
#include "protocol/launcher_messages.h"

namespace hpcb::client {
namespace {

constexpr int kWaitNoticeMs = 10'000;

// What attach does with a job that has already ended and whose output was
// delivered: `attach` names the file (as the original tool did); `new
// --wait` promised the output on stdout, so it leaves that job to
// PrintWhatTheStreamMissed.
enum class DeliveredOutput { kName, kLeaveToCaller };

struct Attached {
  int code = kExitOk;
  bool streamed = false;  // some output reached stdout
};

// The client runs as the user who submitted, so this is the user's own
// read of their own file: a regular file (a FIFO or a device would block or
// never end), not a symlink, owned by us, and no more than its size when
// opened (one that keeps growing is not a delivered output). Delivery
// renames a whole new file into place, so what is there is the job's
// output, unless something replaced it since.
Result<void> PrintDeliveredFile(const std::string& path, Io io) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW));
  if (!fd.valid()) return Error::FromErrno(errno, "cannot read the job's output at " + path);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return Error::FromErrno(errno, "cannot stat " + path);
  if (!S_ISREG(st.st_mode)) {
    return Error(ErrorCode::kFailedPrecondition,
                 "the job's output went to " + path + ", which is not a regular file");
  }
  if (st.st_uid != ::geteuid()) {
    return Error(ErrorCode::kPermissionDenied,
                 "the job's output at " + path + " is not yours now; not printing it");
  }
  char buffer[1 << 16];
  auto left = static_cast<std::uint64_t>(st.st_size);
  while (left > 0 && io.out) {
    const ssize_t n = ::read(fd.get(), buffer, std::min<std::uint64_t>(sizeof buffer, left));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::FromErrno(errno, "cannot read the job's output at " + path);
    if (n == 0) break;
    io.out.write(buffer, n);
    left -= static_cast<std::uint64_t>(n);
  }
  io.out.flush();
  return Ok();
}

Attached Attach(const std::string& socket, std::uint64_t id, DeliveredOutput delivered, Io io);

// `new --wait` when the stream gave nothing. A short job can end, and its
// output be delivered (the kept copy removed), before the daemon has opened
// it for the stream, or before the attach is served at all; the finished
// row says where it went. Only a job that ran is read back: one that never
// started (a failed start, a dependency, a kill while queued) has a
// destination it never wrote (a failed start's is delivered after the job
// is marked done), and the wait that follows says why. A file that cannot be
// printed is said on stderr; the job's status still decides the exit.
int PrintWhatTheStreamMissed(const std::string& socket, std::uint64_t id, Io io) {
  Result<protocol::ListReply> listed = ListJobs(socket, protocol::ListRequest{false, true, {id}});
  if (!listed) return kExitOk;  // the wait that follows says what is wrong
  for (const protocol::JobRow& row : listed->jobs) {
    if (row.id != id || row.state != protocol::JobState::kDone || !row.start_time) continue;
    if (!row.output_dest || !protocol::StdoutDelivered(row.output_error)) continue;
    if (Result<void> printed = PrintDeliveredFile(*row.output_dest, io); !printed) {
      io.err << "dispatch: " << EscapeControl(printed.error().message()) << "\n";
    }
  }
  io.err.flush();
  return io.out ? kExitOk : kExitError;
}

// What the user would not guess from the submit line: a --max-time the
// daemon cut to its --max-lifetime, a drained machine.
void SayWhatChanged(const protocol::SubmitRequest& request, const protocol::SubmitReply& reply,
                    Io io) {
  if (request.max_time_s && reply.max_time_s < *request.max_time_s) {
    io.err << "dispatch: --max-time cut to " << FormatDuration(reply.max_time_s)
           << ", the longest this daemon allows (its --max-lifetime)\n";
  }
  if (reply.draining) {
    io.err << "dispatch: the machine is drained: job " << reply.id
           << " waits until an admin runs 'dispatch resume'\n";
  }
  io.err.flush();
}

// A submission the daemon recorded as failed to start (its command cannot
// be executed): said as an error, with the job's id for `list --finished`.
int ReportStartError(const protocol::SubmitReply& reply, Io io) {
  io.out.flush();
  io.err << "job " << reply.id << " failed to start: " << EscapeControl(*reply.start_error) << "\n";
  io.err.flush();
  return kExitError;
}

// Where --error sends stderr: named as the root side names it.
std::optional<std::string> ErrorDest(const protocol::SubmitRequest& request, std::uint64_t id) {
  if (!request.error) return std::nullopt;
  return protocol::ResolveDestination(*request.error, request.error_is_dir, id, "error");
}

}  // namespace

int RunSubmit(const std::string& socket, const protocol::SubmitRequest& request, Io io) {
  auto reply = Call<protocol::SubmitReply>(socket, request);
  if (!reply) return ReportError(reply.error(), io);
  if (reply->start_error) return ReportStartError(*reply, io);
  io.out << RenderSubmit(*reply, !request.output.has_value(), request.output,
                         ErrorDest(request, reply->id));
  io.out.flush();
  SayWhatChanged(request, *reply, io);
  return kExitOk;
}

int RunSubmitAndWait(const std::string& socket, const protocol::SubmitRequest& request, Io io) {
  auto reply = Call<protocol::SubmitReply>(socket, request);
  if (!reply) return ReportError(reply.error(), io);
  if (reply->start_error) return ReportStartError(*reply, io);
  // stdout carries the job's output alone, so a script can capture it.
  io.err << RenderSubmit(*reply, !request.output.has_value(), request.output,
                         ErrorDest(request, reply->id));
  SayWhatChanged(request, *reply, io);
  const Attached attached = Attach(socket, reply->id, DeliveredOutput::kLeaveToCaller, io);
  if (attached.code != kExitOk) return attached.code;
  if (!attached.streamed) {
    if (int printed = PrintWhatTheStreamMissed(socket, reply->id, io); printed != kExitOk) {
      return printed;
    }
  }
  return RunWait(socket, {reply->id}, WaitOptions{}, io);
}

int RunInfo(const std::string& socket, bool json, Io io) {
  auto fd = Connect(socket);
  if (!fd) return ReportError(fd.error(), io);
  auto text =
      Exchange(fd->get(), protocol::Encode(protocol::BareRequest{protocol::ClientCommand::kInfo}));
  if (!text) return ReportError(text.error(), io);
  auto reply = DecodeReply<protocol::InfoReply>(*text);
  if (!reply) return ReportError(reply.error(), io);
  io.out << (json ? *text + "\n" : RenderInfo(*reply));
  return kExitOk;
}

int RunDrain(const std::string& socket, bool on, Io io) {
  const protocol::ClientCommand cmd =
      on ? protocol::ClientCommand::kDrain : protocol::ClientCommand::kResume;
  auto reply = Call<protocol::DrainReply>(socket, protocol::BareRequest{cmd});
  if (!reply) return ReportError(reply.error(), io);
  if (on) {
    io.out << (reply->changed ? "draining: queued jobs will not be started; running jobs finish\n"
                              : "already draining\n");
  } else {
    io.out << (reply->changed ? "resumed: queued jobs are started again\n" : "not draining\n");
  }
  return kExitOk;
}

int RunList(const std::string& socket, const protocol::ListRequest& request, bool json,
            bool long_format, Io io) {
  protocol::ListRequest asked = request;
  asked.fold_arrays = !json && !long_format;  // --long shows every element
  Result<protocol::ListReply> reply = ListJobs(socket, asked);
  if (!reply) return ReportError(reply.error(), io);
  if (json) {
    io.out << protocol::Encode(*reply) << "\n";
    return kExitOk;
  }
  if (reply->now <= 0) reply->now = static_cast<double>(std::time(nullptr));
  Rendered rendered = RenderList(*reply, request.finished, long_format);
  io.out << rendered.out;
  io.out.flush();
  io.err << rendered.err;
  return kExitOk;
}

int RunAttach(const std::string& socket, std::uint64_t id, Io io) {
  return Attach(socket, id, DeliveredOutput::kName, io).code;
}

namespace {

Attached Attach(const std::string& socket, std::uint64_t id, DeliveredOutput delivered, Io io) {
  UniqueFd fd;
  auto reply = Call<protocol::AttachReply>(
      socket, protocol::JobIdRequest{protocol::ClientCommand::kAttach, id}, &fd);
  if (!reply) return {ReportError(reply.error(), io)};
  if (delivered == DeliveredOutput::kLeaveToCaller && reply->state == protocol::JobState::kDone &&
      reply->output_dest && protocol::StdoutDelivered(reply->output_error)) {
    return {};
  }
  Attached attached;
  std::string notice = RenderAttachNotice(id, *reply);
  if (!notice.empty()) {
    io.err << notice;
    io.err.flush();
  }
  auto last_output = std::chrono::steady_clock::now();
  while (true) {
    if (io.err_is_tty) {
      pollfd pfd{fd.get(), POLLIN, 0};
      int ready = ::poll(&pfd, 1, kWaitNoticeMs);
      if (ready == 0) {
        auto quiet = std::chrono::duration_cast<std::chrono::seconds>(
            std::chrono::steady_clock::now() - last_output);
        io.err << "job " << id << ": still waiting (no output for " << quiet.count() << "s)\n";
        io.err.flush();
        continue;
      }
      if (ready < 0 && errno == EINTR) continue;
    }
    auto chunk = NextChunk(fd.get());
    if (!chunk) return {ReportError(chunk.error(), io)};
    if (!chunk->has_value()) break;
    io.out << **chunk;
    io.out.flush();
    if (!io.out) return {kExitError};  // stdout closed (e.g. piped to head)
    attached.streamed = true;
    last_output = std::chrono::steady_clock::now();
  }
  return attached;
}

}  // namespace

int RunKill(const std::string& socket, std::uint64_t id, Io io) {
  auto reply =
      Call<protocol::KillReply>(socket, protocol::JobIdRequest{protocol::ClientCommand::kKill, id});
  if (!reply) return ReportError(reply.error(), io);
  io.out << RenderKill(id, *reply);
  return kExitOk;
}

int RunHold(const std::string& socket, const std::vector<std::uint64_t>& ids, bool hold, Io io) {
  const protocol::ClientCommand command =
      hold ? protocol::ClientCommand::kHold : protocol::ClientCommand::kRelease;
  int code = kExitOk;
  for (std::uint64_t id : ids) {
    auto reply = Call<protocol::HoldReply>(socket, protocol::JobIdRequest{command, id});
    if (!reply) {
      code = ReportError(reply.error(), io);
      continue;
    }
    io.out << RenderHold(std::to_string(id), *reply);
  }
  return code;
}

int RunJobField(const std::string& socket, const protocol::JobFieldRequest& request, bool json,
                Io io) {
  auto fd = Connect(socket);
  if (!fd) return ReportError(fd.error(), io);
  auto text = Exchange(fd->get(), protocol::Encode(request));
  if (!text) return ReportError(text.error(), io);
  auto reply = DecodeReply<protocol::JobFieldReply>(*text);
  if (!reply) return ReportError(reply.error(), io);
  io.out << (json ? *text + "\n"
                  : RenderJobField(request.id, request.field, request.action, *reply));
  return kExitOk;
}

int RunOutput(const std::string& socket, const protocol::OutputRequest& request, Io io) {
  auto reply = Call<protocol::OutputAnswer>(socket, request);
  if (!reply) {
    // A delivery that failed leaves the copy kept (its row says why): say
    // which job, and where else it can go.
    Result<protocol::ListReply> listed =
        ListJobs(socket, protocol::ListRequest{false, true, {request.id}});
    const bool kept = reply.error().code() == ErrorCode::kFailedPrecondition && listed &&
                      !listed->jobs.empty() && listed->jobs[0].id == request.id &&
                      listed->jobs[0].output_error.has_value();
    if (kept) {
      const std::string id = std::to_string(request.id);
      return ReportError(Error(reply.error().code(), "job " + id + "'s output was not delivered: " +
                                                         reply.error().message() +
                                                         "; it is still kept ('dispatch output " +
                                                         id + " --to DIR' saves it elsewhere)"),
                         io);
    }
  }
  if (!reply) return ReportError(reply.error(), io);
  io.out << "job " << request.id << "'s output " << (reply->already ? "is" : "is now") << " at "
         << EscapeControl(reply->output_dest) << "\n";
  return kExitOk;
}

}  // namespace hpcb::client
