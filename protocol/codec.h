// Encode/Decode: the only place cereal's exceptions are caught.
//
// Every message type T lists its fields once, for both directions:
//   template <class F> void Fields(F&& field) { field("name", name); ... }
// or, when every wire name is its member's name and no field is marked,
//   HPCB_FIELDS(name, ...)
// and, when it has ranges or sizes to check,
//   Result<void> Validate() const;
// A type of one of the channels' kind enums (it has kKind and req) is
// written with its envelope header ("type", then "req"; envelope.h) before
// the fields; only "req" is read back (the dispatcher read "type"). A state
// file that must read files written before a field existed writes its own
// save/load instead (Put/Get/GetIfPresent below).
// Get() rethrows any cereal/RapidJSON failure as a FieldError naming the
// field and the type it should have, and Decode() turns that into an Error:
// "field 'cpu' must be an integer". Nested messages prefix the path
// ("field 'jobs[3].id' ..."). Frames are bounded before parsing (framing.h)
// and nesting depth is checked before RapidJSON's recursive parser sees the
// text, so hostile input cannot exhaust the stack.
//
// std::optional<T> is written as a JSON array of zero or one element.
#ifndef HPCB_PROTOCOL_CODEC_H_
#define HPCB_PROTOCOL_CODEC_H_

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <cereal/archives/json.hpp>
#include <cereal/types/map.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>

#include "common/base/result.h"

// HPCB_FIELDS(a, b) writes `template <class F> void Fields(F&& field) {
// field("a", a); field("b", b); }`: each wire name is its member's name,
// in the order listed. A list with marked fields, or a base class's,
// writes its Fields() from the statement forms: HPCB_FIELD_LIST(a, b)
// calls the two alone (one statement), HPCB_MISSABLE_FIELDS(c) `field("c",
// c, kMayBeMissing)`. HPCB_WIRE_ENUM (below) declares a wire enum and its
// names from one list. The bargain: one line per message or enum instead
// of one (or two) per field, for these lines of preprocessor recursion
// (C++20 __VA_OPT__; 64 items at least; a list too long for the rescans
// fails to compile, it never comes out partial).
#define HPCB_FIELDS(...)          \
  template <class F>              \
  void Fields(F&& field) {        \
    HPCB_FIELD_LIST(__VA_ARGS__); \
  }
