// The table of `dispatch`'s subcommands, and every entry's flags and
// handler but `new`'s (new_command.cc).
#include <algorithm>
#include <optional>

#include <CLI/CLI.hpp>

#include "client/array_ids.h"
#include "client/command_line.h"
#include "client/job_names.h"
#include "client/subcommand.h"
#include "common/units.h"

namespace hpcb::client {
namespace {

// Trap: CLI11 accepts '' for a required ID. It goes to the backend as
// job 0, which answers for it; only a non-empty word is parsed here.
Result<std::uint64_t> SingleId(const std::string& word) {
  if (word.empty()) return std::uint64_t{0};
  return ParseJobId(word);
}

// What kill, wait, attach, hold and release act on, or an exit code when
// there is nothing to act on (a usage error, or said why).
struct Targets {
  std::vector<TypedId> ids;
  std::optional<int> exit;
};

std::vector<TypedId> Untyped(const std::vector<std::uint64_t>& ids) {
  std::vector<TypedId> typed;
  for (std::uint64_t id : ids)
    typed.push_back(TypedId{id, std::nullopt});
  return typed;
}

// Only kill, attach and output take '' (job 0, as SingleId does for job).
std::optional<int> RefuseEmptyId(const std::vector<std::string>& words, const Invocation& call) {
  if (std::find(words.begin(), words.end(), "") == words.end()) return std::nullopt;
  return UsageError(call.usage, "argument ID: invalid job id: ''", call.io);
}

// Ids as typed (N or A_I, array_ids.h), as job ids: A_I looked up in one
// list; with `expand_arrays` (wait), an array's id stands for its
// elements. kill, hold and release hand an array's id to the daemon,
// which acts on every element. A backend that names elements itself
// (Slurm) gets them as typed.
Targets IdsOf(const std::vector<std::string>& words, bool expand_arrays, const Invocation& call) {
  std::vector<TypedId> typed;
  bool look_up = expand_arrays;
  for (const std::string& word : words) {
    Result<TypedId> one = word.empty() ? Result<TypedId>(TypedId{}) : ParseTypedId(word);
    if (!one) return {{}, UsageError(call.usage, one.error().message(), call.io)};
    look_up = look_up || one->index.has_value();
    typed.push_back(*one);
  }
  if (call.backend.NamesElementsItself()) return {std::move(typed), std::nullopt};
  Result<std::vector<protocol::JobRow>> rows = std::vector<protocol::JobRow>{};
  if (look_up) rows = call.backend.JobsWithIds(ListIdsOf(typed));
  if (!rows) return {{}, ReportError(rows.error(), call.io)};
  Result<std::vector<std::uint64_t>> ids = ResolveTypedIds(typed, *rows, expand_arrays);
  if (!ids) return {{}, ReportError(ids.error(), call.io)};
  return {Untyped(*ids), std::nullopt};
}

// kill, wait and attach take ids or --name NAME.
void AddNameFlag(CLI::App* sub, Flags* flags) {
  flags->job_name_opt =
      sub->add_option("--name", flags->job_name, "NAME: your own jobs with this name, not ids");
}

// What kill, wait and attach act on: `ids`, parsed (IdsOf), or with
// --name the jobs JobsForName picks.
Targets TargetsOf(const Flags& flags, const std::vector<std::string>& ids, NamedUse use,
                  const Invocation& call) {
  const bool named = flags.job_name_opt->count() > 0;
  if (named && flags.id_opt->count() > 0) {
    return {{}, UsageError(call.usage, "give job ids or --name, not both", call.io)};
  }
  if (!named) {
    if (flags.id_opt->count() == 0) {
      return {{}, UsageError(call.usage, "the following arguments are required: ID", call.io)};
    }
    if (use == NamedUse::kWait) {
      if (std::optional<int> refused = RefuseEmptyId(ids, call)) return {{}, refused};
    }
    return IdsOf(ids, /*expand_arrays=*/use == NamedUse::kWait, call);
  }
  if (Result<void> valid = protocol::CheckJobName(flags.job_name); !valid) {
    return {{}, UsageError(call.usage, "argument --name: " + valid.error().message(), call.io)};
  }
  Result<std::vector<protocol::JobRow>> rows = call.backend.JobsNamed(flags.job_name);
  if (!rows) return {{}, ReportError(rows.error(), call.io)};
  Result<std::vector<std::uint64_t>> picked = JobsForName(*rows, flags.job_name, use);
  if (!picked) return {{}, ReportError(picked.error(), call.io)};
  return {Untyped(*picked), std::nullopt};
}

void AddList(CLI::App* sub, Flags* flags) {
  ListFlags& f = flags->list;
  sub->add_flag("--all", f.request.all, "all users (admins, or with --list-is-public)");
  sub->add_flag("--finished", f.request.finished, "include finished jobs with their exit");
  sub->add_flag("--json", f.json, "print the daemon's reply as JSON (one line)");
  sub->add_flag("-l,--long", f.long_format,
                "add what finished jobs used: wall and cpu time, cpus used, peak memory");
}

int RunList(const Flags& flags, const Invocation& call) {
  return call.backend.List(flags.list.request, flags.list.json, flags.list.long_format, call.io);
}

void AddAttach(CLI::App* sub, Flags* flags) {
  flags->id_opt = sub->add_option("ID", flags->attach_id, "job id");
  AddNameFlag(sub, flags);
}

int RunAttach(const Flags& flags, const Invocation& call) {
  Targets targets = TargetsOf(flags, {flags.attach_id}, NamedUse::kAttach, call);
  if (targets.exit) return *targets.exit;
  // An array's id goes to the daemon, which picks the element to follow.
  return call.backend.Attach(targets.ids.front(), call.io);
}

void AddKill(CLI::App* sub, Flags* flags) {
  flags->id_opt = sub->add_option("ID", flags->kill_id, "job id");
  AddNameFlag(sub, flags);
}

// With --name, every job it names, in turn; the last failure's code.
int RunKill(const Flags& flags, const Invocation& call) {
  Targets targets = TargetsOf(flags, {flags.kill_id}, NamedUse::kKill, call);
  if (targets.exit) return *targets.exit;
  int code = kExitOk;
  for (const TypedId& id : targets.ids) {
    if (int killed = call.backend.Kill(id, call.io); killed != kExitOk) code = killed;
  }
  return code;
}

void AddJobField(CLI::App* sub, Flags* flags) {
  JobFieldFlags& f = flags->job;
  sub->add_option("ID", f.id, "job id")->required();
  sub->add_option("FIELD", f.request.field, "max-time")
      ->required()
      ->check(CLI::IsMember({"max-time"}));
  sub->add_option("ACTION", f.request.action, "get, set (admins only), add (admins only)")
      ->required()
      ->check(CLI::IsMember({"get", "set", "add"}));
  f.value_opt = sub->add_option("DURATION", f.value, "for set and add");
  sub->add_flag("--json", f.json, "print the daemon's reply as JSON (one line)");
}

int RunJobField(const Flags& flags, const Invocation& call) {
  const JobFieldFlags& f = flags.job;
  Result<std::uint64_t> id = SingleId(f.id);
  if (!id) return UsageError(call.usage, id.error().message(), call.io);
  protocol::JobFieldRequest request = f.request;
  request.id = *id;
  const bool wants_value = request.action != "get";
  if (wants_value && f.value_opt->count() == 0) {
    return UsageError(call.usage, "the following arguments are required: DURATION", call.io);
  }
  if (!wants_value && f.value_opt->count() > 0) {
    return UsageError(call.usage, "unrecognized arguments: " + f.value, call.io);
  }
  if (wants_value) {
    auto seconds = ParseDuration(f.value);
    if (!seconds) {
      return UsageError(call.usage, "argument DURATION: " + seconds.error().message(), call.io);
    }
    request.value = *seconds;
  }
  return call.backend.JobField(request, f.json, call.io);
}

void AddInfo(CLI::App* sub, Flags* flags) {
  sub->add_flag("--json", flags->info_json, "print the daemon's reply as JSON (one line)");
}

int RunInfo(const Flags& flags, const Invocation& call) {
  return call.backend.Info(flags.info_json, call.io);
}

void AddNoFlags(CLI::App* /*sub*/, Flags* /*flags*/) {}

int RunDrain(const Flags& /*flags*/, const Invocation& call) {
  return call.backend.Drain(/*on=*/true, call.io);
}

int RunResume(const Flags& /*flags*/, const Invocation& call) {
  return call.backend.Drain(/*on=*/false, call.io);
}

void AddOutput(CLI::App* sub, Flags* flags) {
  OutputFlags& f = flags->output;
  sub->add_option("ID", f.id, "job id")->required();
  f.to_opt = sub->add_option("--to", f.to, "somewhere new for it (the job's owner only)");
}

int RunOutput(const Flags& flags, const Invocation& call) {
  const OutputFlags& f = flags.output;
  Targets targets = IdsOf({f.id}, /*expand_arrays=*/false, call);
  if (targets.exit) return *targets.exit;
  std::optional<std::string> to;
  if (f.to_opt->count() > 0) to = f.to;
  return call.backend.Output(targets.ids.front(), to, call.io);
}

void AddWait(CLI::App* sub, Flags* flags) {
  flags->id_opt = sub->add_option("ID", flags->ids, "job ids");
  AddNameFlag(sub, flags);
  flags->wait.timeout_opt = sub->add_option("--timeout", flags->wait.timeout,
                                            "DURATION; give up then with exit code 124");
}

int RunWait(const Flags& flags, const Invocation& call) {
  WaitOptions options;
  if (flags.wait.timeout_opt->count() > 0) {
    auto seconds = ParseDuration(flags.wait.timeout);
    if (!seconds) {
      return UsageError(call.usage, "argument --timeout: " + seconds.error().message(), call.io);
    }
    options.timeout_s = static_cast<double>(*seconds);
  }
  Targets targets = TargetsOf(flags, flags.ids, NamedUse::kWait, call);
  if (targets.exit) return *targets.exit;
  return call.backend.Wait(targets.ids, options, call.io);
}

void AddIds(CLI::App* sub, Flags* flags) {
  sub->add_option("ID", flags->ids, "job ids")->required();
}

int RunHold(const Flags& flags, const Invocation& call) {
  if (std::optional<int> refused = RefuseEmptyId(flags.ids, call)) return *refused;
  Targets targets = IdsOf(flags.ids, /*expand_arrays=*/false, call);
  if (targets.exit) return *targets.exit;
  return call.backend.Hold(targets.ids, /*hold=*/true, call.io);
}

int RunRelease(const Flags& flags, const Invocation& call) {
  if (std::optional<int> refused = RefuseEmptyId(flags.ids, call)) return *refused;
  Targets targets = IdsOf(flags.ids, /*expand_arrays=*/false, call);
  if (targets.exit) return *targets.exit;
  return call.backend.Hold(targets.ids, /*hold=*/false, call.io);
}

}  // namespace

const std::vector<Subcommand>& Subcommands() {
  static const std::vector<Subcommand> table = {
      {"new", "new [options] [NAME=VALUE...] -- CMD [ARGS...]",
       "submit a job: dispatch new [options] -- CMD [ARGS...]", AddNewFlags, RunNew},
      {"list", "list [--all] [--finished] [--json] [-l]", "list jobs", AddList, RunList},
      {"attach", "attach (ID | --name NAME)", "follow a job's output", AddAttach, RunAttach},
      {"kill", "kill (ID | --name NAME)", "kill a running job or remove a queued one", AddKill,
       RunKill},
      {"job", "job ID max-time get|set|add [DURATION] [--json]",
       "read or change a job: job ID max-time get|set|add [DURATION]", AddJobField, RunJobField},
      {"info", "info [--json]",
       "the machine per NUMA node (total, reserved, in use, free), policy, queue, drain", AddInfo,
       RunInfo},
      {"drain", "drain",
       "stop starting queued jobs; running ones finish, submissions are kept (admins)", AddNoFlags,
       RunDrain},
      {"resume", "resume", "start queued jobs again after drain (admins)", AddNoFlags, RunResume},
      {"output", "output ID [--to DIR|FILE]",
       "deliver a finished job's kept output again: output ID [--to DIR|FILE]", AddOutput,
       RunOutput},
      {"wait", "wait (ID [ID...] | --name NAME) [--timeout DURATION]",
       "wait for jobs to end; exit with the job's code (one job) or 1 if any failed", AddWait,
       RunWait},
      {"hold", "hold ID [ID...]",
       "keep queued jobs from starting; they keep their place in the queue", AddIds, RunHold},
      {"release", "release ID [ID...]", "let held jobs start again", AddIds, RunRelease},
  };
  return table;
}

int UsageError(std::string_view usage, const std::string& message, Io io) {
  io.err << usage << "dispatch: error: " << message << "\n";
  return kExitUsage;
}

}  // namespace hpcb::client
