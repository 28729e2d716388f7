# netns-hosts.sh: hosts as network namespaces on one bridge, every link limited by tc tbf both
# ways (the approach of tools/bench-ps, tools/bench-hybcomm and tools/demo, in one place for the
# scripts that source it: tools/bench-overlap). Needs root, ip and tc.
#
#   source "$repo/tools/netns-hosts.sh"
#   netns_hosts_create PREFIX SUBNET COUNT RATE   # namespaces PREFIXh0.., addresses SUBNET.1..
#   netns_hosts_exec INDEX COMMAND...             # runs COMMAND in host INDEX's namespace
#   netns_hosts_address INDEX                     # SUBNET.(INDEX+1)
#   netns_hosts_limit INDEX RATE                  # re-limits host INDEX's link both ways
#   netns_hosts_kill INDEX                        # stops every process in host INDEX's namespace
#   netns_hosts_cleanup                           # deletes every namespace made (and so the veths)
#   netns_hosts_create_delayed PREFIX SUBNET COUNT RATE DELAY_MS LINKEM
#                                                 # the same hosts behind poseidon-linkem links
#
# PREFIX names namespaces and veth ends (PREFIXh<i>, PREFIXb<i>, at most 15 characters), so keep
# it short and unique (e.g. "ov$$"). RATE is tc's (<n>kbit, mbit or gbit), or unlimited (no tbf;
# the bridge variant only).
#
# The delayed variant is for latency this kernel cannot add (no netem): each host reaches a router
# namespace through its own poseidon-linkem link (a TUN pair forwarded in user space, LINKEM the
# binary) that adds DELAY_MS one way per hop (host to host: two hops, 2 x DELAY_MS) and limits
# each direction to RATE. Addresses: host i is SUBNET-prefix.i.2 (SUBNET "10.86" gives
# 10.86.i.2, its router end 10.86.i.1); netns_hosts_address answers either way. The linkem
# processes stop in netns_hosts_cleanup.
NETNS_HOSTS_NAMESPACES=()
NETNS_HOSTS_LINKEM_PIDS=()
NETNS_HOSTS_READY_DIR=""
NETNS_HOSTS_DELAYED=0
NETNS_HOSTS_PREFIX=""
NETNS_HOSTS_SUBNET=""

netns_hosts_bps() {  # RATE -> bits per second, or fails
  [[ "$1" =~ ^([0-9]+)(kbit|mbit|gbit)$ ]] && ((BASH_REMATCH[1] >= 1)) || return 1
  case "${BASH_REMATCH[2]}" in kbit) echo $((BASH_REMATCH[1] * 1000)) ;; mbit) echo $((BASH_REMATCH[1] * 1000000)) ;;
    gbit) echo $((BASH_REMATCH[1] * 1000000000)) ;; esac
}

netns_hosts_address() {
  if ((NETNS_HOSTS_DELAYED)); then echo "$NETNS_HOSTS_SUBNET.$1.2"; else echo "$NETNS_HOSTS_SUBNET.$(($1 + 1))"; fi
}

netns_hosts_exec() {
  local index="$1"
  shift
  ip netns exec "${NETNS_HOSTS_PREFIX}h$index" "$@"
}

netns_hosts_limit() {  # INDEX RATE: tbf on the host's end (its upload) and the bridge's end (its download)
  local bps burst
  if [ "$2" = unlimited ]; then  # no tbf: the veths' own speed
    ip netns exec "${NETNS_HOSTS_PREFIX}h$1" tc qdisc del dev "${NETNS_HOSTS_PREFIX}h$1" root 2>/dev/null || true
    ip netns exec "${NETNS_HOSTS_PREFIX}br" tc qdisc del dev "${NETNS_HOSTS_PREFIX}b$1" root 2>/dev/null || true
    return 0
  fi
  bps=$(netns_hosts_bps "$2") || { echo "netns-hosts: rate '$2': expected <n>kbit, mbit or gbit" >&2; return 1; }
  burst=$((bps / 8 / 100))  # at least one timer tick of traffic (HZ may be 100), so tbf can reach the rate
  ((burst >= 16384)) || burst=16384
  ip netns exec "${NETNS_HOSTS_PREFIX}h$1" tc qdisc replace dev "${NETNS_HOSTS_PREFIX}h$1" root tbf rate "$2" \
    burst "$burst" latency 50ms
  ip netns exec "${NETNS_HOSTS_PREFIX}br" tc qdisc replace dev "${NETNS_HOSTS_PREFIX}b$1" root tbf rate "$2" \
    burst "$burst" latency 50ms
}

