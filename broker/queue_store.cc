#include "broker/queue_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <map>
#include <string>

#include "common/base/log.h"
#include "protocol/framing.h"

namespace hpcb::broker {
namespace {

// The snapshot on disk: a QueueFile plus the journal seq it contains.
// journal_seq is read last and may be absent (a queue.json written before
// the journal existed), which reads as 0: replay every journal line.
struct SnapshotIn {
  QueueFile file;
  std::uint64_t journal_seq = 0;
  template <class A>
  void load(A& ar) {
    file.load(ar);
    try {
      protocol::Get(ar, "journal_seq", journal_seq);
    } catch (const protocol::FieldError& failure) {
      if (std::string_view(failure.what()).find("is missing") == std::string_view::npos) throw;
      journal_seq = 0;
    }
  }
  Result<void> Validate() const { return file.Validate(); }
};

struct SnapshotOut {
  const QueueFile& file;
  std::uint64_t journal_seq;
  template <class A>
  void save(A& ar) const {
    file.save(ar);
    protocol::Put(ar, "journal_seq", journal_seq);
  }
};

Result<std::string> ReadWhole(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) return Error::FromErrno(errno, "cannot open " + path);
  std::string text;
  char buffer[65536];
  for (;;) {
    ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::FromErrno(errno, "cannot read " + path);
    if (n == 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
    if (text.size() > (std::size_t{1} << 30)) {
      return Error(ErrorCode::kResourceExhausted, path + " is larger than 1 GiB");
    }
  }
  return text;
}

// Missing file: empty text (and *exists false).
Result<std::string> ReadIfPresent(const std::string& path, bool* exists) {
  Result<std::string> text = ReadWhole(path);
  *exists = text.has_value();
  if (!text && text.error().sys_errno() == ENOENT) return std::string();
  return text;
}

Result<void> MoveAside(const std::string& path) {
  const std::string corrupt = path + ".corrupt";
  if (::rename(path.c_str(), corrupt.c_str()) != 0 && errno != ENOENT) {
    return Error::FromErrno(errno, "cannot rename " + path + " to " + corrupt);
  }
  return Ok();
}

// Writes `text` to `path`.tmp (mode 0600), fsyncs it and renames it over
// `path`, then fsyncs `dir`. Returns the new file, still open, when
// `keep_open` (for appending).
Result<UniqueFd> ReplaceFile(const std::string& dir, const std::string& path, std::string_view text,
                             bool keep_open) {
  const std::string tmp = path + ".tmp";
  (void)::unlink(tmp.c_str());
  UniqueFd fd(
      ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW | O_APPEND, 0600));
  if (!fd.valid()) return Error::FromErrno(errno, "cannot create " + tmp);
  if (!text.empty()) HPCB_TRY(protocol::WriteAllToFile(fd.get(), text));
  if (::fsync(fd.get()) != 0) return Error::FromErrno(errno, "cannot fsync " + tmp);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    return Error::FromErrno(errno, "cannot rename " + tmp + " to " + path);
  }
  (void)protocol::SyncDirectory(dir);
  if (!keep_open) fd.reset();
  return fd;
}

}  // namespace

std::uint64_t HighestIdMentioned(std::string_view text) {
  std::uint64_t best = 0;
  for (std::string_view key : {std::string_view("\"id\""), std::string_view("\"next_id\"")}) {
    std::size_t at = 0;
    while ((at = text.find(key, at)) != std::string_view::npos) {
      at += key.size();
      std::size_t p = at;
      while (p < text.size() && (text[p] == ' ' || text[p] == ':' || text[p] == '\n'))
        ++p;
      std::uint64_t value = 0;
      bool any = false;
      while (p < text.size() && text[p] >= '0' && text[p] <= '9' && value < (1ULL << 60)) {
        value = value * 10 + static_cast<std::uint64_t>(text[p] - '0');
        any = true;
        ++p;
      }
      if (any) best = std::max(best, key == "\"id\"" ? value + 1 : value);
    }
  }
  return best;
}

