#include "common/base/result.h"

#include <cerrno>
#include <cstring>

namespace hpcb {

Error Error::FromErrno(int errno_value, std::string_view context) {
  ErrorCode code = ErrorCode::kInternal;
  switch (errno_value) {
    case ENOENT:
      code = ErrorCode::kNotFound;
      break;
    case EACCES:
    case EPERM:
      code = ErrorCode::kPermissionDenied;
      break;
    case EEXIST:
      code = ErrorCode::kAlreadyExists;
      break;
    case EBUSY:
      code = ErrorCode::kFailedPrecondition;
      break;
    default:
      break;
  }
  const char* text = strerrordesc_np(errno_value);
  std::string message(context);
  message += ": ";
  message += text != nullptr ? text : "unknown error";
  return Error(code, std::move(message), errno_value);
}

Error Error::WithContext(std::string_view context) const {
  std::string message(context);
  message += ": ";
  message += message_;
  return Error(code_, std::move(message), sys_errno_);
}

}  // namespace hpcb
