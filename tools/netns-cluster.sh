#!/usr/bin/env bash
# A cluster on one machine: NODES network namespaces, each a "node" with its own host name
# (node0, node1, ...) and one Ethernet link (eth0, 10.213.0.K+1/24) to a switch (a bridge in a
# namespace of its own), each link shaped by tc (a token bucket, `tbf`, in both directions) to
# RATE. COMMAND runs on node0 with an Open MPI launcher that starts ranks on the nodes: the
# remote ones through an rsh agent that enters the node's namespace, so ranks of one node talk
# over shared memory and ranks of different nodes over TCP across the links. Everything it made
# (namespaces, links, files) is removed when COMMAND ends, also when it is interrupted. The
# addresses exist only on the links inside these namespaces; nothing is routed out of them.
#
#   tools/netns-cluster.sh [--nodes N] [--rate RATE] [--slots S] -- COMMAND [ARG...]
#     --nodes N    nodes (default 2)
#     --rate RATE  each link's bandwidth, as tc writes it: 1gbit, 100mbit... (default 1gbit)
#     --slots S    ranks a node takes (default 2)
#
# COMMAND sees:
#   DTNN_MPIRUN        the launcher: $DTNN_MPIRUN -np 4 dtnn-run ...  (by slot: node0 first)
#   DTNN_CLUSTER_NODES the node count
#   DTNN_CLUSTER_CTL   a program that changes a link while COMMAND runs:
#                        $DTNN_CLUSTER_CTL rate NODE RATE   (a new bandwidth)
#                        $DTNN_CLUSTER_CTL down NODE        (cut it)
#                        $DTNN_CLUSTER_CTL up NODE          (restore it)
# It needs root (or CAP_NET_ADMIN and CAP_SYS_ADMIN), iproute2's `ip` and `tc`, and unshare.
# Its exit status is COMMAND's; 77 when namespaces cannot be made here (for tests to skip).
set -euo pipefail

NODES=2 RATE=1gbit SLOTS=2
while (($#)); do
  case "$1" in
  --nodes) NODES="$2"; shift 2 ;;
  --rate) RATE="$2"; shift 2 ;;
  --slots) SLOTS="$2"; shift 2 ;;
  --) shift; break ;;
  -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  *) echo "netns-cluster: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
