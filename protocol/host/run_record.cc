#include "protocol/host/run_record.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "protocol/framing.h"
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

Result<RunRecord> ParseRunRecord(std::string_view text, std::uint64_t id) {
  std::optional<RunRecord> newest;
  std::optional<Error> last_problem;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    Result<RunRecord> record = protocol::Decode<RunRecord>(line);
    if (record && record->id != id) {
      record = InvalidArgument("run record " + std::to_string(id) + " names job " +
                               std::to_string(record->id));
    }
    if (record) {
      newest = std::move(*record);
    } else {
      last_problem = record.error();
    }
  }
  if (newest) return std::move(*newest);
  if (last_problem) return *last_problem;
  return InvalidArgument("run record " + std::to_string(id) + " is empty");
}

Result<RunRecord> LoadRunRecord(const std::string& run_dir, std::uint64_t id) {
  // Far above any record: its placement is bounded by the machine (a few
  // KiB for thousands of cpus), and one that cannot be read back would
  // hide a started job.
  HPCB_ASSIGN_OR_RETURN(std::string text, ReadSmallFile(RunRecordPath(run_dir, id), 1u << 20));
  return ParseRunRecord(text, id);
}

Result<void> RunRecordWriter::Append(const RunRecord& record, Sync sync) {
  const std::string path = RunRecordPath(run_dir_, record.id);
  // The file may have been removed (by an admin, or a damaged state
  // directory cleaned) or replaced since the last line: a line written to
  // an unlinked file would be lost, so the file is made again and this
  // line, the newest state, is all it holds.
  struct stat held {};
  struct stat named {};
  if (fd_.valid() &&
      (::fstat(fd_.get(), &held) != 0 || held.st_nlink == 0 || ::lstat(path.c_str(), &named) != 0 ||
       named.st_ino != held.st_ino || named.st_dev != held.st_dev)) {
    fd_.reset();
  }
  if (!fd_.valid()) {
    fd_.reset(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd_.valid()) return Error::FromErrno(errno, "cannot make " + path);
    // Whatever the umask: the record is root's alone.
    if (::fchmod(fd_.get(), 0600) != 0) return Error::FromErrno(errno, "chmod " + path);
    size_ = 0;
  }
  const std::string line = protocol::Encode(record) + "\n";
  std::size_t done = 0;
  while (done < line.size()) {
    const ssize_t put = ::pwrite(fd_.get(), line.data() + done, line.size() - done,
                                 size_ + static_cast<off_t>(done));
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) {
      const int err = put < 0 ? errno : EIO;
      // Best effort: the next line is written over it anyway.
      (void)!::ftruncate(fd_.get(), size_);
      return Error::FromErrno(err, "cannot write " + path);
    }
    done += static_cast<std::size_t>(put);
  }
  size_ += static_cast<off_t>(line.size());
  if (sync == Sync::kNone) return Ok();
  if (::fdatasync(fd_.get()) != 0) return Error::FromErrno(errno, "fdatasync " + path);
  // The file was made without flushing its directory: its name is durable
  // only now.
  return protocol::SyncDirectory(run_dir_);
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
