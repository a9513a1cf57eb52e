#include "client/backend_config.h"

#include <cstdlib>

#include "common/host/host_files.h"
#include "common/units.h"

namespace hpcb::client {
namespace {

constexpr std::size_t kMaxConfigBytes = std::size_t{64} * 1024;

std::string_view Trim(std::string_view text) {
  const char* space = " \t\r";
  std::size_t first = text.find_first_not_of(space);
  if (first == std::string_view::npos) return {};
  std::size_t last = text.find_last_not_of(space);
  return text.substr(first, last - first + 1);
}

Result<BackendKind> ParseBackend(std::string_view value, const std::string& where) {
  if (value == "local") return BackendKind::kLocal;
  if (value == "slurm") return BackendKind::kSlurm;
  return InvalidArgument(where + "unknown backend '" + std::string(value) +
                         "' (choose local or slurm)");
}

Result<void> ApplyBinDir(std::string_view value, const std::string& where, BackendConfig* config) {
  if (!value.empty() && value[0] != '/') {
    return InvalidArgument(where + "slurm_bin must be an absolute directory, not '" +
                           std::string(value) + "'");
  }
  config->slurm_bin = std::string(value);
  return Ok();
}

Result<std::string> ReadWholeFile(const std::string& path) {
  Result<std::string> text = host::ReadSmallFile(path, kMaxConfigBytes);
  if (!text && text.error().sys_errno() != 0) {
    return Error::FromErrno(text.error().sys_errno(), "cannot read " + path);
  }
  return text;
}

}  // namespace

Result<void> ApplyClientConfig(std::string_view text, std::string_view origin,
                               BackendConfig* config) {
  std::size_t line_no = 0;
  for (std::string_view line : SplitLines(text)) {
    ++line_no;
    std::size_t hash = line.find('#');
    if (hash != std::string_view::npos) line = line.substr(0, hash);
    line = Trim(line);
    if (line.empty()) continue;
    const std::string where = std::string(origin) + ":" + std::to_string(line_no) + ": ";
    std::size_t eq = line.find('=');
    if (eq == std::string_view::npos) {
      return InvalidArgument(where + "expected 'key = value', got '" + std::string(line) + "'");
    }
    std::string_view key = Trim(line.substr(0, eq));
    std::string_view value = Trim(line.substr(eq + 1));
    if (key == "backend") {
      HPCB_ASSIGN_OR_RETURN(config->backend, ParseBackend(value, where));
    } else if (key == "slurm_bin") {
      HPCB_TRY(ApplyBinDir(value, where, config));
    } else if (key == "slurm_timeout") {
      auto seconds = ParseDuration(value);
      if (!seconds || *seconds < 1) {
        return InvalidArgument(where + "slurm_timeout must be a positive duration, not '" +
                               std::string(value) + "'");
      }
      config->slurm_timeout = std::chrono::seconds(*seconds);
    } else {
      return InvalidArgument(where + "unknown key '" + std::string(key) +
                             "' (known: backend, slurm_bin, slurm_timeout)");
    }
  }
  return Ok();
}

Result<BackendConfig> ResolveBackendConfig(const EnvLookup& env, const FileReader& read) {
  BackendConfig config;
  std::optional<std::string> named = env("HPC_BATCH_CLIENT_CONFIG");
  const bool explicit_path = named && !named->empty();
  const std::string path = explicit_path ? *named : kDefaultClientConfig;
  Result<std::string> text = read(path);
  if (text) {
    HPCB_TRY(ApplyClientConfig(*text, path, &config));
  } else if (explicit_path || text.error().code() != ErrorCode::kNotFound) {
    // A file someone named, or one that exists but cannot be read, is a
    // mistake to report: guessing the backend would send jobs elsewhere.
    return Error(text.error().code(), "client configuration: " + text.error().message());
  }
  if (auto value = env("HPC_BATCH_BACKEND"); value && !value->empty()) {
    HPCB_ASSIGN_OR_RETURN(config.backend, ParseBackend(*value, "HPC_BATCH_BACKEND: "));
  }
  if (auto value = env("HPC_BATCH_SLURM_BIN"); value && !value->empty()) {
    HPCB_TRY(ApplyBinDir(*value, "HPC_BATCH_SLURM_BIN: ", &config));
  }
  return config;
}

Result<BackendConfig> LoadBackendConfig() {
  return ResolveBackendConfig(
      [](const char* name) -> std::optional<std::string> {
        const char* value = std::getenv(name);
        if (value == nullptr) return std::nullopt;
        return std::string(value);
      },
      ReadWholeFile);
}

}  // namespace hpcb::client
