// How the job child finds what to execve: the job's own PATH, like execvp,
// but computed before fork so the child allocates nothing.
#ifndef HPCB_LAUNCHER_EXEC_PATH_H_
#define HPCB_LAUNCHER_EXEC_PATH_H_

#include <optional>
#include <string>
#include <vector>

namespace hpcb::launcher {

// Every full path execve should try for argv0 under `path_value` (the job's
// PATH), in order, like execvp; argv0 with a '/' is used as is.
std::vector<std::string> ExecCandidates(const std::string& argv0, const std::string& path_value);

// Value of K in a "K=V" list, if present.
std::optional<std::string> EnvValue(const std::vector<std::string>& env, const std::string& key);

}  // namespace hpcb::launcher

#endif  // HPCB_LAUNCHER_EXEC_PATH_H_
