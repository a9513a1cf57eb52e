# GPU fencing (sourced by main.sh): the guest has no GPU, so four per-card
# nodes are made with the NVIDIA major (195) and a fake nvidia-smi lists
# four cards. Each job stats /dev/nvidia0..3 from inside itself: a card it
# was given keeps its device numbers (c3:N), one it was not reads as
# /dev/null (1:3). The fake's `topo -m` fails, so the daemon must warn that
# multi-GPU jobs can straddle the interconnect.
g=/tmp/gpu
mkdir -p $g
chmod 0755 $g
for n in 0 1 2 3; do mknod -m 0666 /dev/nvidia$n c 195 $n; done
mknod -m 0666 /dev/nvidiactl c 195 255
cat > $g/nvidia-smi <<'SMI'
#!/bin/sh
[ "$1" = -L ] || exit 1
for n in 0 1 2 3; do echo "GPU $n: Fake GPU (UUID: GPU-fake-$n)"; done
SMI
chmod 0755 $g/nvidia-smi
state_dir=/var/lib/hpcb-gpu
export HPC_BATCH_SOCKET=/run/hpcb-gpu/sock
probe='for n in /dev/nvidia0 /dev/nvidia1 /dev/nvidia2 /dev/nvidia3 /dev/nvidiactl; do stat -c "%n %t:%T" $n; done; echo "cuda=$CUDA_VISIBLE_DEVICES"'

# start_gpu_daemon UNIT EXTRA_FLAGS...: root mode, no cgroups (fencing does
# not depend on them), the fake nvidia-smi.
start_gpu_daemon() {
  local unit=$1; shift
  rm -rf "$state_dir"
  systemd-run --quiet --unit="$unit" -p KillMode=process /usr/sbin/hpc-batchd --no-cgroups \
    --admin-group hpcadm --socket "$HPC_BATCH_SOCKET" --state-dir "$state_dir" \
    --dev-dir /dev/hpcb-gpu --reserve-cpu 0 --max-lifetime 1h --nvidia-smi $g/nvidia-smi "$@"
  wait_for 30 daemon_up
}
finished() { job_json "$1" | grep -q '"state":"done"'; }
# seen ID NODE: the device numbers job ID saw for NODE.
seen() { awk -v n="$2" '$1 == n { print $2 }' "$job_home/output.$1.log" 2>/dev/null; }
run_probe() {
  local id
  id=$(submit "$@" -- sh -c "$probe") && wait_for 60 finished "$id" &&
    wait_for 30 grep -q '^cuda=' "$job_home/output.$id.log" && echo "$id"
}

if ! start_gpu_daemon hpcb-gpu; then
  fail "daemon with four (fake) GPUs answers dispatch list"
  journalctl -u hpcb-gpu --no-pager | tail -n 20
else
  pass "daemon with four (fake) GPUs and masking on starts as root"
  check "it warns that multi-gpu jobs may straddle the interconnect without topo -m" \
    sh -c "journalctl -u hpcb-gpu --no-pager -o cat | grep -q 'gpu topology unavailable'"
  check "its resources line counts 4 gpu(s)" \
    sh -c "journalctl -u hpcb-gpu --no-pager -o cat | grep -q 'over [0-9]* NUMA node(s), 4 gpu(s)'"
  one=$(run_probe --gpu-cores 1 --max-mem 0.2)
  given=$(awk -F= '/^cuda=/ { print $2 }' "$job_home/output.$one.log" 2>/dev/null)
  echo "job $one (--gpu-cores 1) saw:" $(cat "$job_home/output.$one.log" 2>/dev/null)
  check "job $one was given one GPU" test -n "$given" -a "${#given}" -eq 1
  for n in 0 1 2 3; do
    if [ "$n" = "$given" ]; then
      expect "job $one: its own card /dev/nvidia$n is the real node" "c3:$n" "$(seen "$one" /dev/nvidia$n)"
    else
      expect "job $one: /dev/nvidia$n, not its own, is /dev/null" "1:3" "$(seen "$one" /dev/nvidia$n)"
    fi
  done
  expect "job $one: the control node stays" "c3:ff" "$(seen "$one" /dev/nvidiactl)"
  check "job $one: info.json's placement names its GPU" \
    grep -q "\"gpus\":\[$given\]" "$state_dir/jobs/$one/info.json"
  none=$(run_probe --max-mem 0.2)
  echo "job $none (no GPU) saw:" $(cat "$job_home/output.$none.log" 2>/dev/null)
  for n in 0 1 2 3; do
    expect "job $none (no GPU): /dev/nvidia$n is /dev/null" "1:3" "$(seen "$none" /dev/nvidia$n)"
  done
  expect "the host's /dev/nvidia0 is untouched" "c3:0" "$(stat -c %t:%T /dev/nvidia0)"
  systemctl stop hpcb-gpu
