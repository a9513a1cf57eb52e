#include "executor/spec_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "executor/spec_journal.h"
#include "protocol/base/log.h"
#include "protocol/codec.h"
#include "protocol/framing.h"
#include "protocol/host/host_files.h"

namespace hpcb::executor {
namespace {

// Far above what a journal grows to (4 MiB, plus what the turns add while
// journal.old is retired); a file past it was not written by us.
constexpr std::size_t kMaxJournalBytes = 256u << 20;
// A new journal is this much zeros (or rotate_bytes, if smaller).
constexpr std::uint64_t kMaxPreallocBytes = 4u << 20;

}  // namespace

std::string SpecStore::SpecPath(std::uint64_t id) const {
  return dir_ + "/" + std::to_string(id) + ".json";
}

Result<SpecStore::Opened> SpecStore::Open() {
  Opened opened;
  SpecJournalReplay replay;
  std::vector<std::string> damaged;
  for (const std::string& path : {old_journal_path(), journal_path()}) {
    Result<std::string> text = host::ReadSmallFile(path, kMaxJournalBytes);
    if (!text && text.error().code() == ErrorCode::kNotFound) continue;
    // Unread, it may hold the only durable copy of acknowledged specs.
    if (!text) return text.error().WithContext("read the spec journal");
    ReplaySpecJournal(*text, replay);
    if (replay.tail != SpecJournalTail::kCorrupt) continue;
    opened.problems.push_back(path + ": " + replay.problem + " (" + std::to_string(replay.skipped) +
                              " bad line(s) so far); kept as " + path + ".corrupt");
    damaged.push_back(path);
  }
  for (auto& [id, latest] : replay.latest) {
    opened.highest_id = std::max(opened.highest_id, id);
    if (!latest) {
      ::unlink(SpecPath(id).c_str());
      opened.forgotten.push_back(id);
      continue;
    }
    revision_ = std::max(revision_, latest->revision);
    Result<LaunchSpec> on_disk = LoadSpec(dir_, id);
    if (on_disk && on_disk->revision >= latest->revision) continue;
    // The file is older, empty or missing (not written since, or a power
    // cut before it was flushed): the journal's durable line is the newer
    // truth.
    unwritten_[id] = Unwritten{protocol::Encode(*latest), !latest->env.empty()};
    ++opened.restored;
  }
  // Only once the files and the forgotten ones' removals are on disk may
  // a journal go, even a damaged one, set aside for the admin.
  HPCB_TRY(WriteAllAndStartAfresh([&] {
    for (const std::string& path : damaged)
      (void)::rename(path.c_str(), (path + ".corrupt").c_str());
  }));
  return opened;
}

Result<void> SpecStore::WriteAllAndStartAfresh(const std::function<void()>& before_fresh) {
  // Opened first, so that a writeback error of the files below is this
  // fd's to see (syncfs reports them since Linux 5.8).
  UniqueFd dir(::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir.valid()) return Error::FromErrno(errno, "open " + dir_);
  for (auto it = unwritten_.begin(); it != unwritten_.end();) {
    HPCB_TRY(WriteSpecFile(it->first, it->second, host::Sync::kNone));
    it = unwritten_.erase(it);
  }
  // Every file and rename above, and any a killed predecessor left
  // unflushed, in one call rather than one fsync per spec.
  if (::syncfs(dir.get()) != 0) return Error::FromErrno(errno, "syncfs " + dir_);
  if (before_fresh) before_fresh();
  return StartFreshJournal();
}

Result<void> SpecStore::StartFreshJournal() {
  journal_.reset();
  old_journal_.reset();
  for (const std::string& path : {old_journal_path(), journal_path()}) {
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      return Error::FromErrno(errno, "remove " + path);
    }
  }
  retiring_.clear();
  dirty_.clear();
  secret_lines_.clear();
  to_blank_.clear();
  uncommitted_ = false;  // the syncfs before this covered every line
  needed_before_answers_ = false;
  return EnsureJournal();
}

Result<void> SpecStore::EnsureJournal() {
  if (journal_.valid()) return Ok();
  const std::string path = journal_path();
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd.valid()) return Error::FromErrno(errno, "open " + path);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return Error::FromErrno(errno, "stat " + path);
  bool ends_mid_line = false;
  if (st.st_size == 0) {
    // Best effort: short of room, the journal grows as it is written.
    if (Result<void> zeroed = preallocate_ ? Preallocate(fd.get()) : Ok(); !zeroed) {
      LogWarning("the spec journal is not preallocated: " + zeroed.error().message());
    }
    journal_bytes_ = 0;
  } else {
    // Left by a crash (tests build servers without Open): its lines end at
    // its last byte that is not zero padding.
    HPCB_ASSIGN_OR_RETURN(std::string text, host::ReadSmallFile(path, kMaxJournalBytes));
    journal_bytes_ = text.find_last_not_of(std::string_view("\0", 1)) + 1;
    ends_mid_line = journal_bytes_ > 0 && text[journal_bytes_ - 1] != '\n';
  }
  // Its name must be durable before a line in it acknowledges anything.
  HPCB_TRY(protocol::SyncDirectory(dir_));
  journal_ = std::move(fd);
  if (ends_mid_line) HPCB_TRY(Append(""));  // our first line on a line of its own
  return Ok();
}

