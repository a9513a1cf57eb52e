// The run record: STATE/run/<id>.json, written as root by a job's shepherd
// (the job's parent, launcher/job_shepherd.h) and read by the executor.
//
// It is how a job's fate outlives every daemon role. The shepherd writes it
// three times, each with the placement the spawn carried: before it forks
// the job (pid 0: starting), once the job has
// exec'd (its pid), and, fsynced, when the job has ended (the wait status
// and what the job used), then exits. The executor, its launcher or the
// broker may each be restarted meanwhile: the record says whether the job
// may be starting (its shepherd alive), started, or ended and how, so no
// job is ever started twice or its end lost.
#ifndef HPCB_PROTOCOL_HOST_RUN_RECORD_H_
#define HPCB_PROTOCOL_HOST_RUN_RECORD_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "protocol/base/result.h"
#include "protocol/codec.h"
#include "protocol/executor_messages.h"

namespace hpcb::host {

struct RunRecord {
  std::uint64_t id = 0;
  std::int64_t pid = 0;                // the job; 0 while it is being started
  std::int64_t shepherd = 0;           // its parent
  double start_time = 0;               // epoch seconds, at exec
  std::optional<std::int64_t> status;  // raw wait status, once ended
  std::optional<double> end_time;
  // From wait4 of the job: user and system cpu seconds of it and its
  // reaped descendants, and the largest resident set among them.
  double user_s = 0;
  double system_s = 0;
  std::int64_t max_rss_kib = 0;
  // Where the job runs (the spawn's placement): the job's spec holds it only
  // from the save that records the job running, so an executor restarted
  // in between books the job from here.
  std::optional<protocol::PlacementRecord> placement;

  template <class A>
  void save(A& ar) const {
    using protocol::Put;
    Put(ar, "id", id);
    Put(ar, "pid", pid);
    Put(ar, "shepherd", shepherd);
    Put(ar, "start_time", start_time);
    Put(ar, "status", status);
    Put(ar, "end_time", end_time);
    Put(ar, "user_s", user_s);
    Put(ar, "system_s", system_s);
    Put(ar, "max_rss_kib", max_rss_kib);
    Put(ar, "placement", placement);
  }
  template <class A>
  void load(A& ar) {
    using protocol::Get;
    Get(ar, "id", id);
    Get(ar, "pid", pid);
    Get(ar, "shepherd", shepherd);
    Get(ar, "start_time", start_time);
    Get(ar, "status", status);
    Get(ar, "end_time", end_time);
    Get(ar, "user_s", user_s);
    Get(ar, "system_s", system_s);
    Get(ar, "max_rss_kib", max_rss_kib);
    // Records written before the field (jobs kept running across an upgrade).
    protocol::GetIfPresent(ar, "placement", placement);
  }
  Result<void> Validate() const;
};

std::string RunRecordPath(const std::string& run_dir, std::uint64_t id);

// kNotFound when there is none (no shepherd ever ran for the job).
Result<RunRecord> LoadRunRecord(const std::string& run_dir, std::uint64_t id);

// Jobs whose run record says they run (started, no end status yet): the
// count the launcher logs when it reloads or stops.
std::size_t CountRunningJobs(const std::string& run_dir);

}  // namespace hpcb::host

#endif  // HPCB_PROTOCOL_HOST_RUN_RECORD_H_
