#!/usr/bin/env bash
# vecflow against its peers on one veth topology (not run by CI; needs root, netsniff-ng's
# trafgen, python3; Open vSwitch 3.x for ovs-afpacket, installed from apt when missing).
#
#   ns vfcpg: trafgen on vfcpg0 ──veth── vfcpg1 ┐                      ┌ vfcps1 ──veth── vfcps0 :ns vfcps
#                                               └ ns vfcpr: forwarder ┘
#
# One generator for every contender: trafgen, 64-byte IPv4/UDP frames (random source ports)
# to 02:fe:00:00:00:01, 10.0.1.2 -> 48.0.0.1, as fast as it can through sendto(), which
# blocks while its socket's send buffer is full (see measure). Each forwarder routes them to
# the next hop 10.0.2.99 (static MAC 02:00:00:00:02:99, which nobody has: the sink's kernel
# drops every frame at once, so the sink needs no listener). Contenders:
#   generator-alone   no forwarder: vfcpg1's kernel drops the frames (not its MAC); the baseline
#   kernel            Linux IPv4 forwarding in vfcpr (ip_forward=1, route, permanent neighbor)
#   ovs-afpacket      Open vSwitch userspace datapath (datapath_type=netdev) with plain system
#                     ports (AF_PACKET sockets, polled by ovs-vswitchd's main thread: no PMD),
#                     sFlow 1:1000 to a local collector; one OpenFlow rule is the router:
#                     in_port=1,ip,dl_dst=02:fe:00:00:00:01,nw_dst=48.0.0.0/8 -> mod_dl_src,
#                     mod_dl_dst, dec_ttl, output:2 (fail-mode secure: the rest is dropped)
#   ovs-afxdp         the same Open vSwitch bridge, flow and sFlow with afxdp ports (xdp-mode
#                     best-effort: native on veth, copy), polled by one PMD thread on the
#                     forwarder's CPU
#   vecflow-afpacket  vecflow, driver af-packet on both veths, rx-mode adaptive, sFlow 1:1000 to
#                     a local collector
#   vecflow-afxdp     vecflow, driver af-xdp on both veths (XDP native, copy: veth has no
#                     zero-copy), rx-mode polling, vecflow's default rings (1024) and buffers
#                     (16384), sFlow 1:1000
#   vecflow-afxdp-busy-poll  the same in rx-mode busy-poll (a recvfrom per poll; on veth, whose
#                     XDP queues report no NAPI id, the kernel cannot busy poll: see drivers.md)
#   vecflow-afxdp-adaptive  the same in rx-mode adaptive (polls while frames come, then sleeps
#                     in poll(2))
# Layouts:
#   a  everything on CPU 0: generator, forwarder (all its threads), sink.
#      ns/packet (forwarder cost) = 1e3/Mpps - 1e3/Mpps(generator-alone), on the medians;
#      generator-alone is measured whenever layout a is.
#   b  generator on CPU 0, forwarder on CPU 1: all its threads, and vfcpg1's receive softirq
#      (RPS), so that CPU 0 does the same work (trafgen, veth transmit) for every contender:
#      the kernel router's work is that softirq, and the AF_PACKET forwarders' includes the
#      kernel copying frames to their sockets. RX_CPU=0 leaves that softirq on CPU 0 (as
#      scripts/bench-af-packet.sh does; the kernel contender then forwards on CPU 0).
#      vecflow also reports clocks/packet per node (`show runtime`, printed at SIGINT); they
#      include the kernel's work on the worker's CPU (softirqs, the sink's receive in sendto).
#      With XDP in native mode on veth, the XDP program and the copy into the AF_XDP rx ring
#      run in veth's NAPI on the sending CPU (CPU 0), before RPS could move them.
# Mpps = frames received by the sink veth (rx_packets of vfcps0; of vfcpg1 for generator-alone)
# per second over a window that starts 1 s after trafgen. loss % = 1 - delivered / sent over
# the whole run (sent = tx_packets + tx_dropped of trafgen's vfcpg0, delivered counted after
# 0.5 s of draining). Each (contender, layout, run) gets a fresh topology and forwarder; runs
# are interleaved (run 1 of every row, then run 2, ...) and the table shows medians.
#
# Usage: sudo scripts/compare-peers.sh [--seconds N] [--runs N] [--only NAME[,NAME]]
#                                      [--layouts a,b] [--json]
#   --seconds N   measurement window per run (default 10); --runs N (default 3)
#   --only        contenders to run (default all); --layouts (default a,b)
#   --json        print one JSON array (a row per contender and layout: medians, and its raw
#                 runs) instead of the table
#   --out DIR     also write the JSON to DIR/compare-peers.json and its plot (crates/peers-plot)
#                 to DIR/compare-peers.svg
# VECFLOW=path picks the binary (default target/release/vecflow, built when missing);
# XDP_MODE=native|skb the af-xdp rows' XDP mode (default auto: native on veth); XDP_RING=N
# their ring size and BUFFERS=N vecflow's buffers per worker (default: vecflow's defaults,
# rings of 1024 and 16384 buffers).
# Adding a contender: a line in CONTENDERS and two functions, up_NAME FCPU LAYOUT (start it on
# CPU FCPU, return when it forwards) and down_NAME (stop it; may set `clocks` to
# "node=clocks,..."); NAME with - as _.
set -euo pipefail
cd "$(dirname "$0")/.."

