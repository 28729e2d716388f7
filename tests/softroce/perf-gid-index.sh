#!/bin/sh
# Runs in both Soft-RoCE guests: poseidon-perf write_bw over verbs with perftest's -x (the GID
# index) given on both sides, vm0 serving and vm1 measuring. Each side's header must name the
# GID index it was given, RoCE's link type and the port's active MTU: what the queue pair got,
# read back from it (nothing guessed). Argument: the poseidon-perf binary.
perf="$1"
export POSEIDON_SECRET=softroce-perf-gid
mtu=$(ibv_devinfo -d "$SOFTROCE_VM_DEVICE" | awk '/active_mtu/ {print $2; exit}')
log=/tmp/perf-gid-index.log
if [ "$SOFTROCE_VM_INDEX" = 0 ]; then
  "$perf" -x "$SOFTROCE_VM_GID_INDEX" --bind "$SOFTROCE_VM_SELF" >"$log" 2>&1
else
  # The client retries the server's store until it listens.
  "$perf" write_bw -t verbs -x "$SOFTROCE_VM_GID_INDEX" -s 65536 -n 1000 --bind "$SOFTROCE_VM_SELF" \
    "$SOFTROCE_VM_PEER" >"$log" 2>&1
fi
status=$?
cat "$log"
[ "$status" = 0 ] || exit "$status"
for line in " Mtu             : ${mtu}[B]" " Link type       : Ethernet" " GID index       : ${SOFTROCE_VM_GID_INDEX}"; do
  if ! grep -qxF "$line" "$log"; then
    echo "perf-gid-index: vm$SOFTROCE_VM_INDEX printed no line '$line'"
    exit 1
  fi
done
echo "perf-gid-index: vm$SOFTROCE_VM_INDEX header OK (MTU $mtu, GID index $SOFTROCE_VM_GID_INDEX)"