Result<void> SpecStore::Preallocate(int fd) const {
  // Zeros written and flushed now, so that each turn's fdatasync later
  // overwrites blocks the file already has: the data alone goes to disk,
  // not the file's size and block map too (here that halved a sync write:
  // 110 against 217 us). Replay takes trailing zeros as nothing.
  constexpr std::uint64_t kPage = 4096;
  const std::uint64_t bytes =
      std::min<std::uint64_t>((rotate_bytes_ + kPage - 1) / kPage * kPage, kMaxPreallocBytes);
  const std::string zeros(64u << 10, '\0');
  for (std::uint64_t at = 0; at < bytes; at += zeros.size()) {
    HPCB_TRY(protocol::WriteAllAt(
        fd, std::string_view(zeros).substr(0, std::min<std::uint64_t>(zeros.size(), bytes - at)),
        at, journal_path()));
  }
  if (::fdatasync(fd) != 0) return Error::FromErrno(errno, "fdatasync " + journal_path());
  return Ok();
}

Result<std::uint64_t> SpecStore::Append(const std::string& line, Flush flush) {
  HPCB_TRY(EnsureJournal());
  if (journal_bytes_ + line.size() > max_bytes_) {
    // Only while a cut waits on spec files that cannot be written (no
    // inode left, say): refused, as a full state directory is, rather than
    // grow past what a start can read back.
    return Error(ErrorCode::kResourceExhausted,
                 "the spec journal is full: its spec files cannot be written (see the log)");
  }
  const std::uint64_t at = journal_bytes_;
  if (!uncommitted_) pending_since_ = Clock::now();
  uncommitted_ = true;
  if (flush == Flush::kBeforeAnswers) needed_before_answers_ = true;
  if (Result<void> written =
          protocol::WriteAllAt(journal_.get(), line.empty() ? "\n" : line, at, journal_path());
      !written) {
    return written.error();
  }
  journal_bytes_ += line.empty() ? 1 : line.size();
  if (flush == Flush::kSoon) {
    // Its write-back started now (asynchronous), so that the flush it
    // rides on, an acknowledgment's, finds it written instead of writing
    // it on a submitter's time. Best effort: the flush covers it anyway.
    (void)::sync_file_range(journal_.get(), static_cast<off_t>(at), static_cast<off_t>(line.size()),
                            SYNC_FILE_RANGE_WRITE);
  }
  return at;
}

void SpecStore::NoteSecret(std::uint64_t id, bool has_env, std::uint64_t offset,
                           std::size_t line_size) {
  if (has_env) {
    secret_lines_[id].push_back(SecretLine{false, offset, line_size - 1});
    to_unlink_.erase(id);
    return;
  }
  if (secret_lines_.contains(id)) to_blank_.insert(id);
  if (env_in_file_.contains(id)) to_unlink_.insert(id);
}

Result<std::uint64_t> SpecStore::Save(LaunchSpec& spec, Flush flush) {
  const std::uint64_t previous = spec.revision;
  spec.revision = std::max(spec.revision, revision_) + 1;
  std::string text = protocol::Encode(spec);
  const std::string line = SpecSavedLine(spec.id, text);
  // A forwarded environment leaves the disk once its job has started, not
  // up to kSoonBound after: the line that drops it does not lag.
  const bool drops_secret =
      spec.env.empty() && (secret_lines_.contains(spec.id) || env_in_file_.contains(spec.id));
  Result<std::uint64_t> at = Append(line, drops_secret ? Flush::kBeforeAnswers : flush);
  if (!at) {
    spec.revision = previous;
    return at.error().WithContext("append to the spec journal");
  }
  revision_ = spec.revision;
  NoteSecret(spec.id, !spec.env.empty(), *at, line.size());
  const std::uint64_t bytes = text.size();
  unwritten_[spec.id] = Unwritten{std::move(text), !spec.env.empty()};
  dirty_.insert(spec.id);
  return bytes;
}

Result<void> SpecStore::Forget(std::uint64_t id) {
  const std::string line = SpecForgottenLine(id);
  Result<std::uint64_t> at = Append(line);
  if (!at) return at.error().WithContext("append to the spec journal");
  NoteSecret(id, false, *at, line.size());
  unwritten_.erase(id);
  dirty_.insert(id);  // the unlink becomes durable with the directory, when this journal is cut
  RemoveSpec(dir_, id);
  env_in_file_.erase(id);
  to_unlink_.erase(id);
  return Ok();
}

