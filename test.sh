#!/usr/bin/env bash
# Runs every vecflow test: formatting, lints, unit/integration/property tests.
# Usage: ./test.sh        (the same command CI runs through .ci/run)
# Anything the tests need from outside the Rust toolchain is installed here, once, when missing.
set -euo pipefail
cd "$(dirname "$0")"

# Each step prints its name; the time each took is printed when the next starts and, as a table,
# when the run ends (also on failure), so a slow step is easy to find.
step_name= step_start=$SECONDS step_times=()
end_step() {
    [ -n "$step_name" ] || return 0
    local took=$((SECONDS - step_start))
    step_times+=("$(printf '%5ds  %s' "$took" "$step_name")")
    printf '    (%ds)\n' "$took"
}
step() {
    end_step
    step_name=$* step_start=$SECONDS
    printf '\n==> %s\n' "$*"
}
# An installation inside a step: timed as a step of its own, then the step it interrupted goes
# on (as "… (continued)"), so the table tells install times from test times.
install_step() {
    local what=$1 parent=$step_name
    shift
    step "installing $what (needed by the tests)"
    "$@"
    step "${parent% (continued)} (continued)"
}
print_step_times() {
    end_step
    step_name=
    printf '\n==> time per step (total %ds)\n' "$SECONDS"
    printf '%s\n' "${step_times[@]}"
}
trap print_step_times EXIT

# Each fuzz target runs for a bounded time with a fixed seed (FUZZ_SECONDS to change).
FUZZ_SECONDS=${FUZZ_SECONDS:-30}

# Installs a Debian package when its command is missing (one `apt-get update` per run).
apt_updated=
need_apt() {
    local cmd=$1 pkg=$2
    command -v "$cmd" >/dev/null 2>&1 && return 0
    if [ "$(id -u)" != 0 ]; then
        echo "not root: cannot install $pkg; the tests that need $cmd will say SKIP"
        return 0
    fi
    install_step "$pkg" apt_install "$pkg"
}
apt_install() {
    if [ -z "$apt_updated" ]; then
        apt-get -o DPkg::Lock::Timeout=300 update -qq
        apt_updated=1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq "$1" >/dev/null
}

# Installs a cargo subcommand from crates.io when it is missing.
need_cargo_tool() {
    local bin=$1 crate=$2 version=$3
    if ! command -v "$bin" >/dev/null 2>&1; then
        install_step "$crate $version" cargo install --locked "$crate" --version "$version"
    fi
}

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy (warnings are errors)"
cargo clippy --workspace --all-targets --quiet -- -D warnings

step "no Rust source file over 800 lines (scripts/check-file-sizes.sh)"
scripts/check-file-sizes.sh

step "tools the tests need (installed when missing)"
need_apt tshark tshark
need_apt sfacctd pmacct
# The end-to-end tests through network namespaces (root only).
need_apt ip iproute2
need_apt ping iputils-ping
need_apt ethtool ethtool
need_apt setpriv util-linux
need_apt iperf3 iperf3
# BIRD 2 on a vecflow router's linux-cp TAP (tests/linux_cp_bird.rs, linux_cp_bgp.rs).
need_apt bird bird2
# FRR's zebra and bgpd as the linux-cp router's daemons (tests/linux_cp_bgp.rs, docs/bgp-router.md).
need_apt vtysh frr
# The README test: the API example with socat, the package's man pages.
need_apt socat socat
need_apt man man-db
# The flow pipeline test.
need_apt curl curl
# trafgen for the smoke runs of compare-peers.sh and bench-af-packet.sh.
need_apt trafgen netsniff-ng
# cargo-deb for the README's package block, at the version scripts/build-deb.sh pins (the blocks
# install into a directory of their own, which would leave nothing for the next run).
need_cargo_tool cargo-deb cargo-deb "$(sed -n 's/^CARGO_DEB_VERSION=//p' scripts/build-deb.sh)"
need_cargo_tool cargo-fuzz cargo-fuzz 0.13.2
if ! cargo +nightly miri --version >/dev/null 2>&1; then
    install_step "Miri (rustup +nightly component add miri rust-src)" rustup +nightly component add miri rust-src
fi

# goflow2, the Go sFlow/NetFlow collector, for the interop tests.
export PATH="$(go env GOPATH 2>/dev/null || echo "$HOME/go")/bin:$PATH"
if ! command -v goflow2 >/dev/null 2>&1; then
    if command -v go >/dev/null 2>&1; then
        install_step "goflow2 v2.2.6" go install github.com/netsampler/goflow2/v2/cmd/goflow2@v2.2.6
    else
        echo "no Go toolchain: the goflow2 interop test will say SKIP"
    fi