#define HPCB_FIELD_LIST(...) (HPCB_FOR_EACH_(HPCB_FIELD_, , __VA_ARGS__) void())
#define HPCB_MISSABLE_FIELDS(...) (HPCB_FOR_EACH_(HPCB_MISSABLE_FIELD_, , __VA_ARGS__) void())
#define HPCB_FIELD_(unused, member) field(#member, member),
#define HPCB_MISSABLE_FIELD_(unused, member) \
  field(#member, member, ::hpcb::protocol::kMayBeMissing),
// HPCB_FOR_EACH_(m, context, a, b) is `m(context, a) m(context, b)`.
#define HPCB_FOR_EACH_(macro, context, ...) \
  __VA_OPT__(HPCB_EXPAND64_(HPCB_FOR_EACH_STEP_(macro, context, __VA_ARGS__)))
#define HPCB_FOR_EACH_STEP_(macro, context, item, ...) \
  macro(context, item) __VA_OPT__(HPCB_FOR_EACH_AGAIN_ HPCB_PARENS_(macro, context, __VA_ARGS__))
#define HPCB_FOR_EACH_AGAIN_() HPCB_FOR_EACH_STEP_
#define HPCB_PARENS_ ()
#define HPCB_EXPAND64_(...) \
  HPCB_EXPAND16_(HPCB_EXPAND16_(HPCB_EXPAND16_(HPCB_EXPAND16_(__VA_ARGS__))))
#define HPCB_EXPAND16_(...) HPCB_EXPAND4_(HPCB_EXPAND4_(HPCB_EXPAND4_(HPCB_EXPAND4_(__VA_ARGS__))))
#define HPCB_EXPAND4_(...) HPCB_EXPAND1_(HPCB_EXPAND1_(HPCB_EXPAND1_(HPCB_EXPAND1_(__VA_ARGS__))))
#define HPCB_EXPAND1_(...) __VA_ARGS__

namespace cereal {

template <class Archive, class T>
void save(Archive& ar, const std::optional<T>& value) {
  ar(make_size_tag(static_cast<size_type>(value ? 1 : 0)));
  if (value) ar(*value);
}

template <class Archive, class T>
void load(Archive& ar, std::optional<T>& value) {
  size_type count = 0;
  ar(make_size_tag(count));
  if (count > 1) throw Exception("optional holds more than one value");
  if (count == 0) {
    value.reset();
    return;
  }
  T inner{};
  ar(inner);
  value = std::move(inner);
}

}  // namespace cereal

namespace hpcb::protocol {

// Thrown only inside load(); caught by Decode().
class FieldError : public std::runtime_error {
 public:
  explicit FieldError(const std::string& what) : std::runtime_error(what) {}
};

template <class T>
struct IsOptional : std::false_type {};
template <class T>
struct IsOptional<std::optional<T>> : std::true_type {};
template <class T>
struct IsVector : std::false_type {};
template <class T>
struct IsVector<std::vector<T>> : std::true_type {};

template <class T>
std::string DescribeType() {
  if constexpr (std::is_same_v<T, bool>) {
    return "a boolean";
  } else if constexpr (std::is_integral_v<T> && std::is_unsigned_v<T>) {
    return "a non-negative integer";
  } else if constexpr (std::is_integral_v<T>) {
    return "an integer";
  } else if constexpr (std::is_floating_point_v<T>) {
    return "a number";
  } else if constexpr (std::is_same_v<T, std::string>) {
    return "a string";
  } else if constexpr (IsOptional<T>::value) {
    return "an array of at most one " + DescribeType<typename T::value_type>().substr(2);
  } else if constexpr (IsVector<T>::value) {
    return "an array of " + DescribeType<typename T::value_type>().substr(2) + "s";
  } else if constexpr (std::is_same_v<T, std::map<std::string, std::string>>) {
    return "an object of strings";
  } else {
    return "an object";
  }
}

// A wire enum is an enum class with a specialisation of EnumNames listing
// every value with its name, both declared from one list (in
// hpcb::protocol):
//   HPCB_WIRE_ENUM(JobState, (kQueued, "queued"), (kRunning, "running"));
// It is written as its name and read back only if the name is one of them,
// so an unknown state or kind fails at the field that holds it.
template <class E>
struct EnumNames;

#define HPCB_WIRE_ENUM(Enum, ...)                                                    \
  enum class Enum { HPCB_FOR_EACH_(HPCB_ENUM_VALUE_, Enum, __VA_ARGS__) };           \
  template <>                                                                        \
  struct EnumNames<Enum> {                                                           \
    static constexpr auto kNames = std::to_array<std::pair<Enum, std::string_view>>( \
        {HPCB_FOR_EACH_(HPCB_ENUM_NAME_, Enum, __VA_ARGS__)});                       \
  }
#define HPCB_ENUM_VALUE_(Enum, pair) HPCB_FIRST_ pair,
#define HPCB_ENUM_NAME_(Enum, pair) {Enum::HPCB_FIRST_ pair, HPCB_SECOND_ pair},
#define HPCB_FIRST_(value, name) value
#define HPCB_SECOND_(value, name) name

template <class E>
concept WireEnum = std::is_enum_v<E> && requires {
  EnumNames<E>::kNames;
};

template <WireEnum E>
std::string_view NameOf(E value) {
  for (const auto& [candidate, name] : EnumNames<E>::kNames) {
    if (candidate == value) return name;
  }
  return "?";
}

template <WireEnum E>
std::optional<E> FromName(std::string_view text) {
  for (const auto& [candidate, name] : EnumNames<E>::kNames) {
    if (name == text) return candidate;
  }
  return std::nullopt;
}

// A wire enum prints as its name (logs, test failures).
template <WireEnum E>
std::ostream& operator<<(std::ostream& out, E value) {
  return out << NameOf(value);
}

// "a, b or c": the names, for error messages.
template <WireEnum E>
std::string NameList() {
  std::string out;
  const auto& names = EnumNames<E>::kNames;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " or " : ", ";
    out += names[i].second;
  }
  return out;
}

template <class Archive, class T>
void Put(Archive& ar, const char* name, const T& value) {
  ar(cereal::make_nvp(name, value));
}

template <class Archive, class T>
void Get(Archive& ar, const char* name, T& value) {
  try {
    ar(cereal::make_nvp(name, value));
  } catch (const FieldError& nested) {
    // A nested message already named its own field; prefix ours.
    std::string text = nested.what();
    const std::string marker = "field '";
    if (text.rfind(marker, 0) == 0) {
      throw FieldError(marker + name + "." + text.substr(marker.size()));
    }
    throw;
  } catch (const std::exception& failure) {
    std::string text = failure.what();
    if (text.find("not found") != std::string::npos &&
        text.find(std::string("(") + name + ")") != std::string::npos) {
      throw FieldError(std::string("field '") + name + "' is missing");
    }
    throw FieldError(std::string("field '") + name + "' must be " + DescribeType<T>());
  }
}

// For a field an older peer or file may lack (one added after they were
// written): such input loads with `value` left as it was. Every other
// field must be there. In a field list:
//   field("usage", usage, kMayBeMissing);
template <class Archive, class T>
void GetIfPresent(Archive& ar, const char* name, T& value) {
  try {
    Get(ar, name, value);
  } catch (const FieldError& failure) {
    if (std::string(failure.what()) != std::string("field '") + name + "' is missing") throw;
  }
}

inline constexpr struct MayBeMissing {
} kMayBeMissing;

template <class Archive, WireEnum E>
void Put(Archive& ar, const char* name, const E& value) {
  Put(ar, name, std::string(NameOf(value)));
}

template <class Archive, WireEnum E>
void Put(Archive& ar, const char* name, const std::optional<E>& value) {
  std::optional<std::string> text;
  if (value) text = std::string(NameOf(*value));
  Put(ar, name, text);
}

template <WireEnum E>
E EnumFromField(const char* name, const std::string& text) {
  std::optional<E> value = FromName<E>(text);
  if (!value) {
    throw FieldError(std::string("field '") + name + "' must be one of " + NameList<E>() +
                     " (not '" + text.substr(0, 40) + "')");
  }
  return *value;
}

template <class Archive, WireEnum E>
void Get(Archive& ar, const char* name, E& value) {
  std::string text;
  Get(ar, name, text);
  value = EnumFromField<E>(name, text);
}

template <class Archive, WireEnum E>
void Get(Archive& ar, const char* name, std::optional<E>& value) {
  std::optional<std::string> text;
  Get(ar, name, text);
  value.reset();
  if (text) value = EnumFromField<E>(name, *text);
}

template <class A, WireEnum Kind>
void PutHeader(A& ar, Kind kind, std::uint64_t req) {
  Put(ar, "type", kind);
  Put(ar, "req", req);
}

template <class T>
concept HasOwnSave = requires(const T& message, cereal::JSONOutputArchive& ar) {
  message.save(ar);
};

// A type with a field list and no save of its own (a type with both keeps
// its own).
template <class T>
concept FieldListed = !HasOwnSave<T> && requires(T & message) {
  message.Fields([](const char*, auto&, auto...) {});
};

// Found by cereal through ADL for every field-listed type, nested ones too.
template <class A, FieldListed T>
void save(A& ar, const T& message) {
  if constexpr (requires { T::kKind; }) PutHeader(ar, T::kKind, message.req);
  // A user request's "cmd" (user_requests.h), read by the broker's dispatch,
  // and a reply's "ok" (client_messages.h), which tells it from an error.
  if constexpr (requires { T::kCmd; }) Put(ar, "cmd", std::string(T::kCmd));
  if constexpr (requires { T::kOk; }) Put(ar, "ok", true);
  // Fields only reads through the saving visitor.
  const_cast<T&>(message).Fields(
      [&ar](const char* name, const auto& value, auto...) { Put(ar, name, value); });
}

template <class A, FieldListed T>
void load(A& ar, T& message) {
  if constexpr (requires { T::kKind; }) Get(ar, "req", message.req);
  message.Fields([&ar](const char* name, auto& value, auto... may_be_missing) {
    if constexpr (sizeof...(may_be_missing) > 0) {
      GetIfPresent(ar, name, value);
    } else {
      Get(ar, name, value);
    }
  });
}

template <class A, class T>
void SaveMessage(A& ar, const T& message) {
  if constexpr (FieldListed<T>) {
    save(ar, message);
  } else {
    message.save(ar);
  }
}

template <class A, class T>
void LoadMessage(A& ar, T& message) {
  if constexpr (FieldListed<T>) {
    load(ar, message);
  } else {
    message.load(ar);
  }
}

// Deepest array/object nesting allowed in any frame; our messages need 4.
inline constexpr int kMaxJsonDepth = 16;

// Returns false if `text` nests brackets deeper than `max_depth` (strings
// are skipped, escapes honoured).
bool NestingWithin(std::string_view text, int max_depth);

// What every frame must pass before RapidJSON sees it: nesting within
// kMaxJsonDepth (its parser recurses), and no NUL, raw or escaped as
// \u0000 (cereal hands strings over as C strings, so a NUL would silently
// cut a value short and every later check would see the shorter one).
Result<void> PrescanJson(std::string_view text);

// Drops the whitespace cereal puts between tokens (it always breaks lines).
std::string CompactJson(std::string_view text);

template <class T>
std::string Encode(const T& message) {
  std::ostringstream out;
  {
    cereal::JSONOutputArchive ar(out, cereal::JSONOutputArchive::Options::NoIndent());
    SaveMessage(ar, message);
  }
  return CompactJson(out.str());
}

// Decodes one T from `text`. Never throws. Errors are kInvalidArgument.
template <class T>
Result<T> Decode(std::string_view text) {
  if (Result<void> scanned = PrescanJson(text); !scanned) return scanned.error();
  T message{};
  try {
    std::istringstream in{std::string(text)};
    cereal::JSONInputArchive ar(in);
    LoadMessage(ar, message);
  } catch (const FieldError& failure) {
    return InvalidArgument(failure.what());
  } catch (const std::bad_alloc&) {
    return Error(ErrorCode::kResourceExhausted, "message too large to decode");
  } catch (const std::exception& failure) {
    return InvalidArgument(std::string("message is not a JSON object: ") + failure.what());
  }
  if constexpr (requires { message.Validate(); }) {
    if (Result<void> valid = message.Validate(); !valid) return valid.error();
  }
  return message;
}

// Reads just the "cmd" of a user's request, for dispatch (a channel
// message's "type" is read by PeekEnvelope, envelope.h).
Result<std::string> PeekCommand(std::string_view text);

}  // namespace hpcb::protocol

#endif  // HPCB_PROTOCOL_CODEC_H_