fi

if ! start_gpu_daemon hpcb-gpu-nomask --no-gpu-mask; then
  fail "daemon with --no-gpu-mask answers dispatch list"
else
  open=$(run_probe --max-mem 0.2)
  for n in 0 1 2 3; do
    expect "--no-gpu-mask: job $open (no GPU) sees /dev/nvidia$n" "c3:$n" "$(seen "$open" /dev/nvidia$n)"
  done
  systemctl stop hpcb-gpu-nomask
fi

# The driver lists a fifth card whose node nothing has made yet: a node
# made while a job runs could not be hidden from it, so the daemon warns at
# start and refuses each start, naming the node; once the node exists, jobs
# run again with it hidden.
for n in 0 1 2 3 4; do
  mkdir -p $g/driver/0000:0$n:00.0
  printf 'Model: \t\t Fake GPU\nDevice Minor: \t %s\n' $n > $g/driver/0000:0$n:00.0/information
done
if ! start_gpu_daemon hpcb-gpu-late --gpu-driver-dir $g/driver; then
  fail "daemon whose driver lists a card without a node answers dispatch list"
else
  check "it warns at start that /dev/nvidia4 does not exist" \
    sh -c "journalctl -u hpcb-gpu-late --no-pager -o cat | grep -q 'nvidia4 does not exist'"
  late=$(submit --max-mem 0.2 -- true)
  wait_for 30 finished "$late"
  echo "job $late (node missing): $(job_json "$late")"
  refused_for_node() { job_json "$1" | grep -q 'nvidia4 does not exist'; }
  check "job $late is refused, naming the missing node" refused_for_node "$late"
  mknod -m 0666 /dev/nvidia4 c 195 4
  after=$(submit --max-mem 0.2 -- stat -c '%n %t:%T' /dev/nvidia4) && wait_for 60 finished "$after"
  expect "with the node made, job $after runs and sees /dev/nvidia4 as /dev/null" "1:3" \
    "$(seen "$after" /dev/nvidia4)"
  systemctl stop hpcb-gpu-late
  rm -f /dev/nvidia4
fi

# A normal user cannot make the mount namespace: with card nodes present the
# daemon must refuse (78) and name --no-gpu-mask; with it, it starts.
u=$g/user
mkdir -p $u && chown "$job_user" $u
user_daemon() {
  rm -rf $u/state $u/dev $u/sock
  runuser -u "$job_user" -- timeout 20 /usr/sbin/hpc-batchd --no-cgroups --socket $u/sock \
    --state-dir $u/state --dev-dir $u/dev --reserve-cpu 0 --max-lifetime 1h \
    --nvidia-smi $g/nvidia-smi "$@" > $u/log 2>&1
}
user_daemon
rc=$?
echo "user mode with GPU nodes: exit $rc: $(grep -m 1 -i 'gpu' $u/log)"
expect "user mode with GPU nodes: the daemon exits 78" 78 "$rc"
check "user mode with GPU nodes: the refusal names --no-gpu-mask" grep -q -- --no-gpu-mask $u/log
user_daemon --no-gpu-mask &
pid=$!
wait_for 30 test -S $u/sock
check "user mode with --no-gpu-mask: the daemon starts" test -S $u/sock
kill $pid 2>/dev/null
wait $pid
rm -f /dev/nvidia0 /dev/nvidia1 /dev/nvidia2 /dev/nvidia3 /dev/nvidiactl
