#!/usr/bin/env bash
# A full Internet table through BGP, end to end. BIRD on host A announces the benchmarks'
# tables — 988 375 IPv4 routes (ip4-1m less what overlaps 10.0.0.0/8 and 127.0.0.0/8, which
# BIRD does not take) and 230 000 IPv6 routes (ip6-bgp), printed by `vecflow generate routes` —
# to the routing daemon in vecflow's linux-cp
# namespace: BIRD, or with --frr FRR's bgpd and zebra (installing through next-hop objects,
# net.ipv4.nexthop_compat_mode=0). It installs them in the kernel and vecflow mirrors them.
# One BGP session carries both families (multiprotocol BGP): 10.77.0.2 → 10.77.0.1, through
# vecflow to the TAP, an IPv4 session with an IPv4 and an IPv6 channel (address family). Its
# IPv4 routes go through 10.77.0.2, its IPv6 routes through host A's global IPv6 address on the
# link, fd00:77::2, which the announcer gives as their next hop (an IPv4 session has no IPv6
# address of its own) and the router's daemon installs rather than the link-local one beside
# it. (IPv4 routes on an IPv6 session would need RFC 8950 next hops, which vecflow does not
# mirror.)
#
# Prints the time from the kernel's first route (the session is then Established) to the
# kernel holding every route and to vecflow's FIB holding every route, and vecflow's lag
# behind the kernel while they came, sampled every 50 ms (scripts/lcp-bgp-watch.py: the
# kernel's route notifications timestamped by a netlink socket of its own against vecflow's
# mirrored count). Fails when a route is missing, the lag went over 1 s, or one of 10 sampled
# routes is not in vecflow's FIB through 10.77.0.2 or fd00:77::2. One of the long
# checks (scripts/long-checks.sh); `./test.sh --full` runs it on 20 000 + 5 000 routes.
#
#     sudo env "PATH=$PATH" scripts/lcp-bgp-full-table.sh [--frr] [--ipv4 N] [--ipv6 N]
#
# Needs root, vecflow on the PATH (a release build), iproute2, python3, BIRD 2 (bird2) and,
# with --frr, FRR (frr). Everything it makes (namespaces with a random tag, files under a
# temporary directory) is removed when it ends.
set -euo pipefail

daemon=bird ipv4=all ipv6=all
usage() { echo "usage: $0 [--frr] [--ipv4 N] [--ipv6 N]" >&2; exit 2; }
while [ $# -gt 0 ]; do
    case $1 in
        --frr) daemon=frr ;;
        --ipv4) [ $# -ge 2 ] || usage; ipv4=$2; shift ;;
        --ipv6) [ $# -ge 2 ] || usage; ipv6=$2; shift ;;
        *) usage ;;
    esac
    shift
done
for n in "$ipv4" "$ipv6"; do
    [[ $n == all || $n =~ ^[1-9][0-9]*$ ]] || { echo "--ipv4, --ipv6: a number of routes from 1, or all" >&2; exit 2; }
done
# The first N routes of a table (all by default; all is read, so the writer gets no SIGPIPE).
first() { if [ "$1" = all ]; then cat; else awk -v n="$1" 'NR <= n'; fi; }
vecflow=$(command -v vecflow) || { echo "vecflow is not on the PATH" >&2; exit 1; }
for tool in ip python3 bird birdc; do
    command -v "$tool" >/dev/null || { echo "$tool is not installed (apt-get install iproute2 python3 bird2)" >&2; exit 1; }
done
[ "$daemon" = bird ] || { [ -x /usr/lib/frr/zebra ] && command -v vtysh >/dev/null; } ||
    { echo "FRR is not installed (apt-get install frr)" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "needs root (network namespaces)" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)

