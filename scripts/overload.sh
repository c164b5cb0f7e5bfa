#!/usr/bin/env bash
# sFlow overload: one port sampled 1:1 at the highest rate a worker makes, beside another
# port pair that must not notice (not run by CI, which runs a 5 s smoke of it; no root needed).
#
#   scripts/overload.sh [--seconds S] [--runs N] [--json FILE] [--smoke]
#
# vecflow run with two workers and generator ports (no network needed):
#   p0 -> p1  worker 0: 64-byte UDP as fast as the worker goes, routed out p1; sampled 1:1
#             in run A, not sampled in run B
#   p2 -> p3  worker 1: 100 000 packets/s routed out p3, sampled 1:100 in both runs
# and `vecflow collect --summary` receiving the samples. Runs A and B alternate (N pairs,
# default 1, of S seconds each, default 60). For each run it reports:
#   - p2's forwarded packets and samples, A against B: the busy port must not take them;
#   - the samplers' books (`show sflow` at exit, once the workers stopped and the agent sent
#     what it held):
#     every sample taken was sent or was of a packet the graph dropped (taken = sent +
#     samples of drops, summed over ports); samples lost to full rings are counted apart
#     (`ring_full`, which the datagrams report as drops); and what the collector received
#     against what was sent;
#   - vecflow's RSS every 5 s, flat (within 5 %) after the first 10 s.
# Exits 1 when a check fails (with --smoke, as ./test.sh --full runs it for a few seconds, only the
# books: the paired ratios need a quiet machine and a minute). The paired ratios are judged
# only on a machine with 4 CPUs or more: run A keeps four threads busy (the two polling
# workers, the agent encoding at 1:1 and the collector), and on fewer CPUs the ratios measure
# the kernel's scheduler sharing them (they are printed, marked "not judged"). The JSON
# (--json) has one object per run.
set -euo pipefail
cd "$(dirname "$0")/.."

secs=60 runs=1 json="" smoke=0
while [ $# -gt 0 ]; do
    case $1 in
        --seconds) secs=$2; shift ;;
        --runs) runs=$2; shift ;;
        --json) json=$2; shift ;;
        --smoke) smoke=1 ;;
        -h|--help) awk 'NR > 1 && /^#/ {print; next} NR > 1 {exit}' "$0"; exit 0 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
vecflow=${VECFLOW:-target/release/vecflow}
[ -x "$vecflow" ] || cargo build --release -q -p vecflow
dir=$(mktemp -d /tmp/vecflow-overload.XXXXXX)
port=$((20000 + RANDOM % 20000))
pids=()
cleanup() {
    local status=$?
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    if [ "$status" = 0 ]; then
        rm -rf "$dir"
    else
        echo "overload.sh failed; its logs and outputs are kept in $dir" >&2
    fi
}
trap cleanup EXIT

config() {  # P0-SFLOW
    cat <<EOF
workers: {count: 2, buffers: 16384}
metrics: {enabled: false}
interfaces:
  p0:
    index: 1
    addresses: [10.0.0.1/24]
    rx-placement: {worker: 0}
    $1
    generator: {streams: [{template: ipv4-udp, src-ip: 10.0.0.2, dst-ip: 48.0.0.1, frame-size: 64}]}
  p1: {index: 2, addresses: [10.1.0.1/24]}
  p2:
    index: 3
    addresses: [10.2.0.1/24]
    rx-placement: {worker: 1}
    sflow: {enable: true, sampling-rate: 100}
    generator: {streams: [{template: ipv4-udp, src-ip: 10.2.0.2, dst-ip: 49.0.0.1, rate-pps: 100000}]}
  p3: {index: 4, addresses: [10.3.0.1/24]}
routes:
  - {prefix: 48.0.0.0/8, via: 10.1.0.2}
  - {prefix: 49.0.0.0/8, via: 10.3.0.2}
neighbors:
  - {interface: p1, address: 10.1.0.2, mac: '02:00:00:00:01:02'}
  - {interface: p3, address: 10.3.0.2, mac: '02:00:00:00:03:02'}
sflow: {sampling-rate: 1000, polling-interval: 5, collectors: [{address: 127.0.0.1, port: $port}]}
EOF
}