Result<void> SpecStore::Commit(Clock::time_point now) {
  if (!needed_before_answers_ && now - pending_since_ < kSoonBound) return Ok();
  return FlushJournal();
}

Result<void> SpecStore::FlushJournal() {
  if (!uncommitted_) return Ok();
  if (::fdatasync(journal_.get()) != 0)
    return Error::FromErrno(errno, "fdatasync " + journal_path());
  uncommitted_ = false;
  needed_before_answers_ = false;
  BlankSecrets();
  return Ok();
}

void SpecStore::BlankSecrets() {
  // Each id here has a durable line, newer than these, without the
  // environment: they are needless, and only their secret is left.
  for (std::uint64_t id : to_blank_) {
    auto it = secret_lines_.find(id);
    if (it == secret_lines_.end()) continue;
    for (const SecretLine& line : it->second) {
      const int fd = line.in_old ? old_journal_.get() : journal_.get();
      if (fd < 0) continue;  // its journal is gone already
      Result<void> blanked =
          protocol::WriteAllAt(fd, std::string(line.length, '\n'), line.offset,
                               line.in_old ? old_journal_path() : journal_path());
      if (!blanked) {
        LogWarning("cannot blank a forwarded environment in the spec journal (job " +
                   std::to_string(id) + "): " + blanked.error().message() +
                   "; it goes when the journal is cut");
      }
    }
    secret_lines_.erase(it);
  }
  to_blank_.clear();
  // A queued job's file (written at a cut or a start) still holds what it
  // was forwarded; its newer line covers it until the next cut writes it.
  for (std::uint64_t id : to_unlink_) {
    RemoveSpec(dir_, id);
    env_in_file_.erase(id);
  }
  to_unlink_.clear();
}

Result<void> SpecStore::Settle() {
  if (old_journal_.valid()) {
    std::size_t written = 0;
    while (!retiring_.empty() && written < files_per_turn_) {
      const std::uint64_t id = *retiring_.begin();
      // A newer line, in the current journal, covers it until that one is
      // cut; a forgotten one has no file to write.
      auto it = unwritten_.find(id);
      if (!dirty_.contains(id) && it != unwritten_.end()) {
        Result<void> saved = WriteSpecFile(id, it->second, host::Sync::kDeferred);
        if (!saved) {
          // Tried again after the next turn; journal.old stays till then.
          if (!stall_logged_) {
            LogWarning("cannot write the spec of job " + std::to_string(id) + ": " +
                       saved.error().message() +
                       "; the journal keeps it, and is cut once it can be written");
          }
          stall_logged_ = true;
          return Ok();
        }
        stall_logged_ = false;
        unwritten_.erase(it);
        ++written;
      }
      retiring_.erase(retiring_.begin());
    }
    if (!retiring_.empty()) return Ok();
    // A job skipped above for a newer line in the current journal relies on
    // that line from here on: it must be durable before journal.old goes.
    HPCB_TRY(FlushJournal());
    // The renames and removals the old journal covered, then the journal.
    HPCB_TRY(protocol::SyncDirectory(dir_));
    if (::unlink(old_journal_path().c_str()) != 0 && errno != ENOENT) {
      return Error::FromErrno(errno, "remove " + old_journal_path());
    }
    old_journal_.reset();
    for (auto it = secret_lines_.begin(); it != secret_lines_.end();) {
      std::erase_if(it->second, [](const SecretLine& line) { return line.in_old; });
      it = it->second.empty() ? secret_lines_.erase(it) : std::next(it);
    }
    return Ok();
  }
  if (journal_bytes_ < rotate_bytes_) return Ok();
  // Files are written only from durable lines, and journal.old is taken as
  // durable from here on: a line still lagging is flushed first.
  HPCB_TRY(FlushJournal());
  if (::rename(journal_path().c_str(), old_journal_path().c_str()) != 0) {
    return Error::FromErrno(errno, "rename " + journal_path());
  }
  old_journal_ = std::move(journal_);
  for (auto& [id, lines] : secret_lines_) {
    for (SecretLine& line : lines)
      line.in_old = true;
  }
  retiring_.swap(dirty_);
  dirty_.clear();
  return EnsureJournal();  // and the directory, so both names are durable
}

Result<void> SpecStore::Checkpoint() {
  // Files go over durable ones before the syncfs: only from durable lines.
  HPCB_TRY(FlushJournal());
  // The next start begins its own journal: this one need not be zeroed.
  preallocate_ = false;
  Result<void> done = WriteAllAndStartAfresh(nullptr);
  preallocate_ = true;
  return done;
}

Result<void> SpecStore::WriteSpecFile(std::uint64_t id, const Unwritten& spec, host::Sync sync) {
  HPCB_TRY(host::WriteFileAtomic(SpecPath(id), spec.text, 0600, sync));
  if (spec.has_env) {
    env_in_file_.insert(id);
  } else {
    env_in_file_.erase(id);
  }
  return Ok();
}

}  // namespace hpcb::executor
