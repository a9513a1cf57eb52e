// memhog MIB [HOLD_S]: allocates and touches MIB MiB, one MiB at a time,
// then prints "memhog: holding" and sleeps HOLD_S seconds. The tests' stand-in
// for a job that outgrows its budget, and for one whose pages must land on
// the NUMA node its cpuset names.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char** argv) {
  long mib = argc > 1 ? atol(argv[1]) : 64;
  long hold = argc > 2 ? atol(argv[2]) : 0;
  for (long i = 0; i < mib; i++) {
    char* p = malloc(1 << 20);
    if (p == NULL) {
      perror("memhog: malloc");
      return 1;
    }
    memset(p, 1, 1 << 20);  // untouched pages are never charged
  }
  printf("memhog: holding %ld MiB\n", mib);
  fflush(stdout);
  sleep((unsigned)hold);
  return 0;
}
