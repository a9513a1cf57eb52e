// Descriptor hygiene for the launcher's children (shepherds and user
// helpers), which fork without exec and so inherit every descriptor the
// launcher holds: the executor's socket, the signalfd, other children's
// pipes. A child keeps exactly what it was given and nothing else.
#ifndef HPCB_LAUNCHER_CHILD_FDS_H_
#define HPCB_LAUNCHER_CHILD_FDS_H_

#include <vector>

namespace hpcb::launcher {

// In a freshly forked child: moves `fds` (in order) to `first`, `first` + 1,
// ... and closes every descriptor above the last of them; those below
// `first` (stdin, stdout, stderr when it is 3) stay. Returns false if a dup
// failed. `fds` is rewritten with the new numbers. Async-signal-safe.
bool KeepOnlyFds(std::vector<int>& fds, int first = 3);

}  // namespace hpcb::launcher

#endif  // HPCB_LAUNCHER_CHILD_FDS_H_
