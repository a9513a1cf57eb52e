// Job arrays (`dispatch new --array`): one registration on the root side
// for the whole array, one record here per element, each made into a job
// of its own on the root side by its first start.
#include <algorithm>
#include <string_view>

#include "broker/broker_core.h"
#include "common/base/log.h"
#include "protocol/client_messages.h"
#include "protocol/launcher_messages.h"

namespace hpcb::broker {
namespace {

// Element INDEX's file beside the array's DIR/STEM.ARRAY.log, named by the
// same rule the root side names it by (ExecutorServer::MakeArrayElement):
// DIR/STEM.ARRAY_INDEX.log.
std::optional<std::string> ElementPath(const std::optional<std::string>& path, std::uint64_t array,
                                       std::uint32_t index, std::string_view stem) {
  if (!path) return path;
  return protocol::ResolveDestination(path->substr(0, path->rfind('/')), true, array, stem, index);
}

}  // namespace

std::vector<std::uint64_t> BrokerCore::ElementsOf(std::uint64_t array) const {
  // The elements hold the ids right after the array's, and no other job
  // does; some may have gone under --keep-finished.
  std::vector<std::uint64_t> ids;
  for (auto it = jobs_.upper_bound(array); it != jobs_.end() && it->second.array_id == array;
       ++it) {
    ids.push_back(it->first);
  }
  return ids;
}

Result<std::vector<JobRecord*>> BrokerCore::LookupJobs(const Peer& peer, std::uint64_t id) {
  if (jobs_.contains(id)) {
    HPCB_ASSIGN_OR_RETURN(JobRecord * job, Lookup(peer, id));
    return std::vector<JobRecord*>{job};
  }
  std::vector<JobRecord*> elements;
  for (std::uint64_t element : ElementsOf(id)) {
    HPCB_ASSIGN_OR_RETURN(JobRecord * job, Lookup(peer, element));
    elements.push_back(job);
  }
  if (elements.empty()) return Error(ErrorCode::kNotFound, "no such job " + std::to_string(id));
  return elements;
}

Result<std::uint64_t> BrokerCore::ElementToAttach(const Peer& peer, std::uint64_t array) {
  HPCB_ASSIGN_OR_RETURN(std::vector<JobRecord*> elements, LookupJobs(peer, array));
  std::vector<const JobRecord*> active;
  const JobRecord* ended = nullptr;
  for (const JobRecord* job : elements) {
    if (!job->done()) {
      active.push_back(job);
    } else if (ended == nullptr || job->end_time >= ended->end_time) {
      ended = job;
    }
  }
  if (active.size() > 1) {
    std::string ids;
    for (const JobRecord* job : active) {
      ids += (ids.empty() ? "" : ", ") + std::to_string(array) + "_" +
             std::to_string(job->array_index);
    }
    return Error(ErrorCode::kFailedPrecondition,
                 std::to_string(active.size()) + " elements of array " + std::to_string(array) +
                     " are queued or running (" + ids + "); attach follows one: name it as " +
                     std::to_string(array) + "_INDEX");
  }
  return active.empty() ? ended->id : active.front()->id;
}

void BrokerCore::ExpandArray(JobRecord& array, const protocol::SubmitRequest& request,
                             Respond respond) {
  const std::uint64_t id = array.id;
  protocol::SubmitReply answer{id,
                               JobState::kQueued,
                               array.max_time_s,
                               array.demand.cpu,
                               array.max_mem_gb,
                               array.mem_defaulted,
                               array.output_dest,
                               0,
                               0};
  answer.draining = draining_;
  answer.array_elements = static_cast<std::uint32_t>(request.array.size());
  // A policy may have placed the array's record while it registered; it
  // never starts itself.
  if (array.holds_placement) scheduler_.Release(array.placement);
  JobRecord element = std::move(array);
  jobs_.erase(id);
  element.holds_placement = false;
  element.placement = Placement{};
  MarkChanged(id);
  element.array_id = id;
  element.array_throttle = request.array_throttle;
  element.on_executor = false;
  const std::optional<std::string> output = element.output_dest;
  const std::optional<std::string> errors = element.error_dest;
  for (std::size_t i = 0; i < request.array.size(); ++i) {
    element.id = id + 1 + i;
    element.array_index = request.array[i];
    element.output_dest = ElementPath(output, id, element.array_index, "output");
    element.error_dest = ElementPath(errors, id, element.array_index, "error");
    jobs_.emplace(element.id, element);
    MarkChanged(element.id);
  }
  array_unmade_[id] = request.array.size();
  LogInfo("array " + std::to_string(id) + " of " + std::to_string(request.array.size()) +
          " elements submitted by uid " + std::to_string(element.uid));
  AnswerWhenWritten(
      std::move(respond), Response{protocol::Encode(answer), std::nullopt},
      [this, id](const Error& error) -> Response {
        // Not saved, so not acknowledged: the elements not
        // started yet are taken back, and the array's spec
        // with them (a started one has its own and runs on).
        for (std::uint64_t unsaved : ElementsOf(id)) {
          if (jobs_.at(unsaved).holds_placement) continue;
          jobs_.erase(unsaved);
          MarkChanged(unsaved);
        }
        array_unmade_.erase(id);
        ForgetOnExecutor(id);
        return Response{
            protocol::Encode(protocol::ErrorReply::From(
                Error(ErrorCode::kUnavailable, "the queue could not be saved (" + error.message() +
                                                   "); the array was not submitted"))),
            std::nullopt};
      });
  Schedule();
}

void BrokerCore::ElementMadeOrGone(JobRecord& job) {
  if (!job.array_id || job.on_executor) return;
  auto unmade = array_unmade_.find(*job.array_id);
  if (unmade == array_unmade_.end()) return;
  if (--unmade->second == 0) {
    // Every element has its own spec or ended: the array's is done with.
    array_unmade_.erase(unmade);
    ForgetArray(*job.array_id);
  }
}

std::map<std::uint64_t, std::uint32_t> BrokerCore::ThrottledRoom() const {
  std::map<std::uint64_t, std::uint32_t> room;
  for (auto it = FirstUnfinished(); it != jobs_.end(); ++it) {
    const JobRecord& job = it->second;
    if (!job.array_throttle) continue;
    auto slot = room.try_emplace(*job.array_id, *job.array_throttle).first;
    if (job.holds_placement && slot->second > 0) --slot->second;
  }
  return room;
}

void BrokerCore::RebuildElements(const protocol::JobSummary& array,
                                 const std::map<std::uint64_t, protocol::JobSummary>& held) {
  // The index list is the one registered; `array_started` holds the
  // indices the root side has made an element for (saved with it), so an
  // element that ran and was forgotten does not come back as unstarted.
  protocol::JobSummary unstarted = array;
  unstarted.array.clear();
  unstarted.state = protocol::SpecState::kRegistered;
  std::size_t rebuilt = 0;
  for (std::size_t i = 0; i < array.array.size(); ++i) {
    const std::uint64_t id = array.id + 1 + i;
    const std::uint32_t index = array.array[i];
    auto found = jobs_.find(id);
    const bool made = std::count(array.array_started.begin(), array.array_started.end(), index) > 0;
    if (found == jobs_.end() && !held.contains(id) && !made) {
      unstarted.id = id;
      unstarted.output_dest = ElementPath(array.output_dest, array.id, index, "output");
      unstarted.error_dest = ElementPath(array.error_dest, array.id, index, "error");
      Rebuild(unstarted, ElementOf{array.id, index});
      ++rebuilt;
    } else if (found != jobs_.end() && !found->second.array_id) {
      // Rebuilt from its own spec, which does not name its array.
      found->second.array_id = array.id;
      found->second.array_index = index;
      MarkChanged(id);
    }
  }
  if (rebuilt > 0) {
    LogWarning("array " + std::to_string(array.id) + ": " + std::to_string(rebuilt) +
               " unstarted element(s) were missing from the queue file; rebuilt from the " +
               "array's launch spec, queued (a %N throttle, a hold and --after are the " +
               "broker's alone and are not restored)");
  }
}

}  // namespace hpcb::broker
