#!/usr/bin/env bash
# A full Internet table through linux-cp: the kernel gets 1 000 000 IPv4 routes (the
# benchmarks' ip4-1m table, less what overlaps 10.0.0.0/8) and 230 000 IPv6 routes (ip6-bgp)
# with `ip -batch`, in chunks, while hosts A and B ping each other through vecflow. Checks and
# prints, for each chunk, the kernel's own time and how long after it vecflow's FIB held every
# route (vecflow's lag); then that vecflow holds exactly the kernel's routes within a second of
# the last chunk, that the listener never overran, that 100 000 route replaces a second for
# CHURN_SECONDS (scripts/route-churn.py) leave it without overruns, with bounded memory and
# with exactly the kernel's next hops, that the pings lost nothing, vecflow's resident size
# and its tables' bytes
# (`show memory`, before the table and with it), how long a persistent
# API client asking every 10 ms waited, the floor (the kernel's dump of the table read and
# thrown away), the rate at which a restarted vecflow mirrors the
# table from its start-up dump (preloaded), and that an overrun (linux-cp.netlink-buffer 4096
# while the IPv4 table is deleted) ends in a re-dump with exactly the kernel's routes again.
#
#     sudo env "PATH=$PATH" scripts/lcp-full-table.sh   # CHUNK=100000 CHURN_SECONDS=60 by default
#
# Needs root, vecflow on the PATH (a release build: a debug one is far slower), iproute2,
# ping and python3. Everything it makes (namespaces with a random tag, files under a
# temporary directory) is removed when it ends.
set -euo pipefail

CHUNK=${CHUNK:-100000} CHURN_SECONDS=${CHURN_SECONDS:-60}
here=$(cd "$(dirname "$0")" && pwd)
vecflow=$(command -v vecflow) || { echo "vecflow is not on the PATH" >&2; exit 1; }
for tool in ip ping python3 split; do
    command -v "$tool" >/dev/null || { echo "$tool is not installed" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "needs root (network namespaces)" >&2; exit 1; }

tag=$(printf '%04x' $(( (RANDOM ^ $$) & 0xffff )))
A=ft-a-$tag B=ft-b-$tag R=ft-r-$tag L=ft-l-$tag
work=$(mktemp -d /tmp/vecflow-table.XXXXXX)
vecflow_pid= ping_pid= probe_pid= rss_pid= poller=
cleanup() {
    for pid in $poller $rss_pid $probe_pid $ping_pid $vecflow_pid; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    for ns in "$A" "$B" "$R" "$L"; do ip netns del "$ns" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
fail() {
    echo "FAIL: $*" >&2
    [ -z "$vecflow_pid" ] || { ctl show errors; ctl show interface; ctl show lcp; } >&2 || true
    tail -n 20 "$work"/vecflow*.log >&2 || true
    exit 1
}
now() { date +%s.%N; }
secs() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.3f}')" "$1" "$2"; }

# --- A ── wa [vecflow in R, TAPs in L] wb ── B --------------------------------------------
for ns in "$A" "$B" "$R" "$L"; do ip netns add "$ns"; ip -n "$ns" link set lo up; done
link() {  # link HOST-NS PORT ADDRESS4 ADDRESS6 GATEWAY4
    ip -n "$1" link add eth0 type veth peer name "$2" netns "$R"
    ip netns exec "$R" sysctl -qw "net.ipv6.conf.$2.disable_ipv6=1"
    ip -n "$1" addr add "$3" dev eth0
    ip -n "$1" addr add "$4" dev eth0 nodad
    ip -n "$1" link set eth0 up
    ip -n "$1" route add default via "$5"
    ip -n "$R" link set "$2" up
}
link "$A" to-a 10.77.0.2/24 fd00:77::2/64 10.77.0.1
link "$B" to-b 10.78.0.2/24 fd00:78::2/64 10.78.0.1

