// `dispatch`'s subcommands as a table: each entry declares its flags to
// CLI11 and, once they are parsed, checks them and calls the backend.
// RunDispatch (dispatch.cc) builds the entries it needs, parses, and runs
// the one that was named.
#ifndef HPCB_CLIENT_SUBCOMMAND_H_
#define HPCB_CLIENT_SUBCOMMAND_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "client/backend.h"
#include "client/io.h"
#include "protocol/client_messages.h"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace hpcb::client {

// `new`'s flags. The CLI::Option pointers tell a flag given as its default
// value from one not given, and keep the text as typed for messages.
struct NewFlags {
  std::int64_t cpu = 0;
  std::int64_t gpu_cores = 0;
  double max_mem = 0;
  bool numa_local = false, numa_local_mem = false, numa_local_gpu = false;
  std::string gpu_link, max_time, output, error, after, after_any, name, notify;
  bool env = false, exclusive = false, no_output = false, wait = false;
  CLI::Option* cpu_opt = nullptr;
  CLI::Option* mem_opt = nullptr;
  CLI::Option* link_opt = nullptr;
  CLI::Option* time_opt = nullptr;
  CLI::Option* output_opt = nullptr;
  CLI::Option* error_opt = nullptr;
  CLI::Option* after_opt = nullptr;
  CLI::Option* after_any_opt = nullptr;
  CLI::Option* name_opt = nullptr;
  CLI::Option* notify_opt = nullptr;
  std::string array;  // --array SPEC (protocol/array_spec.h)
  CLI::Option* array_opt = nullptr;
};

struct ListFlags {
  protocol::ListRequest request;
  bool json = false;
  bool long_format = false;
};

struct JobFieldFlags {
  std::string id;
  protocol::JobFieldRequest request;  // its id and value are filled in later
  std::string value;
  bool json = false;
  CLI::Option* value_opt = nullptr;
};

struct OutputFlags {
  std::string id;
  std::string to;
  CLI::Option* to_opt = nullptr;
};

struct WaitFlags {
  std::string timeout;
  CLI::Option* timeout_opt = nullptr;
};

// What CLI11 fills in, a member per subcommand. `dispatch --help` and
// mistakes build every subcommand, but a run parses only one, so wait, hold
// and release can share `ids`.
struct Flags {
  NewFlags new_job;
  ListFlags list;
  std::string attach_id;
  std::string kill_id;
  JobFieldFlags job;
  bool info_json = false;
  OutputFlags output;
  WaitFlags wait;
  std::vector<std::string> ids;  // wait, hold, release
  // kill, wait and attach: their ID words (kill_id, attach_id, ids) or
  // --name (one of them is parsed in a run).
  std::string job_name;
  CLI::Option* job_name_opt = nullptr;
  CLI::Option* id_opt = nullptr;
};

// What a handler runs with, besides its flags.
struct Invocation {
  Backend& backend;
  // The words after `new`'s `--`: the job's command (empty otherwise).
  std::vector<std::string> command;
  // The usage line printed above this run's mistakes, newline included.
  std::string usage;
  Io io;
};

struct Subcommand {
  std::string_view name;
  std::string_view usage;    // after "usage: dispatch "
  std::string_view summary;  // its line in `dispatch --help`
  void (*add_flags)(CLI::App* sub, Flags* flags);
  int (*run)(const Flags& flags, const Invocation& call);
};

// Every subcommand, in the order `dispatch --help` lists them.
const std::vector<Subcommand>& Subcommands();

// `usage`, then "dispatch: error: MESSAGE" on stderr; returns kExitUsage.
int UsageError(std::string_view usage, const std::string& message, Io io);

// `new`'s entry (new_command.cc).
void AddNewFlags(CLI::App* sub, Flags* flags);
int RunNew(const Flags& flags, const Invocation& call);

}  // namespace hpcb::client

#endif  // HPCB_CLIENT_SUBCOMMAND_H_
