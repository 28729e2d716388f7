# netns-hosts.sh: hosts as network namespaces on one bridge, every link limited by tc tbf both
# ways (the approach of tools/bench-ps, tools/bench-hybcomm and tools/demo, in one place for the
# scripts that source it: tools/bench-overlap). Needs root, ip and tc.
#
#   source "$repo/tools/netns-hosts.sh"
#   netns_hosts_create PREFIX SUBNET COUNT RATE   # namespaces PREFIXh0.., addresses SUBNET.1..
#   netns_hosts_exec INDEX COMMAND...             # runs COMMAND in host INDEX's namespace
#   netns_hosts_address INDEX                     # SUBNET.(INDEX+1)
#   netns_hosts_limit INDEX RATE                  # re-limits host INDEX's link both ways
#   netns_hosts_cleanup                           # deletes every namespace made (and so the veths)
#
# PREFIX names namespaces and veth ends (PREFIXh<i>, PREFIXb<i>, at most 15 characters), so keep
# it short and unique (e.g. "ov$$"). RATE is tc's (<n>kbit, mbit or gbit), or unlimited (no tbf).
NETNS_HOSTS_NAMESPACES=()
NETNS_HOSTS_PREFIX=""
NETNS_HOSTS_SUBNET=""

netns_hosts_bps() {  # RATE -> bits per second, or fails
  [[ "$1" =~ ^([0-9]+)(kbit|mbit|gbit)$ ]] && ((BASH_REMATCH[1] >= 1)) || return 1
  case "${BASH_REMATCH[2]}" in kbit) echo $((BASH_REMATCH[1] * 1000)) ;; mbit) echo $((BASH_REMATCH[1] * 1000000)) ;;
    gbit) echo $((BASH_REMATCH[1] * 1000000000)) ;; esac
}

netns_hosts_address() { echo "$NETNS_HOSTS_SUBNET.$(($1 + 1))"; }

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

netns_hosts_cleanup() {  # deleting a namespace deletes the veth ends in it, and so their peers
  local ns
  for ns in "${NETNS_HOSTS_NAMESPACES[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
  NETNS_HOSTS_NAMESPACES=()
}
