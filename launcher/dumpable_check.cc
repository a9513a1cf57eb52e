#include "launcher/dumpable_check.h"

#include "common/host/host_files.h"

namespace hpcb::launcher {

Result<void> CheckSuidDumpable(const std::string& proc_root) {
  const std::string path = proc_root + "/sys/fs/suid_dumpable";
  Result<std::string> text = host::ReadSmallFile(path, 64);
  if (!text) return text.error().WithContext("cannot read fs.suid_dumpable");
  std::string value = *text;
  while (!value.empty() && (value.back() == '\n' || value.back() == ' '))
    value.pop_back();
  if (value == "0" || value == "2") return Ok();
  if (value == "1") {
    return Error(ErrorCode::kFailedPrecondition,
                 "fs.suid_dumpable is 1 (" + path +
                     "): a user could read the launcher's memory in a process of theirs that "
                     "the launcher forked; set it to 0 or 2 (sysctl fs.suid_dumpable=0)");
  }
  return Error(ErrorCode::kFailedPrecondition,
               "fs.suid_dumpable in " + path + " is \"" + value + "\", not 0, 1 or 2");
}

}  // namespace hpcb::launcher