# name                    layouts  the sink veth it is measured at (netns device)
CONTENDERS=(
    "generator-alone         a        vfcpr vfcpg1"
    "kernel                  ab       vfcps vfcps0"
    "ovs-afpacket            ab       vfcps vfcps0"
    "ovs-afxdp               ab       vfcps vfcps0"
    "vecflow-afpacket        ab       vfcps vfcps0"
    "vecflow-afxdp           ab       vfcps vfcps0"
    "vecflow-afxdp-busy-poll ab       vfcps vfcps0"
    "vecflow-afxdp-adaptive  ab       vfcps vfcps0"
)
secs=10 runs=3 only="" layouts="a,b" json=0 out=""
while [ $# -gt 0 ]; do
    case $1 in
        --seconds) secs=$2; shift ;;
        --runs) runs=$2; shift ;;
        --only) only=$2; shift ;;
        --layouts) layouts=$2; shift ;;
        --json) json=1 ;;
        --out) out=$2; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
vecflow=${VECFLOW:-target/release/vecflow}
SFLOW_PORT=6343
[ "$(id -u)" = 0 ] || { echo "needs root" >&2; exit 1; }
for t in trafgen python3 ethtool taskset setsid; do
    command -v $t >/dev/null || { echo "needs $t (trafgen: apt-get install netsniff-ng)" >&2; exit 1; }
done

# What to run: contender names in table order, each with the layouts it takes part in.
declare -A want=()
for c in "${CONTENDERS[@]}"; do
    read -r name lay _ <<<"$c"
    if [ -z "$only" ] || [[ ",$only," == *",$name,"* ]]; then want[$name]=$lay; fi
