#!/usr/bin/env bash
# Captures real application traffic between two network namespaces into a pcap, the fixture
# of crates/vecflow/tests/app_traffic.rs (crates/vecflow/tests/fixtures/app-traffic.pcap).
#
# Run once, by hand, as root (CI does not run it; the test replays the committed capture):
#
#   sudo scripts/capture-app-traffic.sh [OUT.pcap]
#
# Needs ip, ethtool, tcpdump, ping, iperf3, curl and python3
# (apt-get install tcpdump iperf3 curl ethtool iputils-ping).
#
# What it makes: two namespaces vfcA<tag> and vfcB<tag> (tag random per run) joined by one
# veth pair (vfcA<tag>/vfcB<tag>, offloads off so every frame is at most the MTU, 1500, and
# checksums are complete), IPv4 10.38.0.1/24 (A) and 10.38.0.2/24 (B), IPv6 fd00:38::1/64 and
# fd00:38::2/64. These addresses exist only inside the two namespaces. tcpdump on A's veth
# captures full frames (snaplen 0) of:
#   - 100 IPv4 pings and 20 IPv6 pings A -> B (10 ms apart),
#   - a TCP iperf3 A -> B of 150 KB and one B -> A (reverse) of 50 KB (plus their control
#     connections),
#   - a UDP iperf3 A -> B of 1 s at 400 kbit/s in 500-byte datagrams,
#   - six HTTP GETs with curl against python3 -m http.server on B (IPv4 and IPv6),
#   - 40 more IPv4 pings, each after A flushed its neighbor cache (so each one is preceded
#     by an ARP request and reply),
#   - the ARP and neighbor discovery this takes.
# Everything the script creates is deleted when it ends (trap), also on failure.
set -euo pipefail

out=${1:-crates/vecflow/tests/fixtures/app-traffic.pcap}
for tool in ip ethtool tcpdump ping iperf3 curl python3; do
    command -v "$tool" >/dev/null || { echo "$tool is missing" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "run as root (it creates network namespaces)" >&2; exit 1; }

tag=$(printf '%04x' $((RANDOM ^ $$ & 0xffff)))
a=vfcA$tag b=vfcB$tag        # namespaces, and each one's end of the veth (≤ 15 characters)
work=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    ip netns del "$a" 2>/dev/null || true
    ip netns del "$b" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

ip netns add "$a"
ip netns add "$b"
ip link add "$a" netns "$a" type veth peer name "$b" netns "$b"
for ns in "$a" "$b"; do
    ip -n "$ns" link set lo up
    ip netns exec "$ns" ethtool -K "$ns" tx off tso off gso off gro off >/dev/null
    ip netns exec "$ns" sysctl -qw "net.ipv6.conf.$ns.accept_dad=0"
    ip -n "$ns" link set "$ns" mtu 1500 up
done
ip -n "$a" addr add 10.38.0.1/24 dev "$a"
ip -n "$b" addr add 10.38.0.2/24 dev "$b"
ip -n "$a" addr add fd00:38::1/64 dev "$a" nodad
ip -n "$b" addr add fd00:38::2/64 dev "$b" nodad

# The servers on B.
mkdir -p "$work/www"
head -c 3000 /dev/urandom | base64 >"$work/www/index.txt"
head -c 600 /dev/urandom | base64 >"$work/www/small.txt"
ip netns exec "$b" python3 -m http.server 8080 --bind :: --directory "$work/www" >/dev/null 2>&1 &
pids+=($!)
ip netns exec "$b" iperf3 -s -p 5201 >/dev/null 2>&1 &
pids+=($!)
sleep 1

ip netns exec "$a" tcpdump -i "$a" -s 0 -U -w "$work/cap.pcap" 2>"$work/tcpdump.log" &
tcpdump=$!
pids+=("$tcpdump")
sleep 1

ip netns exec "$a" ping -q -c 100 -i 0.01 10.38.0.2 >/dev/null
ip netns exec "$a" ping -q -6 -c 20 -i 0.01 fd00:38::2 >/dev/null
# ARP ("other" traffic): A forgets B's MAC and asks again before each of 40 pings.
for _ in $(seq 40); do
    ip -n "$a" neigh flush dev "$a"
    ip netns exec "$a" ping -q -c 1 10.38.0.2 >/dev/null
done
ip netns exec "$a" iperf3 -c 10.38.0.2 -p 5201 -n 150K -l 1400 >/dev/null
ip netns exec "$a" iperf3 -c 10.38.0.2 -p 5201 -n 50K -l 1400 -R >/dev/null
ip netns exec "$a" iperf3 -c 10.38.0.2 -p 5201 -u -b 400K -l 500 -t 1 >/dev/null
for url in http://10.38.0.2:8080/index.txt http://10.38.0.2:8080/small.txt http://10.38.0.2:8080/missing \
    'http://[fd00:38::2]:8080/index.txt' 'http://[fd00:38::2]:8080/small.txt' http://10.38.0.2:8080/; do
    ip netns exec "$a" curl -s -o /dev/null "$url"
done
sleep 1
kill -INT "$tcpdump"
wait "$tcpdump" || true
cat "$work/tcpdump.log" >&2
mkdir -p "$(dirname "$out")"
cp "$work/cap.pcap" "$out"
echo "wrote $out ($(stat -c %s "$out") bytes)"
