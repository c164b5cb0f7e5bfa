#!/usr/bin/env bash
# A fuzzing round: each target for at most C minutes (--cap-min, default 20), niced, on a git
# worktree of one fixed commit, so that main moves on while it runs (not run by CI; the long
# checks run it, scripts/long-checks.sh).
#
#   scripts/fuzz-campaign.sh [--commit REV] [--cap-min C] [--slice-sec S] [--state DIR]
#                            [--target-dir DIR] [--no-dict] [--fresh] [--report REPORT] [TARGET ...]
#
# TARGET is crate/target (default: all of them, scripts/fuzz-targets.sh: sflow/decode,
# dataplane/packets, config, pcap, netlink, api, apply). --commit is the commit fuzzed
# (default HEAD; a dirty tree's changes are not in it). The worktree, its builds and every
# target's corpus live in the state directory (--state, default $VECFLOW_FUZZ_STATE or
# ~/.cache/vecflow-fuzz):
#   DIR/worktree                   the commit, checked out (kept between rounds: builds are incremental)
#   DIR/corpus/CRATE/TARGET        the corpus: the next round starts where this one ended
#   DIR/logs/                      each slice's log
#   DIR/target                     the fuzz crates' builds (--target-dir to use another: a
#                                  checkout's crates/CRATE/fuzz/target shares its dependencies;
#                                  never one another worktree builds into while this runs, as
#                                  its build would replace the binary a slice reads its
#                                  coverage's symbols from)
# A target runs in slices of S seconds (default 300) until C minutes have passed (at least one
# slice), from its corpus (minimised first, libFuzzer's -merge) plus the seeds and flags
# ./test.sh gives it (both from scripts/fuzz-targets.sh), with its dictionary for the
# structured targets (config, apply, api: crates/dataplane/fuzz/dicts/, made from the schema
# and the registry; --no-dict leaves it out).
# --fresh starts from the seeds alone (an empty corpus; for comparisons such as with and without
# the dictionary: give each its own --state).
# Coverage flatness is reported, not required. After each slice libFuzzer's coverage is split
# by where the code is: the repository's own crates, or dependencies and the standard library
# (-print_coverage: edges of the covered functions by file). At the end it prints, per target:
# commit, executions, coverage (own and dependencies, at the end of each slice), and the minute
# of the last new own-code edge ("none" when there was none); the same goes to REPORT
# (--report, default target/fuzz-campaign.txt). A crash, a leak or a broken invariant stops the
# round (exit 1; the slice's log is kept, the input is in the worktree's
# crates/CRATE/fuzz/artifacts). Needs the nightly toolchain and cargo-fuzz (./test.sh --full
# installs them); netlink seeds need root.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/fuzz-targets.sh
. scripts/fuzz-targets.sh

cap=20 slice=300 rev=HEAD dict=1 fresh=0 report=target/fuzz-campaign.txt target_dir=
state=${VECFLOW_FUZZ_STATE:-$HOME/.cache/vecflow-fuzz}
targets=()
while [ $# -gt 0 ]; do
    case $1 in
        --cap-min) cap=$2; shift ;;
        --slice-sec) slice=$2; shift ;;
        --commit) rev=$2; shift ;;
        --state) state=$2; shift ;;
        --target-dir) target_dir=$2; shift ;;
        --no-dict) dict=0 ;;
        --fresh) fresh=1 ;;
        --report) report=$2; shift ;;
        -h|--help) awk 'NR > 1 && /^#/ {print; next} NR > 1 {exit}' "$0"; exit 0 ;;
        -*) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
        *) targets+=("$1") ;;
    esac
    shift
done
for n in "$cap" "$slice"; do
    [[ $n =~ ^[0-9]+$ ]] || { echo "--cap-min and --slice-sec take whole numbers, not $n" >&2; exit 2; }
done
[ "$slice" -ge 1 ] || { echo "--slice-sec: at least 1" >&2; exit 2; }
[ ${#targets[@]} -gt 0 ] || targets=("${fuzz_targets[@]}")
for t in "${targets[@]}"; do
    fuzz_args "$t" . . >/dev/null || exit 2
done

repo=$PWD
commit=$(git rev-parse --verify "$rev^{commit}") || { echo "--commit $rev: not a commit" >&2; exit 2; }
short=${commit:0:7}
case $report in /*) ;; *) report="$repo/$report" ;; esac
case $state in /*) ;; *) state="$repo/$state" ;; esac
mkdir -p "$state/logs" "$(dirname "$report")"
target_dir=${target_dir:-$state/target}
case $target_dir in /*) ;; *) target_dir="$repo/$target_dir" ;; esac

# The worktree: one, kept, moved to the commit fuzzed (its untracked build output stays);
# campaigns sharing the state directory (scripts/long-checks.sh runs two) take turns here.
root=$state/worktree
seeds_root=$state/seeds
exec 9>"$state/lock"
flock 9
if [ ! -e "$root/.git" ]; then
    git worktree prune
    git worktree add --detach "$root" "$commit" >/dev/null
elif [ "$(git -C "$root" rev-parse HEAD)" != "$commit" ]; then
    git -C "$root" checkout --quiet --detach "$commit"
fi
"$root/scripts/netlink-seeds.sh" "$seeds_root/netlink" >/dev/null
flock -u 9
: >"$report"

# The project's own code: a file of one of its crates, in whichever checkout the binary was
# built from (the debug info names the build's paths; a shared --target-dir may hold another
# worktree's build), never a copy under ~/.cargo.
own_re="/crates/($(cd "$root/crates" && ls -d -- */ | tr -d / | paste -sd '|'))/"
# Edges covered, own and in dependencies, from a log of -print_coverage=1
# (COVERED_FUNC: hits: H edges: E/T NAME FILE:LINE:COL).
split_coverage() {
    awk -v own="$own_re" '/^COVERED_FUNC: / {
            split($5, e, "/"); if ($NF ~ own && $NF !~ /\/\.cargo\//) o += e[1]; else d += e[1]
        } END {print o + 0, d + 0}' "$1"
}