done
for n in ${only//,/ }; do
    [ -n "${want[$n]:-}" ] || { echo "unknown contender $n" >&2; exit 2; }
done
for l in ${layouts//,/ }; do [[ $l == [ab] ]] || { echo "unknown layout $l" >&2; exit 2; }; done
[[ $layouts == *a* && ${#want[@]} -gt 0 ]] && want[generator-alone]=a
if [ -n "${want[ovs-afpacket]:-}${want[ovs-afxdp]:-}" ] && ! command -v ovs-vswitchd >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -o DPkg::Lock::Timeout=300 openvswitch-switch >/dev/null
fi
if [[ " ${!want[*]} " == *" vecflow-"* ]] && [ ! -x "$vecflow" ]; then cargo build --release; fi

work=$(mktemp -d)
pgroups=()            # process groups started with setsid (pid = pgid), killed by cleanup
cleanup() {
    local g
    for g in "${pgroups[@]}"; do kill -TERM -- "-$g" 2>/dev/null || true; done
    sleep 0.2
    for g in "${pgroups[@]}"; do kill -KILL -- "-$g" 2>/dev/null || true; wait "$g" 2>/dev/null || true; done
    for ns in vfcpg vfcps vfcpr; do ip netns del $ns 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
trap "exit 130" INT TERM

# start NS OUTFILE CMD...: runs CMD in netns NS as its own process group; sets $pid.
start() {
    local ns=$1 out=$2; shift 2
    ip netns exec "$ns" setsid "$@" >"$out" 2>&1 &
    pid=$!
    pgroups+=("$pid")
}
# stop PID [SIGNAL]: signals PID's process group, waits (5 s at most) for PID, forgets it.
stop() {
    local g=$1
    kill -"${2:-TERM}" -- "-$g" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$g" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$g" 2>/dev/null || true
    wait "$g" 2>/dev/null || true
    local keep=() x
    for x in "${pgroups[@]}"; do [ "$x" = "$g" ] || keep+=("$x"); done
    pgroups=("${keep[@]}")
}
ctr() { ip netns exec "$1" cat "/sys/class/net/$2/statistics/$3"; }

topo_up() {   # FCPU: the forwarder's CPU, which gets vfcpg1's receive softirq
    local ns
    for ns in vfcpg vfcps vfcpr; do ip netns del $ns 2>/dev/null || true; ip netns add $ns; ip -n $ns link set lo up; done
    ip link add vfcpg0 netns vfcpg type veth peer name vfcpg1 netns vfcpr
    ip link add vfcps0 netns vfcps type veth peer name vfcps1 netns vfcpr
    local x dev
    for x in "vfcpg vfcpg0" "vfcps vfcps0" "vfcpr vfcpg1" "vfcpr vfcps1"; do
        read -r ns dev <<<"$x"
        ip netns exec "$ns" ethtool -K "$dev" tx off tso off gso off gro off >/dev/null
        ip netns exec "$ns" sysctl -qw "net.ipv6.conf.$dev.disable_ipv6=1"
        ip -n "$ns" link set "$dev" up
    done
    ip netns exec vfcpr sh -c "echo $((1 << $1)) >/sys/class/net/vfcpg1/queues/rx-0/rps_cpus"
}
topo_down() { for ns in vfcpg vfcps vfcpr; do ip netns del $ns; done; }

collector_up() {   # a UDP socket in vfcpr for the sFlow datagrams, never read
    start vfcpr "$work/collector.log" python3 -c "import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(('127.0.0.1', $SFLOW_PORT)); time.sleep(1e9)"
    collector=$pid
}

# ---- contenders: up_NAME FCPU LAYOUT / down_NAME ----
up_generator_alone() { :; }
down_generator_alone() { :; }

up_kernel() {
    local r="ip -n vfcpr"
    $r link set vfcpg1 down; $r link set vfcpg1 address 02:fe:00:00:00:01; $r link set vfcpg1 up
    $r link set vfcps1 down; $r link set vfcps1 address 02:fe:00:00:00:02; $r link set vfcps1 up
    $r addr add 10.0.1.1/24 dev vfcpg1
    $r addr add 10.0.2.1/24 dev vfcps1
    $r neigh add 10.0.2.99 lladdr 02:00:00:00:02:99 dev vfcps1 nud permanent
    $r route add 48.0.0.0/8 via 10.0.2.99
    ip netns exec vfcpr sysctl -qw net.ipv4.ip_forward=1
}
down_kernel() { :; }

up_ovs_afpacket() { ovs_up "$1" system; }
down_ovs_afpacket() { ovs_down; }
up_ovs_afxdp() { ovs_up "$1" afxdp; }
down_ovs_afxdp() { ovs_down; }

ovs_up() {   # FCPU PORT-TYPE: a private database, sockets and logs in $work/ovs; no ovs-ctl
    local o=$work/ovs
    local env=(env OVS_RUNDIR="$o" OVS_DBDIR="$o" OVS_LOGDIR="$o")
    rm -rf "$o"; mkdir -p "$o"
    ovsdb-tool create "$o/conf.db" /usr/share/openvswitch/vswitch.ovsschema
    collector_up
    start vfcpr "$o/ovsdb.out" "${env[@]}" taskset -c "$1" \
        ovsdb-server "$o/conf.db" --remote="punix:$o/db.sock" --pidfile --unixctl="$o/ovsdb-server.ctl" --log-file
    ovsdb=$pid
    for _ in $(seq 100); do [ -S "$o/db.sock" ] && break; sleep 0.05; done
    local vsctl=("${env[@]}" ovs-vsctl --db="unix:$o/db.sock" --timeout=20)
    "${vsctl[@]}" --no-wait init
    # The PMD settings only matter to PMD ports (DPDK, AF_XDP): system ports are polled by
    # vswitchd's main thread, which sleeps in poll() when idle (pmd-rxq-show lists nothing);
    # afxdp ports by one PMD thread on FCPU, which sleeps up to 50 µs when its queues are empty.
    "${vsctl[@]}" --no-wait set Open_vSwitch . other_config:pmd-cpu-mask=$((1 << $1)) \
        other_config:pmd-maxsleep=50
    start vfcpr "$o/vswitchd.out" "${env[@]}" taskset -c "$1" \
        ovs-vswitchd "unix:$o/db.sock" --pidfile --unixctl="$o/ovs-vswitchd.ctl" --log-file
    vswitchd=$pid
    "${vsctl[@]}" add-br vfcpbr -- set bridge vfcpbr datapath_type=netdev fail-mode=secure \
        -- add-port vfcpbr vfcpg1 -- set interface vfcpg1 ofport_request=1 type="$2" \
        -- add-port vfcpbr vfcps1 -- set interface vfcps1 ofport_request=2 type="$2" \
        -- --id=@s create sflow agent=lo "target=\"127.0.0.1:$SFLOW_PORT\"" sampling=1000 polling=20 header=128 \
        -- set bridge vfcpbr sflow=@s >/dev/null
    "${env[@]}" ovs-ofctl del-flows vfcpbr
    "${env[@]}" ovs-ofctl add-flow vfcpbr "in_port=1,ip,dl_dst=02:fe:00:00:00:01,nw_dst=48.0.0.0/8,actions=mod_dl_src:02:fe:00:00:00:02,mod_dl_dst:02:00:00:00:02:99,dec_ttl,output:2"
}
ovs_down() { stop "$vswitchd"; stop "$ovsdb"; stop "$collector"; }

up_vecflow_afpacket() { vecflow_up "$1" af-packet adaptive; }
down_vecflow_afpacket() { vecflow_down; }
up_vecflow_afxdp() { vecflow_up "$1" af-xdp polling; }
down_vecflow_afxdp() { vecflow_down; }
up_vecflow_afxdp_busy_poll() { vecflow_up "$1" af-xdp busy-poll; }
down_vecflow_afxdp_busy_poll() { vecflow_down; }
up_vecflow_afxdp_adaptive() { vecflow_up "$1" af-xdp adaptive; }
down_vecflow_afxdp_adaptive() { vecflow_down; }

vecflow_up() {   # FCPU DRIVER RX-MODE
    local xdp=""
    [ "$2" = af-xdp ] && xdp=", af-xdp: {mode: ${XDP_MODE:-auto}${XDP_RING:+, ring-size: $XDP_RING}}"
    cat >"$work/vecflow.yaml" <<YAML
workers: {count: 1, cores: [$1], main-core: $1${BUFFERS:+, buffers: $BUFFERS}}
interfaces:
  in0: {driver: $2, rx-mode: $3$xdp, host-interface: vfcpg1, mac: '02:fe:00:00:00:01', addresses: [10.0.1.1/24], sflow: {enable: true}}
  out0: {driver: $2, rx-mode: $3$xdp, host-interface: vfcps1, mac: '02:fe:00:00:00:02', addresses: [10.0.2.1/24], sflow: {enable: true}}
routes: [{prefix: 48.0.0.0/8, via: 10.0.2.99}]
neighbors: [{interface: out0, address: 10.0.2.99, mac: '02:00:00:00:02:99'}]
sflow: {sampling-rate: 1000, polling-interval: 20, collectors: [{address: 127.0.0.1, port: $SFLOW_PORT}]}
YAML
    collector_up
    ip netns exec vfcpr setsid "$vecflow" run -c "$work/vecflow.yaml" --socket "$work/api.sock" --show-at-exit \
        >"$work/vecflow.out" 2>"$work/vecflow.log" &
    vf=$!
    pgroups+=("$vf")
    for _ in $(seq 100); do
        if grep -q ' running ' "$work/vecflow.log"; then
            # The threads vecflow does not pin (sFlow agent, signals) go to FCPU too. Not
            # `taskset -c FCPU vecflow`: its config check allows only cores below the
            # number of CPUs it may use (1 under taskset).
            taskset -a -p -c "$1" "$vf" >/dev/null
            return
        fi
        kill -0 "$vf" 2>/dev/null || break
        sleep 0.1
    done
    cat "$work/vecflow.log" >&2; echo "vecflow did not start" >&2; return 1
}
vecflow_down() {
    stop "$vf" INT
    stop "$collector"
    # `show runtime`: a row per node under a header naming the columns (Name, ..., Clocks, ...);
    # Clocks is per packet. Columns are found by name, so a new one breaks nothing.
    clocks=$(awk '/^vecflow# show runtime/ {r=1; next} /^vecflow# / {r=0}
        r && $1 == "Name" {t=1; nf=NF; for (i = 1; i <= NF; i++) if ($i == "Clocks") c=i; next}
        r && t && c && NF == nf {printf "%s%s=%s", s, $1, $c; s=","}
        r && NF == 0 {t=0}' "$work/vecflow.out")
    [ -n "$clocks" ] || { cat "$work/vecflow.out" "$work/vecflow.log" >&2; echo "no show runtime from vecflow" >&2; return 1; }
    # `show sflow`: a row per source under Interface ... taken sent ..., and the totals: the
    # samples of packets the graph then dropped (not sent as flow samples) and those lost to
    # full rings (never taken). The books: taken = sent + of drops.
    samples=$(awk '/^vecflow# show sflow/ {r=1; next} /^vecflow# / {r=0}
        r && match($0, /sampled packets dropped by the graph [0-9]+/) {split(substr($0, RSTART, RLENGTH), a, " "); od = a[7]}
        r && match($0, /samples lost to full rings: [0-9]+/) {split(substr($0, RSTART, RLENGTH), a, " "); rf = a[6]}
        r && $1 == "Interface" {t=1; nf=NF; for (i = 1; i <= NF; i++) col[$i]=i; next}
        r && t && NF == nf {tk += $col["taken"]; s += $col["sent"]}
        r && NF == 0 {t=0}
        END {printf "%d/%d/%d/%d", tk, s, od, rf}' "$work/vecflow.out")
    [ "$samples" != 0/0/0/0 ] || { echo "no samples in vecflow's show sflow" >&2; return 1; }
}

# measure NAME LAYOUT RUN SINK_NS SINK_DEV: one run; appends a line to $work/results:
# name layout run delivered-in-window window-ns sent-in-all delivered-in-all clocks samples
# (samples: vecflow's sFlow samples taken/sent/of-drops/lost-to-full-rings, or -)
measure() {
    local name=$1 layout=$2 run=$3 sns=$4 sdev=$5 fcpu=0 fn=${1//-/_}
    [ "$layout" = b ] && fcpu=1
    topo_up "${RX_CPU:-$fcpu}"
    clocks="" samples=""
    "up_$fn" $fcpu "$layout"
    # trafgen pins its worker i to CPU i whatever taskset says: --cpus 1 = CPU 0 only. -b with
    # a rate it never reaches: its sendto() path, which blocks while the socket's send buffer
    # is full. Its TX_RING path (no -b) dies on EAGAIN ("Flushing TX_RING failed") as soon as
    # frames queue on another CPU (layout b), and --no-sock-mem: it cannot raise the buffer.
    start vfcpg "$work/trafgen.out" taskset -c 0 trafgen --dev vfcpg0 --conf scripts/udp64.trafgen \
        --cpus 1 --no-sock-mem -b 1000000000pps
    local tg=$pid w d0 t0 d1 t1 sent got
    sleep 1
    for w in $(pgrep -P "$tg"); do
        grep -q '^Cpus_allowed_list:[[:space:]]*0$' "/proc/$w/status" ||
            echo "warning: trafgen worker $w runs on $(grep Cpus_allowed_list "/proc/$w/status")" >&2
    done
    d0=$(ctr "$sns" "$sdev" rx_packets); t0=$(date +%s%N)
    sleep "$secs" & wait $!   # (a signal interrupts wait, not sleep)
    d1=$(ctr "$sns" "$sdev" rx_packets); t1=$(date +%s%N)
    stop "$tg" INT
    sleep 0.5   # the forwarder drains its queues; the topology is new, so counters are totals
    sent=$(( $(ctr vfcpg vfcpg0 tx_packets) + $(ctr vfcpg vfcpg0 tx_dropped) ))
    got=$(ctr "$sns" "$sdev" rx_packets)
    "down_$fn"
    topo_down
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$layout" "$run" $((d1 - d0)) $((t1 - t0)) \
        "$sent" "$got" "${clocks:--}" "${samples:--}" >>"$work/results"
    printf '  run %s %-23s %s: %s Mpps, sent %s, delivered %s\n' "$run" "$name" "$layout" \
        "$(awk -v d=$((d1 - d0)) -v t=$((t1 - t0)) 'BEGIN {printf "%.3f", d * 1e3 / t}')" "$sent" "$got" >&2
}

: >"$work/results"
for run in $(seq "$runs"); do
    for layout in ${layouts//,/ }; do
        for c in "${CONTENDERS[@]}"; do
            read -r name _ sns sdev <<<"$c"
            if [[ ${want[$name]:-} == *$layout* ]]; then measure "$name" "$layout" "$run" "$sns" "$sdev"; fi
        done
    done
done

python3 - "$json" "$work/results" "$out" <<'PY'
import json, os, statistics as st, sys
as_json, path, out_dir = sys.argv[1] == "1", sys.argv[2], sys.argv[3]
rows = {}
for line in open(path):
    name, layout, run, win, ns, sent, got, clocks, samples = line.rstrip("\n").split("\t")
    win, ns, sent, got = int(win), int(ns), int(sent), int(got)
    r = {"run": int(run), "mpps": round(win * 1e3 / ns, 4), "window_s": round(ns / 1e9, 3),
         "loss_pct": round(100 * (1 - got / sent), 2) if sent else None, "sent": sent, "delivered": got}
    if clocks != "-":
        r["clocks_per_packet"] = {k: float(v) for k, v in (kv.split("=") for kv in clocks.split(","))}
    if samples != "-":
        r["sflow_samples"] = dict(zip(("taken", "sent", "of_drops", "ring_full"), map(int, samples.split("/"))))
    rows.setdefault((name, layout), []).append(r)
gen = rows.get(("generator-alone", "a"))
gen_mpps = st.median(r["mpps"] for r in gen) if gen else None
out = []
for (name, layout), runs in rows.items():
    mpps = st.median(r["mpps"] for r in runs)
    losses = [r["loss_pct"] for r in runs if r["loss_pct"] is not None]
    row = {"contender": name, "layout": layout, "mpps": round(mpps, 4),
           "loss_pct": round(st.median(losses), 2) if losses else None, "ns_per_packet": None}
    if layout == "a" and name != "generator-alone" and gen_mpps and mpps:
        row["ns_per_packet"] = round(1e3 / mpps - 1e3 / gen_mpps, 1)
    nodes = [r["clocks_per_packet"] for r in runs if "clocks_per_packet" in r]
    if nodes:
        keys = dict.fromkeys(k for n in nodes for k in n)
        row["clocks_per_packet"] = {k: round(st.median(n[k] for n in nodes if k in n), 1) for k in keys}
    row["runs"] = runs
    out.append(row)
if out_dir:
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "compare-peers.json"), "w") as f:
        json.dump(out, f, indent=2)
        f.write("\n")
if as_json:
    print(json.dumps(out, indent=2))
    sys.exit()
fmt = "{:<23} {:<6} {:>7} {:>7} {:>8}  {}"
print(fmt.format("contender", "layout", "Mpps", "loss %", "ns/pkt", "runs (Mpps)"))
for r in out:
    print(fmt.format(r["contender"], r["layout"], "%.3f" % r["mpps"],
                     "-" if r["loss_pct"] is None else "%.2f" % r["loss_pct"],
                     "-" if r["ns_per_packet"] is None else "%.0f" % r["ns_per_packet"],
                     " ".join("%.3f" % x["mpps"] for x in r["runs"])))
for r in out:
    if "clocks_per_packet" in r:
        print("%s %s clocks/packet: %s" % (r["contender"], r["layout"],
              ", ".join("%s %g" % kv for kv in r["clocks_per_packet"].items())))
for r in out:
    s = [x["sflow_samples"] for x in r["runs"] if "sflow_samples" in x]
    if s:
        print("%s %s sFlow samples taken/sent/of drops/lost to full rings per run: %s" % (r["contender"], r["layout"],
              " ".join("%(taken)d/%(sent)d/%(of_drops)d/%(ring_full)d" % x for x in s)))
print("a: everything on CPU 0; b: generator on CPU 0, forwarder on CPU 1. "
      "ns/pkt = 1e3/Mpps - 1e3/Mpps(generator-alone).")
PY
if [ -n "$out" ]; then
    cargo run --quiet --release -p peers-plot -- "$out/compare-peers.json" "$out/compare-peers.svg"
    echo "wrote $out/compare-peers.json and $out/compare-peers.svg" >&2
fi