start_vecflow() {  # start_vecflow LOG [EXTRA-LINUX-CP-SETTINGS]
    cat >"$work/router.yaml" <<EOF
linux-cp: {netns: $L${2:+, $2}}
metrics: {enabled: false}
interfaces:
  wa: {driver: af-packet, host-interface: to-a, rx-mode: adaptive, addresses: [10.77.0.1/24, 'fd00:77::1/64']}
  wb: {driver: af-packet, host-interface: to-b, rx-mode: adaptive, addresses: [10.78.0.1/24, 'fd00:78::1/64']}
EOF
    ip netns exec "$R" "$vecflow" run -c "$work/router.yaml" --socket "$work/api.sock" >"$work/$1" 2>&1 &
    vecflow_pid=$!
    ctl --wait
}
stop_vecflow() { kill "$vecflow_pid"; wait "$vecflow_pid" || true; vecflow_pid=; }
ctl() { "$vecflow" ctl --socket "$work/api.sock" "$@"; }
# The kernel routes vecflow mirrors, and the listener's overruns and re-dumps.
lcp_counts() {
    ctl show lcp --json | python3 -c 'import json, sys
d = json.load(sys.stdin)
print(sum(d["kernel_routes"]["mirrored"].values()), d["listener"]["overruns"], d["listener"]["dumps"])'
}
mirrored() { lcp_counts | cut -d' ' -f1; }
# Asks `show lcp` every 5 ms over one API connection until vecflow mirrors N routes, for up to
# LIMIT seconds, and prints the time (seconds since the epoch) of the answer that first said so.
wait_mirrored() {  # wait_mirrored N LIMIT
    python3 - "$work/api.sock" "$1" "$2" <<'PY' || fail "vecflow mirrors $(mirrored) routes after $2 s, not $1"
import json, socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
answers = s.makefile("rb")
want, deadline = int(sys.argv[2]), time.monotonic() + float(sys.argv[3])
request = b'{"jsonrpc": "2.0", "id": 1, "method": "cli", "params": {"command": "show lcp"}}\n'
while time.monotonic() < deadline:
    s.sendall(request)
    answer = json.loads(answers.readline())
    if sum(answer["result"]["json"]["kernel_routes"]["mirrored"].values()) == want:
        print(f"{time.time():.6f}")
        sys.exit(0)
    time.sleep(0.005)
sys.exit(1)
PY
}
# A persistent JSON-RPC client that asks the main thread (`show errors`) every 10 ms until it
# gets SIGTERM, then writes how many answers came, their 99th percentile and the longest wait.
api_probe_start() {
    python3 - "$work/api.sock" "$work/latency.txt" <<'PY' &
import json, signal, socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
answers = s.makefile("rb")
waits, stop = [], []
signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
while not stop:
    t0 = time.monotonic()
    request = {"jsonrpc": "2.0", "id": len(waits) + 1, "method": "cli", "params": {"command": "show errors"}}
    s.sendall(json.dumps(request).encode() + b"\n")
    answers.readline()
    waits.append(time.monotonic() - t0)
    time.sleep(max(0.0, 0.01 - (time.monotonic() - t0)))
waits.sort()
with open(sys.argv[2], "w") as out:
    print(f"{len(waits)} requests, p99 {waits[len(waits) * 99 // 100] * 1e3:.1f} ms, longest {waits[-1] * 1e3:.1f} ms", file=out)
PY
    probe_pid=$!
}
# Stops the client (in this shell: only its parent can wait for it) and prints what it saw.
api_probe_stop() {  # api_probe_stop WHILE
    kill -TERM "$probe_pid"
    wait "$probe_pid" || true
    probe_pid=
    echo "the API while $1: $(cat "$work/latency.txt")"
}
# vecflow's peak and current resident size, in MB.
memory() { awk '/^VmHWM|^VmRSS/ {printf "%s %d MB ", $1, $2 / 1000}' "/proc/$vecflow_pid/status"; echo; }
kernel_routes() { echo $(( $(ip -n "$L" -4 route show proto bgp | wc -l) + $(ip -n "$L" -6 route show proto bgp | wc -l) )); }

start_vecflow vecflow.log
"$vecflow" generate routes ip4-1m --via 10.77.0.2 --dev wa --exclude 10.0.0.0/8 >"$work/v4"
"$vecflow" generate routes ip6-bgp --via fd00:77::2 --dev wa >"$work/v6"
split -l "$CHUNK" -d -a 3 "$work/v4" "$work/chunk.4."
split -l "$CHUNK" -d -a 3 "$work/v6" "$work/chunk.6."

# --- The pair: A pings B through vecflow for as long as the table loads -------------------
# Once both have been resolved (the first packet to an unresolved neighbor is dropped).
ip netns exec "$A" ping -c 3 -i 0.2 -w 10 10.78.0.2 >/dev/null || fail "A cannot ping B through vecflow"
ip netns exec "$A" ping -q -i 0.002 -s 100 10.78.0.2 >"$work/ping.txt" 2>&1 &
ping_pid=$!