for t in "${targets[@]}"; do
    crate=${t%/*} target=${t#*/}
    dir="$root/crates/$crate/fuzz"
    corpus=$state/corpus/$crate/$target
    [ "$fresh" = 0 ] || rm -rf "$corpus"
    mkdir -p "$corpus"
    seeds=() flags=()
    for a in $(fuzz_args "$t" "$root" "$seeds_root/netlink"); do
        if [[ $a == -dict=* && $dict = 0 ]]; then continue; fi
        if [[ $a == -* ]]; then flags+=("$a"); else seeds+=("$a"); fi
    done
    build_log=$state/logs/build-$crate.log
    (cd "$dir" && nice -n 10 cargo +nightly fuzz build --target-dir "$target_dir" "$target" >"$build_log" 2>&1) ||
        { echo "$t: the build failed:"; tail -30 "$build_log"; exit 1; }
    # Each slice starts by running every input of the corpus once, and a corpus keeps every
    # input any slice found (about five times more than cover the same features after a few
    # hours), so first minimise it to the inputs that cover its features.
    if [ -n "$(ls -A "$corpus")" ]; then
        (cd "$dir" && nice -n 10 cargo +nightly fuzz cmin --target-dir "$target_dir" "$target" "$corpus" -- "${flags[@]}" \
            >"$state/logs/cmin-$crate-$target.log" 2>&1) ||
            { echo "$t: minimising its corpus failed:"; tail -30 "$state/logs/cmin-$crate-$target.log"; exit 1; }
    fi
    runs=0 secs=0 cov=0 ft=0 last_own=none own_new=0 dep_new=0 marks=()
    while :; do
        log="$state/logs/$crate-$target-$short-$secs.log"
        (cd "$dir" && nice -n 10 cargo +nightly fuzz run --target-dir "$target_dir" "$target" "$corpus" "${seeds[@]}" -- \
            -max_total_time="$slice" -print_final_stats=1 -print_pcs=1 -print_coverage=1 \
            "${flags[@]}" >"$log" 2>&1) || true
        if ! grep -q '^Done ' "$log"; then
            echo "$t: failed in the slice at second $secs; see $log" | tee -a "$report"
            tail -40 "$log"
            exit 1
        fi
        runs=$((runs + $(sed -n 's/^stat::number_of_executed_units: *//p' "$log")))
        read -r new_cov new_ft < <(grep -E '(DONE|pulse|NEW|REDUCE|INITED) +cov:' "$log" | tail -1 |
            sed -E 's/.*cov: ([0-9]+) ft: ([0-9]+).*/\1 \2/') || true
        cov=${new_cov:-$cov} ft=${new_ft:-$ft}
        secs=$((secs + slice))
        # Edges new in this slice (printed after the corpus ran: NEW_PC ... in FUNCTION FILE:LINE).
        found=$(awk '/INITED/ {p = 1} p && /NEW_PC/' "$log")
        own=$(grep -v -F /.cargo/ <<<"$found" | grep -c -E " [^ ]*$own_re" || true)
        dep=$(($(grep -c NEW_PC <<<"$found" || true) - own))
        own_new=$((own_new + own)) dep_new=$((dep_new + dep))
        [ "$own" -eq 0 ] || last_own=$(((secs + 59) / 60))
        read -r own_cov dep_cov < <(split_coverage "$log")
        marks+=("$((secs / 60))m ${own_cov}/${dep_cov}")
        echo "  $t: $((secs / 60)) min, $runs runs, cov $cov (own code $own_cov, dependencies $dep_cov) ft $ft;" \
            "new edges: $own own, $dep in dependencies" >&2
        [ "$secs" -lt $((cap * 60)) ] || break
    done
    dict_note=
    [ "$dict" = 1 ] || dict_note=", no dictionary"
    {
        printf '%-18s commit %s: %s runs in %s s%s; cov %s ft %s; covered edges own/dependencies by minute: %s\n' \
            "$t" "$short" "$runs" "$secs" "$dict_note" "$cov" "$ft" "$(IFS=,; echo "${marks[*]}" | sed 's/,/, /g')"
        printf '%-18s new edges: %s own (the last in minute %s), %s in dependencies\n' "" "$own_new" "$last_own" "$dep_new"
    } | tee -a "$report"
done
echo "wrote $report (corpora in $state/corpus)" >&2
