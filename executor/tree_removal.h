// TreeRemoval: a job's directory removed a bounded number of entries at a
// time, so that a tree a job filled with millions of files is taken apart
// across loop turns instead of holding the executor in one call.
//
// Nothing is ever followed: each level is opened with O_NOFOLLOW|
// O_DIRECTORY and emptied through its fd, names are only unlinked, and a
// directory is checked again through its fd once opened (the name may have
// been swapped). What `owner` (when given) does not own, or what lies on
// another filesystem, is left in place with every directory above it: root
// deletes nothing the job's user could not have deleted. A level deeper
// than `max_depth` is left too. The streams stay open between steps, so a
// step costs its entries, not a new scan of what was already removed.
#ifndef HPCB_EXECUTOR_TREE_REMOVAL_H_
#define HPCB_EXECUTOR_TREE_REMOVAL_H_

#include <dirent.h>
#include <sys/types.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/base/result.h"
#include "executor/job_dir.h"

namespace hpcb::executor {

class TreeRemoval {
 public:
  // Nothing is opened until the first step: many removals may wait their
  // turn, and each holds no descriptor until then.
  TreeRemoval(std::string path, std::optional<JobDirOwner> owner, int max_depth = 32)
      : path_(std::move(path)), owner_(owner), max_depth_(max_depth) {}

  // Looks at up to `budget` entries, taking what it used from it; true
  // once the walk is over (nothing at the path, or a non-directory there,
  // which is unlinked, is over at once). Left entries (see above) are then
  // reported by `Outcome`.
  Result<bool> Step(std::size_t& budget);
  // Once Step said true: Ok, or what was left and why.
  Result<void> Outcome() const;
  const std::string& path() const { return path_; }

 private:
  struct DirCloser {
    void operator()(DIR* dir) const { ::closedir(dir); }
  };
  struct Level {
    std::unique_ptr<DIR, DirCloser> stream;
    std::string name;  // in the level above; "" for the top
    std::size_t kept_before = 0;
  };
  Result<void> OpenTop();
  Result<void> Visit(const struct dirent& entry);
  Result<void> Finish(Level level);

  std::string path_;
  std::optional<JobDirOwner> owner_;
  int max_depth_ = 32;
  dev_t device_ = 0;
  std::vector<Level> levels_;
  std::size_t kept_ = 0;
  bool too_deep_ = false;
  bool opened_ = false;
  bool done_ = false;
};

// The whole tree at once (for a registration undone, or a test).
Result<void> RemoveJobDir(const std::string& path, std::optional<JobDirOwner> owner,
                          int max_depth = 32);

}  // namespace hpcb::executor

#endif  // HPCB_EXECUTOR_TREE_REMOVAL_H_
