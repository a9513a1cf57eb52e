// Registering a job: who submitted it (SO_PEERCRED; the account looked up
// by the launcher), what it runs (the client's own frame), where its output
// goes (checked as the user by the launcher), then the root-only launch spec.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <utility>

#include "executor/executor_server.h"
#include "executor/sysfacts.h"
#include "protocol/base/log.h"
#include "protocol/queued_frame.h"
#include "protocol/user_requests.h"

namespace hpcb::executor {
namespace {

using protocol::Decode;
using protocol::Encode;
using protocol::WireError;

}  // namespace

void ExecutorServer::RefuseRegister(std::uint64_t req, std::uint64_t id, const Error& error) {
  LogWarning("refused register of job " + std::to_string(id) + ": " + error.message());
  protocol::RegisterReply reply;
  reply.req = req;
  reply.id = id;
  reply.error = WireError::From(error);
  SendToBroker(Encode(reply));
}

void ExecutorServer::OnRegister(std::uint64_t req, const protocol::Packet& packet) {
  Result<protocol::RegisterJob> request = Decode<protocol::RegisterJob>(packet.bytes);
  if (!request) return Refuse(req, 0, "register", request.error());
  const std::uint64_t id = request->id;
  auto fail = [&](const Error& error) { RefuseRegister(req, id, error); };
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
  Result<void> allowed = CheckSubmitter(*peer, facts_.as_root, facts_.self_uid, facts_.broker_uid);
  if (!allowed) return fail(allowed.error());
  // What runs comes from the user's own bytes on their connection, never
  // from the broker's message (docs/security/threat-model.md, "What a
  // compromised broker can do").
  Result<std::string> frame = protocol::TakeQueuedFrame(packet.fds[0].get());
  if (!frame) return fail(frame.error().WithContext("reading the submission"));
  Result<std::string> cmd = protocol::PeekTag(*frame, "cmd");
  if (!cmd || *cmd != "new") {
    return fail(InvalidArgument("the connection does not carry a submission"));
  }
  Result<protocol::SubmitRequest> submitted = Decode<protocol::SubmitRequest>(*frame);
  if (!submitted) return fail(submitted.error().WithContext("submission"));
  // The spec is about the size of the submission that makes it.
  const std::uint64_t held = usage_.Of(peer->uid);
  const std::uint64_t limit = static_cast<std::uint64_t>(config_.max_user_state_mib) << 20;
  if (held + frame->size() > limit) {
    return fail(Error(ErrorCode::kResourceExhausted,
                      "your jobs hold " + std::to_string(held >> 20) +
                          " MiB in the state directory (queued jobs and undelivered output), "
                          "the most one user may (--max-user-state-mib " +
                          std::to_string(config_.max_user_state_mib) +
                          "); let some finish or have old ones forgotten"));
  }
  LaunchSpec spec;
  spec.id = id;
  spec.argv = std::move(submitted->argv);
  spec.cwd = std::move(submitted->cwd);
  spec.env = std::move(submitted->env);
  spec.request = protocol::JobRequest::From(
      *submitted,
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
  in_flight_[id] = JobPhase::kRegistering;
  if (std::optional<protocol::LookUpUserReply> known =
          accounts_.Find(peer->uid, AccountCache::Clock::now())) {
    return OnAccount(std::move(*request), std::move(spec), *peer, std::move(submitted->output),
                     std::move(*known), std::nullopt, DestCache::Clock::now());
  }
  protocol::LookUpUserRequest look_up;
  look_up.id = id;
  look_up.uid = peer->uid;
  // The lookup's child checks the output path too, as the account it
  // found: one fork for a submitter not seen lately, not two.
  if (submitted->output) look_up.output = protocol::OutputToCheck{*submitted->output, peer->gid};
  const DestCache::Clock::time_point asked_at = DestCache::Clock::now();
  AskLauncher<protocol::LookUpUserReply>(
      look_up, {}, deadlines_.check,
      look_up.output ? "the launcher's account lookup and output path check"
                     : "the launcher's account lookup",
      [this, registration = std::move(*request), spec = std::move(spec), peer = *peer,
       output = std::move(submitted->output),
       asked_at](Result<protocol::LookUpUserReply> found) mutable {
        std::optional<protocol::CheckedOutput> checked;
        if (found && !found->error) {
          // The check belongs to this job's path; the account is reused.
          checked = std::exchange(found->output, std::nullopt);
          accounts_.Put(peer.uid, *found, AccountCache::Clock::now());
        }
        OnAccount(std::move(registration), std::move(spec), peer, std::move(output),
                  std::move(found), std::move(checked), asked_at);
      });
}

void ExecutorServer::OnAccount(protocol::RegisterJob registration, LaunchSpec spec,
                               const struct ucred& peer, std::optional<std::string> output,
                               Result<protocol::LookUpUserReply> found,
                               std::optional<protocol::CheckedOutput> checked,
                               DestCache::Clock::time_point asked_at) {
  if (found && found->error) found = found->error->ToError();
  if (found && found->who.uid != peer.uid) {
    found = Error(ErrorCode::kInternal, "the account lookup answered for another uid");
  }
  if (!found) {
    in_flight_.erase(registration.id);
    return RefuseRegister(registration.req, registration.id,
                          found.error().WithContext("looking up uid " + std::to_string(peer.uid)));
  }
  spec.who = found->who;
  if (facts_.as_root) spec.who.gid = peer.gid;  // the submitter's current gid
  spec.home = found->home;
  spec.shell = found->shell;
  if (output && checked) {
    Result<protocol::CheckDestReply> reply =
        protocol::CheckDestReply{0, std::move(checked->dest), std::move(checked->error)};
    return OnOutputChecked(std::move(registration), std::move(spec), *output, asked_at,
                           std::move(reply));
  }
  CheckOutputThenRegister(std::move(registration), std::move(spec), std::move(output));
}

void ExecutorServer::CheckOutputThenRegister(protocol::RegisterJob registration, LaunchSpec spec,
                                             std::optional<std::string> output) {
  if (!output) {
    in_flight_.erase(registration.id);
    return FinishRegister(std::move(registration), std::move(spec), std::optional<std::string>());
  }
  if (dests_.FreshDirectory(spec.who, *output, DestCache::Clock::now())) {
    in_flight_.erase(registration.id);
    std::string dest = protocol::ResolveDestination(*output, true, spec.id);
    return FinishRegister(std::move(registration), std::move(spec), std::optional(dest));
  }
  // The answer is as old as the question: a slow check shortens its reuse.
  const DestCache::Clock::time_point asked_at = DestCache::Clock::now();
  protocol::CheckDestRequest check;
  check.id = spec.id;
  check.who = spec.who;
  check.path = *output;
  AskLauncher<protocol::CheckDestReply>(
      check, {}, deadlines_.check, "the launcher's output path check",
      [this, registration = std::move(registration), spec = std::move(spec), path = *output,
       asked_at](Result<protocol::CheckDestReply> reply) mutable {
        OnOutputChecked(std::move(registration), std::move(spec), path, asked_at, std::move(reply));
      });
}

void ExecutorServer::OnOutputChecked(protocol::RegisterJob registration, LaunchSpec spec,
                                     const std::string& path, DestCache::Clock::time_point asked_at,
                                     Result<protocol::CheckDestReply> reply) {
  in_flight_.erase(registration.id);
  Result<std::optional<std::string>> dest = std::optional<std::string>();
  if (!reply) {
    dest = reply.error();
  } else if (reply->error) {
    dest = Error(ErrorCode::kFailedPrecondition, reply->error->message);
  } else {
    dests_.Put(spec.who, path, spec.id, *reply, asked_at);
    dest = std::optional<std::string>(reply->dest);
  }
  FinishRegister(std::move(registration), std::move(spec), std::move(dest));
}

void ExecutorServer::FinishRegister(protocol::RegisterJob request, LaunchSpec spec,
                                    Result<std::optional<std::string>> dest) {
  const std::uint64_t id = request.id;
  protocol::RegisterReply reply;
  reply.req = request.req;
  reply.id = id;
  auto fail = [&](const Error& error) {
    LogWarning("refused register of job " + std::to_string(id) + ": " + error.message());
    reply.error = WireError::From(error);
    SendToBroker(Encode(reply));
  };
  if (!dest) return fail(dest.error());
  spec.output_dest = *dest;
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
      (void)RemoveJobDir(job_dir(id), OwnerOf(spec));
      return fail(saved.error());
    }
  }
  high_water_ = std::max(high_water_, id);
  reply.uid = spec.who.uid;
  reply.gid = spec.who.gid;
  reply.user = spec.who.user;
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
          LogWarning("cannot save the spec of job " + std::to_string(registered.id) + ": " +
                     synced.error().message());
          (void)RemoveJobDir(job_dir(registered.id), OwnerOf(it->second));
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

}  // namespace hpcb::executor