netns_hosts_create() {  # PREFIX SUBNET COUNT RATE
  NETNS_HOSTS_PREFIX="$1" NETNS_HOSTS_SUBNET="$2"
  local p="$1" i bridge="$1br"
  ip netns add "$bridge" && NETNS_HOSTS_NAMESPACES+=("$bridge")
  ip -n "$bridge" link add br0 type bridge
  ip -n "$bridge" link set br0 up
  for ((i = 0; i < $3; i++)); do
    ip netns add "${p}h$i" && NETNS_HOSTS_NAMESPACES+=("${p}h$i")
    ip link add "${p}h$i" type veth peer name "${p}b$i"
    ip link set "${p}h$i" netns "${p}h$i"
    ip link set "${p}b$i" netns "$bridge"
    ip -n "${p}h$i" addr add "$(netns_hosts_address "$i")/24" dev "${p}h$i"
    ip -n "${p}h$i" link set lo up
    ip -n "${p}h$i" link set "${p}h$i" up
    ip -n "$bridge" link set "${p}b$i" master br0
    ip -n "$bridge" link set "${p}b$i" up
    netns_hosts_limit "$i" "$4"
  done
}

netns_hosts_create_delayed() {  # PREFIX SUBNET COUNT RATE DELAY_MS LINKEM
  NETNS_HOSTS_PREFIX="$1" NETNS_HOSTS_SUBNET="$2" NETNS_HOSTS_DELAYED=1
  local p="$1" i router="$1rt" bps ready
  bps=$(netns_hosts_bps "$4") || { echo "netns-hosts: rate '$4': expected <n>kbit, mbit or gbit" >&2; return 1; }
  NETNS_HOSTS_READY_DIR="$(mktemp -d /tmp/netns-hosts-ready-XXXXXX)"
  ip netns add "$router" && NETNS_HOSTS_NAMESPACES+=("$router")
  ip -n "$router" link set lo up
  ip netns exec "$router" sysctl -qw net.ipv4.ip_forward=1
  for ((i = 0; i < $3; i++)); do
    ip netns add "${p}h$i" && NETNS_HOSTS_NAMESPACES+=("${p}h$i")
    ip -n "${p}h$i" link set lo up
    ready="$NETNS_HOSTS_READY_DIR/$i"  # a name in our own fresh directory: no other process can take it
    "$6" --ns-a "${p}h$i" --ns-b "$router" --addr-a "$2.$i.2/24" --addr-b "$2.$i.1/24" --dev-name "${p}l$i" \
      --delay-ms "$5" --rate-mbit "$(awk -v b="$bps" 'BEGIN { printf "%.6f", b / 1e6 }')" --mtu 9000 \
      --ready-file "$ready" 2>/dev/null &
    NETNS_HOSTS_LINKEM_PIDS+=($!)
    local waited=0
    while [ ! -f "$ready" ]; do
      sleep 0.05
      waited=$((waited + 1))
      if ((waited > 200)) || ! kill -0 "${NETNS_HOSTS_LINKEM_PIDS[-1]}" 2>/dev/null; then
        echo "netns-hosts: poseidon-linkem for host $i did not come up" >&2
        return 1
      fi
    done
    ip -n "${p}h$i" route add "$2.0.0/16" via "$2.$i.1"
  done
}

netns_hosts_kill_namespace() {  # NAMESPACE: stops every process in it
  local pids
  pids=$(ip netns pids "$1" 2>/dev/null) || return 0
  [ -z "$pids" ] || kill $pids 2>/dev/null || true
}

netns_hosts_kill() {  # INDEX: a killed `netns_hosts_exec ... &` leaves its program running; this does not
  netns_hosts_kill_namespace "${NETNS_HOSTS_PREFIX}h$1"
}

netns_hosts_cleanup() {  # deleting a namespace deletes the veth ends in it, and so their peers
  local ns pid
  # A namespace outlives `ip netns del` while processes hold it: stop them first.
  for ns in "${NETNS_HOSTS_NAMESPACES[@]}"; do netns_hosts_kill_namespace "$ns"; done
  for pid in "${NETNS_HOSTS_LINKEM_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${NETNS_HOSTS_LINKEM_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  NETNS_HOSTS_LINKEM_PIDS=()
  [ -z "$NETNS_HOSTS_READY_DIR" ] || rm -rf "$NETNS_HOSTS_READY_DIR"
  NETNS_HOSTS_READY_DIR=""
  for ns in "${NETNS_HOSTS_NAMESPACES[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
  NETNS_HOSTS_NAMESPACES=()
  NETNS_HOSTS_DELAYED=0
}
