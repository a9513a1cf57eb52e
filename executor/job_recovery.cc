// What a (re)started executor finds: every launch spec, and for the jobs
// that started, their run records and shepherds. Nothing here assumes a
// job's fate; each is read from the records the root side keeps.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <limits>

#include "common/base/log.h"
#include "common/host/host_files.h"
#include "common/host/run_record.h"
#include "executor/executor_server.h"

namespace hpcb::executor {
namespace {

using protocol::SpecState;

// How long a restart waits for a job start it interrupted to settle.
constexpr std::chrono::milliseconds kSettleDeadline{20000};
constexpr std::uint32_t kOverflowGid = 65534;  // "nogroup", fs.overflowgid

// A process is the one we recorded: same pid, same start time.
bool Alive(std::int64_t pid, std::uint64_t recorded_start) {
  if (pid <= 1 || recorded_start == 0) return false;
  Result<std::uint64_t> start = host::ProcStartTime(static_cast<int>(pid));
  return start && *start == recorded_start;
}

// The parent pid in /proc/PID/stat, or 0.
long ParentOf(std::int64_t pid) {
  if (pid <= 0 || pid > std::numeric_limits<int>::max()) return 0;
  Result<std::uint64_t> ppid = host::ProcStatField(static_cast<int>(pid), 4);
  return ppid ? static_cast<long>(*ppid) : 0;
}

}  // namespace

bool ExecutorServer::ShepherdMayStillStart(const host::RunRecord& record) const {
  // Its start time, where the record has it, tells the shepherd from a
  // process that took its pid since (after a power cut, say).
  if (record.shepherd_start != 0) {
    return Alive(record.shepherd, record.shepherd_start);
  }
  return ParentOf(record.shepherd) != 0;
}

void ExecutorServer::SettleStartingJobs(const std::vector<std::uint64_t>& ids) {
  // A shepherd that was starting a job when we stopped has a record without
  // a pid. Until it says whether the job exec'd, nobody may decide the job
  // never started (and start it again). Its job child cannot exec before
  // the record names it (launcher/job_shepherd.cc), and dies with it, so a
  // shepherd that is gone means the job never ran. One that lives is
  // waited for by the loop, not here: nothing may sleep under the filter.
  settling_.clear();
  for (std::uint64_t id : ids) {
    Result<host::RunRecord> record = host::LoadRunRecord(run_dir(), id);
    if (!record || record->pid != 0) continue;
    if (!ShepherdMayStillStart(*record)) {
      ::unlink(host::RunRecordPath(run_dir(), id).c_str());
      continue;
    }
    settling_.insert(id);
  }
}

Result<void> ExecutorServer::SettleStep() {
  SettleStartingJobs({settling_.begin(), settling_.end()});
  if (!settling_.empty() && std::chrono::steady_clock::now() < settle_until_) return Ok();
  if (!settling_.empty()) {
    LogError(std::to_string(settling_.size()) +
             " job start(s) from before the restart did not settle in time; they stay queued "
             "until their run records do");
    settling_.clear();
  }
  LoadSpecs();
  if (recovery_error_) return *recovery_error_;
  return CompleteRecovery();
}

void ExecutorServer::KillJobWithoutSpec(std::uint64_t id) {
  // Still the job only while its shepherd is its parent (no pid reuse).
  if (Result<host::RunRecord> record = host::LoadRunRecord(run_dir(), id);
      record && !record->status && record->pid > 1 && ParentOf(record->pid) == record->shepherd) {
    LogError("job " + std::to_string(id) + " (pid " + std::to_string(record->pid) +
             ") is running without a launch spec; killing it");
    (void)::kill(-static_cast<pid_t>(record->pid), SIGKILL);
  }
}

bool ExecutorServer::DropEmptySpec(std::uint64_t id) {
  // A spec file is flushed before its rename (spec_store.h), so an empty
  // one is either left by an older release, which renamed a job's first
  // spec into place before its fsync and answered only once both were on
  // disk (a power cut in between left a job never acknowledged, whose
  // spawn, if it had begun, ended with the power), or damage: the broker
  // then reports the job lost if it knew of it. Anything else that does
  // not parse is set aside for an admin instead.
  const std::string path = specs_dir() + "/" + std::to_string(id) + ".json";
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size != 0) return false;
  LogWarning("job " + std::to_string(id) +
             ": its launch spec is empty: never made durable "
             "before the machine went down, so never acknowledged; the job is dropped (the "
             "broker reports it lost if it had been told of it)");
  ::unlink(path.c_str());
  KillJobWithoutSpec(id);  // only if someone emptied it under a live job
  ::unlink(host::RunRecordPath(run_dir(), id).c_str());
  return true;  // its job dir and dev entry go as leftovers (PruneLeftovers)
}