tag=$(printf '%04x' $(( (RANDOM ^ $$) & 0xffff )))
A=fb-a-$tag R=fb-r-$tag L=fb-l-$tag
work=$(mktemp -d /tmp/vecflow-bgp-table.XXXXXX)
chmod 755 "$work"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    for ns in "$A" "$R" "$L"; do ip netns del "$ns" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
fail() {
    echo "FAIL: $*" >&2
    tail -n 20 "$work"/*.log "$work"/frr/*.log >&2 2>/dev/null || true
    exit 1
}
ctl() { "$vecflow" ctl --socket "$work/api.sock" "$@"; }

# --- A ── wa [vecflow in R, TAP wa in L] ------------------------------------------------------
for ns in "$A" "$R" "$L"; do ip netns add "$ns"; ip -n "$ns" link set lo up; done
ip -n "$A" link add eth0 type veth peer name to-a netns "$R"
ip netns exec "$R" sysctl -qw net.ipv6.conf.to-a.disable_ipv6=1
ip -n "$A" addr add 10.77.0.2/24 dev eth0
ip -n "$A" addr add fd00:77::2/64 dev eth0 nodad
ip -n "$A" link set eth0 up
ip -n "$R" link set to-a up
cat >"$work/router.yaml" <<EOF
linux-cp: {netns: $L}
metrics: {enabled: false}
interfaces:
  wa: {driver: af-packet, host-interface: to-a, rx-mode: adaptive, addresses: [10.77.0.1/24, 'fd00:77::1/64']}
EOF
ip netns exec "$R" "$vecflow" run -c "$work/router.yaml" --socket "$work/api.sock" >"$work/vecflow.log" 2>&1 &
pids+=($!)
vecflow_pid=$!
ctl --wait

# --- Host A's BIRD: the table as static blackhole routes, exported over BGP ------------------
static() {  # static NAME FAMILY: a static protocol of the routes on standard input
    awk -v name="$1" -v family="$2" 'BEGIN {print "protocol static " name " { " family ";"}
        {print "  route " $3 " blackhole;"} END {print "}"}'
}
"$vecflow" generate routes ip4-1m --via 10.77.0.2 --dev eth0 --exclude 10.0.0.0/8 --exclude 127.0.0.0/8 |
    first "$ipv4" | static s4 ipv4 >"$work/static4.conf"
"$vecflow" generate routes ip6-bgp --via fd00:77::2 --dev eth0 | first "$ipv6" | static s6 ipv6 >"$work/static6.conf"
total=$(grep -c '^  route' "$work/static4.conf" "$work/static6.conf" | awk -F: '{n += $2} END {print n}')
cat >"$work/host.conf" <<EOF
router id 10.77.0.2;
protocol device { scan time 10; }
include "$work/static4.conf";
include "$work/static6.conf";
# One session over IPv4 with both families. The IPv6 routes' next hop is eth0's global address
# (BIRD would pick it on this direct session anyway, and adds eth0's link-local one beside it).
protocol bgp b {
  local as 65002; neighbor 10.77.0.1 as 65001;
  hold time 240; connect retry time 1; error wait time 1, 5;
  ipv4 { import none; export all; };
  ipv6 { import none; export all; next hop address fd00:77::2; };
}
EOF
ip netns exec "$A" bird -f -c "$work/host.conf" -s "$work/host.ctl" -P "$work/host.pid" 2>"$work/host.log" &
host_bird=$!
pids+=($host_bird)
# BIRD has read its configuration, the table with it, once its socket answers.
for _ in $(seq 600); do
    kill -0 "$host_bird" 2>/dev/null || fail "host A's BIRD ended: $(cat "$work/host.log")"
    birdc -s "$work/host.ctl" show status 2>/dev/null | grep -q "Daemon is up" && break
    sleep 0.1
done
# Its static protocols then feed the table in steps.
for _ in $(seq 600); do
    birdc -s "$work/host.ctl" show route count | grep -q "^Total: $total of $total routes" && break
    sleep 0.1
done
birdc -s "$work/host.ctl" show route count | grep -q "^Total: $total of $total routes" ||
    fail "host A's BIRD holds $(birdc -s "$work/host.ctl" show route count | tail -1), not $total routes"

# --- The watch, then the router's daemon ------------------------------------------------------
ip netns exec "$L" python3 "$here/lcp-bgp-watch.py" "$work/api.sock" "$total" 600 >"$work/watch.json" &
watch_pid=$!
pids+=($watch_pid)
sleep 0.5
if [ "$daemon" = bird ]; then
    cat >"$work/router.conf" <<EOF
router id 10.77.0.1;
protocol device { scan time 10; }
protocol kernel k4 { ipv4 { import none; export all; }; }
protocol kernel k6 { ipv6 { import none; export all; }; }
# The one session, both families. Its IPv6 routes go through the global next hop host A gives,
# fd00:77::2, not the link-local one beside it ("via fd00:77::2 dev wa" in the kernel): BIRD's
# default on a direct session, written out.
protocol bgp b {
  local as 65001; neighbor 10.77.0.2 as 65002;
  hold time 240; connect retry time 1; error wait time 1, 5; check link no;
  ipv4 { import all; export none; };
  ipv6 { import all; export none; next hop prefer global; };
}
EOF
    ip netns exec "$L" bird -f -c "$work/router.conf" -s "$work/router.ctl" -P "$work/router.pid" 2>"$work/router.log" &
    pids+=($!)
    established() { birdc -s "$work/router.ctl" show protocols b 2>/dev/null | grep -q Established; }
else
    ip netns exec "$L" sysctl -qw net.ipv4.nexthop_compat_mode=0
    mkdir "$work/frr"
    chown frr:frr "$work/frr"
    echo "hostname vecflow-router" >"$work/frr/zebra.conf"
    cat >"$work/frr/bgpd.conf" <<EOF
frr defaults traditional
hostname vecflow-router
! Host A's IPv6 routes come with two next hops, fd00:77::2 and eth0's link-local address; zebra
! would install the link-local one. This takes the global one ("via fd00:77::2 dev wa"). It comes
! before router bgp: a route-map not yet defined when the session comes up denies every route
! until bgpd applies it again, 5 to 8 s later (its route-map delay timer).
route-map global-next-hop permit 10
 set ipv6 next-hop prefer-global
exit
router bgp 65001
 bgp router-id 10.77.0.1
 no bgp ebgp-requires-policy
 no bgp default ipv4-unicast
 ! One session, over IPv4, carrying both families
 neighbor 10.77.0.2 remote-as 65002
 neighbor 10.77.0.2 timers connect 1
 address-family ipv4 unicast
  neighbor 10.77.0.2 activate
 exit-address-family
 address-family ipv6 unicast
  neighbor 10.77.0.2 activate
  neighbor 10.77.0.2 route-map global-next-hop in
 exit-address-family
EOF
    frr() {  # frr DAEMON
        ip netns exec "$L" "/usr/lib/frr/$1" -u frr -g frr -P 0 -f "$work/frr/$1.conf" -z "$work/frr/zserv.api" \
            -i "$work/frr/$1.pid" --vty_socket "$work/frr" --log "file:$work/frr/$1.log" >/dev/null 2>&1 &
        pids+=($!)
    }
    frr zebra
    for _ in $(seq 100); do [ -S "$work/frr/zserv.api" ] && break; sleep 0.1; done
    frr bgpd
    established() {
        vtysh --vty_socket "$work/frr" -c "show bgp neighbors 10.77.0.2 json" 2>/dev/null | grep -q '"bgpState":"Established"'
    }
fi
for _ in $(seq 3000); do established && break; sleep 0.02; done
established || fail "the BGP session is not Established after 60 s"
up=$(date +%s.%N)

wait "$watch_pid" || fail "the watch failed"
read -r kernel_routes vecflow_routes first kernel_all vecflow_all samples lag overruns unread < <(python3 -c '
import json, sys
w = json.load(open(sys.argv[1]))
keys = ("kernel_routes", "vecflow_routes", "first_route", "kernel_all", "vecflow_all", "samples", "max_lag",
        "monitor_overruns", "monitor_unread_bytes")
print(*(w[k] for k in keys))' "$work/watch.json")
[ "$overruns" = 0 ] || fail "the watch's own netlink socket overran $overruns times: the lag is unknown"
# About 1 KiB a notification: 8 MiB unread is about 0.1 s of routes at this rate, stamped late.
[ "$unread" -le $((8 << 20)) ] || fail "the watch fell $unread bytes behind the kernel: its stamps, and the lag, are late"
[ "$kernel_all" != None ] || fail "the kernel got $kernel_routes of $total routes from $daemon"
[ "$vecflow_all" != None ] || fail "vecflow mirrored $vecflow_routes of $total routes"
# From the first route in the kernel: a busy daemon answers the poll for Established late.
since() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.2f}')" "$first" "$1"; }
echo "$daemon: $total routes; the session was seen Established $(since "$up") s after the kernel's first route; from that route, the kernel held every route after $(since "$kernel_all") s, vecflow's FIB after $(since "$vecflow_all") s"
lag=$(printf '%.3f' "$lag")
echo "vecflow's lag behind the kernel, sampled every 50 ms ($samples samples): at most $lag s (the watch's socket held at most $((unread >> 10)) KiB unread at a sample)"
echo "memory: vecflow $(awk '/^VmHWM/ {printf "VmHWM %d MB", $2 / 1000}' "/proc/$vecflow_pid/status")"
python3 -c "import sys; sys.exit(float(sys.argv[1]) > 1.0)" "$lag" || fail "vecflow lagged ${lag} s behind the kernel (over 1 s)"
for prefix in $(grep '^  route' "$work/static4.conf" | shuf -n 5 --random-source="$work/static4.conf" | awk '{print $2}') \
    $(grep '^  route' "$work/static6.conf" | shuf -n 5 --random-source="$work/static6.conf" | awk '{print $2}'); do
    family=ip via=10.77.0.2
    case $prefix in *:*) family=ip6 via=fd00:77::2 ;; esac
    ctl show "$family" fib "$prefix" | grep -q "^$prefix .*kernel .*via $via out wa" ||
        fail "$prefix is not in vecflow's FIB as the kernel's, via $via"
done
echo "lcp-bgp-full-table ($daemon): OK"
