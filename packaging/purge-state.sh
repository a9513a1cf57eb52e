# hpcb_purge_state: removes what hpc-batch leaves outside its installed
# files: the job cgroups (their processes are killed first: nothing would
# account for them any more), the state directory (job history,
# queued jobs, undelivered output) and the socket directory. The broker's
# user stays: its uid may still own files elsewhere. /dev/hpc-batch is left
# alone (Debian's maintainer scripts do not remove from /dev): it holds only
# symlinks, each removed when its job ends, and is on the /dev tmpfs, gone
# at the next boot.
# Shared by the .deb's postrm (purge) and scripts/hpc-batch-install --purge;
# POSIX sh, since postrm runs under /bin/sh.
hpcb_purge_state() {
  for cg in /sys/fs/cgroup/hpc-batch/job-*; do
    [ -d "$cg" ] || continue
    echo 1 > "$cg/cgroup.kill" 2>/dev/null || true
    # rmdir fails while the killed processes are still exiting.
    for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
      rmdir "$cg" 2>/dev/null && break
      sleep 0.1
    done
  done
  rmdir /sys/fs/cgroup/hpc-batch 2>/dev/null || true
  rm -rf /var/lib/hpc-batch /run/hpc-batch
}