# One run: its name, p0's sFlow line; writes $dir/NAME.json.
run() {
    local name=$1 sflow=$2 sock="$dir/$1.sock"
    config "$sflow" >"$dir/$name.yaml"
    "$vecflow" collect --port "$port" --bind 127.0.0.1 --summary --json --duration $((secs + 8)) \
        >"$dir/$name.collect" 2>/dev/null &
    local collector=$!
    pids+=("$collector")
    sleep 0.5
    "$vecflow" run --show-at-exit -c "$dir/$name.yaml" --socket "$sock" >"$dir/$name.show" 2>"$dir/$name.log" &
    local vf=$!
    pids+=("$vf")
    "$vecflow" ctl --socket "$sock" --wait >/dev/null
    local rss=() t=0 step
    while [ "$t" -lt "$secs" ]; do
        step=$((secs - t < 5 ? secs - t : 5))
        sleep "$step"
        t=$((t + step))
        rss+=("$(awk '/^VmRSS/ {print $2}' "/proc/$vf/status")")
    done
    "$vecflow" ctl --socket "$sock" --json show interface >"$dir/$name.interface"
    # At SIGINT the workers stop, the agent sends what it holds, and `show sflow` (printed at
    # exit) has the run's final books.
    kill -INT "$vf"
    wait "$vf" || { echo "vecflow run ($name) exited non-zero:"; tail -20 "$dir/$name.log"; exit 1; }
    wait "$collector" || true
    pids=()
    python3 - "$dir" "$name" "$secs" "${rss[@]}" <<'PY'
import json, re, sys
d, name, secs, rss = sys.argv[1], sys.argv[2], float(sys.argv[3]), [int(x) for x in sys.argv[4:]]
show = open(f"{d}/{name}.show").read().split("vecflow# show sflow", 1)[1].split("vecflow#", 1)[0]
totals = re.search(r"flow samples (\d+), .* sampled packets dropped by the graph (\d+)", show)
books = []
for m in re.finditer(r"^(p\d)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)", show, re.M):
    books.append({"interface": m[1], "if_index": int(m[2]), "seen": int(m[4]), "taken": int(m[5]),
                  "sent": int(m[6]), "ring_full": int(m[7])})
ifs = {i["interface"]["name"]: i for i in json.load(open(f"{d}/{name}.interface"))["interfaces"]}
lines = [l for l in open(f"{d}/{name}.collect").read().splitlines() if l.startswith("{")]
summary = json.loads(lines[-1]) if lines else {}
received = {s["source"]: s["ingress"]["samples"] for s in summary.get("interfaces", [])}
for b in books:
    b["received"] = received.get(f"0:{b['if_index']}", 0)
out = {"run": name, "seconds": secs,
       "p0_forwarded_mpps": ifs["p1"]["counters"]["tx_packets"] / secs / 1e6,
       "p2_forwarded": ifs["p3"]["counters"]["tx_packets"],
       "p2_samples_received": next((b["received"] for b in books if b["interface"] == "p2"), 0),
       "books": books, "samples_encoded": int(totals[1]), "samples_of_drops": int(totals[2]), "rss_kib": rss,
       "collector": {"datagrams": sum(a["datagrams"] for a in summary.get("agents", [])),
                     "lost_datagrams": sum(a["lost_datagrams"] for a in summary.get("agents", []))}}
json.dump(out, open(f"{d}/{name}.json", "w"))
PY
}

for k in $(seq 1 "$runs"); do
    echo "run A$k: p0 sampled 1:1 ($secs s)" >&2
    run "A$k" "sflow: {enable: true, sampling-rate: 1}"
    echo "run B$k: p0 not sampled ($secs s)" >&2
    run "B$k" ""
done

python3 - "$dir" "$runs" "$smoke" "${json:-}" "$(nproc)" <<'PY'
import json, sys
d, runs, smoke, out, cpus = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", sys.argv[4], int(sys.argv[5])
rows = [json.load(open(f"{d}/{n}{k}.json")) for k in range(1, runs + 1) for n in "AB"]
failed = []
print(f"{'run':<4} {'p0 Mpps':>8} {'p2 fwd':>10} {'p2 samples':>10}  books: taken = sent + of drops (lost to full rings)  collector lost  RSS MiB")
for r in rows:
    taken, sent = sum(b["taken"] for b in r["books"]), sum(b["sent"] for b in r["books"])
    of_drops = r["samples_of_drops"]
    if taken != sent + of_drops:
        failed.append(f"{r['run']}: the books do not add up: taken {taken} != sent {sent} + of drops {of_drops}: {r['books']}")
    rss = r["rss_kib"]
    steady = rss[2:] or rss
    if not smoke and steady and max(steady) > min(steady) * 1.05:
        failed.append(f"{r['run']}: RSS not flat after 10 s: {rss} KiB")
    lost = sum(b["ring_full"] for b in r["books"])
    books = f"{taken} = {sent} + {of_drops} ({lost})"
    print(f"{r['run']:<4} {r['p0_forwarded_mpps']:>8.3f} {r['p2_forwarded']:>10} {r['p2_samples_received']:>10}  "
          f"{books:<46} {r['collector']['lost_datagrams']:>6}  {min(rss) / 1024:.0f}-{max(rss) / 1024:.0f}")
for k in range(runs):
    a, b = rows[2 * k], rows[2 * k + 1]
    fwd = a["p2_forwarded"] / max(b["p2_forwarded"], 1)
    smp = a["p2_samples_received"] / max(b["p2_samples_received"], 1)
    judged = not smoke and cpus >= 4
    print(f"pair {k + 1}: p2 forwarded A/B {fwd:.4f}, p2 samples received A/B {smp:.4f}"
          + ("" if judged or smoke else f" (not judged: {cpus} CPUs, and run A keeps 4 threads busy)"))
    if not judged:
        continue
    if fwd < 0.99:
        failed.append(f"pair {k + 1}: p2 forwarded {fwd:.4f} of its rate without the overload")
    if smp < 0.95:
        failed.append(f"pair {k + 1}: p2's samples received {smp:.4f} of those without the overload")
if out:
    json.dump(rows, open(out, "w"), indent=1)
for f in failed:
    print("FAILED:", f)
sys.exit(1 if failed else 0)
PY
