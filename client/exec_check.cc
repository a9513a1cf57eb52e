#include "client/exec_check.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/base/exec_path.h"

namespace hpcb::client {

std::optional<std::string> WhyNotExecutable(const std::string& argv0,
                                            const std::string& path_value) {
  int why = ENOENT;
  for (const std::string& candidate : ExecCandidates(argv0, path_value)) {
    struct stat st {};
    if (::stat(candidate.c_str(), &st) != 0) {
      if (errno != ENOENT && errno != ENOTDIR) why = errno;
      continue;
    }
    if (S_ISREG(st.st_mode) && ::access(candidate.c_str(), X_OK) == 0) return std::nullopt;
    why = EACCES;
  }
  return "cannot execute " + argv0 + ": " + std::strerror(why);
}

}  // namespace hpcb::client
