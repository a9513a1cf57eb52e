// How a job's command is found: on the job's own PATH, like execvp. The
// launcher computes the candidates before it forks the job child (which
// then allocates nothing); dispatch checks them as the user at submission.
#ifndef HPCB_COMMON_BASE_EXEC_PATH_H_
#define HPCB_COMMON_BASE_EXEC_PATH_H_

#include <optional>
#include <string>
#include <vector>

namespace hpcb {

// The PATH a job gets when neither it nor its environment names one.
inline constexpr const char* kCleanPath = "/usr/local/bin:/usr/bin:/bin";

// Every full path execve should try for argv0 under `path_value` (the job's
// PATH), in order, like execvp; argv0 with a '/' is used as is.
std::vector<std::string> ExecCandidates(const std::string& argv0, const std::string& path_value);

// Value of K in a "K=V" list, if present.
std::optional<std::string> EnvValue(const std::vector<std::string>& env, const std::string& key);

}  // namespace hpcb

#endif  // HPCB_COMMON_BASE_EXEC_PATH_H_
