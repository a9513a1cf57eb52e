#include "client/dispatch.h"

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "client/backend.h"
#include "client/backend_config.h"
#include "client/command_line.h"
#include "client/parse_errors.h"
#include "client/subcommand.h"
#include "protocol/root_config.h"

namespace hpcb::client {
namespace {

constexpr const char* kUsage =
    "usage: dispatch [-h] [--version] "
    "{new,list,attach,kill,job,output,wait,hold,release,info,drain,resume} ...\n";

// The usage line printed above the mistakes of `command` ("" when none
// was named).
std::string UsageOf(std::string_view command) {
  for (const Subcommand& entry : Subcommands()) {
    if (entry.name == command) return "usage: dispatch " + std::string(entry.usage) + "\n";
  }
  return kUsage;
}

}  // namespace

const std::vector<std::string>& SubcommandNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> list;
    for (const Subcommand& entry : Subcommands())
      list.emplace_back(entry.name);
    return list;
  }();
  return names;
}

int RunDispatch(const std::vector<std::string>& args, Io io) {
  auto config = LoadBackendConfig();
  if (!config) return ReportError(config.error(), io);
  std::unique_ptr<Backend> backend = MakeBackend(*config);
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
  const std::string usage = UsageOf(build_all ? "" : first);
  if (build_all && !first.empty() && first[0] != '-') {
    return UsageError(usage,
                      "argument command: invalid choice: '" + first +
                          "' (choose from 'new', 'list', 'attach', 'kill', 'job', 'output', "
                          "'wait', 'hold', 'release', 'info', 'drain', 'resume')",
                      io);
  }
  Flags flags;
  std::vector<std::pair<const Subcommand*, const CLI::App*>> built;
  for (const Subcommand& entry : Subcommands()) {
    if (!build_all && entry.name != first) continue;
    CLI::App* sub = app.add_subcommand(std::string(entry.name), std::string(entry.summary));
    entry.add_flags(sub, &flags);
    built.emplace_back(&entry, sub);
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
    return UsageError(usage, ArgparseWording(e.get_name(), e.what(), value_type), io);
  }

  std::vector<std::string> extras = app.remaining(true);
  if (!extras.empty()) {
    std::string joined;
    for (const std::string& word : extras)
      joined += (joined.empty() ? "" : " ") + word;
    return UsageError(usage, "unrecognized arguments: " + joined, io);
  }

  for (const auto& [entry, sub] : built) {
    if (!sub->parsed()) continue;
    const Invocation call{*backend, split.command.value_or(std::vector<std::string>{}), usage, io};
    return entry->run(flags, call);
  }
  return UsageError(usage, "the following arguments are required: command", io);
}

}  // namespace hpcb::client