fi

step "cargo test (unit, node, property, engine, sFlow, CLI and interop tests)"
# A test that cannot run here (a tool above missing, no IPv6 loopback) fails with CI=true;
# otherwise it appends `SKIP <test>: <reason>` to this file and returns, and cargo counts it
# as passed: the summary counts it as skipped instead (cargo shows no stderr of passing tests).
mkdir -p target
export VECFLOW_SKIP_LOG="$PWD/target/skips.log"
: >"$VECFLOW_SKIP_LOG"
set +e
cargo test --workspace --quiet --no-fail-fast 2>&1 | tee target/test.log
test_status=${PIPESTATUS[0]}
set -e
skip_lines=$(grep -c '^SKIP ' "$VECFLOW_SKIP_LOG" || true)
ignored_tests=$(grep -E '^test result:' target/test.log | awk '{i+=$8} END {print i+0}')
summary=$(grep -E '^test result:' target/test.log | awk -v s="$skip_lines" -v i="$ignored_tests" \
    '{p+=$4; f+=$6} END {p-=s; if (p<0) p=0; printf "%d passed, %d failed, %d skipped\n", p, f, s+i}')
print_summary() {
    echo "$summary"
    grep '^SKIP ' "$VECFLOW_SKIP_LOG" || true
    if [ "$ignored_tests" -gt 0 ]; then
        cargo test --workspace --quiet -- --ignored --list 2>/dev/null | sed -n 's/: test$//p' | sed 's/^/IGNORED /'
    fi
    grep -E '^---- .* stdout ----$' target/test.log | sed -E 's/^---- (.*) stdout ----$/FAILED \1/' || true
}
if [ "$test_status" != 0 ]; then
    step "summary (cargo test failed)"
    print_summary
    exit "$test_status"
fi

step "flow pipeline: vecflow -> goflow2 -> Kafka -> ClickHouse (contrib/flow-pipeline/test-pipeline.sh)"
contrib/flow-pipeline/test-pipeline.sh target/debug/vecflow

step "README and docs: every command block as written, links and subcommands (scripts/readme-test.py)"
# The release binary is what the README's `cargo run --release` builds and what the blocks
# find as `vecflow` on their PATH (never an installed one).
cargo build --release --locked -p vecflow
scripts/readme-test.py

step "smoke run of scripts/overload.sh (5 s per run: the sFlow books add up under a 1:1 flood)"
scripts/overload.sh --seconds 5 --smoke

step "the soak for one minute (scripts/soak.sh: routing, BGP, faults and collectors, then the books)"
if [ "$(id -u)" = 0 ]; then
    scripts/soak.sh --minutes 1 --json target/soak.json
elif [ "${CI:-}" = true ]; then
    echo "the soak needs root (CI=true)"; exit 1
else
    echo "SKIP scripts/soak.sh: needs root for network namespaces"
fi

step "smoke runs of the scripts the docs point to (scripts/compare-peers.sh, scripts/bench-af-packet.sh, scripts/bench-punt.sh)"
# One short run each, so that a change they depend on (a new column in show runtime) breaks
# them here rather than silently; the measurements themselves are for the docs, not CI.
if [ "$(id -u)" = 0 ]; then
    scripts/compare-peers.sh --seconds 1 --runs 1 --layouts a --json \
        --only generator-alone,kernel,vecflow-afpacket,vecflow-afxdp >target/compare-peers-smoke.json
    python3 - target/compare-peers-smoke.json <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
assert [r["contender"] for r in rows] == ["generator-alone", "kernel", "vecflow-afpacket", "vecflow-afxdp"], rows
for r in rows:
    assert r["mpps"] > 0, r
    if r["contender"].startswith("vecflow"):
        assert r["clocks_per_packet"].get("ip4-lookup", 0) > 0, r
        assert all(run["sflow_samples"]["sent"] > 0 for run in r["runs"]), r
        # The samplers' books at exit: every sample taken was sent or was of a dropped packet.
        assert all(x["taken"] == x["sent"] + x["of_drops"] for x in (run["sflow_samples"] for run in r["runs"])), r
