// The docs and the code agree: every `dispatch` line in a code block of
// README.md and docs/user-guide.md is checked against the real client and
// a user-mode daemon. A synopsis line (one with [...], | or a placeholder
// such as ID) must name only flags its subcommand's --help lists; an
// example line is run as written (its /scratch a folder of the test's),
// from a folder holding the scripts the examples name, after enough jobs
// that the ids they use exist. An example may be refused by this machine
// (no GPU, too few cpus, not an admin), but never as a usage error, and
// never hang.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/e2e/daemon_harness.h"

namespace hpcb::e2e {
namespace {

using std::chrono::seconds;

struct DocLine {
  std::string where;  // "README.md:123"
  std::string text;   // the dispatch command alone
};

// The command a code-block line shows: a leading "$ " prompt, a trailing
// "  # comment" and whatever follows "&&", "||" or ";" are not dispatch's.
std::string CommandOf(std::string line) {
  line = std::regex_replace(line, std::regex("^\\s*(\\$ )?"), "");
  for (const char* end : {"  #", " && ", " || ", "; "}) {
    if (std::size_t at = line.find(end); at != std::string::npos) line.resize(at);
  }
  while (!line.empty() && line.back() == ' ')
    line.pop_back();
  return line;
}

std::vector<DocLine> DispatchLinesOf(const std::string& relative) {
  std::ifstream in(std::string(HPCB_SOURCE_DIR) + "/" + relative);
  EXPECT_TRUE(in) << relative;
  std::vector<DocLine> lines;
  std::string line;
  bool fenced = false;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.rfind("```", 0) == 0) {
      fenced = !fenced;
      continue;
    }
    const std::string command = CommandOf(line);
    if (fenced && (command == "dispatch" || command.rfind("dispatch ", 0) == 0)) {
      lines.push_back({relative + ":" + std::to_string(number), command});
    }
  }
  return lines;
}

bool IsSynopsis(const std::string& command) {
  return std::regex_search(command, std::regex("[\\[|]|\\b(ID|CMD|COMMAND|DURATION|PATH)\\b"));
}

// Words as the shell splits them: quotes group and are dropped; "$build"
// (the README's variable for a job id) becomes `job_id`.
std::vector<std::string> Words(const std::string& command, const std::string& job_id) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (char c : command) {
    if (quote != 0) {
      if (c == quote) {
        quote = 0;
      } else {
        word += c;
      }
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == ' ') {
      if (in_word) words.push_back(word);
      word.clear();
      in_word = false;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(word);
  for (std::string& w : words) {
    if (w == "$build") w = job_id;
  }
  return words;
}

class DocsE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* file : {"README.md", "docs/user-guide.md"}) {
      for (DocLine& line : DispatchLinesOf(file))
        lines_.push_back(std::move(line));
    }
  }
  std::vector<DocLine> lines_;
  DaemonHarness daemon_;
};

TEST_F(DocsE2eTest, EverySynopsisNamesOnlyFlagsItsSubcommandHas) {
  ASSERT_TRUE(daemon_.Start()) << daemon_.log();
  int checked = 0;
  for (const DocLine& line : lines_) {
    if (!IsSynopsis(line.text)) continue;
    ++checked;
    const std::vector<std::string> words = Words(line.text, "1");
    std::vector<std::string> help_args;
    if (words.size() > 1 && words[1].rfind('-', 0) != 0) help_args.push_back(words[1]);
    help_args.push_back("--help");
    CommandResult help = daemon_.Dispatch(help_args);
    ASSERT_EQ(help.exit_code, 0) << line.where << ": dispatch " << help_args[0] << " --help\n"
                                 << help.err;
    const std::regex flag("--[a-z][a-z-]*");
    for (auto it = std::sregex_iterator(line.text.begin(), line.text.end(), flag);
         it != std::sregex_iterator(); ++it) {
      const std::string name = it->str();
      const std::regex listed("(^|[\\s,])" + name + "([\\s=,]|$)");
      EXPECT_TRUE(std::regex_search(help.out, listed))
          << line.where << ": '" << line.text << "' shows " << name << ", which 'dispatch "
          << help_args[0] << " --help' does not list:\n"
          << help.out;
    }
  }
  EXPECT_GE(checked, 15) << "the synopses were not found";
}

TEST_F(DocsE2eTest, EveryExampleRunsWithoutAUsageError) {
  ASSERT_TRUE(daemon_.Start()) << daemon_.log();
  // The scripts and the input the examples name, each doing nothing.
  for (const char* script : {"bench.sh", "prepare.sh", "train.sh", "cleanup.sh", "solver", "gen"}) {
    const std::string path = daemon_.work() + "/" + script;
    std::ofstream(path) << "#!/bin/sh\nexit 0\n";
    ASSERT_EQ(::chmod(path.c_str(), 0755), 0) << path;
  }
  std::ofstream(daemon_.work() + "/in.dat") << "1\n";
  // The examples use ids up to 14: those jobs exist, and have ended.
  int last = 0;
  for (int i = 0; i < 14; ++i) {
    CommandResult made = daemon_.Dispatch({"new", "--max-mem", "0.1", "--", "true"});
    ASSERT_EQ(made.exit_code, 0) << made.err;
    last = DaemonHarness::JobIdIn(made.out);
  }
  ASSERT_EQ(last, 14);
  ASSERT_EQ(daemon_.Dispatch({"wait", "14"}, seconds(60)).exit_code, 0);

  const std::string scratch = daemon_.work() + "/scratch";
  ASSERT_EQ(::mkdir(scratch.c_str(), 0755), 0);
  ASSERT_EQ(::chown(scratch.c_str(), daemon_.client_uid(), daemon_.client_gid()), 0);
  int ran = 0;
  std::ostringstream table;
  for (const DocLine& line : lines_) {
    if (IsSynopsis(line.text)) continue;
    ++ran;
    std::vector<std::string> words = Words(line.text, "12");
    words.erase(words.begin());  // "dispatch"
    for (std::string& word : words) {
      if (word == "/scratch") word = scratch;  // not the host's own
    }
    CommandResult result = daemon_.Dispatch(words, seconds(60));
    table << line.where << "  exit " << result.exit_code << "  " << line.text << "\n";
    if (result.exit_code != 0) table << "    " << result.err;
    // Not the exit status: `new --wait` exits with the job's own.
    EXPECT_EQ(result.err.find("dispatch: error: "), std::string::npos)
        << line.where << ": '" << line.text << "' is a usage error:\n"
        << result.err;
    EXPECT_NE(result.exit_code, -1) << line.where << ": '" << line.text << "' did not end";
  }
  std::cout << table.str();
  EXPECT_GE(ran, 20) << "the examples were not found";
}

}  // namespace
}  // namespace hpcb::e2e
