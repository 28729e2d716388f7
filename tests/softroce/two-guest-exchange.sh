#!/bin/sh
# Runs in both Soft-RoCE guests: rank = guest index; rank 0 serves the TCP store on its address.
# Every byte of messages from 0 B to 64 MiB and of a 16 MiB one-sided write is checked.
peer_binary="$1"
[ "$SOFTROCE_VM_INDEX" = 0 ] && root_host="$SOFTROCE_VM_SELF" || root_host="$SOFTROCE_VM_PEER"
exec "$peer_binary" --root "$root_host:29700" --rank "$SOFTROCE_VM_INDEX" --size 2 --role exchange \
  --backend verbs --address "$SOFTROCE_VM_SELF"
