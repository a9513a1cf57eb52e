// Stands in for hpc-batch-broker in the launcher's flag-check test: exits 0
// only if it runs as nobody (65534:65534, no supplementary groups), with no
// new privileges and no descriptor above 3 (the binary's own) inherited;
// otherwise the exit code names what was wrong.
#include <dirent.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdlib>

int main() {
  if (getuid() != 65534 || geteuid() != 65534) return 10;
  if (getgid() != 65534 || getegid() != 65534) return 11;
  if (getgroups(0, nullptr) != 0) return 12;
  if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1) return 13;
  DIR* fds = opendir("/proc/self/fd");
  if (fds == nullptr) return 14;
  const int own = dirfd(fds);
  while (dirent* entry = readdir(fds)) {
    const long fd = std::strtol(entry->d_name, nullptr, 10);
    if (entry->d_name[0] != '.' && fd > 3 && fd != own) return 15;
  }
  closedir(fds);
  return 0;
}
