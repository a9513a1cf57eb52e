// A job's state and why it ended, as users see them (`dispatch list`, the
// queue file). Wire enums (codec.h): written as their names.
#ifndef HPCB_PROTOCOL_JOB_STATE_H_
#define HPCB_PROTOCOL_JOB_STATE_H_

#include <array>
#include <string_view>
#include <utility>

#include "protocol/codec.h"

namespace hpcb::protocol {

enum class JobState { kQueued, kRunning, kDone };

template <>
struct EnumNames<JobState> {
  static constexpr std::array<std::pair<JobState, std::string_view>, 3> kNames{{
      {JobState::kQueued, "queued"},
      {JobState::kRunning, "running"},
      {JobState::kDone, "done"},
  }};
};

// Why a job ended other than by exiting on its own. kDependency: a job
// it waited for (`--after`) did not succeed, so it never ran.
enum class JobReason { kKilled, kTimeout, kError, kOom, kDependency };

template <>
struct EnumNames<JobReason> {
  static constexpr std::array<std::pair<JobReason, std::string_view>, 5> kNames{{
      {JobReason::kKilled, "killed"},
      {JobReason::kTimeout, "timeout"},
      {JobReason::kError, "error"},
      {JobReason::kOom, "oom"},
      {JobReason::kDependency, "dependency"},
  }};
};

// What `dispatch kill` did.
enum class KillOutcome { kRemoved, kKilling };

template <>
struct EnumNames<KillOutcome> {
  static constexpr std::array<std::pair<KillOutcome, std::string_view>, 2> kNames{{
      {KillOutcome::kRemoved, "removed"},
      {KillOutcome::kKilling, "killing"},
  }};
};

}  // namespace hpcb::protocol

#endif  // HPCB_PROTOCOL_JOB_STATE_H_