void ExecutorServer::Recover() {
  if (Result<void> opened = store_.Open(); !opened) {
    recovery_error_ = opened.error().WithContext("cannot open the launch specs");
    return;
  }
  settle_until_ = std::chrono::steady_clock::now() + kSettleDeadline;
  SettleStartingJobs(ListIds(specs_dir()));
  if (settling_.empty()) LoadSpecs();
}

void ExecutorServer::LoadSpecs() {
  specs_loaded_ = true;
  // Ids never go back, even when specs/high_water is lost with the broker's
  // files: a run record or a job dir left of a job also counts, so that no
  // new job is given its id (and overwrites its output.N.log).
  for (const std::vector<std::uint64_t>& found :
       {ListIds(run_dir()), ListIds(config_.state_dir + "/jobs", "")}) {
    if (!found.empty()) high_water_ = std::max(high_water_, found.back());
  }
  if (Result<std::string> text = host::ReadSmallFile(high_water_path()); text) {
    high_water_ = std::max<std::uint64_t>(high_water_, std::strtoull(text->c_str(), nullptr, 10));
  }
  for (std::uint64_t id : ListIds(specs_dir())) {
    high_water_ = std::max(high_water_, id);
    Result<LaunchSpec> loaded = LoadSpec(specs_dir(), id);
    if (!loaded && DropEmptySpec(id)) continue;
    if (!loaded) {
      // Nothing says who it runs as or where its output goes, so it can be
      // neither run nor managed: set aside for the admin, a job that did
      // start is stopped, and the broker reports the job lost to its owner.
      const std::string path = specs_dir() + "/" + std::to_string(id) + ".json";
      (void)::rename(path.c_str(), (path + ".corrupt").c_str());
      LogError("job " + std::to_string(id) + ": its launch spec cannot be read (" +
               loaded.error().message() + "); kept as " + path + ".corrupt");
      KillJobWithoutSpec(id);
      continue;
    }
    LaunchSpec& spec = *loaded;
    bool saved_now = false;
    Result<host::RunRecord> record = host::LoadRunRecord(run_dir(), id);
    if (spec.state == SpecState::kRegistered && record && record->pid > 0) {
      // It exec'd, but we stopped before we could record that: the run
      // record is the truth.
      LogWarning("job " + std::to_string(id) +
                 " started while the daemon was stopping; adopting it");
      spec.state = SpecState::kRunning;
      // The spawn's own: the spec is given its placement only with this save.
      if (record->placement) spec.placement = record->placement;
      if (!spec.placement) {
        LogWarning("job " + std::to_string(id) +
                   " was adopted without a placement (started by an older release); its cpus "
                   "are not booked while it runs");
      }
      spec.pid = record->pid;
      spec.shepherd = record->shepherd;
      spec.start_time = record->start_time;
      spec.env.clear();
      // The record's own start times where it has them (an older release's
      // lacks them: 0): a process that took the job's or the shepherd's pid
      // since (a power cut) is not taken for it.
      auto recorded_or_now = [](std::uint64_t recorded, std::int64_t pid) {
        return recorded != 0 ? recorded : host::ProcStartTime(static_cast<int>(pid)).value_or(0);
      };
      spec.proc_start = recorded_or_now(record->pid_start, spec.pid);
      spec.shepherd_start = recorded_or_now(record->shepherd_start, spec.shepherd);
      saved_now = Save(spec).has_value();  // if so, its usage booked with the new size
    }
    if (spec.state == SpecState::kRunning) {
      const bool ended = record && record->status;
      const bool shepherd_alive = Alive(spec.shepherd, spec.shepherd_start);
      const bool job_alive = Alive(spec.pid, spec.proc_start);
      if (ended || (!shepherd_alive && !job_alive)) {
        dead_on_arrival_.push_back(id);
      } else {
        // The launcher reports its own children's ends; anyone else's
        // (a launcher restart re-parented them) we poll for.
        if (!shepherd_alive || ParentOf(spec.shepherd) != ::getppid()) {
          foreign_.insert(id);
        }
        LogInfo("adopted running job " + std::to_string(id) + " (pid " + std::to_string(spec.pid) +
                ", user " + spec.who.user + ")");
      }
    }
    if (!saved_now) {
      struct stat st {};
      const bool sized =
          ::stat((specs_dir() + "/" + std::to_string(id) + ".json").c_str(), &st) == 0;
      usage_.Set(id, spec.who.uid,
                 BytesHeld(spec, sized ? static_cast<std::uint64_t>(st.st_size) : 0));
    }
    jobs_[id] = std::move(spec);
  }
  // An element saved without its array's record of it (a power cut between
  // the two renames): its own spec says its index was used. Not kept, the
  // index could be made again once the element is forgotten, so that
  // stops the executor as an unreadable spec directory does.
  for (auto& [id, spec] : jobs_) {
    const std::size_t before = spec.array_started.size();
    for (std::size_t i = 0; i < spec.array.size(); ++i) {
      const std::uint32_t index = spec.array[i];
      if (jobs_.contains(id + 1 + i) &&
          std::count(spec.array_started.begin(), spec.array_started.end(), index) == 0) {
        spec.array_started.push_back(index);
      }
    }
    if (spec.array_started.size() == before) continue;
    if (Result<void> saved = Save(spec); !saved) {
      recovery_error_ = saved.error().WithContext("cannot record array " + std::to_string(id) +
                                                  "'s started elements");
    }
  }
  PruneLeftovers();
}

