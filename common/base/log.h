// Minimal logging to stderr: "YYYY-MM-DD HH:MM:SS LEVEL role: message".
// systemd's journal adds its own timestamps; the in-line ones help when the
// daemon runs by hand. Thread-compatible (the daemons are single-threaded).
#ifndef HPCB_COMMON_BASE_LOG_H_
#define HPCB_COMMON_BASE_LOG_H_

#include <string>
#include <string_view>

namespace hpcb {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// Role name printed on every line ("launcher", "executor", "broker").
void SetLogRole(std::string_view role);
// "debug", "info", "warning", "error"; anything else leaves it unchanged.
void SetLogLevel(std::string_view name);

// No LogDebug beside these: the root binaries write no debug lines, and
// this header is counted as root (docs/security/root-size.md); the
// broker's few call Log(LogLevel::kDebug, ...).
void Log(LogLevel level, std::string_view message);
inline void LogInfo(std::string_view m) {
  Log(LogLevel::kInfo, m);
}
inline void LogWarning(std::string_view m) {
  Log(LogLevel::kWarning, m);
}
inline void LogError(std::string_view m) {
  Log(LogLevel::kError, m);
}

}  // namespace hpcb

#endif  // HPCB_COMMON_BASE_LOG_H_
