#include "client/dispatch.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <tuple>
#include <vector>

#include <CLI/CLI.hpp>

#include "client/backend_config.h"
#include "client/command_line.h"
#include "client/commands.h"
#include "client/exec_check.h"
#include "client/output_place.h"
#include "client/parse_errors.h"
#include "client/slurm_backend.h"
#include "client/transport.h"
#include "client/wait.h"
#include "common/units.h"
#include "protocol/base/exec_path.h"
#include "protocol/root_config.h"

extern char** environ;

namespace hpcb::client {
namespace {

constexpr const char* kUsage =
    "usage: dispatch [-h] [--version] "
    "{new,list,attach,kill,job,output,wait,hold,release,info,drain,resume} ...\n";

// Each subcommand's usage line, printed above its own mistakes.
std::string UsageOf(std::string_view command) {
  static const std::pair<std::string_view, std::string_view> kLines[] = {
      {"new", "new [options] [NAME=VALUE...] -- CMD [ARGS...]"},
      {"list", "list [--all] [--finished] [--json] [-l]"},
      {"attach", "attach ID"},
      {"kill", "kill ID"},
      {"job", "job ID max-time get|set|add [DURATION] [--json]"},
      {"output", "output ID [--to DIR|FILE]"},
      {"wait", "wait ID [ID...] [--timeout DURATION]"},
      {"hold", "hold ID [ID...]"},
      {"release", "release ID [ID...]"},
      {"info", "info [--json]"},
      {"drain", "drain"},
      {"resume", "resume"},
  };
  for (const auto& [name, line] : kLines) {
    if (name == command) return "usage: dispatch " + std::string(line) + "\n";
  }
  return kUsage;
}

// The subcommand this run is about ("" when none was named), for the
// usage line of its errors.
std::string g_command;

int UsageError(const std::string& message, Io io) {
  io.err << UsageOf(g_command) << "dispatch: error: " << message << "\n";
  return kExitUsage;
}

// One job id as typed: digits, not 0 ("-1" is not read as 2^64 - 1).
std::optional<std::uint64_t> JobIdOf(const std::string& word) {
  const bool digits =
      !word.empty() && word.size() <= 19 &&
      std::all_of(word.begin(), word.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
  if (!digits || std::stoull(word) == 0) return std::nullopt;
  return std::stoull(word);
}

Result<std::uint64_t> ParseJobId(const std::string& word) {
  std::optional<std::uint64_t> id = JobIdOf(word);
  if (!id) return InvalidArgument("argument ID: invalid job id: '" + word.substr(0, 40) + "'");
  return *id;
}

struct NewFlags {
  std::int64_t cpu = 0;
  std::int64_t gpu_cores = 0;
  double max_mem = 0;
  bool numa_local = false, numa_local_mem = false, numa_local_gpu = false;
  std::string gpu_link, max_time, output, after, after_any;
  bool env = false, exclusive = false, no_output = false, wait = false;
  CLI::Option* cpu_opt = nullptr;
  CLI::Option* mem_opt = nullptr;
  CLI::Option* link_opt = nullptr;
  CLI::Option* time_opt = nullptr;
  CLI::Option* output_opt = nullptr;
  CLI::Option* after_opt = nullptr;
  CLI::Option* after_any_opt = nullptr;
};

void AddNewFlags(CLI::App* sub, NewFlags* f) {
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
  sub->add_flag("--no-output", f->no_output, "discard the output");
  f->after_opt = sub->add_option("--after", f->after,
                                 "ID[,ID...]: start once these jobs exited 0 (else never run)");
  f->after_any_opt = sub->add_option("--after-any", f->after_any,
                                     "ID[,ID...]: start once these jobs ended, however they ended");
  sub->add_flag("--wait", f->wait,
                "stay attached: stream the output, exit with the job's exit code");
}

// "3,4,7" -> {3, 4, 7}; an error names the word that is not a job id.
Result<std::vector<std::uint64_t>> ParseIdList(const std::string& text, const char* flag) {
  std::vector<std::uint64_t> ids;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    const std::string word = text.substr(start, comma - start);
    std::optional<std::uint64_t> id = JobIdOf(word);
    if (!id) {
      return InvalidArgument(std::string("argument ") + flag + ": '" + word.substr(0, 40) +
                             "' is not a job id (expected ID[,ID...])");
    }
    ids.push_back(*id);
    start = comma + 1;
  }
  return ids;
}

std::optional<std::string> CurrentDirectory() {
  std::string buffer(PATH_MAX, '\0');
  if (::getcwd(buffer.data(), buffer.size()) == nullptr) return std::nullopt;
  buffer.resize(std::strlen(buffer.c_str()));
  return buffer;
}

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

// Fills `request` from parsed flags; returns an exit code on failure.
// `delivered_by_daemon`: the local backend (not Slurm) delivers the output.
std::optional<int> BuildSubmit(const NewFlags& f, const std::vector<std::string>& words,
                               bool delivered_by_daemon, protocol::SubmitRequest* request, Io io) {
  if (f.link_opt->count() > 0) {
    std::string link = f.gpu_link;
    std::transform(link.begin(), link.end(), link.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    const std::vector<std::string> choices = {"NV", "PIX", "PXB", "PHB", "NODE"};
    if (std::find(choices.begin(), choices.end(), link) == choices.end()) {
      return UsageError("argument --gpu-link: invalid choice: '" + f.gpu_link +
                            "' (choose from 'NV', 'PIX', 'PXB', 'PHB', 'NODE')",
                        io);
    }
    request->min_gpu_link = link;
  }
  if (f.time_opt->count() > 0) {
    auto seconds = ParseDuration(f.max_time);
    if (!seconds) return UsageError("argument --max-time: " + seconds.error().message(), io);
    if (*seconds == 0) return UsageError("argument --max-time: must be longer than 0", io);
    request->max_time_s = *seconds;
  }
  // As typed, for the messages below.
  auto typed = [](const CLI::Option* option) {
    return option->count() > 0 ? option->results().back() : std::string();
  };
  if (f.cpu_opt->count() > 0 && f.cpu < 1) {
    return UsageError("argument --cpu: must be 1 or more, not '" + typed(f.cpu_opt) + "'", io);
  }
  if (f.gpu_cores < 0) {
    return UsageError(
        "argument --gpu-cores: must be 0 or more, not '" + std::to_string(f.gpu_cores) + "'", io);
  }
  if (f.mem_opt->count() > 0 && !(std::isfinite(f.max_mem) && f.max_mem > 0)) {
    return UsageError(
        "argument --max-mem: must be a positive number of GiB, not '" + typed(f.mem_opt) + "'", io);
  }
  if (f.no_output && f.output_opt->count() > 0) {
    return UsageError("--output and --no-output cannot be combined", io);
  }
  if (f.output_opt->count() > 0 && f.output.empty()) {
    return UsageError("argument --output: expected a directory or a file, not ''", io);
  }
  PeeledCommand peeled = PeelAssignments(words);
  if (peeled.argv.empty()) {
    return UsageError("no command given after --", io);
  }
  std::optional<std::string> cwd = CurrentDirectory();
  if (!cwd) {
    return ReportError(Error::FromErrno(errno, "cannot determine the current directory"), io);
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
    return UsageError("--after and --after-any cannot be combined in one job", io);
  }
  for (const auto& [opt, text, name] : {std::tuple{f.after_opt, &f.after, "--after"},
                                        std::tuple{f.after_any_opt, &f.after_any, "--after-any"}}) {
    if (opt->count() == 0) continue;
    auto ids = ParseIdList(*text, name);
    if (!ids) return UsageError(ids.error().message(), io);
    request->after = *ids;
    request->after_any = opt == f.after_any_opt;
  }
  if (!f.no_output) {
    request->output = MakeAbsolute(f.output_opt->count() > 0 ? f.output : ".", *cwd);
    // Checked here, as the user: the root side never resolves a user's
    // path, and the delivery checks again as the user when the job ends.
    Result<bool> is_dir = CheckOutputPlace(*request->output, delivered_by_daemon);
    if (!is_dir) return ReportError(is_dir.error(), io);
    request->output_is_dir = *is_dir;
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

const std::vector<std::string>& SubcommandNames() {
  static const std::vector<std::string> names = {"new",    "list", "attach", "kill",
                                                 "job",    "info", "drain",  "resume",
                                                 "output", "wait", "hold",   "release"};
  return names;
}

int RunDispatch(const std::vector<std::string>& args, Io io) {
  auto backend = LoadBackendConfig();
  if (!backend) return ReportError(backend.error(), io);
  const bool slurm = backend->backend == Backend::kSlurm;
  SplitArgs split = SplitAtDoubleDash(args);
  CLI::App app{"Submit and manage hpc-batch jobs.", "dispatch"};
  app.set_version_flag("--version", std::string("dispatch ") + protocol::kVersion);
  app.require_subcommand(1);
  app.allow_extras();  // reported below, in order (CLI11 2.1 reverses them)

  // Only the subcommand named first is built, when one is: CLI11 allocates
  // every option of every subcommand it is given, and dispatch runs once
  // per submission (building all of them cost `dispatch new` 6 of its 72
  // page faults and about 0.3 ms of CPU). Anything else (no subcommand, a
  // flag first, a typo) builds them all, for the help text and the error.
  const std::string first = split.options.empty() ? std::string() : split.options[0];
  const std::vector<std::string>& names = SubcommandNames();
  const bool build_all = std::find(names.begin(), names.end(), first) == names.end();
  g_command = build_all ? "" : first;
  if (build_all && !first.empty() && first[0] != '-') {
    return UsageError("argument command: invalid choice: '" + first +
                          "' (choose from 'new', 'list', 'attach', 'kill', 'job', 'output', "
                          "'wait', 'hold', 'release', 'info', 'drain', 'resume')",
                      io);
  }
  auto wanted = [&](const char* name) { return build_all || first == name; };
  auto parsed = [](const CLI::App* sub) { return sub != nullptr && sub->parsed(); };

  NewFlags new_flags;
  CLI::App* new_cmd = nullptr;
  if (wanted("new")) {
    new_cmd = app.add_subcommand("new", "submit a job: dispatch new [options] -- CMD [ARGS...]");
    AddNewFlags(new_cmd, &new_flags);
    new_cmd->footer(
        "After --: the job's command and its arguments, run without a shell; leading "
        "NAME=VALUE words set variables of its environment.");
  }

  protocol::ListRequest list_request;
  bool list_json = false;
  bool list_long = false;
  CLI::App* list_cmd = nullptr;
  if (wanted("list")) {
    list_cmd = app.add_subcommand("list", "list jobs");
    list_cmd->add_flag("--all", list_request.all, "all users (admins, or with --list-is-public)");
    list_cmd->add_flag("--finished", list_request.finished,
                       "include finished jobs with their exit");
    list_cmd->add_flag("--json", list_json, "print the daemon's reply as JSON (one line)");
    list_cmd->add_flag("-l,--long", list_long,
                       "add what finished jobs used: wall and cpu time, cpus used, peak memory");
  }

  std::string attach_id;
  CLI::App* attach_cmd = nullptr;
  if (wanted("attach")) {
    attach_cmd = app.add_subcommand("attach", "follow a job's output");
    attach_cmd->add_option("ID", attach_id, "job id")->required();
  }

  std::string kill_id;
  CLI::App* kill_cmd = nullptr;
  if (wanted("kill")) {
    kill_cmd = app.add_subcommand("kill", "kill a running job or remove a queued one");
    kill_cmd->add_option("ID", kill_id, "job id")->required();
  }

  protocol::JobFieldRequest field_request;
  std::string field_id;
  std::string field_value;
  bool field_json = false;
  CLI::App* job_cmd = nullptr;
  CLI::Option* value_opt = nullptr;
  if (wanted("job")) {
    job_cmd =
        app.add_subcommand("job", "read or change a job: job ID max-time get|set|add [DURATION]");
    job_cmd->add_option("ID", field_id, "job id")->required();
    job_cmd->add_option("FIELD", field_request.field, "max-time")
        ->required()
        ->check(CLI::IsMember({"max-time"}));
    job_cmd->add_option("ACTION", field_request.action, "get, set (admins only), add (admins only)")
        ->required()
        ->check(CLI::IsMember({"get", "set", "add"}));
    value_opt = job_cmd->add_option("DURATION", field_value, "for set and add");
    job_cmd->add_flag("--json", field_json, "print the daemon's reply as JSON (one line)");
  }

  bool info_json = false;
  CLI::App* info_cmd = nullptr;
  if (wanted("info")) {
    info_cmd = app.add_subcommand(
        "info", "the machine per NUMA node (total, reserved, in use, free), policy, queue, drain");
    info_cmd->add_flag("--json", info_json, "print the daemon's reply as JSON (one line)");
  }
  CLI::App* drain_cmd = nullptr;
  if (wanted("drain")) {
    drain_cmd = app.add_subcommand(
        "drain", "stop starting queued jobs; running ones finish, submissions are kept (admins)");
  }
  CLI::App* resume_cmd = nullptr;
  if (wanted("resume")) {
    resume_cmd = app.add_subcommand("resume", "start queued jobs again after drain (admins)");
  }

  std::string output_id;
  std::string output_to;
  CLI::App* output_cmd = nullptr;
  CLI::Option* output_to_opt = nullptr;
  if (wanted("output")) {
    output_cmd = app.add_subcommand(
        "output", "deliver a finished job's kept output again: output ID [--to DIR|FILE]");
    output_cmd->add_option("ID", output_id, "job id")->required();
    output_to_opt =
        output_cmd->add_option("--to", output_to, "somewhere new for it (the job's owner only)");
  }

  // The ids of wait, hold and release: only one subcommand is ever parsed.
  std::vector<std::string> id_words;
  std::string wait_timeout;
  CLI::App* wait_cmd = nullptr;
  CLI::Option* wait_timeout_opt = nullptr;
  if (wanted("wait")) {
    wait_cmd = app.add_subcommand(
        "wait", "wait for jobs to end; exit with the job's code (one job) or 1 if any failed");
    wait_cmd->add_option("ID", id_words, "job ids")->required();
    wait_timeout_opt = wait_cmd->add_option("--timeout", wait_timeout,
                                            "DURATION; give up then with exit code 124");
  }

  CLI::App* hold_cmd = nullptr;
  CLI::App* release_cmd = nullptr;
  if (wanted("hold")) {
    hold_cmd = app.add_subcommand(
        "hold", "keep queued jobs from starting; they keep their place in the queue");
    hold_cmd->add_option("ID", id_words, "job ids")->required();
  }
  if (wanted("release")) {
    release_cmd = app.add_subcommand("release", "let held jobs start again");
    release_cmd->add_option("ID", id_words, "job ids")->required();
  }

  std::vector<const char*> argv = {"dispatch"};
  for (const std::string& word : split.options)
    argv.push_back(word.c_str());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e, io.out, io.err);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e, io.out, io.err);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e, io.out, io.err);
  } catch (const CLI::ParseError& e) {
    auto value_type = [&app](const std::string& name) -> std::string {
      for (const CLI::App* sub : app.get_subcommands({})) {
        const CLI::Option* option = sub->get_option_no_throw(name);
        if (option != nullptr && option->get_type_name() == "FLOAT") return "float";
      }
      return "int";
    };
    return UsageError(ArgparseWording(e.get_name(), e.what(), value_type), io);
  }

