// The subcommands once their arguments are parsed: each sends one
// request (wait polls, wait.h), renders the reply and returns the exit
// code. `json`: the daemon's reply as it came, one line, for scripts.
#ifndef HPCB_CLIENT_COMMANDS_H_
#define HPCB_CLIENT_COMMANDS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "client/io.h"
#include "protocol/client_messages.h"

namespace hpcb::client {

int RunSubmit(const std::string& socket, const protocol::SubmitRequest& request, Io io);
// `new --wait`: submits (its lines on stderr), streams the output as
// attach does, then exits as `dispatch wait` would for the job.
int RunSubmitAndWait(const std::string& socket, const protocol::SubmitRequest& request, Io io);
int RunInfo(const std::string& socket, bool json, Io io);
// `drain` (on) or `resume` (off).
int RunDrain(const std::string& socket, bool on, Io io);
// `long_format`: the usage columns (what finished jobs used).
int RunList(const std::string& socket, const protocol::ListRequest& request, bool json,
            bool long_format, Io io);
int RunAttach(const std::string& socket, std::uint64_t id, Io io);
int RunKill(const std::string& socket, std::uint64_t id, Io io);
// `dispatch hold` (hold) and `release`: each job in turn; 1 if any was
// refused (each refusal is reported), else 0.
int RunHold(const std::string& socket, const std::vector<std::uint64_t>& ids, bool hold, Io io);
int RunJobField(const std::string& socket, const protocol::JobFieldRequest& request, bool json,
                Io io);
int RunOutput(const std::string& socket, const protocol::OutputRequest& request, Io io);

}  // namespace hpcb::client

#endif  // HPCB_CLIENT_COMMANDS_H_