void ExecutorServer::PruneLeftovers() {
  for (std::uint64_t id : ListIds(config_.state_dir + "/jobs", "")) {
    const std::string name = std::to_string(id);
    if (jobs_.contains(id)) continue;
    // A spec set aside as unreadable keeps its dir: the user's output is there.
    if (::access((specs_dir() + "/" + name + ".json.corrupt").c_str(), F_OK) == 0) continue;
    // Made root's and handed to the job's user: its owner is the job's.
    struct stat dir {};
    if (::lstat(job_dir(id).c_str(), &dir) != 0) continue;
    LogInfo("removing the leftover dir of job " + name + ", which has no launch spec");
    // The spec that named the user's groups is gone: a helper emptying it
    // runs as its owner with the overflow gid, which nothing privileged
    // has. It opens nothing by name, so only the uid decides what it can.
    DropJobDir(
        id, {.uid = dir.st_uid, .gid = kOverflowGid, .user = "uid " + std::to_string(dir.st_uid)});
  }
  if (config_.no_dev_dir) return;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(config_.dev_dir + "/jobs", ec)) {
    const std::string name = entry.path().filename().string();
    std::uint64_t id = 0;
    auto [end, parsed] = std::from_chars(name.data(), name.data() + name.size(), id);
    const bool valid = parsed == std::errc() && end == name.data() + name.size();
    auto it = valid ? jobs_.find(id) : jobs_.end();
    // Entries are kept for registered and running jobs only.
    if (it != jobs_.end() && it->second.state != SpecState::kExited) continue;
    ::unlink(entry.path().c_str());
  }
}

void ExecutorServer::PollForeign() {
  std::vector<std::uint64_t> gone;
  for (std::uint64_t id : foreign_) {
    const LaunchSpec& spec = jobs_[id];
    Result<host::RunRecord> record = host::LoadRunRecord(run_dir(), id);
    if ((record && record->status) ||
        (!Alive(spec.shepherd, spec.shepherd_start) && !Alive(spec.pid, spec.proc_start))) {
      gone.push_back(id);
    }
  }
  for (std::uint64_t id : gone)
    Finish(id);
}

}  // namespace hpcb::executor
