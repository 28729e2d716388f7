#!/bin/sh
# Runs in both guests of `tools/softroce-vm --guests 2`: ib_write_bw over RoCE v2 (GID index 1),
# server in vm0, client in vm1 (retrying while the server is not listening yet).
# Extra arguments go to both sides (e.g. -D 2, or -n 200).
set -u
# perftest calibrates the CPU clock before it reports and, under emulation on a busy host,
# sometimes refuses ("Correlation coefficient r^2 < 0.9 ... Can't produce a report"); both sides
# then simply run again, a bounded number of times.
if [ "$SOFTROCE_VM_INDEX" = 0 ]; then
  for attempt in 1 2 3; do
    ib_write_bw -d "$SOFTROCE_VM_DEVICE" -x "$SOFTROCE_VM_GID_INDEX" -s 65536 "$@" && exit 0
  done
  exit 1
fi
attempt=0
while [ $attempt -lt 10 ]; do
  attempt=$((attempt + 1))
  sleep 1
  ib_write_bw -d "$SOFTROCE_VM_DEVICE" -x "$SOFTROCE_VM_GID_INDEX" -s 65536 "$@" "$SOFTROCE_VM_PEER" && exit 0
done
exit 1
