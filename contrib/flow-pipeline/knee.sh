#!/usr/bin/env bash
# Finds the knee of a flow pipeline shape: the highest rate (flow samples per second) at which
# 5 minutes lose nothing. Starts the pipeline (pipeline.sh up with the shape's options), runs
# load.py for a minute at each rate of --rates until one loses datagrams, then runs 5 minutes at
# the highest rate that lost nothing (a step lower each time that one loses), then, with
# --faults, 5 minutes at half the knee with those faults. Stops the pipeline at the end.
# Prints one line per run (load.py's), then `knee: RATE` or `knee: none`; each run's JSON
# report goes to DIR/knee-*.json. Run by scripts/long-checks.sh (check `pipeline`). The
# pipeline's data (Kafka's logs and ClickHouse's tables, about 10 GB after a long check's
# cluster) is deleted when it stops, unless --keep-data; the components' logs stay in DIR.
#
#   contrib/flow-pipeline/knee.sh --dir DIR [--rates 5000,10000,...] [--minutes 5]
#                                 [--faults broker,shard,decoder-term,decoder-kill]
#                                 [--routers N] [--vecflow PATH] [--keep-data]
#                                 [-- pipeline.sh up options]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir="" rates=5000,10000,15000,20000,25000,30000,40000,50000 minutes=5 faults="" vecflow="" routers=4 keep_data=""
while [ $# -gt 0 ]; do
    case $1 in
        --dir) dir=$2; shift ;;
        --rates) rates=$2; shift ;;
        --minutes) minutes=$2; shift ;;
        --faults) faults=$2; shift ;;
        --vecflow) vecflow=$2; shift ;;
        --routers) routers=$2; shift ;;
        --keep-data) keep_data=1 ;;
        --) shift; break ;;
        *) echo "unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
    esac
    shift
done
[ -n "$dir" ] || { echo "--dir DIR is needed" >&2; exit 2; }
vecflow=${vecflow:-$here/../../target/release/vecflow}
mkdir -p "$dir"
pipeline="$dir/pipeline"
stop_pipeline() {
    "$here/pipeline.sh" down --dir "$pipeline" 2>/dev/null || true
    [ -n "$keep_data" ] || rm -rf "$pipeline"/kafka-*-data "$pipeline"/clickhouse-*/data "$pipeline"/clickhouse-*/tmp
}
trap stop_pipeline EXIT
"$here/pipeline.sh" up --dir "$pipeline" --vecflow "$vecflow" "$@"

# run NAME RATE SECONDS [FAULTS]: one load.py run; its status says whether it lost anything.
run() {
    local name=$1 rate=$2 secs=$3 f=${4:-}
    "$here/load.py" --dir "$pipeline" --vecflow "$vecflow" --routers "$routers" --rate "$rate" \
        --seconds "$secs" ${f:+--faults "$f"} --json "$dir/knee-$name.json"
}

passed=()
for r in ${rates//,/ }; do
    echo "--- a minute at $r samples/s"
    run "screen-$r" "$r" 60 || break
    passed+=("$r")
done
knee=none
for ((i = ${#passed[@]} - 1; i >= 0; i--)); do
    r=${passed[i]}
    echo "--- $minutes minutes at $r samples/s"
    if run "long-$r" "$r" $((minutes * 60)); then knee=$r; break; fi
done
echo "knee: $knee"
[ "$knee" != none ] || exit 1
if [ -n "$faults" ]; then
    echo "--- $minutes minutes at half the knee, $((knee / 2)) samples/s, faults: $faults"
    run faults $((knee / 2)) $((minutes * 60)) "$faults"
fi
