#include "executor/job_phase.h"

#include <array>
#include <string>

namespace hpcb::executor {
namespace {

constexpr unsigned Bit(JobPhase phase) {
  return 1u << static_cast<unsigned>(phase);
}

// Indexed by the enums' values, in their order.
constexpr std::array<std::string_view, 6> kPhaseNames{"unknown", "queued",    "starting",
                                                      "running", "finishing", "ended"};
constexpr std::array<std::string_view, 7> kOperationNames{
    "register", "start", "signal", "forget", "open_output", "deliver_again", "finish"};

// The table, by operation. A job's buffer may be read (attach, output)
// from registration to its forgetting; everything else has exactly the
// phases it needs.
constexpr std::array<unsigned, 7> kAllowed{
    Bit(JobPhase::kUnknown),                         // register
    Bit(JobPhase::kQueued),                          // start
    Bit(JobPhase::kRunning),                         // signal
    Bit(JobPhase::kQueued) | Bit(JobPhase::kEnded),  // forget
    Bit(JobPhase::kQueued) | Bit(JobPhase::kStarting) | Bit(JobPhase::kRunning) |
        Bit(JobPhase::kFinishing) | Bit(JobPhase::kEnded),  // open_output
    Bit(JobPhase::kEnded),                                  // deliver_again
    Bit(JobPhase::kRunning),                                // finish
};
static_assert(static_cast<std::size_t>(JobOperation::kFinish) + 1 == kAllowed.size());
static_assert(static_cast<std::size_t>(JobPhase::kEnded) + 1 == kPhaseNames.size());

}  // namespace

std::string_view NameOf(JobPhase phase) {
  return kPhaseNames.at(static_cast<std::size_t>(phase));
}

std::string_view NameOf(JobOperation operation) {
  return kOperationNames.at(static_cast<std::size_t>(operation));
}

Result<void> CheckPhase(JobOperation operation, JobPhase phase, std::uint64_t id) {
  const unsigned allowed = kAllowed.at(static_cast<std::size_t>(operation));
  if ((allowed & Bit(phase)) != 0) return Ok();
  const std::string job = "job " + std::to_string(id);
  if (phase == JobPhase::kUnknown) return Error(ErrorCode::kNotFound, "no such " + job);
  if (operation == JobOperation::kRegister) {
    return Error(ErrorCode::kAlreadyExists,
                 job + " already exists (it is " + std::string(NameOf(phase)) + ")");
  }
  std::string needed;
  for (std::size_t p = 0; p < kPhaseNames.size(); ++p) {
    if ((allowed & (1u << p)) == 0) continue;
    needed += (needed.empty() ? "" : " or ") + std::string(kPhaseNames[p]);
  }
  return Error(ErrorCode::kFailedPrecondition, job + " is " + std::string(NameOf(phase)) + "; " +
                                                   std::string(NameOf(operation)) + " needs it " +
                                                   needed);
}

}  // namespace hpcb::executor
