#!/usr/bin/env bash
# Long fuzzing campaigns, the way ./test.sh runs its short ones (same targets, seeds and
# corpora), for the next person to run before a release (not run by CI).
#
#   scripts/fuzz-campaign.sh [--max-runs N] [--budget-min M] [--flat-min F] [--slice-sec S]
#                            [--cap-min C] [--flat-by all|own] [--report REPORT] [TARGET ...]
#
# TARGET is crate/target (default: all of them: sflow/decode, dataplane/packets, config, pcap,
# netlink, api, apply). Each runs on one core in slices of S seconds (default 600), from its
# corpus (kept in crates/CRATE/fuzz/corpus/TARGET between slices and campaigns, and minimised
# before the first slice), until it has
# run N executions (default 10 000 000) or M minutes (default 60: a CPU-hour), whichever
# comes first, and its coverage (libFuzzer's cov: the code edges its inputs reach, at the end
# of each slice) has not beaten its highest value in the last F minutes (default 30), or (with
# --cap-min) after C minutes whatever its coverage does, which the report then says. Only a new
# highest counts as growth: some targets' cov moves a few edges up and down from slice to slice
# with no new input (dataplane/packets by about 5), which a comparison with the previous slice
# would count as growth forever. Each slice also says where its new edges are (libFuzzer's
# -print_pcs): in this repository's crates ("own") or in the dependencies and the standard
# library (after hours, config's are mostly in the YAML library). With --flat-by own,
# flatness is judged by the repository's own code alone (no new edge there for F minutes);
# the report gives both either way. A crash, a leak or a broken invariant stops the
# campaign (exit 1; the slice's log is kept in target/). At the end it prints, per target:
# commit, executions, coverage, seconds and why it stopped; the same goes to REPORT
# (--report, default target/fuzz-campaign.txt).
# Needs the nightly toolchain and cargo-fuzz (./test.sh installs them); netlink seeds need root.
set -euo pipefail
cd "$(dirname "$0")/.."

budget=60 flat=30 max_runs=10000000 slice=600 cap=0 flat_by=all report=target/fuzz-campaign.txt
targets=()
while [ $# -gt 0 ]; do
    case $1 in
        --budget-min) budget=$2; shift ;;
        --flat-min) flat=$2; shift ;;
        --max-runs) max_runs=$2; shift ;;
        --slice-sec) slice=$2; shift ;;
        --cap-min) cap=$2; shift ;;
        --flat-by)
            case $2 in all|own) flat_by=$2 ;; *) echo "--flat-by takes all or own, not $2" >&2; exit 2 ;; esac
            shift ;;
        --report) report=$2; shift ;;
        -h|--help) awk 'NR > 1 && /^#/ {print; next} NR > 1 {exit}' "$0"; exit 0 ;;
        -*) echo "unknown option $1" >&2; exit 2 ;;
        *) targets+=("$1") ;;
    esac
    shift
