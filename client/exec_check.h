// Whether a job's command can be executed, checked by dispatch as the user
// before it submits: a command that is not there (a typo, a script without
// its execute bit) is answered "job N failed to start" at once, not found
// later in the job's output.
#ifndef HPCB_CLIENT_EXEC_CHECK_H_
#define HPCB_CLIENT_EXEC_CHECK_H_

#include <optional>
#include <string>

namespace hpcb::client {

// Why `argv0` cannot be executed from the current directory with the job's
// PATH `path_value` ("cannot execute X: No such file or directory"), or
// nothing when one of its candidates (common/base/exec_path.h) is an
// executable regular file. Like execvp, a candidate found but not
// executable makes the answer "Permission denied" unless a later one runs.
std::optional<std::string> WhyNotExecutable(const std::string& argv0,
                                            const std::string& path_value);

}  // namespace hpcb::client

#endif  // HPCB_CLIENT_EXEC_CHECK_H_
