// The run record: STATE/run/<id>.json, written as root by a job's shepherd
// (the job's parent, launcher/job_shepherd.h) and read by the executor.
//
// It is how a job's fate outlives every daemon role. The shepherd records
// three states, each with the placement the spawn carried: before it forks
// the job (pid 0: starting); once the job is forked, before it may exec
// (its pid, and its start time, which tells it from a process given its
// pid after a power cut unless that one started at the same tick after
// its boot, as shepherd_start tells the shepherd); and,
// flushed, when the job has ended (the wait status and what the job used),
// then exits. The executor, its launcher or the broker may each be
// restarted meanwhile: the record says whether the job may be starting
// (its shepherd alive), started, or ended and how, so no job is ever
// started twice or its end lost.
//
// One file, one line per state, the last line that reads is the job's
// state. The bargain: a file is made once per job rather than once per
// state through a temporary name (on ext4 each new file is an inode
// search, slower the more files were deleted recently, as in a stream of
// short jobs). The first line is renamed into place with its file; a
// later line torn by a crash reads as nothing, leaving the state before
// it, as a torn rename would.
#ifndef HPCB_COMMON_HOST_RUN_RECORD_H_
#define HPCB_COMMON_HOST_RUN_RECORD_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "common/base/result.h"
#include "common/base/unique_fd.h"
#include "common/host/host_files.h"
#include "protocol/codec.h"
#include "protocol/executor_messages.h"

namespace hpcb::host {

struct RunRecord {
  std::uint64_t id = 0;
  std::int64_t pid = 0;                // the job; 0 while it is being started
  std::int64_t shepherd = 0;           // its parent
  std::uint64_t shepherd_start = 0;    // its start time (/proc stat field 22); 0: unknown
  std::uint64_t pid_start = 0;         // the job's, as shepherd_start; 0: unknown
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

  template <class F>
  void Fields(F&& field) {
    HPCB_FIELD_LIST(id, pid, shepherd);
    // Not in records of older releases.
    HPCB_MISSABLE_FIELDS(shepherd_start, pid_start);
    HPCB_FIELD_LIST(start_time, status, end_time, user_s, system_s, max_rss_kib);
    // Records written before the field (jobs kept running across an upgrade).
    HPCB_MISSABLE_FIELDS(placement);
  }
  Result<void> Validate() const;
};

std::string RunRecordPath(const std::string& run_dir, std::uint64_t id);

// Now, in seconds since the epoch: how a job's start and end times are kept.
double EpochNow();

// The newest state in a run record's text: its last line that decodes,
// is valid and names job `id`. An error when no line does.
Result<RunRecord> ParseRunRecord(std::string_view text, std::uint64_t id);

// kNotFound when there is none (no shepherd ever ran for the job).
Result<RunRecord> LoadRunRecord(const std::string& run_dir, std::uint64_t id);

// The shepherd's side: the first Append makes the file with its line
// under a temporary name and renames it over any an earlier try left; each
// later one adds a line. A line that fails half way is written over by the
// next, so it never runs into it. A file removed or replaced meanwhile is
// made again, holding the newest line.
class RunRecordWriter {
 public:
  explicit RunRecordWriter(std::string run_dir) : run_dir_(std::move(run_dir)) {}
  // Sync::kNow: the line, and the file's name in the directory, are on
  // disk when it returns; kNone: neither (Sync::kDeferred is kNow here).
  Result<void> Append(const RunRecord& record, Sync sync);

 private:
  // The open file is still the one `path` names.
  bool StillNamed(const std::string& path) const;
  Result<void> Make(const std::string& path, const std::string& line);
  Result<void> WriteLine(const std::string& path, const std::string& line);

  std::string run_dir_;
  UniqueFd fd_;
};

}  // namespace hpcb::host

#endif  // HPCB_COMMON_HOST_RUN_RECORD_H_