(($#)) || { echo "netns-cluster: no COMMAND (see --help)" >&2; exit 2; }
[[ "$NODES" =~ ^[1-9][0-9]?$ ]] || { echo "netns-cluster: --nodes expects 1 to 99, got '$NODES'" >&2; exit 2; }
[[ "$SLOTS" =~ ^[1-9][0-9]*$ ]] || { echo "netns-cluster: --slots expects a positive count, got '$SLOTS'" >&2; exit 2; }
[[ "$RATE" =~ ^[0-9]+(\.[0-9]+)?([kmg]?bit|[kmg]?bps)$ ]] ||
  { echo "netns-cluster: --rate expects a tc rate such as 1gbit or 100mbit, got '$RATE'" >&2; exit 2; }

# Names unique to this cluster, so that clusters of concurrent tests never meet.
ID="dtnn$$"
SW="$ID-sw"
DIR="$(mktemp -d "${TMPDIR:-/tmp}/$ID.XXXXXX")"
node_ns() { echo "$ID-n$1"; }

cleanup() {
  local status=$?
  trap - EXIT INT TERM HUP
  for ((k = 0; k < NODES; k++)); do
    local ns; ns="$(node_ns "$k")"
    # Whatever still runs on the node (an orted, a rank) ends with it.
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
  done
  ip netns del "$SW" 2>/dev/null || true
  rm -rf "$DIR"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

if ! ip netns add "$SW" 2>"$DIR/err"; then
  echo "netns-cluster: cannot make network namespaces here: $(cat "$DIR/err")" >&2
  exit 77
fi
ip -n "$SW" link add br0 type bridge
ip -n "$SW" link set br0 up

# A token bucket of RATE on DEV's egress in namespace NS, with a burst of 16 KiB (so that a
# message takes its size over RATE from a few KiB up, as on a wire) and a queue of 100 ms. A
# packet larger than the burst would be dropped: segment offload hands over at most 15000 bytes.
shape() {
  ip -n "$1" link set dev "$2" gso_max_size 15000
  ip netns exec "$1" tc qdisc replace dev "$2" root tbf rate "$3" burst 16384 latency 100ms
}

HOSTS=""
for ((k = 0; k < NODES; k++)); do
  ns="$(node_ns "$k")"
  ip netns add "$ns"
  ip link add "$ID-$k" type veth peer name "$ID-p$k"
  ip link set "$ID-$k" netns "$ns"
  ip link set "$ID-p$k" netns "$SW"
  ip -n "$ns" link set "$ID-$k" name eth0
  ip -n "$SW" link set "$ID-p$k" name "port$k"
  ip -n "$SW" link set "port$k" master br0 up
  ip -n "$ns" addr add "10.213.0.$((k + 1))/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" link set lo up
  shape "$ns" eth0 "$RATE"
  shape "$SW" "port$k" "$RATE"
  HOSTS+="10.213.0.$((k + 1)) node$k"$'\n'
  echo "node$k slots=$SLOTS" >>"$DIR/hostfile"
done
printf '127.0.0.1 localhost\n%s' "$HOSTS" >"$DIR/hosts"

# Enters node K: its namespace, a host name of its own, and the cluster's host table.
cat >"$DIR/enter" <<EOF
#!/usr/bin/env bash
# usage: enter K COMMAND...
k="\$1"; shift
exec ip netns exec "$ID-n\$k" unshare --uts --mount bash -c \
  'hostname "node\$0" && mount --bind "$DIR/hosts" /etc/hosts && exec "\$@"' "\$k" "\$@"
EOF
# The launcher's rsh agent: "agent [options] HOST COMMAND..." runs COMMAND on HOST (nodeK).
cat >"$DIR/agent" <<EOF
#!/usr/bin/env bash
while [[ "\$1" == -* ]]; do shift; done
host="\$1"; shift
exec "$DIR/enter" "\${host#node}" bash -c "\$*"
EOF
cat >"$DIR/ctl" <<EOF
#!/usr/bin/env bash
# usage: ctl rate NODE RATE | ctl down NODE | ctl up NODE
set -e
case "\$1" in
rate) ip netns exec "$ID-n\$2" tc qdisc replace dev eth0 root tbf rate "\$3" burst 16384 latency 100ms
      ip netns exec "$SW" tc qdisc replace dev "port\$2" root tbf rate "\$3" burst 16384 latency 100ms ;;
down) ip -n "$SW" link set "port\$2" down ;;
up) ip -n "$SW" link set "port\$2" up ;;
*) echo "ctl: rate NODE RATE | down NODE | up NODE" >&2; exit 2 ;;
esac
EOF
chmod +x "$DIR/enter" "$DIR/agent" "$DIR/ctl"

MPIRUN="mpirun --hostfile $DIR/hostfile --mca plm_rsh_agent $DIR/agent"
MPIRUN+=" --mca btl self,vader,tcp --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0"
MPIRUN+=" --bind-to none"
# A node that stops answering (its link cut) is given up within seconds, not minutes.
MPIRUN+=" --mca oob_tcp_keepalive_time 2 --mca oob_tcp_keepalive_intvl 1 --mca oob_tcp_keepalive_probes 3"
[[ $(id -u) == 0 ]] && MPIRUN+=" --allow-run-as-root"
export DTNN_MPIRUN="$MPIRUN" DTNN_CLUSTER_NODES="$NODES" DTNN_CLUSTER_CTL="$DIR/ctl"
# Not exec: the trap removes the cluster when COMMAND ends.
set +e
"$DIR/enter" 0 "$@"
