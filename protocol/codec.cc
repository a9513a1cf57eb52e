#include "protocol/codec.h"

namespace hpcb::protocol {

bool NestingWithin(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return false;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return true;
}

Result<void> PrescanJson(std::string_view text) {
  if (!NestingWithin(text, kMaxJsonDepth)) {
    return InvalidArgument("message nests deeper than " + std::to_string(kMaxJsonDepth) +
                           " levels");
  }
  if (text.find('\0') != std::string_view::npos) {
    return InvalidArgument("message holds a NUL byte");
  }
  // An escaped backslash followed by "u0000" is text, not a NUL: count the
  // backslashes before each match.
  for (std::size_t at = text.find("u0000"); at != std::string_view::npos;
       at = text.find("u0000", at + 1)) {
    std::size_t slashes = 0;
    while (slashes < at && text[at - 1 - slashes] == '\\')
      ++slashes;
    if (slashes % 2 == 1) return InvalidArgument("a string holds a NUL (\\u0000)");
  }
  return Ok();
}

std::string CompactJson(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  bool escaped = false;
  for (char c : text) {
    if (in_string) {
      out += c;
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
      out += c;
    } else if (c != ' ' && c != '\n' && c != '\t' && c != '\r') {
      out += c;
    }
  }
  return out;
}

namespace {
struct CommandOnly {
  std::string cmd;
  HPCB_FIELDS(cmd)
};
}  // namespace

Result<std::string> PeekCommand(std::string_view text) {
  HPCB_ASSIGN_OR_RETURN(CommandOnly only, Decode<CommandOnly>(text));
  return only.cmd;
}

}  // namespace hpcb::protocol
