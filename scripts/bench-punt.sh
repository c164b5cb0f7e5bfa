#!/usr/bin/env bash
# linux-cp punt benchmark: packets per second a worker sends up a TAP (needs root; not run by
# CI beyond a one-second smoke run).
#
# One worker (on the last CPU) runs a generator port that sends 64-byte UDP to the router's
# own address as fast as it can; linux-cp is on with both policers off, so every packet is
# punted: copied into a byte buffer, handed to the control thread (vecflow-lcp, on another
# CPU) and written to the TAP, where the kernel of namespace vecflow-punt takes it (and answers
# with ICMP port unreachable, rate-limited, which comes back down the TAP). What the worker
# could not hand over (no free byte buffer: the control thread is behind) is dropped as
# punt-queue-full. Prints `show lcp`, `show errors` and the rates over the window.
#
# Usage: sudo scripts/bench-punt.sh [SECONDS]   (default 5)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-5}
vecflow=${VECFLOW:-target/release/vecflow}
ns=vecflow-punt
[ "$(id -u)" = 0 ] || { echo "bench-punt.sh needs root (TAPs in a network namespace)" >&2; exit 1; }
[ -x "$vecflow" ] || cargo build --release
work=$(mktemp -d)
cleanup() {
    kill "${vf_pid:-}" 2>/dev/null || true
    wait "${vf_pid:-}" 2>/dev/null || true
    ip netns del $ns 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
cpus=$(nproc)
cat >"$work/punt.yaml" <<YAML
workers: {count: 1, cores: [$((cpus - 1))]}
metrics: {enabled: false}
linux-cp: {netns: $ns, punt-rate: {control: 0, other: 0}}
interfaces:
  gen0:
    mac: 02:fe:00:00:70:01
    addresses: [100.64.70.1/24]
    generator: {streams: [{src-mac: 02:00:00:00:70:02, dst-mac: 02:fe:00:00:70:01, src-ip: 100.64.70.2, dst-ip: 100.64.70.1}]}
YAML
"$vecflow" run -c "$work/punt.yaml" --socket "$work/api.sock" 2>"$work/vecflow.log" &
vf_pid=$!
"$vecflow" ctl --socket "$work/api.sock" --wait=30 >/dev/null
sleep 1
ctl() { "$vecflow" ctl --socket "$work/api.sock" "$@"; }
ctl --json show lcp >"$work/before.json"
sleep "$secs"
ctl --json show lcp >"$work/after.json"
ctl show lcp
ctl show errors
python3 - "$work/before.json" "$work/after.json" "$secs" <<'PY'
import json, sys
before, after = (json.load(open(p))["pairs"][0] for p in sys.argv[1:3])
secs = float(sys.argv[3])
rate = lambda k: (after[k] - before[k]) / secs
print(f"punted {rate('punted'):.0f}/s to the TAP ({rate('punt_lost'):.0f}/s lost at the TAP); "
      f"{rate('punt_queue_full'):.0f}/s dropped as punt-queue-full; injected {rate('injected'):.0f}/s")
PY
