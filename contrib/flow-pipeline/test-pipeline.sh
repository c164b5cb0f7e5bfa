#!/usr/bin/env bash
# End-to-end test of the flow pipeline, run by ./test.sh --full. Three pipelines, each started
# by `pipeline.sh up` (random ports, a temporary directory) and driven by load.py with real
# vecflow routers, which counts per agent and datagram what they sent against ClickHouse:
#   1. the single chain with vecflow's decoder, its Kafka fetched into an empty cache (the
#      first run's path): up prints exactly one line; no row lost or doubled; each query of
#      queries.sql agrees with the routers' own counts (within 196/sqrt(samples) % at 1:20,
#      samplers seeded);
#   2. the single chain with goflow2: the flow queries, rows = flow samples sent;
#   3. the cluster (2 decoders, 3 brokers, 4 partitions, 2 shards) for a minute at 4 000
#      samples/s, one broker SIGKILLed and started again: nothing lost; doubles (if any) gone
#      after OPTIMIZE ... FINAL.
# Stops each pipeline in a trap. Needs root the first time (pipeline.sh installs ClickHouse);
# without it prints SKIP, and under CI=true fails.
# Usage: contrib/flow-pipeline/test-pipeline.sh [path/to/vecflow]
set -euo pipefail
cd "$(dirname "$0")/../.."
vecflow=$(realpath "${1:-target/release/vecflow}")
here=contrib/flow-pipeline
ci=0
case ${CI:-} in "" | false | 0) ;; *) ci=1 ;; esac

if [ "$(id -u)" != 0 ] && ! command -v clickhouse-server >/dev/null; then
    [ $ci = 1 ] && { echo "FAIL: the flow pipeline test needs root to install ClickHouse (CI=true)"; exit 1; }
    echo "SKIP: the flow pipeline test needs root to install ClickHouse"
    exit 0
fi
[ -x "$vecflow" ] || { echo "no vecflow binary at $vecflow" >&2; exit 1; }

dir=$(mktemp -d /tmp/vecflow-pipeline-test.XXXXXX)
pipelines=()
cleanup() {
    local p
    for p in "${pipelines[@]}"; do "$here/pipeline.sh" down --dir "$p" 2>/dev/null || true; done
    rm -rf "$dir"
}
trap cleanup EXIT

# up NAME ARGS...: starts a pipeline on random high ports (Kafka nodes take two ports each,
# ClickHouse shards one HTTP port each and their native ports 881 above) and checks that
# stdout is exactly the one line.
up() {
    local name=$1; shift
    local base=$((20000 + RANDOM % 1000 * 40))
    pipelines+=("$dir/$name")
    "$here/pipeline.sh" up --dir "$dir/$name" --vecflow "$vecflow" --sflow-port "$base" --kafka-port "$((base + 2))" \
        --clickhouse-port "$((base + 20))" "$@" >"$dir/$name.out"
    cat "$dir/$name.out"
    [ "$(wc -l <"$dir/$name.out")" = 1 ] && grep -qE '^sflow=127\.0\.0\.1:[0-9]+ kafka=[0-9.:,]+ clickhouse=[0-9a-z.:/,]+ dir=/\S+$' "$dir/$name.out" ||
        { echo "FAIL: pipeline.sh up printed more or other than its one line:"; od -c "$dir/$name.out" | head; exit 1; }
}

echo "--- the single chain (vecflow collect), Kafka fetched into an empty cache"
rm -rf "$dir/cache"
XDG_CACHE_HOME="$dir/cache" up single
"$here/load.py" --dir "$dir/single" --vecflow "$vecflow" --routers 2 --rate 1000 --sampling-rate 20 --seconds 10 --check-queries
"$here/pipeline.sh" down --dir "$dir/single"

echo "--- the single chain with goflow2"
up goflow2 --decoder goflow2
"$here/load.py" --dir "$dir/goflow2" --vecflow "$vecflow" --routers 2 --rate 2000 --seconds 8 --check-queries
"$here/pipeline.sh" down --dir "$dir/goflow2"

echo "--- the cluster: 2 decoders, 3 brokers, 4 partitions, 2 shards; a broker killed and started again"
up cluster --decoders 2 --brokers 3 --partitions 4 --shards 2
"$here/pipeline.sh" status --dir "$dir/cluster"
"$here/load.py" --dir "$dir/cluster" --vecflow "$vecflow" --routers 4 --rate 4000 --seconds 60 --faults broker
"$here/pipeline.sh" down --dir "$dir/cluster"
