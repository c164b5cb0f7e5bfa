#!/usr/bin/env bash
# Runs every vecflow test: formatting, lints, unit/integration/property tests.
# Usage: ./test.sh        (the same command CI runs through .ci/run)
# Anything the tests need from outside the Rust toolchain is installed here, once, when missing.
set -euo pipefail
cd "$(dirname "$0")"

step() { printf '\n==> %s\n' "$*"; }

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy (warnings are errors)"
cargo clippy --workspace --all-targets --quiet -- -D warnings

step "cargo test (debug: unit, node, property, engine and CLI tests)"
cargo test --workspace --quiet 2>&1 | tee target/test.log
summary=$(grep -E '^test result:' target/test.log | awk '{p+=$4; f+=$6; i+=$8} END {printf "%d passed, %d failed, %d skipped\n", p, f, i}')

step "summary"
echo "$summary"
