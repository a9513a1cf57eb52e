#include "common/host/host_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <limits>
#include <sstream>

#include "common/base/cpu_list.h"
#include "common/base/unique_fd.h"
#include "protocol/framing.h"

namespace hpcb::host {

Result<std::string> ReadSmallFile(const std::string& path, std::size_t cap) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return Error::FromErrno(errno, "open " + path);
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error::FromErrno(errno, "read " + path);
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
    if (out.size() > cap) return Error(ErrorCode::kResourceExhausted, path + " is too large");
  }
  return out;
}

Result<bool> HostHasSwap(const std::string& proc_root) {
  const std::string path = proc_root + "/meminfo";
  HPCB_ASSIGN_OR_RETURN(std::string text, ReadSmallFile(path));
  std::istringstream lines(text);
  std::string key;
  std::uint64_t kb = 0;
  while (lines >> key >> kb) {
    if (key == "SwapTotal:") return kb > 0;
    lines.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return InvalidArgument(path + " has no SwapTotal line");
}

std::string FormatIdList(const std::vector<int>& ids) {
  std::string out;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(ids[i]);
  }
  return out;
}

Result<std::set<int>> ReadOnlineCpus(const std::string& sys_root) {
  HPCB_ASSIGN_OR_RETURN(std::string text, ReadSmallFile(sys_root + "/devices/system/cpu/online"));
  HPCB_ASSIGN_OR_RETURN(std::vector<int> ids, hpcb::ParseCpuList(text));
  std::set<int> cpus(ids.begin(), ids.end());
  if (cpus.empty()) return Error(ErrorCode::kInternal, "no online cpus under " + sys_root);
  return cpus;
}

Result<std::set<int>> ReadNumaNodes(const std::string& sys_root) {
  std::string path = sys_root + "/devices/system/node/online";
  if (::access(path.c_str(), F_OK) != 0) return std::set<int>{0};
  HPCB_ASSIGN_OR_RETURN(std::string text, ReadSmallFile(path));
  HPCB_ASSIGN_OR_RETURN(std::vector<int> ids, hpcb::ParseCpuList(text));
  std::set<int> nodes(ids.begin(), ids.end());
  if (nodes.empty()) nodes.insert(0);
  return nodes;
}

Result<std::uint64_t> ProcStatField(int pid, int field, const std::string& proc_root) {
  if (pid <= 0) return InvalidArgument("pid must be positive");
  auto text = ReadSmallFile(proc_root + "/" + std::to_string(pid) + "/stat");
  if (!text) return Error(ErrorCode::kNotFound, "process " + std::to_string(pid) + " is gone");
  // comm may hold spaces and parens: fields start after the last ')'.
  std::size_t close = text->rfind(')');
  if (close == std::string::npos) return Error(ErrorCode::kInternal, "garbled stat");
  std::string_view rest(*text);
  rest.remove_prefix(close + 1);
  // rest: " S ppid ...": field 3 is the first token.
  int at = 2;
  std::size_t pos = 0;
  while (pos < rest.size()) {
    while (pos < rest.size() && rest[pos] == ' ')
      ++pos;
    std::size_t end = rest.find(' ', pos);
    if (end == std::string_view::npos) end = rest.size();
    ++at;
    if (at == field) {
      std::uint64_t value = 0;
      auto [p, ec] = std::from_chars(rest.data() + pos, rest.data() + end, value);
      if (ec != std::errc() || p != rest.data() + end) break;
      return value;
    }
    pos = end;
  }
  return Error(ErrorCode::kInternal, "garbled /proc stat for pid " + std::to_string(pid));
}

namespace {

// Creates `tmp` afresh. A leftover (a crash between create and rename) is
// removed only when found, so the usual case costs no failing unlink.
Result<UniqueFd> CreateTemp(const std::string& tmp, unsigned mode) {
  constexpr int kFlags = O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW;
  UniqueFd fd(::open(tmp.c_str(), kFlags, mode));
  if (!fd.valid() && errno == EEXIST) {
    ::unlink(tmp.c_str());
    fd = UniqueFd(::open(tmp.c_str(), kFlags, mode));
  }
  if (!fd.valid()) return Error::FromErrno(errno, "create " + tmp);
  return fd;
}

// `path`.tmp written with `text`, fsynced unless `sync_file` is false, and
// renamed over `path`; the file stays open for the caller. Where `path` may
// hold a durable record (a queued job's spec), the fsync before the rename
// is what keeps a power cut right after it from leaving the file empty on
// some filesystems (XFS, ext4 with noauto_da_alloc).
Result<UniqueFd> WriteAndRename(const std::string& path, const std::string& text, unsigned mode,
                                bool sync_file) {
  const std::string tmp = path + ".tmp";
  HPCB_ASSIGN_OR_RETURN(UniqueFd fd, CreateTemp(tmp, mode));
  Result<void> written = [&]() -> Result<void> {
    if (::fchmod(fd.get(), mode) != 0) return Error::FromErrno(errno, "chmod " + tmp);
    HPCB_TRY(protocol::WriteAllToFile(fd.get(), text));
    if (sync_file && ::fsync(fd.get()) != 0) return Error::FromErrno(errno, "fsync " + tmp);
    if (::rename(tmp.c_str(), path.c_str()) != 0) return Error::FromErrno(errno, "rename " + tmp);
    return Ok();
  }();
  if (!written) {
    // A full disk must not leave half-written temp files behind.
    ::unlink(tmp.c_str());
    return written.error();
  }
  return fd;
}

}  // namespace

Result<void> WriteFileAtomic(const std::string& path, const std::string& text, unsigned mode,
                             Sync sync) {
  HPCB_TRY(WriteAndRename(path, text, mode, sync != Sync::kNone));
  if (sync == Sync::kNow) {
    // The rename is only durable once the directory is: without this a
    // crash can leave just the temp file, and a fresh spec (a queued job
    // the user was told about) would be gone.
    const std::size_t slash = path.rfind('/');
    HPCB_TRY(protocol::SyncDirectory(slash == std::string::npos ? "." : path.substr(0, slash + 1)));
  }
  return Ok();
}

}  // namespace hpcb::host
