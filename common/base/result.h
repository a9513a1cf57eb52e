// Result<T> and Error: the error vocabulary shared by every hpc-batch module.
//
// Result<T> is a small subset of C++23 std::expected<T, Error>: libstdc++ 12
// ships <expected> only in C++23 mode and the project is C++20. Functions
// report failure by returning an Error; no exception crosses a module.
#ifndef HPCB_COMMON_BASE_RESULT_H_
#define HPCB_COMMON_BASE_RESULT_H_

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace hpcb {

// Sent on the wire: values are fixed forever. Append; never renumber.
enum class ErrorCode : std::uint8_t {
  kInvalidArgument = 1,     // Malformed request or a broken limit.
  kNotFound = 2,            // The job, user or file does not exist.
  kAlreadyExists = 3,       // Creating something that is already there.
  kPermissionDenied = 4,    // The caller may not do this.
  kResourceExhausted = 5,   // A quota or size limit was hit.
  kFailedPrecondition = 6,  // Valid request, wrong state.
  kUnavailable = 7,         // The peer went away; retrying may help.
  kInternal = 8,            // A bug, or a syscall failing unexpectedly.
};

class [[nodiscard]] Error {
 public:
  Error(ErrorCode code, std::string message, int sys_errno = 0)
      : code_(code), message_(std::move(message)), sys_errno_(sys_errno) {}

  // ENOENT -> kNotFound, EACCES/EPERM -> kPermissionDenied, EEXIST ->
  // kAlreadyExists, EBUSY -> kFailedPrecondition, else kInternal. The
  // message reads "<context>: <strerror>".
  static Error FromErrno(int errno_value, std::string_view context);

  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  int sys_errno() const { return sys_errno_; }

  // Returns a copy whose message is "<context>: <message>".
  Error WithContext(std::string_view context) const;

 private:
  ErrorCode code_;
  std::string message_;
  int sys_errno_;
};

inline Error InvalidArgument(std::string message) {
  return Error(ErrorCode::kInvalidArgument, std::move(message));
}

// Either a T or an Error; converts implicitly from both (like StatusOr).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}      // NOLINT
  Result(Error error) : state_(std::move(error)) {}  // NOLINT

  bool has_value() const { return state_.index() == 0; }
  explicit operator bool() const { return has_value(); }

  T& value() & { return Get(); }
  const T& value() const& { return std::get<0>(state_); }
  T&& value() && { return std::move(Get()); }
  const Error& error() const& { return std::get<1>(state_); }
  T value_or(T fallback) const& { return has_value() ? std::get<0>(state_) : fallback; }

  T& operator*() & { return Get(); }
  const T& operator*() const& { return std::get<0>(state_); }
  T* operator->() { return &Get(); }
  const T* operator->() const { return &std::get<0>(state_); }

 private:
  // A programmer error, not a peer's: abort rather than throw.
  T& Get() {
    if (!has_value()) std::abort();
    return std::get<0>(state_);
  }
  std::variant<T, Error> state_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)) {}  // NOLINT

  bool has_value() const { return !error_.has_value(); }
  explicit operator bool() const { return has_value(); }
  const Error& error() const& { return *error_; }

 private:
  std::optional<Error> error_;
};

inline Result<void> Ok() {
  return {};
}

}  // namespace hpcb

#define HPCB_CONCAT_INNER_(a, b) a##b
#define HPCB_CONCAT_(a, b) HPCB_CONCAT_INNER_(a, b)

// Returns the Error from the enclosing function if `expr` failed.
#define HPCB_TRY(expr)                                      \
  do {                                                      \
    auto hpcb_try_result_ = (expr);                         \
    if (!hpcb_try_result_) return hpcb_try_result_.error(); \
  } while (false)

// `lhs = value of expr`, or return its Error.
#define HPCB_ASSIGN_OR_RETURN(lhs, expr) \
  HPCB_ASSIGN_OR_RETURN_IMPL_(HPCB_CONCAT_(hpcb_result_, __LINE__), lhs, expr)
// tmp is a name this macro declares and lhs may be a declaration: neither can be parenthesised.
#define HPCB_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr)                                \
  auto tmp = (expr);            /* NOLINT(bugprone-macro-parentheses): declared */ \
  if (!tmp) return tmp.error(); /* NOLINT(bugprone-macro-parentheses): a name */   \
  lhs = std::move(tmp).value()  /* NOLINT(bugprone-macro-parentheses): a decl */

#endif  // HPCB_COMMON_BASE_RESULT_H_
