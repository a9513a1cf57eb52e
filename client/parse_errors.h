// Command-line mistakes worded the way the original tool (Python's
// argparse) words them, so scripts and habits that match on them keep
// working: "argument --max-mem: invalid float value: '1G'" instead of
// CLI11's "Could not convert: --max-mem = 1G".
#ifndef HPCB_CLIENT_PARSE_ERRORS_H_
#define HPCB_CLIENT_PARSE_ERRORS_H_

#include <functional>
#include <string>

namespace hpcb::client {

// `kind` is CLI11's error class name (ParseError::get_name()), `message`
// its text. `value_type(name)` names what option `name` holds ("float",
// "int"). Anything not recognised comes back as it was.
std::string ArgparseWording(const std::string& kind, const std::string& message,
                            const std::function<std::string(const std::string&)>& value_type);

}  // namespace hpcb::client

#endif  // HPCB_CLIENT_PARSE_ERRORS_H_
