#include "protocol/host/run_record.h"

#include "protocol/host/host_files.h"

namespace hpcb::host {

Result<void> RunRecord::Validate() const {
  if (id == 0) return InvalidArgument("run record id must be positive");
  if (pid < 0 || shepherd <= 0) return InvalidArgument("run record pids must be positive");
  return Ok();
}

std::string RunRecordPath(const std::string& run_dir, std::uint64_t id) {
  return run_dir + "/" + std::to_string(id) + ".json";
}

Result<RunRecord> LoadRunRecord(const std::string& run_dir, std::uint64_t id) {
  HPCB_ASSIGN_OR_RETURN(std::string text, ReadSmallFile(RunRecordPath(run_dir, id)));
  HPCB_ASSIGN_OR_RETURN(RunRecord record, protocol::Decode<RunRecord>(text));
  if (record.id != id) return InvalidArgument("run record " + std::to_string(id) + " names job " +
                                              std::to_string(record.id));
  return record;
}

}  // namespace hpcb::host