done
[ ${#targets[@]} -gt 0 ] || targets=(sflow/decode dataplane/packets dataplane/config dataplane/pcap
    dataplane/netlink dataplane/api dataplane/apply)

root=$PWD
commit=$(git rev-parse --short HEAD)$(git diff --quiet || echo "+changes")
scripts/netlink-seeds.sh "$root/target/fuzz-seeds/netlink" >/dev/null
case $report in /*) ;; *) report="$root/$report" ;; esac
mkdir -p "$root/target" "$(dirname "$report")"
: >"$report"

# The seed directories and libFuzzer flags test.sh gives each target.
seeds_of() {
    case $1 in
        dataplane/packets) echo "-max_len=30000" ;;
        dataplane/config) echo "$root/examples" ;;
        dataplane/pcap) echo "$root/crates/vecflow/tests/fixtures" ;;
        dataplane/netlink) echo "$root/target/fuzz-seeds/netlink" ;;
        dataplane/api) echo "$root/crates/dataplane/fuzz/seeds/api" ;;
        dataplane/apply) echo "$root/crates/dataplane/fuzz/seeds/apply $root/examples" ;;
    esac
}

for t in "${targets[@]}"; do
    crate=${t%/*} target=${t#*/}
    dir="$root/crates/$crate/fuzz"
    mkdir -p "$dir/corpus/$target"
    seeds=() flags=()
    for a in $(seeds_of "$t"); do
        if [[ $a == -* ]]; then flags+=("$a"); else seeds+=("$a"); fi
    done
    (cd "$dir" && cargo +nightly fuzz build "$target" >"$root/target/fuzz-campaign-build.log" 2>&1) ||
        { echo "$t: the build failed:"; tail -30 "$root/target/fuzz-campaign-build.log"; exit 1; }
    # Each slice starts by running every input of the corpus once, and the corpus keeps every
    # input any slice found (about five times more than cover the same features after a few
    # hours: 18 000 files for 3 700 that count), so first minimise it to the inputs that
    # cover its features (libFuzzer's -merge); otherwise the slices spend a third of their time
    # reloading it.
    (cd "$dir" && cargo +nightly fuzz cmin "$target" "corpus/$target" -- "${flags[@]}" \
        >"$root/target/fuzz-campaign-cmin.log" 2>&1) ||
        { echo "$t: minimising its corpus failed:"; tail -30 "$root/target/fuzz-campaign-cmin.log"; exit 1; }
    runs=0 secs=0 cov=0 best=0 ft=0 grew_at=0 own_grew_at=0 own_total=0 dep_total=0 why=""
    while :; do
        log="$root/target/fuzz-campaign-$crate-$target-$secs.log"
        (cd "$dir" && cargo +nightly fuzz run "$target" "corpus/$target" "${seeds[@]}" -- \
            -max_total_time="$slice" -print_final_stats=1 -print_pcs=1 "${flags[@]}" >"$log" 2>&1) || true
        if ! grep -q '^Done ' "$log"; then
            echo "$t: failed in the slice at second $secs; see $log" | tee -a "$report"
            tail -40 "$log"
            exit 1
        fi
        ran=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
        runs=$((runs + ran))
        read -r new_cov new_ft < <(grep -E '(DONE|pulse|NEW|REDUCE|INITED) +cov:' "$log" | tail -1 |
            sed -E 's/.*cov: ([0-9]+) ft: ([0-9]+).*/\1 \2/') || true
        secs=$((secs + slice))
        # ft (libFuzzer's features: edges split by hit counts, and value profiles) keeps creeping
        # up for hours after cov, the code reached, has settled; it is reported, not waited for.
        if [ "${new_cov:-0}" -gt "$best" ]; then
            best=$new_cov grew_at=$secs
        fi
        cov=${new_cov:-$cov} ft=${new_ft:-$ft}
        # Edges new in this slice (printed after the corpus ran: NEW_PC ... in FUNCTION FILE:LINE).
        found=$(awk '/INITED/ {p = 1} p && /NEW_PC/' "$log")
        own=$(grep -c -F " $root/crates/" <<<"$found" || true)
        dep=$(($(grep -c NEW_PC <<<"$found" || true) - own))
        own_total=$((own_total + own)) dep_total=$((dep_total + dep))
        [ "$own" -eq 0 ] || own_grew_at=$secs
        echo "  $t: $((secs / 60)) min, $runs runs, cov $cov (highest $best) ft $ft;" \
            "new edges: $own own, $dep in dependencies" >&2
        flat_since=$grew_at
        [ "$flat_by" = all ] || flat_since=$own_grew_at
        if { [ "$runs" -ge "$max_runs" ] || [ "$secs" -ge $((budget * 60)) ]; } &&
            [ $((secs - flat_since)) -ge $((flat * 60)) ]; then
            why="$runs runs in $((secs / 60)) min; coverage ($flat_by code) flat for the last $(((secs - flat_since) / 60)) min"
            break
        fi
        if [ "$cap" -gt 0 ] && [ "$secs" -ge $((cap * 60)) ]; then
            why="stopped at the $cap-minute cap"
            break
        fi
    done
    printf '%-18s commit %s: %s runs, cov %s (highest %s) ft %s, %s s (%s); cov last grew at minute %s;' \
        "$t" "$commit" "$runs" "$cov" "$best" "$ft" "$secs" "$why" $((grew_at / 60)) | tee -a "$report"
    printf ' new edges: %s own (the last at minute %s), %s in dependencies\n' "$own_total" \
        $((own_grew_at / 60)) "$dep_total" | tee -a "$report"
done
echo "wrote $report" >&2
