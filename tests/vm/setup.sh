#!/usr/bin/env bash
# Prepares what tests/vm/boot.sh needs, in VM_DIR (default /var/tmp/hpc-batch-vm):
# qemu, a Debian kernel and the busybox initramfs that turns the host's own
# /usr and /etc into the guest's root. Idempotent: a second run only rebuilds
# the initramfs (under a second). Exits 77 when qemu or the kernel cannot be
# had (not root, no apt, archive unreachable), so callers can skip cleanly.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
vm_dir=${VM_DIR:-/var/tmp/hpc-batch-vm}
skip() { echo "vm setup: $*; skipping the guest tests" >&2; exit 77; }
export DEBIAN_FRONTEND=noninteractive

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
if ! command -v qemu-system-x86_64 >/dev/null; then
  command -v apt-get >/dev/null || skip "no qemu-system-x86_64 and no apt-get"
  # qemu-system-x86 without recommends: no firmware blobs, no GUI (~60 MB).
  { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends \
      qemu-system-x86 >/dev/null; } || skip "cannot install qemu-system-x86"
fi

# Whatever linux-image-amd64 points at: the archive drops old ABIs, so a
# pinned version would stop downloading one day.
kernel_pkg() { apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-/{print $2; exit}'; }
pkg=${VM_KERNEL_PKG:-$(kernel_pkg)}
if [ -z "$pkg" ]; then $SUDO apt-get update -qq || true; pkg=$(kernel_pkg); fi
[ -n "$pkg" ] || skip "apt knows no linux-image-amd64"
kver=${pkg#linux-image-}

mkdir -p "$vm_dir/debs"
if [ ! -f "$vm_dir/kernel/boot/vmlinuz-$kver" ]; then
  # Downloaded and unpacked, never installed: installing a kernel on the host
  # would pull in initramfs-tools and run its hooks, for nothing.
  # apt drops privileges to _apt for downloads; it warns unless it may write here.
  chown _apt "$vm_dir/debs" 2>/dev/null || true
  (cd "$vm_dir/debs" && apt-get download -qq "$pkg" busybox-static kmod 2>&1 |
     grep -v 'Download is performed unsandboxed' || true)
  ls "$vm_dir"/debs/"${pkg}"_*.deb >/dev/null 2>&1 || skip "cannot download $pkg"
  rm -rf "$vm_dir/kernel" "$vm_dir/busybox" "$vm_dir/kmod"
  dpkg-deb -x "$vm_dir"/debs/"${pkg}"_*.deb "$vm_dir/kernel"
  dpkg-deb -x "$(ls "$vm_dir"/debs/busybox-static_*.deb | tail -1)" "$vm_dir/busybox"
  dpkg-deb -x "$(ls "$vm_dir"/debs/kmod_*.deb | tail -1)" "$vm_dir/kmod"
  # The .deb ships no modules.dep (postinst makes it); without one the guest's
  # modprobe cannot autoload anything systemd asks for.
  # Best effort: kmod needs the host's libkmod2, which a bare machine may lack.
  ln -sf kmod "$vm_dir/kmod/bin/depmod"
  "$vm_dir/kmod/bin/depmod" -b "$vm_dir/kernel" "$kver" ||
    echo "vm setup: no depmod; the guest cannot autoload modules (not needed by the tests)" >&2
fi
ln -sfn "kernel/boot/vmlinuz-$kver" "$vm_dir/vmlinuz"
ln -sfn "kernel/lib/modules/$kver" "$vm_dir/modules"

# The initramfs: busybox, our /init, and the modules needed to reach the 9p
# shares (Debian builds virtio, 9p and overlayfs as modules). Listed in load
# order by hand: the guest has no modprobe before /usr is mounted.
modules="virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci
         netfs fscache 9pnet 9pnet_virtio 9p overlay autofs4"
ir=$(mktemp -d)
trap 'rm -rf "$ir"' EXIT
mkdir -p "$ir/bin" "$ir/mods"
cp "$vm_dir/busybox/bin/busybox" "$ir/bin/"
cp "$here/init" "$ir/init"
chmod 0755 "$ir/init"
# A fresh CI machine may lack kmod; /init hands the guest this one then.
cp "$vm_dir/kmod/bin/kmod" "$ir/bin/kmod"
for m in $modules; do
  f=$(find "$vm_dir/kernel/lib/modules/$kver/kernel" \( -name "$m.ko" -o -name "$m.ko.xz" \) | head -1)
  [ -n "$f" ] || { echo "vm setup: $pkg has no module $m" >&2; exit 1; }
  case $f in *.xz) xz -dc "$f" > "$ir/mods/$m.ko";; *) cp "$f" "$ir/mods/$m.ko";; esac
  echo "$m" >> "$ir/mods/order"
done
(cd "$ir" && find . | "$vm_dir/busybox/bin/busybox" cpio -o -H newc 2>/dev/null | gzip -1) \
  > "$vm_dir/initramfs.tmp"
mv "$vm_dir/initramfs.tmp" "$vm_dir/initramfs.cpio.gz"
echo "$kver" > "$vm_dir/kver"
echo "vm setup: kernel $kver, $(du -sh "$vm_dir" | cut -f1) in $vm_dir"