# --- The table, chunk by chunk ------------------------------------------------------------
echo "vecflow's tables before the table (show memory):"
ctl show memory
api_probe_start
total=0 lag=0
printf '%-10s %8s %10s %12s\n' chunk routes "kernel (s)" "vecflow lag (s)"
for f in "$work"/chunk.4.* "$work"/chunk.6.*; do
    n=$(wc -l <"$f")
    total=$((total + n))
    family=-4
    case $f in *chunk.6.*) family=-6 ;; esac
    # The poller starts first (a Python start takes longer than vecflow's lag), and notes
    # when vecflow first holds every route; the lag counts from the end of `ip -batch`.
    wait_mirrored "$total" 60 >"$work/mirrored-at" &
    poller=$!
    t0=$(now)
    ip -n "$L" "$family" -batch "$f"
    t1=$(now)
    wait "$poller" || { poller=; fail "vecflow mirrors $(mirrored) routes 60 s after chunk ${f##*/chunk.} began, not $total"; }
    poller=
    lag=$(python3 -c "import sys; print(f'{max(0.0, float(sys.argv[2]) - float(sys.argv[1])):.3f}')" "$t1" "$(cat "$work/mirrored-at")")
    printf '%-10s %8d %10s %12s\n' "${f##*/chunk.}" "$n" "$(secs "$t0" "$t1")" "$lag"
done
python3 -c "import sys; sys.exit(float(sys.argv[1]) > 1.0)" "$lag" || fail "vecflow's FIB matched the kernel ${lag} s after the last chunk (over 1 s)"
[ "$(kernel_routes)" = "$total" ] || fail "the kernel has $(kernel_routes) routes, not $total"
echo "vecflow mirrors all $total routes ${lag} s after the last chunk; memory: $(memory)"
echo "vecflow's tables with the table (show memory):"
ctl show memory
api_probe_stop "the table loaded"
for prefix in $(shuf -n 5 --random-source="$work/v4" "$work/v4" | cut -d' ' -f3) $(shuf -n 5 --random-source="$work/v6" "$work/v6" | cut -d' ' -f3); do
    family=ip
    case $prefix in *:*) family=ip6 ;; esac
    ctl show "$family" fib "$prefix" | grep -q "^$prefix .*kernel .*out wa" || fail "$prefix is not in vecflow's FIB as the kernel's"
done

# --- Churn: 100 000 route replaces a second, the pair still pinging ----------------------
# scripts/route-churn.py points 100 000 of the IPv4 prefixes at 10.77.0.3 and back at
# 10.77.0.2, round after round, for CHURN_SECONDS. The listener must never overrun (the
# default buffer), vecflow's memory must stay bounded, and its FIB must end as the kernel's.
read -r _ overruns dumps <<<"$(lcp_counts)"
[ "$overruns" = 0 ] || fail "the listener overran $overruns times while the table loaded (the default buffer)"
rss() { awk '/^VmRSS/ {print int($2 / 1000)}' "/proc/$vecflow_pid/status"; }
rss_before=$(rss)
( while sleep 1; do rss; done ) >"$work/churn-rss.txt" &
rss_pid=$!
api_probe_start
ip netns exec "$L" "$here/route-churn.py" --routes "$work/v4" --dev wa --via 10.77.0.2 --via 10.77.0.3 \
    --rate 100000 --seconds "$CHURN_SECONDS" >"$work/churn.txt" || fail "the churn: $(cat "$work/churn.txt")"
kill "$rss_pid"
wait "$rss_pid" 2>/dev/null || true
rss_pid=
churned=$(now)
deadline=$(python3 -c "import time; print(time.time() + 10)")
until [ "$(ctl show lcp --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["kernel_routes"]["waiting"])')" = 0 ]; do
    python3 -c "import sys, time; sys.exit(time.time() > $deadline)" || fail "routes still wait to be mirrored 10 s after the churn"
    sleep 0.01
done
echo "churn: $(cat "$work/churn.txt"); vecflow had mirrored every change $(secs "$churned" "$(now)") s after the last"
api_probe_stop "routes churned"
read -r left overruns_now dumps_now <<<"$(lcp_counts)"
[ "$overruns_now" = 0 ] && [ "$dumps_now" = "$dumps" ] ||
    fail "the churn made the listener overrun ($overruns_now overruns, $dumps_now dumps, $dumps before)"
