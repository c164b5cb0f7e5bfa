#!/usr/bin/env bash
# The soak: vecflow routing real packets through network namespaces for N minutes while its
# configuration, routes, links and collectors change under it, then its books checked.
#
#   sudo scripts/soak.sh [--minutes N] [--gap-us US] [--json FILE] [--keep]
#
# Needs root, BIRD 2, iperf3, trafgen, ethtool, iproute2 and goflow2 (./test.sh --full installs
# them), and the release build (built when missing; VECFLOW=path to use another binary).
# The lab, the schedule of faults and every check are described in docs/testing.md ("The
# soak"); the code is in scripts/soak/. Exits 0 when every check passed, 1 when one failed,
# 2 when it cannot run.
set -euo pipefail
cd "$(dirname "$0")/.."
case ${1:-} in -h|--help) awk 'NR > 1 && /^#/ {print; next} NR > 1 {exit}' "$0"; exit 0 ;; esac
[ -n "${VECFLOW:-}" ] || [ -x target/release/vecflow ] || cargo build --release -q -p vecflow
exec python3 scripts/soak/soak.py "$@"
