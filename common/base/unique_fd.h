// UniqueFd: sole owner of a file descriptor. A raw `int fd` parameter
// anywhere else in the tree means the callee only borrows it.
#ifndef HPCB_COMMON_BASE_UNIQUE_FD_H_
#define HPCB_COMMON_BASE_UNIQUE_FD_H_

#include <unistd.h>

#include <utility>

namespace hpcb {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() { return std::exchange(fd_, -1); }
  // close(2) errors are deliberately ignored: the fd is gone either way and
  // retrying close on Linux can close an unrelated, reused descriptor.
  void reset(int fd = -1) {
    if (fd_ >= 0) (void)::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

}  // namespace hpcb

#endif  // HPCB_COMMON_BASE_UNIQUE_FD_H_
