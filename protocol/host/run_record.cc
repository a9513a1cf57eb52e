#include "protocol/host/run_record.h"

#include <dirent.h>

#include <cstdlib>
#include <cstring>

#include "protocol/host/host_files.h"

namespace hpcb::host {

Result<void> RunRecord::Validate() const {
  if (id == 0) return InvalidArgument("run record id must be positive");
  if (pid < 0 || shepherd <= 0) return InvalidArgument("run record pids must be positive");
  if (placement) HPCB_TRY(placement->Validate());
  return Ok();
}

std::string RunRecordPath(const std::string& run_dir, std::uint64_t id) {
  return run_dir + "/" + std::to_string(id) + ".json";
}

Result<RunRecord> LoadRunRecord(const std::string& run_dir, std::uint64_t id) {
  // Far above any record: its placement is bounded by the machine (a few
  // KiB for thousands of cpus), and one that cannot be read back would
  // hide a started job.
  HPCB_ASSIGN_OR_RETURN(std::string text, ReadSmallFile(RunRecordPath(run_dir, id), 1u << 20));
  HPCB_ASSIGN_OR_RETURN(RunRecord record, protocol::Decode<RunRecord>(text));
  if (record.id != id) {
    return InvalidArgument("run record " + std::to_string(id) + " names job " +
                           std::to_string(record.id));
  }
  return record;
}

std::size_t CountRunningJobs(const std::string& run_dir) {
  std::size_t running = 0;
  DIR* dir = ::opendir(run_dir.c_str());
  if (dir == nullptr) return 0;
  while (const struct dirent* entry = ::readdir(dir)) {
    char* end = nullptr;
    const unsigned long long id = std::strtoull(entry->d_name, &end, 10);
    if (id == 0 || end == entry->d_name || std::strcmp(end, ".json") != 0) continue;
    Result<RunRecord> record = LoadRunRecord(run_dir, id);
    if (record && record->pid > 0 && !record->status) ++running;
  }
  ::closedir(dir);
  return running;
}

}  // namespace hpcb::host
