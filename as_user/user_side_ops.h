// What hpc-batch-as-user does, already running as a job's user: deliver a
// job's output, run its --notify command, empty a forgotten job's
// directory. The root launcher forks, drops to the user and execs this
// program (launcher/user_helper.h), so none of this code, which opens
// user-chosen paths and runs a user's command, ever runs as root or in a
// copy of root's memory. What it can do is what the user can do.
#ifndef HPCB_AS_USER_USER_SIDE_OPS_H_
#define HPCB_AS_USER_USER_SIDE_OPS_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "common/base/result.h"

namespace hpcb::as_user {

// Copies all of `buffer_fd` (from offset 0) to `dest`, whole or not at
// all. The bytes go to a fresh file (O_EXCL, never following a link) beside
// `dest`, which is fsynced and renamed over it: nothing is ever written into
// an existing file, and a copy cut short leaves no truncated file at
// `dest`. Refused, with `dest` untouched, when the buffer is over
// `max_bytes` or when `dest` exists and is not a regular file of ours with
// one link (a symlink, a FIFO, another user's file planted there).
Result<void> DeliverHere(int buffer_fd, const std::string& dest, std::uint64_t max_bytes);

// Runs `sh -c command` in `cwd` with exactly `env`, stdin/stdout/stderr on
// /dev/null, in a session of its own; waits for the shell at most `limit`,
// then kills its process group, whatever of it is left. An error unless the
// shell exited 0 in time.
Result<void> NotifyHere(const std::string& command, const std::string& cwd,
                        const std::vector<std::string>& env, std::chrono::seconds limit);

// Removes everything below the directory `dir_fd`, which itself stays.
// Only through descriptors (openat with O_NOFOLLOW, unlinkat): a symlink
// goes as a link, and a name swapped meanwhile is never followed. A
// directory on another filesystem, or more than kMaxEmptyDepth levels
// down, stays with every directory above it; so does what the user may not
// remove. The error names the first thing that stayed.
inline constexpr int kMaxEmptyDepth = 128;
Result<void> EmptyDirHere(int dir_fd);

// The program's command line (argv without argv[0]), one of
//   deliver DEST MAX_BYTES    (descriptor 4: the output buffer)
//   notify CWD LIMIT_S COMMAND (the environment: the command's)
//   empty                     (descriptor 4: the directory)
// run with `env` as the environment. An unknown or malformed line is an
// invalid-argument error naming it.
Result<void> RunRequest(const std::vector<std::string>& args, const std::vector<std::string>& env);

// Descriptors the launcher hands the program: where its answer goes, and
// the request's own descriptor (a buffer or a directory).
inline constexpr int kAnswerFd = 3;
inline constexpr int kRequestFd = 4;

// The answer the launcher reads (launcher/user_helper.h ParseHelperAnswer):
// 'O' alone, or 'E', one byte of ErrorCode, then the message.
std::string EncodeAnswer(const Result<void>& result);

}  // namespace hpcb::as_user

#endif  // HPCB_AS_USER_USER_SIDE_OPS_H_
