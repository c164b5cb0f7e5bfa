#!/usr/bin/env bash
# The checks that belong to a release rather than to every change (docs/testing.md, "The long
# checks"): each runs at its full length, and the results go into one dated report.
#
#   sudo scripts/long-checks.sh [--only soak,overload,bench,table,fuzz,pipeline] [--soak-min N] [--fuzz-cap-min C]
#                               [--dir DIR]
#
#   soak      scripts/soak.sh for N minutes (default 10; root)
#   overload  scripts/overload.sh for 60 s a run, the paired ratios judged
#   bench     vecflow bench, every scenario, 3 runs each (the median reported)
#   table     linux-cp at full-table scale: scripts/lcp-full-table.sh with its 60 s churn, then
#             scripts/lcp-bgp-full-table.sh with BIRD and with FRR (root; BIRD 2 and FRR)
#   fuzz      a fuzzing round of every target, C minutes each (default 20: scripts/fuzz-campaign.sh,
#             on a worktree of HEAD, corpora kept in ~/.cache/vecflow-fuzz), two targets at a time
#   pipeline  the flow pipeline's knee (contrib/flow-pipeline/knee.sh: a minute a rate, then 5
#             minutes at the knee) for the single chain, then for the cluster (2 decoders, 3
#             brokers, 4 partitions, 2 shards, 8 routers) with its faults at half the knee
#
# The report is DIR/long-checks-DATE-COMMIT.md (default DIR: target/long-checks), beside each
# check's raw output; the last line printed names it. The checks run one after another (the
# fuzz round on both cores), so a run of them all takes about 2 h 15 min on two cores. Exits 1
# when a check failed (every check still runs), 2 when one cannot run here.
set -euo pipefail
cd "$(dirname "$0")/.."

only=soak,overload,bench,table,fuzz,pipeline soak_min=10 fuzz_cap=20 dir=target/long-checks
while [ $# -gt 0 ]; do
    case $1 in
        --only) only=$2; shift ;;
        --soak-min) soak_min=$2; shift ;;
        --fuzz-cap-min) fuzz_cap=$2; shift ;;
        --dir) dir=$2; shift ;;
        -h|--help) awk 'NR > 1 && /^#/ {print; next} NR > 1 {exit}' "$0"; exit 0 ;;
        *) echo "unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
for c in ${only//,/ }; do
    case $c in soak|overload|bench|table|fuzz|pipeline) ;; *) echo "--only: no check $c (soak, overload, bench, table, fuzz, pipeline)" >&2; exit 2 ;; esac
done
wants() { [[ ",$only," == *",$1,"* ]]; }
if { wants soak || wants table; } && [ "$(id -u)" != 0 ]; then
    echo "the soak and the table checks need root (network namespaces); run as root or leave them out with --only" >&2
    exit 2
fi

commit=$(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo "+changes")
mkdir -p "$dir"
report="$dir/long-checks-$(date -u +%Y-%m-%d)-$commit.md"
failed=0
{
    echo "# Long checks of $commit, $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo
    echo "Machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), kernel $(uname -r)."
} >"$report"

# Runs check $1 (a title) as the command after it, its output in DIR; appends its result, its
# time and the lines of its output that `summary` (a grep -E pattern, $2) picks to the report.
check() {
    local title=$1 summary=$2 start=$SECONDS status=0
    shift 2
    local out="$dir/${title%% *}.txt"
    echo "==> $title" >&2
    "$@" >"$out" 2>&1 || status=$?
    local verdict=passed
    [ "$status" = 0 ] || { verdict="FAILED (exit $status)"; failed=1; }
    {
        echo
        echo "## $title: $verdict in $(((SECONDS - start) / 60)) min $(((SECONDS - start) % 60)) s"
        echo
        echo '```text'
        grep -E "$summary" "$out" | tail -100 || true
        echo '```'
    } >>"$report"
    echo "    $verdict ($((SECONDS - start)) s; output in $out)" >&2
}

