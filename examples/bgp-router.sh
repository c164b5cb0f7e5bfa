#!/usr/bin/env bash
# vecflow as a BGP router, with BIRD 2 or FRR on it (docs/bgp-router.md). Run as root:
#
#     sudo env "PATH=$PATH" examples/bgp-router.sh bird      # or: ... bgp-router.sh frr
#
# Needs vecflow on the PATH, iproute2, ping, BIRD 2 (`bird`, `birdc`: the hosts run
# it) and for `frr` FRR (zebra, bgpd, vtysh). It builds this lab in network namespaces, waits
# until BGP's routes are in vecflow's FIB, shows them, pings from A's loopback to B's through
# vecflow, and removes everything when it ends.
#
#   ns A: lo 10.255.0.1/32          ns R: vecflow run                  ns B: lo 10.255.0.2/32
#         BIRD, AS 65001              ports wa 10.66.1.1/24 on to-a,           BIRD, AS 65002
#                                           wb 10.66.2.1/24 on to-b
#   eth0 10.66.1.2/24 ───veth─── to-a                         to-b ───veth─── eth0 10.66.2.2/24
#                               ns L (linux-cp): TAPs wa and wb,
#                               BIRD or FRR, AS 65000: BGP with A and B
#
# IPv6 the same way: loopbacks fd00:255::1 and ::2, links fd00:66:1::/64 and fd00:66:2::/64.
set -euo pipefail

daemon=${1:-bird}
case $daemon in
    bird) tools=(bird birdc) ;;
    frr) tools=(bird birdc vtysh /usr/lib/frr/zebra /usr/lib/frr/bgpd) ;;
    *) echo "usage: $0 [bird|frr]: the routing daemon on the vecflow router" >&2; exit 2 ;;
esac
vecflow=$(command -v vecflow) || { echo "vecflow is not on the PATH" >&2; exit 1; }
for tool in ip ping "${tools[@]}"; do
    command -v "$tool" >/dev/null || { echo "$tool is not installed" >&2; exit 1; }
done

# Names of our own, so that the lab meets nothing else on this machine.
tag=$(printf '%04x' $(( (RANDOM ^ $$) & 0xffff )))
A=bgp-a-$tag B=bgp-b-$tag R=bgp-r-$tag L=bgp-l-$tag
work=$(mktemp -d /tmp/vecflow-bgp.XXXXXX)
pids=()

cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    for ns in "$A" "$B" "$R" "$L"; do ip netns del "$ns" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM    # so that Ctrl-C and kill clean up too

# --- The namespaces and links -----------------------------------------------------------
for ns in "$A" "$B" "$R" "$L"; do
    ip netns add "$ns"
    ip -n "$ns" link set lo up
done
# host X's eth0 ── the router's to-x, with the kernel's default offloads (vecflow's AF_PACKET
# ports cut what the hosts leave to segmentation offload); no IPv6 on the router's ends:
# vecflow, not the kernel of namespace R, answers there.
link() {  # link HOST-NS PORT ADDRESS4 ADDRESS6
    ip -n "$1" link add eth0 type veth peer name "$2" netns "$R"
    ip netns exec "$R" sysctl -qw "net.ipv6.conf.$2.disable_ipv6=1"
    ip -n "$1" addr add "$3" dev eth0
    ip -n "$1" addr add "$4" dev eth0 nodad
    ip -n "$1" link set eth0 up
    ip -n "$R" link set "$2" up
}
link "$A" to-a 10.66.1.2/24 fd00:66:1::2/64
link "$B" to-b 10.66.2.2/24 fd00:66:2::2/64
# Each host's loopback addresses, the prefixes it announces (on lo: not every kernel has
# dummy devices).
loopback() {  # loopback HOST-NS ADDRESS4 ADDRESS6
    ip -n "$1" addr add "$2/32" dev lo
    ip -n "$1" addr add "$3/128" dev lo
}
loopback "$A" 10.255.0.1 fd00:255::1
loopback "$B" 10.255.0.2 fd00:255::2

# --- vecflow, with linux-cp: a TAP per port in namespace L --------------------------------
cat >"$work/router.yaml" <<EOF
linux-cp: {netns: $L}
metrics: {enabled: false}
interfaces:
  wa: {driver: af-packet, host-interface: to-a, rx-mode: adaptive, addresses: [10.66.1.1/24, 'fd00:66:1::1/64']}
  wb: {driver: af-packet, host-interface: to-b, rx-mode: adaptive, addresses: [10.66.2.1/24, 'fd00:66:2::1/64']}
EOF
ip netns exec "$R" "$vecflow" run -c "$work/router.yaml" --socket "$work/api.sock" >"$work/vecflow.log" 2>&1 &
pids+=($!)
ctl() { "$vecflow" ctl --socket "$work/api.sock" "$@"; }
ctl --wait

