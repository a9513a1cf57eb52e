// Where a subcommand writes and what it exits with: the bottom of the
// client, included by everything that prints.
#ifndef HPCB_CLIENT_IO_H_
#define HPCB_CLIENT_IO_H_

#include <ostream>

#include "common/base/result.h"

namespace hpcb::client {

struct Io {
  std::ostream& out;
  std::ostream& err;
  bool err_is_tty = false;  // attach may show a "still waiting" notice
};

inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;
inline constexpr int kExitUsage = 2;

// "dispatch: MESSAGE" on stderr; returns kExitError.
int ReportError(const Error& error, Io io);

}  // namespace hpcb::client

#endif  // HPCB_CLIENT_IO_H_
