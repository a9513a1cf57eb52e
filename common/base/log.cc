#include "common/base/log.h"

#include <unistd.h>

#include <ctime>

namespace hpcb {
namespace {
std::string g_role = "hpc-batchd";
LogLevel g_level = LogLevel::kInfo;
}  // namespace

void SetLogRole(std::string_view role) {
  g_role = role;
}
void SetLogLevel(std::string_view name) {
  if (name == "debug") g_level = LogLevel::kDebug;
  if (name == "info") g_level = LogLevel::kInfo;
  if (name == "warning") g_level = LogLevel::kWarning;
  if (name == "error") g_level = LogLevel::kError;
}

void Log(LogLevel level, std::string_view message) {
  if (level < g_level) return;
  static const char* const kNames[] = {"DEBUG", "INFO", "WARNING", "ERROR"};
  std::time_t now = std::time(nullptr);
  struct tm local {};
  localtime_r(&now, &local);
  char stamp[32];
  if (std::strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", &local) == 0) stamp[0] = '\0';
  std::string line = stamp;
  line += ' ';
  line += kNames[static_cast<int>(level)];
  line += ' ';
  line += g_role;
  line += ": ";
  line += message;
  line += '\n';
  // One write per line so the roles' lines do not interleave mid-line.
  (void)!::write(STDERR_FILENO, line.data(), line.size());
}

}  // namespace hpcb
