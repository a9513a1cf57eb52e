// Registering a job: who submitted it (SO_PEERCRED and SO_PEERGROUPS), what
// it runs and where its output (and stderr) goes (the client's own frame), then the
// root-only launch spec.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <utility>

#include "common/base/log.h"
#include "executor/executor_server.h"
#include "executor/sysfacts.h"
#include "protocol/queued_frame.h"
#include "protocol/user_requests.h"

namespace hpcb::executor {
namespace {

using protocol::Decode;
using protocol::Encode;
using protocol::WireError;

}  // namespace

void ExecutorServer::OnRegister(std::uint64_t req, const protocol::Packet& packet) {
  Result<protocol::RegisterJob> request = Decode<protocol::RegisterJob>(packet.bytes);
  if (!request) return Refuse(req, 0, "register", request.error());
  const std::uint64_t id = request->id;
  auto fail = [&](const Error& error) {
    LogWarning("refused register of job " + std::to_string(id) + ": " + error.message());
    SendToBroker(
        Encode(protocol::RegisterReply{.req = req, .id = id, .error = WireError::From(error)}));
  };
  if (packet.fds.size() != 1)
    return fail(InvalidArgument("register needs exactly the client socket"));
  if (Result<void> allowed = CheckPhase(JobOperation::kRegister, PhaseOf(id), id); !allowed) {
    return fail(allowed.error());
  }
  if (::access(job_dir(id).c_str(), F_OK) == 0) {
    return fail(
        Error(ErrorCode::kAlreadyExists, "job " + std::to_string(id) + " already has a directory"));
  }
  Result<struct ucred> peer = CheckClientConnection(packet.fds[0].get(), config_.socket);
  if (!peer) return fail(peer.error());
  Result<void> allowed = CheckSubmitter(*peer, facts_.as_root, facts_.self_uid, config_.broker_uid);
  if (!allowed) return fail(allowed.error());
  // What runs comes from the user's own bytes on their connection, never
  // from the broker's message (docs/security/threat-model.md, "What a
  // compromised broker can do").
  Result<std::string> frame = protocol::TakeQueuedFrame(packet.fds[0].get());
  if (!frame) return fail(frame.error().WithContext("reading the submission"));
  Result<std::string> cmd = protocol::PeekCommand(*frame);
  if (!cmd || *cmd != "new") {
    return fail(InvalidArgument("the connection does not carry a submission"));
  }
  Result<protocol::SubmitRequest> submitted = Decode<protocol::SubmitRequest>(*frame);
  if (!submitted) return fail(submitted.error().WithContext("submission"));
  // The spec is about the size of the submission that makes it.
  if (Result<void> room = CheckStateRoom(peer->uid, frame->size()); !room)
    return fail(room.error());
  // Elements are found by their index's place (MakeArrayElement), and
  // their ids follow the array's.
  const std::vector<std::uint32_t>& indices = submitted->array;
  if (std::adjacent_find(indices.begin(), indices.end(), std::greater_equal<>()) != indices.end() ||
      id + indices.size() < id) {
    return fail(InvalidArgument("field 'array': indices must be strictly increasing"));
  }
  LaunchSpec spec;
  spec.id = id;
  spec.argv = std::move(submitted->argv);
  spec.cwd = std::move(submitted->cwd);
  spec.env = std::move(submitted->env);
  spec.name = std::move(submitted->name);
  spec.array = std::move(submitted->array);
  spec.notify = std::move(submitted->notify);
  spec.request = protocol::JobRequest{
      *submitted,
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count()};
  // Who runs it the kernel says: the uid and gid of the connection, and
  // the groups its process had when it connected. The name, home and shell
  // the client read of its own account go only into its job's environment.
  Result<std::vector<std::uint32_t>> groups = PeerGroups(packet.fds[0].get());
  if (!groups) return fail(groups.error());
  if (submitted->user.empty()) {
    return fail(Error(ErrorCode::kFailedPrecondition,
                      "this dispatch is older than the daemon and does not name its user; use "
                      "the dispatch installed with hpc-batchd"));
  }
  spec.who = protocol::UserIdentity{peer->uid, peer->gid, submitted->user, std::move(*groups)};
  if (!facts_.as_root) spec.who.groups.clear();  // jobs run as the daemon, groups and all
  if (Result<void> valid = spec.who.Validate(); !valid) return fail(valid.error());
  if (facts_.as_root && std::count(spec.who.groups.begin(), spec.who.groups.end(), 0u) > 0) {
    return fail(Error(ErrorCode::kPermissionDenied, "refusing supplementary group 0"));
  }
  spec.home = submitted->home.empty() ? "/" : submitted->home;
  spec.shell = submitted->shell;
  // The client checked the places as the user; the delivery checks again.
  if (submitted->output) {
    spec.output_dest =
        protocol::ResolveDestination(*submitted->output, submitted->output_is_dir, id);
  }
  if (submitted->error) {
    spec.error_dest =
        protocol::ResolveDestination(*submitted->error, submitted->error_is_dir, id, "error");
  }
  FinishRegister(std::move(*request), std::move(spec));
}

void ExecutorServer::FinishRegister(protocol::RegisterJob request, LaunchSpec spec) {
  const std::uint64_t id = request.id;
  protocol::RegisterReply reply{.req = request.req, .id = id};
  auto fail = [&](const Error& error) {
    LogWarning("refused register of job " + std::to_string(id) + ": " + error.message());
    reply.error = WireError::From(error);
    SendToBroker(Encode(reply));
  };
  if (jobs_.contains(id)) {
    return fail(Error(ErrorCode::kAlreadyExists, "job " + std::to_string(id) + " already exists"));
  }
  const bool start_follows = request.start.has_value();
  if (Result<void> made = MakeJobDir(spec, start_follows); !made) return fail(made.error());
  // With a start to follow, the spec is first written by the start (with
  // its placement, before the launcher is asked to spawn it), and reaches
  // the disk at the end of this turn, before the answer below goes out.
  never_saved_.insert(id);
  if (!start_follows) {
    if (Result<void> saved = Save(spec); !saved) {
      never_saved_.erase(id);
      DropJobDir(id, spec.who);
      return fail(saved.error());
    }
  }
  high_water_ = std::max(high_water_, id);
  reply.uid = spec.who.uid;
  reply.gid = spec.who.gid;
  reply.output_dest = spec.output_dest;
  jobs_[id] = std::move(spec);
  if (!request.start) return SendToBroker(Encode(reply));
  // The bargain: the user is answered once the registration is durable, not
  // once the job runs; the spawn (two forks and an exec) goes on behind the
  // answer and reports on its own. A start that ends before the launcher
  // is asked rides in the registration's answer instead, so the broker
  // hears of the job before it hears of its start, either way.
  struct Answer {
    protocol::RegisterReply reply;
    std::uint64_t start_req = 0;
    bool sent = false;
  };
  auto answer = std::make_shared<Answer>(Answer{std::move(reply), request.start->req, false});
  BeginStart(*request.start, [this, answer](protocol::StartReply started) {
    if (answer->sent) {
      started.req = answer->start_req;
      return SendToBroker(Encode(started));
    }
    answer->sent = true;
    protocol::RegisterReply& registered = answer->reply;
    if (started.error) {
      // Refused before anything ran (a placement outside the machine, say)
      // leaves the job registered: its spec must still be made durable.
      auto it = jobs_.find(registered.id);
      if (it != jobs_.end() && it->second.state == protocol::SpecState::kRegistered) {
        if (Result<void> synced = Save(it->second); !synced) {
          // Not on disk, so not accepted: a reply without an error would
          // have the user told of a job a restart cannot find.
          DropJobDir(registered.id, it->second.who);
          never_saved_.erase(registered.id);
          jobs_.erase(it);
          registered.error = WireError::From(synced.error().WithContext("cannot save the job"));
          SendToBroker(Encode(registered));
          return;
        }
        WriteInfo(it->second);  // not written at registration: a start followed
      }
    }
    registered.start = std::move(started);
    SendToBroker(Encode(registered));
  });
  if (answer->sent) return;
  // Under way: BeginStart saved the spec, with its placement, as it asked
  // the launcher; the turn's flush makes it durable before this answer.
  answer->sent = true;
  answer->reply.starting = true;
  SendToBroker(Encode(answer->reply));
}

Result<void> ExecutorServer::CheckStateRoom(std::uint32_t uid, std::uint64_t bytes) const {
  const std::uint64_t held = usage_.Of(uid);
  const std::uint64_t limit = static_cast<std::uint64_t>(config_.max_user_state_mib) << 20;
  if (held + bytes <= limit) return Ok();
  return Error(ErrorCode::kResourceExhausted,
               "your jobs hold " + std::to_string(held >> 20) +
                   " MiB in the state directory (queued jobs and undelivered output), the most "
                   "one user may (--max-user-state-mib " +
                   std::to_string(config_.max_user_state_mib) +
                   "); let some finish or have old ones forgotten");
}

Result<void> ExecutorServer::CheckArrayElement(const protocol::StartJob& request) const {
  // An array is only ever registered: it never starts itself (BeginStart).
  auto array = jobs_.find(*request.array);
  const std::vector<std::uint32_t> none;
  const std::vector<std::uint32_t>& indices = array != jobs_.end() ? array->second.array : none;
  const std::uint32_t index = request.array_index;
  // The id is the index's own (ids right after the array's, in list
  // order), so an index has one id, and one made element holds it.
  auto at = std::lower_bound(indices.begin(), indices.end(), index);
  const bool listed =
      at != indices.end() && *at == index &&
      request.id == *request.array + 1 + static_cast<std::uint64_t>(at - indices.begin());
  if (!listed ||
      std::count(array->second.array_started.begin(), array->second.array_started.end(), index) >
          0 ||
      ::access(job_dir(request.id).c_str(), F_OK) == 0) {
    return InvalidArgument("job " + std::to_string(request.id) + " is not the unstarted element " +
                           std::to_string(index) + " of a registered array " +
                           std::to_string(*request.array));
  }
  return Ok();
}

Result<void> ExecutorServer::MakeArrayElement(const protocol::StartJob& request) {
  HPCB_TRY(CheckArrayElement(request));
  auto array = jobs_.find(*request.array);
  const std::uint32_t index = request.array_index;
  LaunchSpec spec = array->second;
  spec.id = request.id;
  spec.array.clear();
  spec.array_started.clear();
  spec.array_index = index;
  spec.env["HPC_BATCH_ARRAY_INDEX"] = std::to_string(index);
  // DIR/output.ARRAY.log becomes DIR/output.ARRAY_INDEX.log, and so for
  // --error's. (The broker refuses an array whose places are files; one
  // it let through has its elements' files put beside that file.)
  for (auto [dest, stem] :
       {std::pair{&spec.output_dest, "output"}, std::pair{&spec.error_dest, "error"}}) {
    if (*dest) {
      *dest = protocol::ResolveDestination((*dest)->substr(0, (*dest)->rfind('/')), true,
                                           *request.array, stem, index);
    }
  }
  // Charged as a registration is: each element is a spec of its own.
  if (Result<void> room = CheckStateRoom(spec.who.uid, protocol::Encode(spec).size()); !room) {
    return Error(ErrorCode::kUnavailable, room.error().message() + "; the element stays queued");
  }
  HPCB_TRY(MakeJobDir(spec, /*start_follows=*/true));
  // Saved in this turn, as the element's spec is (BeginStart), both made
  // durable by the turn's commit. A power cut that keeps only the element's
  // is mended by recovery; one that keeps only this leaves the index used
  // and the element unmade (its start is then refused); one before the
  // commit keeps neither, and the element, whose spawn may have begun, was
  // never acknowledged as started.
  array->second.array_started.push_back(index);
  if (Result<void> saved = Save(array->second); !saved) {
    array->second.array_started.pop_back();
    DropJobDir(spec.id, spec.who);
    return saved.error().WithContext("cannot record the start of array " +
                                     std::to_string(*request.array) + "'s element");
  }
  never_saved_.insert(spec.id);
  jobs_[spec.id] = std::move(spec);
  return Ok();
}

}  // namespace hpcb::executor
