#include "common/host/run_record.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

#include "protocol/framing.h"

namespace hpcb::host {

double EpochNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

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
  // From the end: the newest state is the last line that reads. The writer
  // makes at most three lines (one after a re-make), so a record whose last
  // few do not read is damaged, and is not decoded to its first byte.
  constexpr int kLinesTried = 8;
  std::optional<Error> newest_problem;
  int tried = 0;
  while (!text.empty() && tried < kLinesTried) {
    const std::size_t cut = text.rfind('\n', text.size() - 1);
    std::string_view line = cut == std::string_view::npos ? text : text.substr(cut + 1);
    text.remove_suffix(cut == std::string_view::npos ? text.size() : text.size() - cut);
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    ++tried;
    Result<RunRecord> record = protocol::Decode<RunRecord>(line);
    if (record && record->id == id) return record;
    if (!newest_problem) {
      newest_problem = record ? InvalidArgument("run record " + std::to_string(id) + " names job " +
                                                std::to_string(record->id))
                              : record.error();
    }
  }
  if (newest_problem) return *newest_problem;
  return InvalidArgument("run record " + std::to_string(id) + " is empty");
}

Result<RunRecord> LoadRunRecord(const std::string& run_dir, std::uint64_t id) {
  // Far above any record: its placement is bounded by the machine (a few
  // KiB for thousands of cpus), and one that cannot be read back would
  // hide a started job.
  HPCB_ASSIGN_OR_RETURN(std::string text, ReadSmallFile(RunRecordPath(run_dir, id), 1u << 20));
  return ParseRunRecord(text, id);
}

bool RunRecordWriter::StillNamed(const std::string& path) const {
  struct stat held {};
  struct stat named {};
  return ::fstat(fd_.get(), &held) == 0 && held.st_nlink > 0 &&
         ::lstat(path.c_str(), &named) == 0 && named.st_ino == held.st_ino &&
         named.st_dev == held.st_dev;
}

Result<void> RunRecordWriter::Make(const std::string& path, const std::string& line) {
  // The first line goes in under a temporary name: a shepherd killed while
  // making the file leaves no record, as if the start had never begun, not
  // an empty one that no reader could settle.
  const std::string temp = path + ".tmp";
  // O_APPEND: a record someone truncated under a live shepherd gets its
  // next line at the new end, readable, not after a run of NUL bytes.
  fd_.reset(
      ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd_.valid()) return Error::FromErrno(errno, "cannot make " + temp);
  // Whatever the umask: the record is root's alone.
  if (::fchmod(fd_.get(), 0600) != 0) return Error::FromErrno(errno, "chmod " + temp);
  HPCB_TRY(WriteLine(temp, line));
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    fd_.reset();
    return Error::FromErrno(err, "cannot rename " + temp);
  }
  return Ok();
}

Result<void> RunRecordWriter::WriteLine(const std::string& path, const std::string& line) {
  struct stat before {};
  if (::fstat(fd_.get(), &before) != 0) return Error::FromErrno(errno, "fstat " + path);
  Result<void> written = protocol::WriteAllToFile(fd_.get(), line);
  if (!written) {
    // Best effort: a torn line reads as nothing, and is cut off here.
    (void)!::ftruncate(fd_.get(), before.st_size);
    return written.error().WithContext(path);
  }
  return Ok();
}

Result<void> RunRecordWriter::Append(const RunRecord& record, Sync sync) {
  const std::string path = RunRecordPath(run_dir_, record.id);
  const std::string line = protocol::Encode(record) + "\n";
  // Twice at most: a file removed (by an admin, or a damaged state
  // directory cleaned) or replaced since the last line is made again,
  // holding this line, the newest state; a line written to an unlinked
  // file would be lost. The second look, after the flush, catches a
  // removal that came between the first look and the write.
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (fd_.valid() && StillNamed(path)) {
      HPCB_TRY(WriteLine(path, line));
    } else {
      HPCB_TRY(Make(path, line));
    }
    if (sync == Sync::kNone) return Ok();
    if (::fdatasync(fd_.get()) != 0) return Error::FromErrno(errno, "fdatasync " + path);
    // The file was made without flushing its directory: its name is
    // durable only now.
    HPCB_TRY(protocol::SyncDirectory(run_dir_));
    if (StillNamed(path)) return Ok();
    fd_.reset();
  }
  return Error(ErrorCode::kUnavailable, path + " was removed twice while being written");
}

}  // namespace hpcb::host
