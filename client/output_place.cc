#include "client/output_place.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

namespace hpcb::client {

std::optional<std::string> CurrentDirectory() {
  std::string buffer(PATH_MAX, '\0');
  if (::getcwd(buffer.data(), buffer.size()) == nullptr) return std::nullopt;
  buffer.resize(std::strlen(buffer.c_str()));
  return buffer;
}

Result<bool> CheckOutputPlace(const std::string& path, bool delivered_by_daemon) {
  if (path.empty() || path[0] != '/') return InvalidArgument("output path must be absolute");
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0;
  const bool is_dir = exists && S_ISDIR(st.st_mode);
  std::string parent = is_dir ? path : path.substr(0, path.rfind('/'));
  if (parent.empty()) parent = "/";
  struct stat pst {};
  if (::stat(parent.c_str(), &pst) != 0) {
    return Error::FromErrno(errno, "cannot save output there: " + parent);
  }
  if (!S_ISDIR(pst.st_mode)) {
    return InvalidArgument("cannot save output there: " + parent + " is not a directory");
  }
  // The daemon's delivery opens the folder for reading before it writes
  // into it, so a folder that may be written but not read (0311) is
  // refused here too.
  if (delivered_by_daemon && ::access(parent.c_str(), R_OK) != 0) {
    return Error(ErrorCode::kPermissionDenied, "cannot save output there: cannot read " + parent);
  }
  if (::access(parent.c_str(), W_OK | X_OK) != 0) {
    // `--output /dev/null` meant "discard it": say how.
    const std::string hint =
        exists && !is_dir && !S_ISREG(st.st_mode)
            ? " (" + path + " is not a regular file; --no-output discards the output)"
            : "";
    return Error(ErrorCode::kPermissionDenied,
                 "cannot save output there: cannot write to " + parent + hint);
  }
  return is_dir;
}

}  // namespace hpcb::client