cargo build --release --locked -q -p vecflow
vecflow=$PWD/target/release/vecflow

if wants soak; then
    check "soak for $soak_min minutes (scripts/soak.sh)" '^(PASS|FAIL|soak|  )' \
        scripts/soak.sh --minutes "$soak_min" --json "$dir/soak.json"
fi
if wants overload; then
    check "overload for 60 s (scripts/overload.sh)" '.' \
        scripts/overload.sh --seconds 60 --runs 1 --json "$dir/overload.json"
fi
if wants bench; then
    check "bench of every scenario, 3 runs (vecflow bench)" '^[a-z0-9-]+ +[0-9]+ +[0-9.]+ +[0-9.]+|paired with|paths:' \
        "$vecflow" bench --runs 3
fi
if wants table; then
    # All three run; the check fails when one did.
    table_checks() {
        local status=0
        PATH="$PWD/target/release:$PATH" scripts/lcp-full-table.sh || status=1
        PATH="$PWD/target/release:$PATH" scripts/lcp-bgp-full-table.sh || status=1
        PATH="$PWD/target/release:$PATH" scripts/lcp-bgp-full-table.sh --frr || status=1
        return "$status"
    }
    check "linux-cp at full-table scale (scripts/lcp-full-table.sh, lcp-bgp-full-table.sh with BIRD and FRR)" \
        '^[46]\.0|after the last|the API|churn|memory|preloaded|overrun|floor|bird:|frr:|lag|OK|FAIL' table_checks
fi
if wants fuzz; then
    # Two campaigns side by side, one core each, each with its own report: every other target
    # of scripts/fuzz-targets.sh.
    # shellcheck source=scripts/fuzz-targets.sh
    . scripts/fuzz-targets.sh
    fuzz_round() {
        local pids=() status=0 first i part
        for first in 0 1; do
            part=()
            for ((i = first; i < ${#fuzz_targets[@]}; i += 2)); do part+=("${fuzz_targets[i]}"); done
            scripts/fuzz-campaign.sh --cap-min "$fuzz_cap" --report "$dir/fuzz-$first.txt" "${part[@]}" \
                >"$dir/fuzz-$first.log" 2>&1 &
            pids+=($!)
        done
        for p in "${pids[@]}"; do wait "$p" || status=1; done
        cat "$dir/fuzz-0.txt" "$dir/fuzz-1.txt"
        return "$status"
    }
    check "fuzz round, $fuzz_cap min a target (scripts/fuzz-campaign.sh)" '.' fuzz_round
fi

if wants pipeline; then
    # Both shapes run; the check fails when one found no knee or its faults lost more than
    # they may.
    pipeline_knees() {
        local status=0 ports=(--sflow-port 26343 --kafka-port 29092 --clickhouse-port 28123)
        echo "=== the single chain"
        contrib/flow-pipeline/knee.sh --dir "$dir/pipeline-single" --vecflow "$vecflow" \
            --rates 20000,40000,60000,80000,100000 -- "${ports[@]}" || status=1
        echo "=== the cluster: 2 decoders, 3 brokers, 4 partitions, 2 shards"
        contrib/flow-pipeline/knee.sh --dir "$dir/pipeline-cluster" --vecflow "$vecflow" --routers 8 \
            --rates 10000,20000,30000,40000,50000,60000 --faults broker,shard,decoder-term,decoder-kill \
            -- "${ports[@]}" --decoders 2 --brokers 3 --partitions 4 --shards 2 || status=1
        return "$status"
    }
    check "flow pipeline knees and faults (contrib/flow-pipeline/knee.sh)" \
        '^(===|---|knee:|FAIL|Traceback)|^load: (sent|CPU|flow rows|[0-9 .]+ s |127)|Error|denied|not found' pipeline_knees
fi

echo >>"$report"
[ "$failed" = 0 ] && echo "Every check passed." >>"$report" || echo "A check failed: see above." >>"$report"
echo "wrote $report"
exit "$failed"
