// Taking back pages a fork left shared: which mappings count, and that a
// claimed page is then written without a fault while an unclaimed one
// faults, with a real child holding the other copy; within the caps.
#include "launcher/private_pages.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

namespace hpcb::launcher {
namespace {

constexpr std::size_t kPages = 16;

bool KernelCanClaim() {
  Result<std::size_t> probe = ClaimResidentPages({});
  return probe || !ClaimingUnsupported(probe.error());
}

long MinorFaults() {
  struct rusage usage {};
  ::getrusage(RUSAGE_THREAD, &usage);
  return usage.ru_minflt;
}

// Anonymous private pages, each written once (so resident).
class Pages {
 public:
  Pages() : page_(static_cast<std::size_t>(::sysconf(_SC_PAGESIZE))) {
    base_ = static_cast<char*>(::mmap(nullptr, kPages * page_, PROT_READ | PROT_WRITE,
                                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    // Base pages only: a huge page would make a neighbour resident.
    if (base_ != MAP_FAILED) (void)::madvise(base_, kPages * page_, MADV_NOHUGEPAGE);
  }
  ~Pages() {
    if (base_ != MAP_FAILED) ::munmap(base_, kPages * page_);
  }
  Pages(const Pages&) = delete;
  Pages& operator=(const Pages&) = delete;
  bool ok() const { return base_ != MAP_FAILED; }
  void Touch(std::size_t step) {
    for (std::size_t i = 0; i < kPages; i += step)
      base_[i * page_] = 1;
  }
  // Minor faults taken writing every page once more.
  long FaultsWritingAll() {
    const long before = MinorFaults();
    for (std::size_t i = 0; i < kPages; ++i)
      static_cast<volatile char*>(base_)[i * page_] = 2;
    return MinorFaults() - before;
  }
  MemoryRange range() const {
    const auto start = reinterpret_cast<std::uintptr_t>(base_);
    return {start, start + kPages * page_};
  }
  std::size_t ResidentCount() const {
    unsigned char resident[kPages] = {};
    if (::mincore(base_, kPages * page_, resident) != 0) return 0;
    std::size_t count = 0;
    for (unsigned char r : resident)
      count += r & 1;
    return count;
  }

 private:
  std::size_t page_;
  char* base_;
};

// A forked child that holds its copy of every page until destroyed.
class SharingChild {
 public:
  SharingChild() {
    if (::pipe(pipe_) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(pipe_[1]);
      char byte;
      (void)!::read(pipe_[0], &byte, 1);
      ::_exit(0);
    }
    ::close(pipe_[0]);
  }
  ~SharingChild() {
    ::close(pipe_[1]);
    if (pid_ > 0) ::waitpid(pid_, nullptr, 0);
  }
  SharingChild(const SharingChild&) = delete;
  SharingChild& operator=(const SharingChild&) = delete;
  bool ok() const { return pid_ > 0; }

 private:
  int pipe_[2] = {-1, -1};
  pid_t pid_ = -1;
};

TEST(ClaimableRangesTest, KeepsOnlyPrivateWritableAnonymousMappings) {
  const std::string maps =
      "55b20e65f000-55b20e671000 r--p 00000000 fe:00 11010052 /usr/sbin/hpc-batchd\n"
      "55b20e765000-55b20e766000 rw-p 00106000 fe:00 11010052 /usr/sbin/hpc-batchd\n"
      "55b20e766000-55b20e769000 rw-p 00000000 00:00 0 \n"
      "55b220c14000-55b220c4e000 rw-p 00000000 00:00 0          [heap]\n"
      "7f79b30cc000-7f79b30cf000 rw-s 00000000 00:01 0          /dev/zero (deleted)\n"
      "7f79b30f5000-7f79b324b000 r-xp 00026000 fe:00 332835     /usr/lib/libc.so.6\n"
      "not a mapping at all\n"
      "7f79b3400000-7f79b3300000 rw-p 00000000 00:00 0\n"  // ends before it starts
      "zz-7f79b3301000 rw-p 00000000 00:00 0\n"
      "7f79b3302000-7f79b3303000 rw-p\n"  // cut short: no inode
      "\n"
      "7ffe24ff0000-7ffe25011000 rw-p 00000000 00:00 0          [stack]";  // no newline
  const std::vector<MemoryRange> ranges = ClaimableRanges(maps);
  ASSERT_EQ(ranges.size(), 3u);
  EXPECT_EQ(ranges[0].start, 0x55b20e766000u);
  EXPECT_EQ(ranges[0].end, 0x55b20e769000u);
  EXPECT_EQ(ranges[1].start, 0x55b220c14000u);
  EXPECT_EQ(ranges[1].end, 0x55b220c4e000u);
  EXPECT_EQ(ranges[2].start, 0x7ffe24ff0000u);
  EXPECT_EQ(ranges[2].end, 0x7ffe25011000u);
  EXPECT_TRUE(ClaimableRanges("").empty());
}

TEST(ClaimResidentPagesTest, AClaimedPageIsWrittenWithoutAFaultAfterAFork) {
  if (!KernelCanClaim()) GTEST_SKIP() << "this kernel has no MADV_POPULATE_WRITE";
  Pages pages;
  ASSERT_TRUE(pages.ok());
  pages.Touch(1);
  {
    // Unclaimed, for comparison: every write after the fork copies a page.
    SharingChild child;
    ASSERT_TRUE(child.ok());
    EXPECT_GE(pages.FaultsWritingAll(), static_cast<long>(kPages) / 2);
  }
  SharingChild child;
  ASSERT_TRUE(child.ok());
  Result<std::size_t> claimed = ClaimResidentPages({pages.range()});
  ASSERT_TRUE(claimed) << claimed.error().message();
  EXPECT_EQ(*claimed, kPages);
  EXPECT_LE(pages.FaultsWritingAll(), 2);
}

TEST(ClaimResidentPagesTest, PagesNeverTouchedStayUnallocated) {
  if (!KernelCanClaim()) GTEST_SKIP() << "this kernel has no MADV_POPULATE_WRITE";
  Pages pages;
  ASSERT_TRUE(pages.ok());
  pages.Touch(2);  // every other page
  ASSERT_EQ(pages.ResidentCount(), kPages / 2);
  SharingChild child;
  ASSERT_TRUE(child.ok());
  Result<std::size_t> claimed = ClaimResidentPages({pages.range()});
  ASSERT_TRUE(claimed) << claimed.error().message();
  EXPECT_EQ(*claimed, kPages / 2);
  EXPECT_EQ(pages.ResidentCount(), kPages / 2);
}

TEST(ClaimResidentPagesTest, AMappingOverTheCapIsSkipped) {
  if (!KernelCanClaim()) GTEST_SKIP() << "this kernel has no MADV_POPULATE_WRITE";
  const std::size_t size = std::size_t{512} << 20;
  void* base = ::mmap(nullptr, size, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  ASSERT_NE(base, MAP_FAILED);
  static_cast<char*>(base)[0] = 1;
  const auto start = reinterpret_cast<std::uintptr_t>(base);
  Result<std::size_t> claimed = ClaimResidentPages({{start, start + size}});
  ::munmap(base, size);
  ASSERT_TRUE(claimed) << claimed.error().message();
  EXPECT_EQ(*claimed, 0u);
}

TEST(ClaimResidentPagesTest, StopsAtFourMebibytesInAll) {
  if (!KernelCanClaim()) GTEST_SKIP() << "this kernel has no MADV_POPULATE_WRITE";
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t size = std::size_t{8} << 20;
  auto* base = static_cast<char*>(
      ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(base, MAP_FAILED);
  (void)::madvise(base, size, MADV_NOHUGEPAGE);
  for (std::size_t at = 0; at < size; at += page)
    base[at] = 1;
  const auto start = reinterpret_cast<std::uintptr_t>(base);
  Result<std::size_t> claimed = ClaimResidentPages({{start, start + size}});
  ::munmap(base, size);
  ASSERT_TRUE(claimed) << claimed.error().message();
  EXPECT_EQ(*claimed, (std::size_t{4} << 20) / page);
}

TEST(ClaimOwnPagesTest, ClaimsThisProcesssPagesAndNamesAListItCannotRead) {
  if (!KernelCanClaim()) GTEST_SKIP() << "this kernel has no MADV_POPULATE_WRITE";
  Result<std::size_t> claimed = ClaimOwnPages();
  ASSERT_TRUE(claimed) << claimed.error().message();
  EXPECT_GT(*claimed, 0u);  // a heap and a stack at least

  // Not a sign the kernel cannot do it: the launcher would ask again.
  Result<std::size_t> missing = ClaimOwnPages("/nonexistent/self/maps");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message().find("/nonexistent/self/maps"), std::string::npos);
  EXPECT_FALSE(ClaimingUnsupported(missing.error()));
}

TEST(ClaimingUnsupportedTest, OnlyTheKernelsRefusalsCount) {
  EXPECT_TRUE(ClaimingUnsupported(Error::FromErrno(EINVAL, "madvise")));
  EXPECT_TRUE(ClaimingUnsupported(Error::FromErrno(ENOSYS, "madvise")));
  EXPECT_TRUE(ClaimingUnsupported(Error::FromErrno(EPERM, "madvise")));
  EXPECT_FALSE(ClaimingUnsupported(Error::FromErrno(ENOMEM, "madvise")));
  EXPECT_FALSE(ClaimingUnsupported(Error(ErrorCode::kUnavailable, "read")));
}

}  // namespace
}  // namespace hpcb::launcher