Result<QueueFile> QueueStore::Load() {
  journal_.reset();
  seq_ = 0;
  snapshot_bytes_ = 0;
  journal_bytes_ = 0;
  const std::string snapshot_path = path();
  const std::string log_path = journal_path();
  bool have_snapshot = false;
  bool have_journal = false;
  HPCB_ASSIGN_OR_RETURN(std::string snapshot, ReadIfPresent(snapshot_path, &have_snapshot));
  HPCB_ASSIGN_OR_RETURN(std::string journal, ReadIfPresent(log_path, &have_journal));
  // Even a journal line that is cut short or corrupt may name an id that
  // was handed out; next_id never goes back past it.
  const std::uint64_t journal_ids = HighestIdMentioned(journal);

  SnapshotIn base;
  if (have_snapshot) {
    Result<SnapshotIn> parsed = protocol::Decode<SnapshotIn>(snapshot);
    if (!parsed) {
      LogError("corrupt state file " + snapshot_path + " (" + parsed.error().message() +
               "); starting fresh");
      // The journal only makes sense on top of its snapshot; keep both
      // for inspection.
      HPCB_TRY(MoveAside(snapshot_path));
      HPCB_TRY(MoveAside(log_path));
      QueueFile fresh;
      fresh.next_id = std::max<std::uint64_t>({1, HighestIdMentioned(snapshot), journal_ids});
      return fresh;
    }
    base = std::move(parsed).value();
  }
  snapshot_bytes_ = snapshot.size();
  seq_ = base.journal_seq;

  std::map<std::uint64_t, JobRecord> jobs;
  for (JobRecord& job : base.file.jobs) {
    const std::uint64_t id = job.id;
    jobs.insert_or_assign(id, std::move(job));
  }
  const JournalReplay replay = ReplayJournal(journal, base.journal_seq, jobs);
  seq_ = std::max(seq_, replay.last_seq);
  if (replay.tail == JournalTail::kTorn) {
    LogError("ignoring the torn last line of " + log_path + " (" + replay.problem +
             "): a write the broker never acknowledged");
  } else if (replay.tail == JournalTail::kCorrupt) {
    LogError("corrupt line in " + log_path + " (" + replay.problem + "); keeping the " +
             std::to_string(replay.applied) + " change(s) before it and moving the file to " +
             log_path + ".corrupt");
    HPCB_TRY(MoveAside(log_path));
  }
  if (replay.applied > 0) {
    LogInfo("replayed " + std::to_string(replay.applied) + " change(s) from " + log_path);
  }

  QueueFile loaded;
  loaded.draining = base.file.draining;
  loaded.next_id = std::max<std::uint64_t>({1, base.file.next_id, replay.next_id, journal_ids});
  loaded.jobs.reserve(jobs.size());
  for (auto& [id, job] : jobs) {
    loaded.next_id = std::max(loaded.next_id, id + 1);
    loaded.jobs.push_back(std::move(job));
  }
  return loaded;
}

Result<void> QueueStore::Save(const QueueFile& file) {
  journal_.reset();
  const std::string text = protocol::Encode(SnapshotOut{file, seq_}) + "\n";
  HPCB_TRY(ReplaceFile(dir_, path(), text, /*keep_open=*/false));
  snapshot_bytes_ = text.size();
  return ResetJournal();
}

Result<void> QueueStore::ResetJournal() {
  // Until this rename lands, Load skips the old journal's lines: each has
  // a seq at or below the snapshot's journal_seq.
  HPCB_ASSIGN_OR_RETURN(UniqueFd fd, ReplaceFile(dir_, journal_path(), "", /*keep_open=*/true));
  journal_ = std::move(fd);
  journal_bytes_ = 0;
  return Ok();
}

Result<void> QueueStore::Append(std::uint64_t next_id, const std::vector<QueueChange>& changes,
                                bool sync) {
  if (!journal_.valid()) {
    return Error(ErrorCode::kFailedPrecondition, "no journal open; the queue needs a compaction");
  }
  if (changes.empty()) return Ok();
  std::string batch;
  for (const QueueChange& change : changes)
    batch += JournalLine(++seq_, next_id, change);
  // seq_ has moved past these lines even if they do not all land: the
  // next snapshot's journal_seq then covers any part that did, and Load
  // never lays that stale part over the newer snapshot.
  Result<void> written = protocol::WriteAllToFile(journal_.get(), batch);
  if (written && sync && ::fdatasync(journal_.get()) != 0) {
    written = Error::FromErrno(errno, "cannot fdatasync " + journal_path());
  }
  if (!written) {
    // The file may now end in part of a line, and after a failed
    // fdatasync the kernel may have dropped the dirty pages: never
    // append to it again; the next write is a compaction.
    journal_.reset();
    return written.error().WithContext("cannot append to " + journal_path());
  }
  journal_bytes_ += batch.size();
  return Ok();
}

bool QueueStore::WantsCompaction() const {
  return !journal_.valid() ||
         journal_bytes_ > std::max(kMinJournalBytes, kJournalFactor * snapshot_bytes_);
}

}  // namespace hpcb::broker