  std::vector<std::string> extras = app.remaining(true);
  if (!extras.empty()) {
    std::string joined;
    for (const std::string& word : extras)
      joined += (joined.empty() ? "" : " ") + word;
    return UsageError("unrecognized arguments: " + joined, io);
  }

  // Job ids are read here, not by CLI11, which takes "-1" for 2^64 - 1.
  std::uint64_t id = 0;
  for (const std::string* word : {&attach_id, &kill_id, &output_id, &field_id}) {
    if (word->empty()) continue;
    Result<std::uint64_t> parsed_id = ParseJobId(*word);
    if (!parsed_id) return UsageError(parsed_id.error().message(), io);
    id = *parsed_id;
  }
  field_request.id = id;
  std::vector<std::uint64_t> ids;
  for (const std::string& word : id_words) {
    Result<std::uint64_t> parsed_id = ParseJobId(word);
    if (!parsed_id) return UsageError(parsed_id.error().message(), io);
    ids.push_back(*parsed_id);
  }

  const std::string socket = SocketPath();
  if (parsed(new_cmd)) {
    protocol::SubmitRequest request;
    std::vector<std::string> words = split.command.value_or(std::vector<std::string>{});
    if (auto code = BuildSubmit(new_flags, words, !slurm, &request, io)) return *code;
    if (slurm && (!request.after.empty() || new_flags.wait)) {
      return ReportError(Error(ErrorCode::kFailedPrecondition,
                               "--after, --after-any and --wait are not available with the Slurm "
                               "backend; use sbatch --dependency or srun"),
                         io);
    }
    // Not request.exec_error: Slurm runs the command on a node of its
    // choosing, whose files this machine's need not be.
    if (slurm) return slurm::Submit(*backend, request, PeelAssignments(words).env, io);
    if (new_flags.wait) return RunSubmitAndWait(socket, request, io);
    return RunSubmit(socket, request, io);
  }
  if (parsed(list_cmd)) {
    if (slurm) return slurm::List(*backend, list_request, list_json, io);
    return RunList(socket, list_request, list_json, list_long, io);
  }
  if (parsed(attach_cmd)) {
    if (slurm) return slurm::Attach(*backend, id, io);
    return RunAttach(socket, id, io);
  }
  if (parsed(kill_cmd)) {
    if (slurm) return slurm::Kill(*backend, id, io);
    return RunKill(socket, id, io);
  }
  if (parsed(wait_cmd)) {
    WaitOptions options;
    if (wait_timeout_opt->count() > 0) {
      auto seconds = ParseDuration(wait_timeout);
      if (!seconds) return UsageError("argument --timeout: " + seconds.error().message(), io);
      options.timeout_s = static_cast<double>(*seconds);
    }
    if (slurm) {
      if (options.timeout_s) {
        return ReportError(Error(ErrorCode::kFailedPrecondition,
                                 "wait --timeout is not available with the Slurm backend"),
                           io);
      }
      return slurm::Wait(*backend, ids, io);
    }
    return RunWait(socket, ids, options, io);
  }
  if (parsed(hold_cmd) || parsed(release_cmd)) {
    if (slurm) return slurm::Hold(*backend, ids, parsed(hold_cmd), io);
    return RunHold(socket, ids, parsed(hold_cmd), io);
  }
  if (parsed(info_cmd) || parsed(drain_cmd) || parsed(resume_cmd)) {
    if (slurm) {
      return ReportError(Error(ErrorCode::kFailedPrecondition,
                               "info, drain and resume are not available with the Slurm backend; "
                               "use sinfo and scontrol"),
                         io);
    }
    if (parsed(info_cmd)) return RunInfo(socket, info_json, io);
    return RunDrain(socket, parsed(drain_cmd), io);
  }
  if (parsed(output_cmd)) {
    if (slurm) {
      return ReportError(Error(ErrorCode::kFailedPrecondition,
                               "dispatch output is not available with the Slurm backend: Slurm "
                               "writes the output file itself, so there is no kept copy"),
                         io);
    }
    protocol::OutputRequest request;
    request.id = id;
    if (output_to_opt->count() > 0) {
      std::optional<std::string> cwd = CurrentDirectory();
      if (!cwd)
        return ReportError(Error::FromErrno(errno, "cannot determine the current directory"), io);
      request.to = MakeAbsolute(output_to, *cwd);
      // As for `new --output`: checked here, as the user, and again by the
      // delivery, which runs as the user too.
      Result<bool> is_dir = CheckOutputPlace(*request.to, /*delivered_by_daemon=*/true);
      if (!is_dir) return ReportError(is_dir.error(), io);
      request.to_is_dir = *is_dir;
    }
    return RunOutput(socket, request, io);
  }
  if (parsed(job_cmd)) {
    bool wants_value = field_request.action != "get";
    if (wants_value && value_opt->count() == 0) {
      return UsageError("the following arguments are required: DURATION", io);
    }
    if (!wants_value && value_opt->count() > 0) {
      return UsageError("unrecognized arguments: " + field_value, io);
    }
    if (wants_value) {
      auto seconds = ParseDuration(field_value);
      if (!seconds) return UsageError("argument DURATION: " + seconds.error().message(), io);
      field_request.value = *seconds;
    }
    if (slurm) return slurm::JobField(*backend, field_request, io);
    return RunJobField(socket, field_request, field_json, io);
  }
  return UsageError("the following arguments are required: command", io);
}

}  // namespace hpcb::client
