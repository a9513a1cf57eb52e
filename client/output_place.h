// The output check a submission (and `dispatch output --to`) makes before
// it is sent: run as the user, in the client, so the root side never
// resolves a user's path. The delivery, as the user, checks again.
#ifndef HPCB_CLIENT_OUTPUT_PLACE_H_
#define HPCB_CLIENT_OUTPUT_PLACE_H_

#include <optional>
#include <string>

#include "common/base/result.h"

namespace hpcb::client {

// Whether the calling process may have output written at `path`: true
// when it is a directory (the output goes to output.<id>.log in it), false
// when it names the file; an error names the parent that is missing, not a
// directory, or not writable. The daemon's delivery also opens the folder
// for reading (`delivered_by_daemon`); Slurm writes by path, and a folder
// that may only be written into (a drop box) serves it.
Result<bool> CheckOutputPlace(const std::string& path, bool delivered_by_daemon);

// getcwd(3), which relative output places (and a job's cwd) are made
// absolute against; nullopt with errno set when it fails.
std::optional<std::string> CurrentDirectory();

}  // namespace hpcb::client

#endif  // HPCB_CLIENT_OUTPUT_PLACE_H_
