#!/usr/bin/env bash
# Fails when a Rust source file of any crate (its src/, tests/, benches/ and fuzz targets) is
# over the line limit (800, docs/architecture.md): a file that long holds more than one job.
# Usage: scripts/check-file-sizes.sh [LIMIT]
set -euo pipefail
cd "$(dirname "$0")/.."
limit=${1:-800}
over=$(git ls-files --cached --others --exclude-standard -- 'crates/*.rs' | xargs wc -l | awk -v max="$limit" '$2 != "total" && $1 > max {print "  " $1 " lines: " $2}')
if [ -n "$over" ]; then
    echo "source files over $limit lines (split each into modules with one job):"
    echo "$over"
    exit 1
fi
echo "every Rust source file is at most $limit lines"
