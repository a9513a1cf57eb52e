#include <unistd.h>

#include <csignal>
#include <iostream>
#include <string>
#include <vector>

#include "client/dispatch.h"

namespace {

// Ctrl-C (e.g. during attach) exits 130 without a core or a message.
extern "C" void OnInterrupt(int) {
  ::_exit(130);
}

}  // namespace

int main(int argc, char** argv) {
  (void)std::signal(SIGPIPE, SIG_IGN);  // fails only for an invalid signal number
  (void)std::signal(SIGINT, OnInterrupt);
  std::ios::sync_with_stdio(false);
  std::vector<std::string> args(argv + 1, argv + argc);
  hpcb::client::Io io{std::cout, std::cerr, ::isatty(STDERR_FILENO) == 1};
  int code = hpcb::client::RunDispatch(args, io);
  std::cout.flush();
  return code;
}
