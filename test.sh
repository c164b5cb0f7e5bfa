#!/usr/bin/env bash
# Runs every vecflow test: formatting, lints, unit/integration/property tests.
# Usage: ./test.sh        (the same command CI runs through .ci/run)
# Anything the tests need from outside the Rust toolchain is installed here, once, when missing.
set -euo pipefail
cd "$(dirname "$0")"

step() { printf '\n==> %s\n' "$*"; }

# The decoder fuzz target runs for a bounded time with a fixed seed (FUZZ_SECONDS to change).
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
    step "installing $pkg (needed by the tests)"
    if [ -z "$apt_updated" ]; then
        apt-get -o DPkg::Lock::Timeout=300 update -qq
        apt_updated=1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq "$pkg" >/dev/null
}

# Installs a cargo subcommand from crates.io when it is missing.
need_cargo_tool() {
    local bin=$1 crate=$2 version=$3
    if ! command -v "$bin" >/dev/null 2>&1; then
        step "installing $crate $version (needed by the tests)"
        cargo install --locked "$crate" --version "$version"
    fi
}

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy (warnings are errors)"
cargo clippy --workspace --all-targets --quiet -- -D warnings

need_apt tshark tshark
need_apt sfacctd pmacct

# goflow2, the Go sFlow/NetFlow collector, for the interop tests.
export PATH="$(go env GOPATH 2>/dev/null || echo "$HOME/go")/bin:$PATH"
if ! command -v goflow2 >/dev/null 2>&1; then
    if command -v go >/dev/null 2>&1; then
        step "installing goflow2 v2.2.6 (needed by the tests)"
        go install github.com/netsampler/goflow2/v2/cmd/goflow2@v2.2.6
    else
        echo "no Go toolchain: the goflow2 interop test will say SKIP"
    fi
fi

step "cargo test (unit, node, property, engine, sFlow, CLI and interop tests)"
cargo test --workspace --quiet 2>&1 | tee target/test.log
summary=$(grep -E '^test result:' target/test.log | awk '{p+=$4; f+=$6; i+=$8} END {printf "%d passed, %d failed, %d skipped\n", p, f, i}')

step "fuzz the sFlow decoder for ${FUZZ_SECONDS}s (cargo +nightly fuzz, seed 1)"
need_cargo_tool cargo-fuzz cargo-fuzz 0.13.2
(cd crates/sflow && cargo +nightly fuzz run decode -- -max_total_time="$FUZZ_SECONDS" -seed=1 -print_final_stats=1 2>&1 |
    tee ../../target/fuzz.log | grep -E '^(Done|stat::number_of_executed_units|==[0-9]+==|SUMMARY)' || true)
grep -q '^Done ' target/fuzz.log || { echo "fuzzing failed:"; tail -40 target/fuzz.log; exit 1; }

step "summary"
echo "$summary"
