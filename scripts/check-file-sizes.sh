#!/usr/bin/env bash
# Fails when a Rust source file of any crate (its src/, tests/, benches/ and fuzz targets) is
# over 500 lines and not on the short list below, when a listed file is over 800 lines, when a
# listed file is gone or back under the limit (take it off the list), or when the list grows
# past 8 files (docs/architecture.md, "No file over 500 lines"): a file that long holds more
# than one job, so split it into modules with one job each.
# Usage: scripts/check-file-sizes.sh
set -euo pipefail
cd "$(dirname "$0")/.."
limit=500
ceiling=800
max_listed=8

# The files allowed over the limit, each with the reason it is one file. Keep it short.
listed=(
    "crates/vecflow/tests/api.rs|one test binary for the API: every command's round trip against one running vecflow; splitting it adds a binary to link"
    "crates/vecflow/tests/netns.rs|one namespace lab: its scenarios share the veth fixture and run in one binary"
    "crates/vecflow/tests/linux_cp.rs|one namespace lab: linux-cp's scenarios share the namespace, TAP and veth fixture"
    "crates/vecflow/tests/interop.rs|one lab: each decoder (tshark, goflow2, pmacct, sflowtool) against the same agent run"
    "crates/dataplane/tests/sflow_agent.rs|the agent's end-to-end checks share one harness of workers, rings and a UDP collector"
    "crates/dataplane/src/l3/fib/ip6.rs|one data structure: the IPv6 FIB's trie, its lookup and its writer keep one set of invariants"
    "crates/classifier/src/cache.rs|one data structure: the Cuckoo megaflow cache, its lookup, insert and eviction keep one set of invariants"
)

if [ "${#listed[@]}" -gt "$max_listed" ]; then
    echo "scripts/check-file-sizes.sh lists ${#listed[@]} files over $limit lines; at most $max_listed may be: split one"
    exit 1
fi

declare -A allowed
failed=0
for entry in "${listed[@]}"; do
    allowed[${entry%%|*}]=missing
done

while read -r lines path; do
    [ "$path" = total ] && continue
    if [ -n "${allowed[$path]:-}" ]; then
        allowed[$path]=$lines
        if [ "$lines" -gt "$ceiling" ]; then
            echo "  $lines lines: $path (listed, but over $ceiling: split it)"
            failed=1
        fi
    elif [ "$lines" -gt "$limit" ]; then
        echo "  $lines lines: $path (over $limit: split it into modules with one job)"
        failed=1
    fi
done < <(git ls-files --cached --others --exclude-standard -- 'crates/*.rs' | xargs wc -l)

for path in "${!allowed[@]}"; do
    lines=${allowed[$path]}
    if [ "$lines" = missing ]; then
        echo "  $path is listed in scripts/check-file-sizes.sh but does not exist: take it off the list"
        failed=1
    elif [ "$lines" -le "$limit" ]; then
        echo "  $path is listed in scripts/check-file-sizes.sh but has $lines lines: take it off the list"
        failed=1
    fi
done

if [ "$failed" != 0 ]; then
    echo "source file sizes: see above (limit $limit lines; the listed files up to $ceiling)"
    exit 1
fi
echo "every Rust source file is at most $limit lines, but for the ${#listed[@]} listed in scripts/check-file-sizes.sh"
