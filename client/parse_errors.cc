#include "client/parse_errors.h"

#include <regex>
#include <sstream>

namespace hpcb::client {
namespace {

// "a,b,c" -> "'a', 'b', 'c'", argparse's list of choices.
std::string QuotedChoices(const std::string& joined) {
  std::string out;
  std::stringstream in(joined);
  std::string choice;
  while (std::getline(in, choice, ','))
    out += (out.empty() ? "'" : ", '") + choice + "'";
  return out;
}

}  // namespace

std::string ArgparseWording(const std::string& kind, const std::string& message,
                            const std::function<std::string(const std::string&)>& value_type) {
  std::smatch m;
  // The texts below are CLI11's (Error.hpp); a unit test holds them to the
  // installed version.
  if (kind == "ConversionError" &&
      std::regex_match(message, m, std::regex("Could not convert: (\\S+) = (.*)"))) {
    return "argument " + m[1].str() + ": invalid " + value_type(m[1].str()) + " value: '" +
           m[2].str() + "'";
  }
  if (kind == "ValidationError" &&
      std::regex_match(message, m, std::regex("(\\S+): (.*) not in \\{(.*)\\}"))) {
    return "argument " + m[1].str() + ": invalid choice: '" + m[2].str() + "' (choose from " +
           QuotedChoices(m[3].str()) + ")";
  }
  if (kind == "RequiredError" && std::regex_match(message, m, std::regex("(\\S+) is required"))) {
    return "the following arguments are required: " + m[1].str();
  }
  if (kind == "ArgumentMismatch" &&
      std::regex_match(message, m, std::regex("(\\S+): 1 required \\S+ missing"))) {
    return "argument " + m[1].str() + ": expected one argument";
  }
  if (kind == "RequiredError" && message == "A subcommand is required") {
    return "the following arguments are required: command";
  }
  return message;
}

}  // namespace hpcb::client
