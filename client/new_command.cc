// `dispatch new`: its flags, the checks on them, and the SubmitRequest
// they become.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <tuple>
#include <vector>

#include <CLI/CLI.hpp>

#include "client/array_ids.h"
#include "client/command_line.h"
#include "client/exec_check.h"
#include "client/output_place.h"
#include "client/subcommand.h"
#include "common/base/exec_path.h"
#include "common/units.h"
#include "protocol/array_spec.h"

extern char** environ;

namespace hpcb::client {
namespace {

// What the submitting session calls its user, home and shell, for its
// job's USER, LOGNAME, HOME and SHELL. From the environment, as a command
// the user ran itself would see them: dispatch is linked statically and
// never calls NSS (CMakeLists.txt), and who the job runs as is the
// kernel's answer on the connection, not this.
void NameSubmitter(protocol::SubmitRequest& request) {
  auto absolute = [](const char* name) -> std::string {
    const char* value = std::getenv(name);
    return value != nullptr && value[0] == '/' ? value : "";
  };
  const char* user = std::getenv("USER");
  if (user == nullptr || !protocol::PlausibleUserName(user)) user = std::getenv("LOGNAME");
  request.user = user != nullptr && protocol::PlausibleUserName(user)
                     ? user
                     : "uid" + std::to_string(::getuid());
  request.home = absolute("HOME");
  request.shell = absolute("SHELL");
}

// --after's ids as typed, as job ids in `request` (an element's looked
// up in one list, unless the backend names elements itself: then its
// array's id stands in, and the backend uses `typed`).
std::optional<int> ResolveAfter(const std::vector<TypedId>& typed, protocol::SubmitRequest* request,
                                const Invocation& call) {
  if (call.backend.NamesElementsItself()) {
    request->after = ListIdsOf(typed);
    return std::nullopt;
  }
  const bool look_up =
      std::any_of(typed.begin(), typed.end(), [](const TypedId& id) { return id.index; });
  Result<std::vector<protocol::JobRow>> rows = std::vector<protocol::JobRow>{};
  if (look_up) rows = call.backend.JobsWithIds(ListIdsOf(typed));
  if (!rows) return ReportError(rows.error(), call.io);
  Result<std::vector<std::uint64_t>> ids = ResolveTypedIds(typed, *rows, /*expand_arrays=*/false);
  if (!ids)
    return ReportError(Error(ids.error().code(), "--after: " + ids.error().message()), call.io);
  request->after = std::move(*ids);
  return std::nullopt;
}

// Fills `request` (and `after`, --after as typed) from parsed flags;
// returns an exit code on failure. `delivered_by_daemon`: see
// Backend::DaemonDeliversOutput.
std::optional<int> BuildSubmit(const NewFlags& f, const std::vector<std::string>& words,
                               bool delivered_by_daemon, protocol::SubmitRequest* request,
                               std::vector<TypedId>* after, const Invocation& call) {
  auto usage_error = [&call](const std::string& message) {
    return UsageError(call.usage, message, call.io);
  };
  if (f.link_opt->count() > 0) {
    std::string link = f.gpu_link;
    std::transform(link.begin(), link.end(), link.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    const std::vector<std::string> choices = {"NV", "PIX", "PXB", "PHB", "NODE"};
    if (std::find(choices.begin(), choices.end(), link) == choices.end()) {
      return usage_error("argument --gpu-link: invalid choice: '" + f.gpu_link +
                         "' (choose from 'NV', 'PIX', 'PXB', 'PHB', 'NODE')");
    }
    request->min_gpu_link = link;
  }
  if (f.time_opt->count() > 0) {
    auto seconds = ParseDuration(f.max_time);
    if (!seconds) return usage_error("argument --max-time: " + seconds.error().message());
    if (*seconds == 0) return usage_error("argument --max-time: must be longer than 0");
    request->max_time_s = *seconds;
  }
  // As typed, for the messages below.
  auto typed = [](const CLI::Option* option) {
    return option->count() > 0 ? option->results().back() : std::string();
  };
  if (f.cpu_opt->count() > 0 && f.cpu < 1) {
    return usage_error("argument --cpu: must be 1 or more, not '" + typed(f.cpu_opt) + "'");
  }
  if (f.gpu_cores < 0) {
    return usage_error("argument --gpu-cores: must be 0 or more, not '" +
                       std::to_string(f.gpu_cores) + "'");
  }
  if (f.mem_opt->count() > 0 && !(std::isfinite(f.max_mem) && f.max_mem > 0)) {
    return usage_error("argument --max-mem: must be a positive number of GiB, not '" +
                       typed(f.mem_opt) + "'");
  }
  if (f.name_opt->count() > 0) {
    if (Result<void> named = protocol::CheckJobName(f.name); !named) {
      return usage_error("argument --name: " + named.error().message());
    }
    request->name = f.name;
  }
  if (f.notify_opt->count() > 0) {
    Result<void> valid = protocol::CheckNotifyCommand(f.notify);
    if (!valid) return usage_error("argument " + valid.error().message());
    request->notify = f.notify;
  }
  if (f.array_opt->count() > 0) {
    Result<protocol::ArraySpec> array = protocol::ParseArraySpec(f.array);
    if (!array) return usage_error("argument " + array.error().message());
    if (f.wait) return usage_error("--wait and --array cannot be combined");
    request->array = std::move(array->indices);
    request->array_throttle = array->throttle;
  }
  if (f.no_output && f.output_opt->count() > 0) {
    return usage_error("--output and --no-output cannot be combined");
  }
  if (f.output_opt->count() > 0 && f.output.empty()) {
    return usage_error("argument --output: expected a directory or a file, not ''");
  }
  if (f.no_output && f.error_opt->count() > 0) {
    return usage_error("--error and --no-output cannot be combined");
  }
  if (f.error_opt->count() > 0 && f.error.empty()) {
    return usage_error("argument --error: expected a directory or a file, not ''");
  }
  PeeledCommand peeled = PeelAssignments(words);
  if (peeled.argv.empty()) {
    return usage_error("no command given after --");
  }
  std::optional<std::string> cwd = CurrentDirectory();
  if (!cwd) {
    return ReportError(Error::FromErrno(errno, "cannot determine the current directory"), call.io);
  }
  request->argv = peeled.argv;
  request->cwd = *cwd;
  if (f.cpu_opt->count() > 0) request->cpu = f.cpu;
  request->gpu_cores = f.gpu_cores;
  if (f.mem_opt->count() > 0) request->max_mem_gb = f.max_mem;
  request->exclusive = f.exclusive;
  request->numa_local_mem = f.numa_local || f.numa_local_mem;
  request->numa_local_gpu = f.numa_local || f.numa_local_gpu;
  request->forward_env = f.env;
  if (f.env) {
    for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
      std::string_view text(*entry);
      std::size_t eq = text.find('=');
      if (eq == std::string_view::npos || eq == 0) continue;
      request->env[std::string(text.substr(0, eq))] = std::string(text.substr(eq + 1));
    }
  }
  for (const auto& [name, value] : peeled.env)
    request->env[name] = value;
  if (f.after_opt->count() > 0 && f.after_any_opt->count() > 0) {
    return usage_error("--after and --after-any cannot be combined in one job");
  }
  for (const auto& [opt, text, name] : {std::tuple{f.after_opt, &f.after, "--after"},
                                        std::tuple{f.after_any_opt, &f.after_any, "--after-any"}}) {
    if (opt->count() == 0) continue;
    auto ids = ParseTypedIdList(*text, name);
    if (!ids) return usage_error(ids.error().message());
    *after = *ids;
    request->after_any = opt == f.after_any_opt;
    if (std::optional<int> failed = ResolveAfter(*after, request, call)) return failed;
  }
  // Checked here, as the user: the root side never resolves a user's
  // path, and the delivery checks again as the user when the job ends.
  // An array's elements each write their own STEM.ID_INDEX.log, so it
  // needs a directory.
  auto place = [&](const std::string& given, std::optional<std::string>& path, bool& is_dir,
                   const char* flag, const char* stem) -> std::optional<int> {
    path = MakeAbsolute(given, *cwd);
    Result<bool> dir = CheckOutputPlace(*path, delivered_by_daemon);
    if (!dir) return ReportError(dir.error(), call.io);
    is_dir = *dir;
    if (!request->array.empty() && !is_dir) {
      return usage_error(std::string("with --array, ") + flag +
                         " names a directory: each element writes its own " + stem +
                         ".ID_INDEX.log there");
    }
    return std::nullopt;
  };
  if (!f.no_output) {
    if (std::optional<int> failed =
            place(f.output_opt->count() > 0 ? f.output : ".", request->output,
                  request->output_is_dir, "--output", "output")) {
      return failed;
    }
  }
  if (f.error_opt->count() > 0) {
    if (std::optional<int> failed =
            place(f.error, request->error, request->error_is_dir, "--error", "error")) {
      return failed;
    }
  }
  // Looked for as the job will look for it: on its PATH, from here, as
  // the user. Not for a job that waits for others, which may well make
  // what it runs (`new -- make`, then `new --after 1 -- ./a.out`).
  if (request->after.empty()) {
    auto path = request->env.find("PATH");
    request->exec_error = WhyNotExecutable(
        request->argv[0], path != request->env.end() ? path->second : std::string(kCleanPath));
  }
  NameSubmitter(*request);
  return std::nullopt;
}

}  // namespace

void AddNewFlags(CLI::App* sub, Flags* flags) {
  NewFlags* f = &flags->new_job;
  f->cpu_opt = sub->add_option(
      "--cpu", f->cpu,
      "logical cpus, rounded up to whole cores (default 1, or all with --exclusive)");
  sub->add_option("--gpu-cores", f->gpu_cores, "GPUs to allocate (default 0)");
  f->mem_opt = sub->add_option("--max-mem", f->max_mem, "memory budget in GiB (plain number)");
  sub->add_flag("--numa-local", f->numa_local, "both --numa-local-mem and --numa-local-gpu");
  sub->add_flag("--numa-local-mem", f->numa_local_mem,
                "wait for one NUMA node that fits the budget");
  sub->add_flag("--numa-local-gpu", f->numa_local_gpu, "GPUs on the job's NUMA node");
  f->link_opt =
      sub->add_option("--gpu-link", f->gpu_link, "worst GPU link allowed: NV PIX PXB PHB NODE");
  f->time_opt = sub->add_option("--max-time", f->max_time, "DURATION, e.g. 45m, 2h, 1h30m");
  sub->add_flag("--env", f->env, "forward your whole environment");
  sub->add_flag("--exclusive", f->exclusive, "run alone on the machine");
  f->output_opt = sub->add_option("--output", f->output, "directory or file for output.<id>.log");
  f->error_opt =
      sub->add_option("--error", f->error, "directory or file for stderr apart (error.<id>.log)");
  sub->add_flag("--no-output", f->no_output, "discard the output");
  f->after_opt = sub->add_option("--after", f->after,
                                 "ID[,ID...]: start once these jobs exited 0 (else never run)");
  f->after_any_opt = sub->add_option("--after-any", f->after_any,
                                     "ID[,ID...]: start once these jobs ended, however they ended");
  sub->add_flag("--wait", f->wait,
                "stay attached: stream the output, exit with the job's exit code");
  f->name_opt = sub->add_option("--name", f->name,
                                "NAME for list, and for kill/wait/attach --name (Slurm's -J)");
  f->notify_opt = sub->add_option("--notify", f->notify,
                                  "CMD: run `sh -c CMD` as you when the job ends (at most 10 s; "
                                  "gets HPC_BATCH_JOB_ID, _JOB_STATE, _EXIT_CODE)");
  f->array_opt = sub->add_option("--array", f->array,
                                 "SPEC: an array of jobs, e.g. 1-100, 1-100:4, 1,5,9, 1-100%8 "
                                 "(each gets HPC_BATCH_ARRAY_INDEX)");
  sub->footer(
      "After --: the job's command and its arguments, run without a shell; leading "
      "NAME=VALUE words set variables of its environment.");
}

int RunNew(const Flags& flags, const Invocation& call) {
  protocol::SubmitRequest request;
  std::vector<TypedId> after;
  if (auto code = BuildSubmit(flags.new_job, call.command, call.backend.DaemonDeliversOutput(),
                              &request, &after, call)) {
    return *code;
  }
  return call.backend.Submit(request, PeelAssignments(call.command).env, after, flags.new_job.wait,
                             call.io);
}

}  // namespace hpcb::client
