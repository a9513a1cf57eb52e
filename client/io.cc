#include "client/io.h"

#include "client/format.h"

namespace hpcb::client {

int ReportError(const Error& error, Io io) {
  io.out.flush();
  io.err << "dispatch: " << EscapeControl(error.message()) << "\n";
  io.err.flush();
  return kExitError;
}

}  // namespace hpcb::client
