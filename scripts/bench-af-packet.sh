#!/usr/bin/env bash
# AF_PACKET forwarding benchmark on veth (not run by CI; needs root and netsniff-ng's trafgen).
#
#   ns vfbg: trafgen on vfbg0 ──veth── vfbg1 ┐                  ┌ vfbs1 ──veth── vfbs0 :ns vfbs
#                                            └ ns vfbr: vecflow ┘
#
# trafgen sends 64-byte IPv4/UDP frames (random source ports, so RSS-like spreading is
# possible) to vecflow's MAC on CPU 0; vecflow's one worker runs on CPU 1 and routes them to a
# next hop whose MAC nobody has, so the sink's kernel drops each frame at once (PACKET_OTHERHOST).
# Prints trafgen's count, vecflow's `show interface`, `show errors` and `show runtime` (clocks
# per packet per node), and the rates.
#
# Usage: sudo scripts/bench-af-packet.sh [SECONDS] [RATE]   (RATE: trafgen -b, e.g. 400000pps;
# default: as fast as trafgen can). BLOCKS=N sets the rx ring's blocks (default 64 × 256 KiB).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
rate=${2:-}
vecflow=${VECFLOW:-target/release/vecflow}
blocks=${BLOCKS:-64}
command -v trafgen >/dev/null || { echo "needs trafgen: apt-get install netsniff-ng" >&2; exit 1; }
[ -x "$vecflow" ] || cargo build --release
work=$(mktemp -d)
cleanup() {
    kill "${vf_pid:-}" 2>/dev/null || true
    for ns in vfbg vfbs vfbr; do ip netns del $ns 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
for ns in vfbg vfbs vfbr; do ip netns add $ns; ip -n $ns link set lo up; done
ip link add vfbg0 netns vfbg type veth peer name vfbg1 netns vfbr
ip link add vfbs0 netns vfbs type veth peer name vfbs1 netns vfbr
for x in "vfbg vfbg0" "vfbs vfbs0" "vfbr vfbg1" "vfbr vfbs1"; do
    set -- $x
    ip netns exec $1 ethtool -K $2 tx off tso off gso off gro off >/dev/null
    ip netns exec $1 sysctl -qw net.ipv6.conf.$2.disable_ipv6=1
    ip -n $1 link set $2 up
done
cat >"$work/router.yaml" <<YAML
workers: {count: 1, cores: [1], main-core: 0}
interfaces:
  in0: {driver: af-packet, host-interface: vfbg1, af-packet: {blocks: $blocks}, mac: '02:fe:00:00:00:01', addresses: [10.0.1.1/24]}
  out0: {driver: af-packet, host-interface: vfbs1, mac: '02:fe:00:00:00:02', addresses: [10.0.2.1/24]}
routes: [{prefix: 48.0.0.0/8, via: 10.0.2.99}]
neighbors: [{interface: out0, address: 10.0.2.99, mac: '02:00:00:00:02:99'}]
YAML
ip netns exec vfbr "$vecflow" run -c "$work/router.yaml" --socket "$work/api.sock" --show-at-exit >"$work/vecflow.out" 2>"$work/vecflow.log" &
vf_pid=$!
sleep 1
extra=()
[ -n "$rate" ] && extra=(-b "$rate")
ip netns exec vfbg timeout -s INT "$secs" taskset -c 0 trafgen --dev vfbg0 --conf scripts/udp64.trafgen \
    --cpus 1 "${extra[@]}" >"$work/trafgen.out" 2>&1 || true
sleep 0.5
kill -INT $vf_pid
wait $vf_pid || true
vf_pid=
cat "$work/trafgen.out"
cat "$work/vecflow.out"
sent=$(grep -oE '[0-9]+ packets outgoing' "$work/trafgen.out" | grep -oE '^[0-9]+' || echo 0)
fwd=$(awk '$1=="out0"{f=1} f && /tx packets/ {print $NF; exit}' "$work/vecflow.out")
fwd=${fwd:-$(awk '/tx packets/ {print $NF}' "$work/vecflow.out" | tail -1)}
echo "trafgen sent ${sent} in ${secs} s; vecflow forwarded ${fwd:-?}"