[ "$left" = "$total" ] || fail "vecflow mirrors $left routes after the churn, not $total"
rss_most=$(sort -n "$work/churn-rss.txt" | tail -1)
echo "memory during the churn: VmRSS ${rss_before} MB before, at most ${rss_most:-$rss_before} MB, $(rss) MB after"
[ "${rss_most:-0}" -le $((rss_before + 64)) ] || fail "vecflow grew by more than 64 MB during the churn"
# (Nothing waiting in the view does not mean the listener has read the last notifications:
# each sample may take a moment to show the kernel's gateway.)
for prefix in $(head -n 100000 "$work/v4" | shuf -n 10 --random-source="$work/v4" | cut -d' ' -f3); do
    via=$(ip -n "$L" route show "$prefix" | sed -n 's/.* via \([0-9.]*\) .*/\1/p')
    for _ in $(seq 100); do
        ctl show ip fib "$prefix" | grep -q "^$prefix .*kernel .*via $via out wa" && break
        sleep 0.1
    done
    ctl show ip fib "$prefix" | grep -q "^$prefix .*kernel .*via $via out wa" ||
        fail "$prefix: vecflow's FIB is not the kernel's (via $via) 10 s after the churn: $(ctl show ip fib "$prefix")"
done

kill -INT "$ping_pid"
wait "$ping_pid" || true
ping_pid=
sent=$(sed -n 's/^\([0-9]*\) packets transmitted.*/\1/p' "$work/ping.txt")
got=$(sed -n 's/.* \([0-9]*\) received.*/\1/p' "$work/ping.txt")
echo "the pair while the table loaded and churned: $sent pings sent, $got answered"
[ -n "$sent" ] && [ "$sent" -gt 100 ] && [ $((sent - got)) -le 1 ] || fail "the pair lost pings: $(cat "$work/ping.txt")"

# --- The floor: the kernel's own dump of the table, into readers that throw it away -------
# A bare RTM_GETROUTE dump of both families read by a netlink socket of Python's that only
# walks the message headers, and `ip route show` of both families into /dev/null.
stop_vecflow
bare_dump() {
    ip netns exec "$L" python3 - <<'PY'
import socket, struct, time
s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
t0, routes = time.monotonic(), 0
for family in (socket.AF_INET, socket.AF_INET6):
    # nlmsghdr: RTM_GETROUTE (26), NLM_F_REQUEST | NLM_F_DUMP; an rtmsg of the family.
    s.send(struct.pack("=IHHII", 28, 26, 0x301, 1, 0) + struct.pack("=8BI", family, 0, 0, 0, 0, 0, 0, 0, 0))
    done = False
    while not done:
        data, at = s.recv(1 << 20), 0
        while at < len(data):
            length, kind = struct.unpack_from("=IH", data, at)
            done |= kind == 3  # NLMSG_DONE
            routes += kind == 24  # RTM_NEWROUTE
            at += (length + 3) & ~3
print(f"{time.monotonic() - t0:.3f} s for {routes} routes")
PY
}
echo "the floor: a bare dump $(bare_dump); ip route show of both families $(
    t0=$(now); ip -n "$L" -4 route show table all >/dev/null; ip -n "$L" -6 route show table all >/dev/null; secs "$t0" "$(now)") s"

# --- The same table, preloaded: mirrored from the start-up dump ---------------------------
t0=$(now)
start_vecflow vecflow-preloaded.log
api_probe_start
t1=$(wait_mirrored "$total" 60)
took=$(secs "$t0" "$t1")
api_probe_stop "the preloaded table was mirrored"
echo "preloaded: vecflow started and mirrored $total routes in $took s ($(python3 -c "print(round($total / $took))") routes/s); memory: $(memory)"

# --- An overrun: a 4 KiB receive buffer while the IPv4 table is deleted -------------------
stop_vecflow
start_vecflow vecflow-overrun.log "netlink-buffer: 4096"
wait_mirrored "$total" 60 >/dev/null
sed 's/^route add \([^ ]*\) .*/route del \1/' "$work/v4" >"$work/del4"
ip -n "$L" -4 -batch "$work/del4"
v6=$(wc -l <"$work/v6")
wait_mirrored "$v6" 60 >/dev/null
read -r left overruns dumps <<<"$(lcp_counts)"
[ "$(kernel_routes)" = "$v6" ] || fail "the kernel has $(kernel_routes) routes, not $v6"
[ "$overruns" -ge 1 ] && [ "$dumps" -ge 2 ] || fail "no overrun and re-dump: $overruns overruns, $dumps dumps"
echo "overrun: $overruns overruns, $dumps dumps; vecflow mirrors exactly the kernel's $left routes; memory: $(memory)"
stop_vecflow
echo "lcp-full-table: OK"