print("compare-peers.sh: " + ", ".join(f'{r["contender"]} {r["mpps"]} Mpps' for r in rows))
PY
    scripts/bench-af-packet.sh 1 >target/bench-af-packet-smoke.txt 2>&1 ||
        { tail -30 target/bench-af-packet-smoke.txt; exit 1; }
    grep -E '^trafgen sent [1-9][0-9]* in 1 s; vecflow forwarded [1-9]' target/bench-af-packet-smoke.txt ||
        { echo "bench-af-packet.sh forwarded nothing:"; tail -30 target/bench-af-packet-smoke.txt; exit 1; }
    scripts/bench-punt.sh 1 >target/bench-punt-smoke.txt 2>&1 || { tail -30 target/bench-punt-smoke.txt; exit 1; }
    grep -E '^punted [1-9][0-9]*/s to the TAP' target/bench-punt-smoke.txt ||
        { echo "bench-punt.sh punted nothing:"; tail -30 target/bench-punt-smoke.txt; exit 1; }
    # Not only a smoke run: the full-table test of linux-cp (1.2 M routes through the kernel,
    # the pair, the preload, the overrun), with the release build it needs.
    step "linux-cp full table (scripts/lcp-full-table.sh)"
    PATH="$PWD/target/release:$PATH" scripts/lcp-full-table.sh >target/lcp-full-table.txt 2>&1 ||
        { tail -60 target/lcp-full-table.txt; exit 1; }
    cat target/lcp-full-table.txt
elif [ "${CI:-}" = true ]; then
    echo "the script smoke runs need root (network namespaces); with CI=true that is a failure"
    exit 1
else
    echo "SKIP script smoke runs: not root (they need network namespaces)"
fi

step "loom: every interleaving of the sFlow ring and of QSBR (cargo test --cfg loom)"
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p dataplane --lib --release --quiet loom

step "Miri: the unit tests of the modules with unsafe code or lock-free sharing (sFlow ring, AF_XDP rings, buffer, hugemem, qsbr, snapshot, fib)"
# Isolation is off for the clock the QSBR and FIB tests sleep on. The FIB runs without weak-memory
# emulation: Miri's store buffers over its 64 MiB table of atomics take hours (its orderings are
# covered by QSBR's loom model); the data-race and borrow checks stay on.
miri() {
    MIRIFLAGS="-Zmiri-disable-isolation $1" CARGO_TARGET_DIR=target/miri \
        cargo +nightly miri test -p dataplane --lib --quiet -- --test-threads=1 "${@:2}"
}
miri "" buffer:: hugemem:: sflow::ring:: drivers::af_xdp::ring:: qsbr:: snapshot::
miri -Zmiri-disable-weak-memory-emulation fib::

# Runs fuzz target $2 of crate $1 for FUZZ_SECONDS with a fixed seed, from its corpus plus any
# seed directories given after (arguments starting with '-' go to libFuzzer); fails on a
# crash, a leak or a broken invariant.
fuzz() {
    local crate=$1 target=$2
    shift 2
    local seeds=() flags=()
    for a in "$@"; do
        if [[ $a == -* ]]; then flags+=("$a"); else seeds+=("$a"); fi
    done
    step "fuzz $crate/$target for ${FUZZ_SECONDS}s (cargo +nightly fuzz, seed 1)"
    local log="$PWD/target/fuzz-$crate-$target.log"
    mkdir -p "crates/$crate/fuzz/corpus/$target"
    (cd "crates/$crate/fuzz" && cargo +nightly fuzz run "$target" "corpus/$target" "${seeds[@]}" -- \
        -max_total_time="$FUZZ_SECONDS" -seed=1 -print_final_stats=1 "${flags[@]}" >"$log" 2>&1) || true
    grep -E '^(Done|stat::number_of_executed_units|==[0-9]+==|SUMMARY)' "$log" || true
    grep -q '^Done ' "$log" || { echo "fuzzing $crate/$target failed:"; tail -60 "$log"; exit 1; }
}
fuzz sflow decode
fuzz dataplane packets -max_len=30000
fuzz dataplane config "$PWD/examples"
fuzz dataplane pcap "$PWD/crates/vecflow/tests/fixtures"
scripts/netlink-seeds.sh "$PWD/target/fuzz-seeds/netlink"
fuzz dataplane netlink "$PWD/target/fuzz-seeds/netlink"
fuzz dataplane api "$PWD/crates/dataplane/fuzz/seeds/api"
fuzz dataplane apply "$PWD/crates/dataplane/fuzz/seeds/apply" "$PWD/examples"
step "smoke run of scripts/fuzz-campaign.sh (one 5 s slice)"
scripts/fuzz-campaign.sh --slice-sec 5 --budget-min 0 --flat-min 0 --report target/fuzz-campaign-smoke.txt dataplane/pcap

step "summary"
print_summary
