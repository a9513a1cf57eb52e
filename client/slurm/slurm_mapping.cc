#include "client/slurm/slurm_mapping.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <ctime>

#include "client/format.h"
#include "client/slurm/slurm_parse.h"
#include "common/units.h"
#include "protocol/array_spec.h"

namespace hpcb::client::slurm {
namespace {

constexpr std::size_t kMaxJobName = 1024;

Error Refused(const std::string& option, const std::string& why) {
  return InvalidArgument(option + " cannot be mapped to Slurm: " + why);
}

using Vars = std::vector<std::pair<std::string, std::string>>;

// With --env: sbatch --export=ALL brought the submitting environment; the
// script adds the job's variables and becomes the command.
std::string ForwardingScript(const Vars& vars, const char* job_id, const char* no_gpus,
                             const std::vector<std::string>& argv) {
  std::string script =
      "#!/bin/sh\n"
      "# Submitted by dispatch (hpc-batch's Slurm backend) with --env.\n";
  for (const auto& [name, value] : vars)
    script += "export " + ShellQuote(name + "=" + value) + "\n";
  script += std::string("export ") + job_id + "\n";
  if (no_gpus != nullptr) script += std::string("export ") + no_gpus + "\n";
  return script + "exec " + ShellJoin(argv) + "\n";
}

// Without --env. sbatch --export=NONE makes slurmd load the user's login
// environment on the node (su - USER), so exporting over it would leak
// profile settings and exported shell functions into the job: env -i
// starts afresh from Slurm's own job variables and the job's. The command
// goes through sh's "$0" "$@" because env would take a first word holding
// '=' (./run=1) for an assignment.
std::string CleanScript(const Vars& vars, const char* job_id, const char* no_gpus,
                        const std::vector<std::string>& argv) {
  std::string script =
      "#!/bin/sh\n"
      "# Submitted by dispatch (hpc-batch's Slurm backend): the command runs in\n"
      "# hpc-batch's clean environment plus the variables Slurm sets for the job.\n"
      "PATH=" +
      ShellQuote(kCleanPath) +
      "\n"
      "set --\n"
      "for hpcb_name in $(env | sed -n 's/^\\(SLURM[A-Za-z0-9_]*\\)=.*/\\1/p') \\\n"
      "    CUDA_VISIBLE_DEVICES GPU_DEVICE_ORDINAL ROCR_VISIBLE_DEVICES TMPDIR ENVIRONMENT "
      "HOSTNAME; do\n"
      "  eval \"[ -z \\\"\\${$hpcb_name+set}\\\" ] || set -- \\\"\\$@\\\" "
      "\\\"$hpcb_name=\\${$hpcb_name}\\\"\"\n"
      "done\n"
      "exec /usr/bin/env -i -- \"$@\"";
  for (const auto& [name, value] : vars)
    script += " \\\n  " + ShellQuote(name + "=" + value);
  script += std::string(" \\\n  ") + job_id;
  if (no_gpus != nullptr) script += std::string(" \\\n  ") + no_gpus;
  return script + " \\\n  /bin/sh -c 'exec \"$0\" \"$@\"' " + ShellJoin(argv) + "\n";
}

// sbatch reads '%' in --output as a replacement, and a backslash anywhere
// turns every replacement off (so %j would stay literal).
std::string EscapePercent(const std::string& path) {
  std::string out;
  for (char c : path) {
    out += c;
    if (c == '%') out += '%';
  }
  return out;
}

std::string StripTrailingSlashes(std::string path) {
  while (path.size() > 1 && path.back() == '/')
    path.pop_back();
  if (path == "/") path.clear();
  return path;
}

// sbatch's --output or --error pattern (`flag`) for `path`: a directory
// gets <stem>.%j.log in it, as the daemon names it.
// In a folder, STEM.<id>.log, or for an array's elements, as locally,
// STEM.<array>_<index>.log.
Result<std::string> SbatchPattern(const std::string& flag, const std::string& path, bool is_dir,
                                  const std::string& stem, bool array) {
  if (path.find('\\') != std::string::npos) {
    return Refused(flag + " " + path,
                   "sbatch turns its %j replacement off for a path holding a backslash, so " +
                       stem + ".<id>.log could not be named; choose a path without one");
  }
  if (!is_dir) return EscapePercent(path);
  return EscapePercent(StripTrailingSlashes(path)) + "/" + stem +
         (array ? ".%A_%a.log" : ".%j.log");
}

std::string FormatMinutes(std::int64_t minutes) {
  return FormatDuration(minutes * 60);
}

std::string BaseState(std::string_view state) {
  std::size_t end = state.find_first_of(" +");
  return std::string(state.substr(0, end));
}

}  // namespace

Result<Submitter> ParsePasswdEntry(std::string_view line, std::uint32_t uid) {
  line = line.substr(0, line.find('\n'));
  std::vector<std::string> fields = SplitOn(line, ':');
  // A directory service's gecos may hold ':' (getent prints it as is): the
  // name is the first field, the home and shell the last two.
  if (fields.size() < 7 || fields[0].empty()) {
    return InvalidArgument(
        "not a password-database entry (name:password:uid:gid:gecos:home:shell): " +
        std::string(line.substr(0, 200)));
  }
  if (fields[2] != std::to_string(uid)) {
    return InvalidArgument("the password-database entry of " + fields[0] + " is for uid " +
                           fields[2] + ", not " + std::to_string(uid));
  }
  return Submitter{fields[0], fields[fields.size() - 2], fields.back()};
}

Result<SbatchJob> MapSubmit(const protocol::SubmitRequest& request,
                            const std::map<std::string, std::string>& command_env,
                            const Submitter& who, bool output_is_dir,
                            const std::vector<std::string>& after) {
  if (request.min_gpu_link) {
    return Refused("--gpu-link",
                   "Slurm cannot be asked for GPUs joined by a given link (NV, PIX, PXB, PHB, "
                   "NODE); a job would get whatever GPUs the node has free, possibly talking "
                   "across the host bridge or the socket interconnect. Submit without "
                   "--gpu-link to accept that");
  }
  if (request.notify) {
    return Refused("--notify",
                   "Slurm runs no command of the user's when a job ends; its --mail-type and "
                   "--mail-user send mail instead, through the cluster's mailer, if it has "
                   "one. Submit without --notify, and use `dispatch wait ID && CMD` (or "
                   "sbatch --mail-type=END) to be told");
  }
  if (request.argv.empty()) return InvalidArgument("no command given");
  SbatchJob job;
  std::vector<std::string>& args = job.args;
  args.push_back("--parsable");
  if (request.name) {
    args.push_back("--job-name=" + *request.name);
    args.push_back("--comment=" + std::string(kCommandComment) + JobNameFor(request.argv));
  } else {
    args.push_back("--job-name=" + JobNameFor(request.argv));
  }
  args.push_back("--chdir=" + request.cwd);
  args.push_back("--nodes=1");
  args.push_back("--ntasks=1");
  if (request.cpu) args.push_back("--cpus-per-task=" + std::to_string(*request.cpu));
  if (request.max_mem_gb) {
    // --mem=0 would mean "all of the node's memory": never round down to it.
    auto mib = static_cast<std::int64_t>(std::ceil(*request.max_mem_gb * 1024.0));
    args.push_back("--mem=" + std::to_string(std::max<std::int64_t>(mib, 1)) + "M");
  }
  if (request.numa_local_mem) args.push_back("--mem-bind=local");
  if (request.gpu_cores > 0) {
    args.push_back("--gres=gpu:" + std::to_string(request.gpu_cores));
    if (request.numa_local_gpu) args.push_back("--gres-flags=enforce-binding");
  }
  if (request.max_time_s) {
    std::int64_t minutes = MinutesRoundedUp(*request.max_time_s);
    if (minutes * 60 != *request.max_time_s) {
      job.notes.push_back("Slurm counts time limits in whole minutes: --max-time " +
                          FormatDuration(*request.max_time_s) + " becomes " +
                          FormatMinutes(minutes));
    }
    args.push_back("--time=" + std::to_string(minutes));
  }
  if (request.exclusive) args.push_back("--exclusive");
  const bool array = !request.array.empty();
  if (array) {
    std::string spec = protocol::FormatIndices(request.array);
    if (request.array_throttle) spec += "%" + std::to_string(*request.array_throttle);
    args.push_back("--array=" + spec);
  }
  if (!request.after.empty()) {
    std::string dependency = request.after_any ? "--dependency=afterany" : "--dependency=afterok";
    if (after.empty()) {
      for (std::uint64_t id : request.after)
        dependency += ":" + std::to_string(id);
    }
    for (const std::string& id : after)
      dependency += ":" + id;
    args.push_back(dependency);
    // As locally, a job whose --after can no longer be met ends (as
    // "dependency") instead of staying queued for ever, which is Slurm's
    // default.
    if (!request.after_any) args.push_back("--kill-on-invalid-dep=yes");
  }
  if (request.output) {
    HPCB_ASSIGN_OR_RETURN(job.output_template, SbatchPattern("--output", *request.output,
                                                             output_is_dir, "output", array));
    args.push_back("--output=" + job.output_template);
  } else {
    args.push_back("--output=/dev/null");
  }
  if (request.error) {
    HPCB_ASSIGN_OR_RETURN(job.error_template, SbatchPattern("--error", *request.error,
                                                            request.error_is_dir, "error", array));
    args.push_back("--error=" + job.error_template);
  }
  args.push_back(request.forward_env ? "--export=ALL" : "--export=NONE");

  // The job's own variables, later ones winning, in hpc-batch's order.
  std::vector<std::pair<std::string, std::string>> vars;
  if (!request.forward_env) {
    vars.emplace_back("PATH", kCleanPath);
    vars.emplace_back("LANG", kCleanLang);
    // --export=NONE would otherwise be inherited by any srun inside the job.
    vars.emplace_back("SLURM_EXPORT_ENV", "ALL");
  }
  for (const auto& [name, value] : command_env) {
    if (name == "CUDA_VISIBLE_DEVICES") continue;  // Slurm's own, as hpc-batch's is
    vars.emplace_back(name, value);
  }
  vars.emplace_back("HOME", who.home);
  vars.emplace_back("USER", who.user);
  vars.emplace_back("LOGNAME", who.user);
  vars.emplace_back("SHELL", who.shell.empty() ? "/bin/sh" : who.shell);
  std::string job_id = "\"HPC_BATCH_JOB_ID=$SLURM_JOB_ID\"";
  if (array) job_id += " \"HPC_BATCH_ARRAY_INDEX=$SLURM_ARRAY_TASK_ID\"";
  const char* no_gpus = request.gpu_cores == 0 ? "CUDA_VISIBLE_DEVICES=" : nullptr;
  job.script = request.forward_env ? ForwardingScript(vars, job_id.c_str(), no_gpus, request.argv)
                                   : CleanScript(vars, job_id.c_str(), no_gpus, request.argv);
  return job;
}

std::string OutputPathFor(const std::string& output_template, std::uint64_t id) {
  std::string out;
  const std::string id_text = std::to_string(id);
  for (std::size_t i = 0; i < output_template.size(); ++i) {
    if (output_template.compare(i, 2, "%j") == 0 || output_template.compare(i, 2, "%A") == 0) {
      out += id_text;
      ++i;
    } else if (output_template.compare(i, 2, "%a") == 0) {
      out += "INDEX";  // an array's: one file per element
      ++i;
    } else if (output_template.compare(i, 2, "%%") == 0) {
      out += '%';
      ++i;
    } else {
      out += output_template[i];
    }
  }
  return out;
}

Result<std::uint64_t> ParseSbatchId(std::string_view text) {
  std::string_view line = text.substr(0, text.find('\n'));
  line = line.substr(0, line.find(';'));
  while (!line.empty() && (line.back() == ' ' || line.back() == '\r'))
    line.remove_suffix(1);
  auto id = ParseInteger(line, 1, std::int64_t{1} << 62);
  if (!id) {
    return Error(ErrorCode::kInternal,
                 "sbatch printed no job id (got '" + std::string(text.substr(0, 200)) + "')");
  }
  return static_cast<std::uint64_t>(*id);
}

Result<std::optional<std::int64_t>> ParseSlurmDuration(std::string_view text) {
  static const char* const kNoLimit[] = {
      "UNLIMITED", "INFINITE", "Partition_Limit", "N/A", "NOT_SET", "INVALID", "NONE"};
  for (const char* word : kNoLimit) {
    if (text == word) return std::optional<std::int64_t>();
  }
  auto bad = [&] { return InvalidArgument("not a Slurm duration: '" + std::string(text) + "'"); };
  std::int64_t days = 0;
  std::string_view rest = text;
  std::size_t dash = text.find('-');
  if (dash != std::string_view::npos) {
    auto d = ParseInteger(text.substr(0, dash), 0, 1 << 20);
    if (!d) return bad();
    days = *d;
    rest = text.substr(dash + 1);
  }
  std::vector<std::string> parts = SplitOn(rest, ':');
  if (parts.size() > 3) return bad();
  std::vector<std::int64_t> numbers;
  for (const std::string& part : parts) {
    auto n = ParseInteger(part, 0, std::int64_t{1} << 40);
    if (!n) return bad();
    numbers.push_back(*n);
  }
  std::int64_t seconds = 0;
  if (dash != std::string_view::npos) {
    // D-HH, D-HH:MM, D-HH:MM:SS
    const std::int64_t scale[] = {3600, 60, 1};
    for (std::size_t i = 0; i < numbers.size(); ++i)
      seconds += numbers[i] * scale[i];
  } else if (numbers.size() == 3) {
    seconds = numbers[0] * 3600 + numbers[1] * 60 + numbers[2];
  } else if (numbers.size() == 2) {
    seconds = numbers[0] * 60 + numbers[1];
  } else {
    seconds = numbers[0] * 60;
  }
  return std::optional<std::int64_t>(days * 86400 + seconds);
}

std::int64_t MinutesRoundedUp(std::int64_t seconds) {
  if (seconds <= 0) return 0;
  return (seconds + 59) / 60;
}

std::optional<double> ParseSlurmTimestamp(std::string_view text) {
  if (text.size() < 19) return std::nullopt;
  std::string copy(text.substr(0, 19));
  std::tm tm{};
  const char* end = ::strptime(copy.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (end == nullptr || *end != '\0') return std::nullopt;
  tm.tm_isdst = -1;
  std::time_t epoch = std::mktime(&tm);
  if (epoch == static_cast<std::time_t>(-1)) return std::nullopt;
  return static_cast<double>(epoch);
}

StateView MapJobState(std::string_view slurm_state) {
  const std::string state = BaseState(slurm_state);
  static const char* const kQueued[] = {"PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED",
                                        "RESV_DEL_HOLD"};
  for (const char* word : kQueued) {
    if (state == word) return {protocol::JobState::kQueued, std::nullopt};
  }
  if (!IsTerminalState(state)) return {protocol::JobState::kRunning, std::nullopt};
  if (state == "COMPLETED" || state == "FAILED") return {protocol::JobState::kDone, std::nullopt};
  if (state == "CANCELLED") return {protocol::JobState::kDone, protocol::JobReason::kKilled};
  if (state == "TIMEOUT" || state == "DEADLINE")
    return {protocol::JobState::kDone, protocol::JobReason::kTimeout};
  if (state == "OUT_OF_MEMORY") return {protocol::JobState::kDone, protocol::JobReason::kOom};
  return {protocol::JobState::kDone, protocol::JobReason::kError};
}

bool IsTerminalState(std::string_view slurm_state) {
  static const char* const kTerminal[] = {"COMPLETED", "FAILED",        "CANCELLED", "TIMEOUT",
                                          "DEADLINE",  "OUT_OF_MEMORY", "NODE_FAIL", "BOOT_FAIL",
                                          "PREEMPTED", "SPECIAL_EXIT",  "REVOKED"};
  const std::string state = BaseState(slurm_state);
  return std::any_of(std::begin(kTerminal), std::end(kTerminal),
                     [&](const char* word) { return state == word; });
}

std::optional<std::int64_t> ExitFromWaitStatus(std::string_view raw) {
  auto status = ParseInteger(raw, 0, 0xffff);
  if (!status) return std::nullopt;
  std::int64_t signal = *status & 0x7f;
  if (signal != 0) return -signal;
  return (*status >> 8) & 0xff;
}

std::optional<std::int64_t> ExitFromPair(std::string_view pair) {
  std::size_t colon = pair.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  auto code = ParseInteger(pair.substr(0, colon), 0, 255);
  auto signal = ParseInteger(pair.substr(colon + 1), 0, 255);
  if (!code || !signal) return std::nullopt;
  if (*signal != 0) return -*signal;
  return *code;
}

std::optional<std::vector<std::string>> ShellSplit(std::string_view text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
      continue;
    }
    in_word = true;
    if (c == '\'') {
      std::size_t close = text.find('\'', i + 1);
      if (close == std::string_view::npos) return std::nullopt;
      word += text.substr(i + 1, close - i - 1);
      i = close;
    } else if (c == '"') {
      std::size_t j = i + 1;
      for (; j < text.size() && text[j] != '"'; ++j) {
        if (text[j] == '\\' && j + 1 < text.size() &&
            std::string_view("\"\\$`").find(text[j + 1]) != std::string_view::npos) {
          ++j;
        }
        word += text[j];
      }
      if (j >= text.size()) return std::nullopt;
      i = j;
    } else if (c == '\\') {
      if (i + 1 >= text.size()) return std::nullopt;
      word += text[++i];
    } else {
      word += c;
    }
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

std::string JobNameFor(const std::vector<std::string>& argv) {
  std::string name = ShellJoin(argv);
  for (char& c : name) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) c = '?';
  }
  if (name.size() > kMaxJobName) name.resize(kMaxJobName);
  return name;
}

}  // namespace hpcb::client::slurm