# --- The router's daemon (in namespace L, on the TAPs) --------------------------------------
# BGP with A and B, one session per address family; everything BGP learns goes into the
# kernel's main table, which vecflow mirrors.
bird_router() {
    cat >"$work/router.conf" <<EOF
log stderr all;
router id 10.66.1.1;
protocol device { scan time 1; }
protocol kernel { ipv4 { import none; export all; }; merge paths on; }
protocol kernel { ipv6 { import none; export all; }; merge paths on; }
template bgp peer { local as 65000; connect retry time 1; }
protocol bgp a4 from peer { neighbor 10.66.1.2 as 65001; ipv4 { import all; export all; }; }
protocol bgp a6 from peer { neighbor fd00:66:1::2 as 65001; ipv6 { import all; export all; }; }
protocol bgp b4 from peer { neighbor 10.66.2.2 as 65002; ipv4 { import all; export all; }; }
protocol bgp b6 from peer { neighbor fd00:66:2::2 as 65002; ipv6 { import all; export all; }; }
EOF
    ip netns exec "$L" bird -f -c "$work/router.conf" -s "$work/router.ctl" -P "$work/router.pid" \
        >"$work/router.log" 2>&1 &
    pids+=($!)
}
# FRR: zebra installs routes through next-hop objects ("nhid"), which vecflow follows; with
# nexthop_compat_mode=0 the kernel sends only those. FRR runs as user frr (not as root, which
# is not in its vty group), so its files are in a directory of frr's.
frr_router() {
    ip netns exec "$L" sysctl -qw net.ipv4.nexthop_compat_mode=0
    mkdir "$work/frr"
    echo "hostname vecflow-router" >"$work/frr/zebra.conf"
    cat >"$work/frr/bgpd.conf" <<EOF
frr defaults traditional
hostname vecflow-router
router bgp 65000
 bgp router-id 10.66.1.1
 no bgp ebgp-requires-policy
 no bgp default ipv4-unicast
 neighbor 10.66.1.2 remote-as 65001
 neighbor fd00:66:1::2 remote-as 65001
 neighbor 10.66.2.2 remote-as 65002
 neighbor fd00:66:2::2 remote-as 65002
 address-family ipv4 unicast
  neighbor 10.66.1.2 activate
  neighbor 10.66.2.2 activate
 exit-address-family
 address-family ipv6 unicast
  neighbor fd00:66:1::2 activate
  neighbor fd00:66:2::2 activate
 exit-address-family
EOF
    chown -R frr:frr "$work/frr"
    chmod 755 "$work"
    for d in zebra bgpd; do
        if [ "$d" = bgpd ]; then    # bgpd talks to zebra on its socket
            until [ -S "$work/frr/zserv.api" ]; do sleep 0.1; done
        fi
        ip netns exec "$L" /usr/lib/frr/$d -u frr -g frr -P 0 -f "$work/frr/$d.conf" -i "$work/frr/$d.pid" \
            -z "$work/frr/zserv.api" --vty_socket "$work/frr" --log "file:$work/frr/$d.log" >/dev/null 2>&1 &
        pids+=($!)
    done
}
"${daemon}_router"

# A host: announces its loopback prefixes (those on lo, not 127.0.0.1 and ::1), installs
# what it learns by BGP.
host_conf() {  # host_conf ROUTER-ID AS ROUTER4 ROUTER6
    cat <<EOF
log stderr all;
router id $1;
protocol device { scan time 1; }
protocol direct loop {
  ipv4 { import where net ~ [10.255.0.0/16+]; };
  ipv6 { import where net ~ [fd00:255::/32+]; };
  interface "lo";
}
protocol kernel { ipv4 { import none; export where source = RTS_BGP; }; }
protocol kernel { ipv6 { import none; export where source = RTS_BGP; }; }
template bgp uplink { local as $2; connect retry time 1; error wait time 1, 5; }
protocol bgp r4 from uplink { neighbor $3 as 65000; ipv4 { import all; export where source = RTS_DEVICE; }; }
protocol bgp r6 from uplink { neighbor $4 as 65000; ipv6 { import all; export where source = RTS_DEVICE; }; }
EOF
}
host_conf 10.255.0.1 65001 10.66.1.1 fd00:66:1::1 >"$work/a.conf"
host_conf 10.255.0.2 65002 10.66.2.1 fd00:66:2::1 >"$work/b.conf"
for node in a:"$A" b:"$B"; do
    name=${node%%:*} ns=${node#*:}
    ip netns exec "$ns" bird -f -c "$work/$name.conf" -s "$work/$name.ctl" -P "$work/$name.pid" \
        >"$work/$name.log" 2>&1 &
    pids+=($!)
done

# --- Wait for the loopbacks in vecflow's FIB (source kernel), then show them ---------------
wait_route() {  # wait_route ip|ip6 PREFIX: until vecflow's FIB has it from the kernel (60 s)
    for _ in $(seq 120); do
        ctl show "$1" fib "$2" | grep -q " kernel " && return 0
        sleep 0.5
    done
    echo "$2 is not in vecflow's FIB after 60 s; the logs:" >&2
    tail -n 20 "$work"/*.log "$work"/frr/*.log 2>/dev/null >&2
    return 1
}
echo "waiting for BGP's routes in vecflow's FIB..."
wait_route ip 10.255.0.1/32
wait_route ip 10.255.0.2/32
wait_route ip6 fd00:255::1/128
wait_route ip6 fd00:255::2/128
if [ "$daemon" = bird ]; then
    echo "== birdc show protocols (router)"
    birdc -s "$work/router.ctl" show protocols
else
    echo "== vtysh -c 'show bgp summary' (router)"
    vtysh --vty_socket "$work/frr" -c "show bgp summary"
fi
echo "== ip route, ip -6 route (the kernel's, in namespace L)"
ip -n "$L" route
ip -n "$L" -6 route
echo "== vecflow ctl show ip fib"
ctl show ip fib
echo "== vecflow ctl show ip6 fib"
ctl show ip6 fib

# --- From A's loopback to B's, forwarded by vecflow ---------------------------------------
echo "== ping from A's loopback to B's"
ip netns exec "$A" ping -c 3 -w 10 -I 10.255.0.1 10.255.0.2
ip netns exec "$A" ping -c 3 -w 10 -I fd00:255::1 fd00:255::2
echo "== vecflow ctl show interface"
ctl show interface
