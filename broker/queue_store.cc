#include "broker/queue_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <string>

#include "protocol/base/log.h"
#include "protocol/base/unique_fd.h"
#include "protocol/framing.h"

namespace hpcb::broker {
namespace {

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

}  // namespace

std::uint64_t HighestIdMentioned(std::string_view text) {
  std::uint64_t best = 0;
  for (std::string_view key : {std::string_view("\"id\""), std::string_view("\"next_id\"")}) {
    std::size_t at = 0;
    while ((at = text.find(key, at)) != std::string_view::npos) {
      at += key.size();
      std::size_t p = at;
      while (p < text.size() && (text[p] == ' ' || text[p] == ':' || text[p] == '\n')) ++p;
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

Result<QueueFile> QueueStore::Load() const {
  const std::string file = path();
  Result<std::string> text = ReadWhole(file);
  if (!text) {
    if (text.error().sys_errno() == ENOENT) return QueueFile{};
    return text.error();
  }
  Result<QueueFile> parsed = protocol::Decode<QueueFile>(*text);
  if (!parsed) {
    LogError("corrupt state file " + file + " (" + parsed.error().message() + "); starting fresh");
    const std::string corrupt = file + ".corrupt";
    if (::rename(file.c_str(), corrupt.c_str()) != 0) {
      return Error::FromErrno(errno, "cannot rename " + file + " to " + corrupt);
    }
    QueueFile fresh;
    fresh.next_id = std::max<std::uint64_t>(1, HighestIdMentioned(*text));
    return fresh;
  }
  QueueFile loaded = std::move(parsed).value();
  for (const JobRecord& job : loaded.jobs) {
    loaded.next_id = std::max(loaded.next_id, job.id + 1);
  }
  std::sort(loaded.jobs.begin(), loaded.jobs.end(),
            [](const JobRecord& a, const JobRecord& b) { return a.id < b.id; });
  return loaded;
}

Result<void> QueueStore::Save(const QueueFile& file) const {
  const std::string final_path = path();
  const std::string tmp = final_path + ".tmp";
  const std::string text = protocol::Encode(file) + "\n";
  (void)::unlink(tmp.c_str());
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd.valid()) return Error::FromErrno(errno, "cannot create " + tmp);
  HPCB_TRY(protocol::WriteAll(fd.get(), text));
  if (::fsync(fd.get()) != 0) return Error::FromErrno(errno, "cannot fsync " + tmp);
  fd.reset();
  if (::rename(tmp.c_str(), final_path.c_str()) != 0) {
    return Error::FromErrno(errno, "cannot rename " + tmp + " to " + final_path);
  }
  UniqueFd dir(::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.valid()) (void)::fsync(dir.get());
  return Ok();
}

}  // namespace hpcb::broker
