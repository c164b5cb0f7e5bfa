#!/usr/bin/env bash
# Runs vecflow's tests, in one of two tiers (docs/testing.md):
#
#   ./test.sh          the contributor's loop: formatting, lints, the file-size check, and every
#                      test that needs neither root nor a network namespace nor a tool from
#                      outside the Rust toolchain (unit, property, node, engine, sFlow, CLI and
#                      docs-consistency tests). The same set whoever runs it, root or not.
#   ./test.sh --full   what CI runs (.ci/run): all of the above, plus the tests built only with
#                      cargo's `lab-tests` feature (network namespaces, linux-cp, BIRD and FRR,
#                      the decoders), the flow pipeline, the README's commands, the scripts'
#                      smoke runs, the soak for a minute, the linux-cp full table, loom, Miri and
#                      every fuzz target. It sets CI=true: a test that cannot run is a failure.
#
# What belongs to a release rather than to every change (the 10-minute soak, fuzz campaigns,
# long benchmarks) is scripts/long-checks.sh. Anything --full needs from outside the Rust
# toolchain is installed here, once, when missing.
set -euo pipefail
cd "$(dirname "$0")"

tier=quick
for arg in "$@"; do
    case $arg in
        --full) tier=full ;;
        -h|--help) awk 'NR > 1 && /^#/ {print; next} NR > 1 {exit}' "$0"; exit 0 ;;
        *) echo "./test.sh: unknown argument $arg (usage: ./test.sh [--full])" >&2; exit 2 ;;
    esac
done
[ "$tier" = quick ] || export CI=true

# Each step prints its name; the time each took, and how busy the machine's CPUs were meanwhile,
# are printed when the next starts and, as a table, when the run ends (also on failure), so a
# slow step is easy to find and to tell apart: near 100 % it waited on the CPU, far below on
# something else. Time of tasks at a positive nice value (the background queue below) is
# counted apart: the CPU the step itself left.
step_name= step_start=$SECONDS step_cpu= step_times=()
# Jiffies of every CPU since boot (/proc/stat: user nice system idle iowait irq softirq steal;
# guest time is already in user and nice): busy but niced, niced, and all.
cpu_jiffies() {
    awk '/^cpu / {printf "%d %d %d\n", $2 + $4 + $7 + $8 + $9, $3, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9; exit}' /proc/stat
}
end_step() {
    [ -n "$step_name" ] || return 0
    local took=$((SECONDS - step_start)) busy niced
    read -r busy niced < <(awk -v a="$step_cpu" -v b="$(cpu_jiffies)" 'BEGIN {
        split(a, x, " "); split(b, y, " "); d = y[3] - x[3]; if (d <= 0) d = 1
        printf "%d %d\n", 100 * (y[1] - x[1]) / d, 100 * (y[2] - x[2]) / d }')
    step_times+=("$(printf '%5ds  %3d %%  %3d %%  %s' "$took" "$busy" "$niced" "$step_name")")
    printf '    (%ds, CPUs %d %% busy, %d %% with niced work)\n' "$took" "$busy" "$niced"
}
step() {
    end_step
    step_name=$* step_start=$SECONDS step_cpu=$(cpu_jiffies)
    printf '\n==> %s\n' "$*"
}
# An installation inside a step: timed as a step of its own, then the step it interrupted goes
# on (as "… (continued)"), so the table tells install times from test times.
install_step() {
    local what=$1 parent=$step_name
    shift
    step "installing $what (needed by the tests)"
    "$@"
    step "${parent% (continued)} (continued)"
}
print_step_times() {
    end_step
    step_name=
    printf '\n==> time per step, the CPUs busy, and busy with niced work (%s tier, total %ds)\n' "$tier" "$SECONDS"
    printf '%s\n' "${step_times[@]}"
}
# At exit, also the workers of a queue still running (a failed step ends the run while the
# builds started beside the tests go on) and what they started. A background worker leads a
# process group of its own (queue_start): the whole group goes.
stop_queues() {
    local pid
    for pid in $(cat target/release-queue/pids target/checks/pids target/fuzz/pids 2>/dev/null); do
        kill -0 "$pid" 2>/dev/null || continue
        pkill -TERM -P "$pid" 2>/dev/null || true
        kill "$pid" 2>/dev/null || true
    done
    stop_background_workers
}
# The background workers listed in target/checks/groups, each with its process group (only
# processes that are still such a worker: also for the workers a killed run left behind).
stop_background_workers() {
    local pid
    for pid in $(cat target/checks/groups 2>/dev/null); do
        grep -qs queue_worker "/proc/$pid/cmdline" && kill -TERM -- "-$pid" 2>/dev/null || true
    done
}
stop_background_workers
rm -rf target/release-queue target/checks target/fuzz
trap 'stop_queues; print_step_times' EXIT

# Each fuzz target runs for a bounded time with a fixed seed (FUZZ_SECONDS to change).
export FUZZ_SECONDS=${FUZZ_SECONDS:-10}

# Installs a Debian package when its command is missing (one `apt-get update` per run).
apt_updated=
need_apt() {
    local cmd=$1 pkg=$2
    command -v "$cmd" >/dev/null 2>&1 && return 0
    if [ "$(id -u)" != 0 ]; then
        echo "not root: cannot install $pkg; the tests that need $cmd will fail (CI=true)"
        return 0
    fi
    install_step "$pkg" apt_install "$pkg"
}
apt_install() {
    if [ -z "$apt_updated" ]; then
        apt-get -o DPkg::Lock::Timeout=300 update -qq
        apt_updated=1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq "$1" >/dev/null
}

# Installs a cargo subcommand from crates.io when it is missing.
need_cargo_tool() {
    local bin=$1 crate=$2 version=$3
    if ! command -v "$bin" >/dev/null 2>&1; then
        install_step "$crate $version" cargo install --locked "$crate" --version "$version"
    fi
}

# The explicit switch between the tiers' cargo tests: the lab tests build only with this feature.
test_args=(--workspace)
[ "$tier" = quick ] || test_args+=(--features vecflow/lab-tests)

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy (warnings are errors; every target, the lab tests' too)"
cargo clippy --workspace --all-targets --all-features --quiet -- -D warnings

step "no Rust source file over 500 lines but the listed few (scripts/check-file-sizes.sh)"
scripts/check-file-sizes.sh

if [ "$tier" = full ]; then
    step "disk space for the builds"
    # A clean clone's full tier fills about 11 GiB (target/ with its loom and Miri builds, the
    # fuzz crates' ASan builds). A disk that fills half-way fails a build with a message that
    # does not say why (cargo-fuzz printed only its backtrace), so it is checked first; what
    # is built already counts as room.
    need_gib=12
    free_kib=$(df -Pk . | awk 'NR == 2 {print $4}')
    built_kib=0
    for d in target crates/*/fuzz/target; do
        [ ! -d "$d" ] || built_kib=$((built_kib + $(du -sk "$d" | cut -f1)))
    done
    room_gib=$(((free_kib + built_kib) / 1048576))
    echo "$((free_kib / 1048576)) GiB free, $((built_kib / 1048576)) GiB built already; the builds need about $need_gib GiB"
    [ "$room_gib" -ge "$need_gib" ] ||
        { echo "not enough disk for the full tier's builds: free some space on $(df -P . | awk 'NR == 2 {print $6}') first"; exit 1; }

    step "tools the tests need (installed when missing)"
    need_apt tshark tshark
    need_apt sfacctd pmacct
    # The end-to-end tests through network namespaces (root only).
    need_apt ip iproute2
    need_apt ping iputils-ping
    need_apt ethtool ethtool
    need_apt setpriv util-linux
    need_apt iperf3 iperf3
    # BIRD 2 on a vecflow router's linux-cp TAP (tests/linux_cp_bird.rs, linux_cp_bgp.rs).
    need_apt bird bird2
    # FRR's zebra and bgpd as the linux-cp router's daemons (tests/linux_cp_bgp.rs, docs/bgp-router.md).
    need_apt vtysh frr
    # The README test: the API example with socat, the package's man pages.
    need_apt socat socat
    need_apt man man-db
    # The flow pipeline test.
    need_apt curl curl
    # trafgen for the smoke runs of compare-peers.sh and bench-af-packet.sh.
    need_apt trafgen netsniff-ng
    # cargo-deb for the README's package block, at the version scripts/build-deb.sh pins (the
    # blocks install into a directory of their own, which would leave nothing for the next run).
    need_cargo_tool cargo-deb cargo-deb "$(sed -n 's/^CARGO_DEB_VERSION=//p' scripts/build-deb.sh)"
    need_cargo_tool cargo-fuzz cargo-fuzz 0.13.2
    if ! cargo +nightly miri --version >/dev/null 2>&1; then
        install_step "Miri (rustup +nightly component add miri rust-src)" rustup +nightly component add miri rust-src
    fi
    # goflow2, the Go sFlow/NetFlow collector, for the interop tests.
    export PATH="$(go env GOPATH 2>/dev/null || echo "$HOME/go")/bin:$PATH"
    if ! command -v goflow2 >/dev/null 2>&1; then
        if command -v go >/dev/null 2>&1; then
            install_step "goflow2 v2.2.6" go install github.com/netsampler/goflow2/v2/cmd/goflow2@v2.2.6
        else
            echo "no Go toolchain: the goflow2 interop test will fail (CI=true)"
        fi
    fi
fi

# A queue of jobs ("name|command": a function of this script and its arguments, split on
# spaces) in directory $1 that $2 workers take from in turn, each starting the next job when
# its last one ends; each job's output goes to a log of its own. queue_start returns at once;
# queue_wait waits for the workers, prints each job's result and time (also into the step
# table) and the output of those that failed, and fails if one did. With `idle` as $3 the
# workers run at SCHED_IDLE: they get only the CPU time nothing else of this script's session
# wants. With `background` each worker runs in a session of its own at nice 19, its session's
# group too where the kernel groups tasks by session (autogroup, where a nice value counts only
# inside its group): so they also leave the CPU to daemons in sessions of their own.
queue_start() {
    local dir=$1 workers=$2 policy=$3 w
    shift 3
    rm -rf "$dir"
    mkdir -p "$dir"
    printf '%s\n' "$@" >"$dir/jobs"
    echo 0 >"$dir/next"
    : >"$dir/pids"
    for ((w = 0; w < workers; w++)); do
        if [ "$policy" = background ]; then
            # (A new bash, given this script's functions and options: a session needs a process
            # of its own. Without root, the kernel takes one group nice value in 100 ms.)
            setsid -w bash -c "set -euo pipefail
                $(declare -f)
                for try in 1 2 3 4 5 6 7 8 9 10; do
                    echo 19 2>/dev/null >/proc/self/autogroup && break || sleep 0.1
                done
                renice -n 19 -p \$\$ >/dev/null
                queue_worker \"\$@\"" _ "$dir" "$policy" &
            echo $! >>"$dir/groups"
        else
            queue_worker "$dir" "$policy" &
        fi
        echo $! >>"$dir/pids"
    done
}
queue_worker() {
    local dir=$1 policy=$2 n job
    [ "$policy" != idle ] || chrt --idle -p 0 "$BASHPID" >/dev/null
    while :; do
        n=$(flock "$dir/next" bash -c 'n=$(cat "$1"); echo $((n + 1)) >"$1"; echo "$n"' _ "$dir/next")
        job=$(sed -n "$((n + 1))p" "$dir/jobs")
        [ -n "$job" ] || return 0
        local name=${job%%|*} start=$SECONDS status=0
        # shellcheck disable=SC2086 # the command is split on spaces on purpose
        ${job#*|} >"$dir/$n.log" 2>&1 </dev/null || status=$?
        echo "$((SECONDS - start))|$status|$name|$dir/$n.log" >>"$dir/done"
    done
}
queue_wait() {
    local dir=$1 failed=0 secs status name log pid
    while read -r pid; do wait "$pid" || true; done <"$dir/pids"
    # (Gone: their pids may be another process's by the end of the run.)
    : >"$dir/pids"
    rm -f "$dir/groups"
    while IFS='|' read -r secs status name log; do
        step_times+=("$(printf '%5ds                  %s (in a queue)' "$secs" "$name")")
        if [ "$status" = 0 ]; then
            printf 'ok      %4ds  %s\n' "$secs" "$name"
            grep -E '^(Done|stat::number_of_executed_units|==[0-9]+==|SUMMARY|test result)' "$log" | sed 's/^/        /' || true
        else
            printf 'FAILED  %4ds  %s (exit %s); its log, %s:\n' "$secs" "$name" "$status" "$log"
            tail -60 "$log"
            failed=1
        fi
    done <"$dir/done"
    [ "$failed" = 0 ]
}

# loom's models: dataplane's unit tests built with `--cfg loom`, in a target directory of their
# own and the `loom` profile (Cargo.toml: the release build's optimisation without its LTO).
loom_test() {
    RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p dataplane --lib --profile loom "$@"
}
# Miri over dataplane's unit tests, one test at a time. Isolation is off for the clock the QSBR
# and FIB tests sleep on. The FIB runs without weak-memory emulation (miri_weak_off): Miri's
# store buffers over its 64 MiB table of atomics take hours (its orderings are covered by
# QSBR's loom model); the data-race and borrow checks stay on.
miri_test() {
    local flags=$1
    shift
    MIRIFLAGS="-Zmiri-disable-isolation $flags" CARGO_TARGET_DIR=target/miri \
        cargo +nightly miri test -p dataplane --lib --quiet "$@"
}
miri_build() { miri_test "" --no-run; }
miri_all() { miri_test "" -- --test-threads=1 "$@"; }
miri_weak_off() { miri_test -Zmiri-disable-weak-memory-emulation -- --test-threads=1 "$@"; }
# Builds every fuzz target of crate $1 (as `cargo fuzz run` builds them: release, debug
# assertions, AddressSanitizer).
fuzz_build() { (cd "crates/$1/fuzz" && cargo +nightly fuzz build); }
# Runs fuzz target $2 of crate $1 for FUZZ_SECONDS with a fixed seed, from its corpus plus any
# seed directories given after (arguments starting with '-' go to libFuzzer); fails on a
# crash, a leak or a broken invariant.
fuzz() {
    local crate=$1 target=$2
    shift 2
    local seeds=() flags=() a
    for a in "$@"; do
        if [[ $a == -* ]]; then flags+=("$a"); else seeds+=("$a"); fi
    done
    local log="$PWD/target/fuzz-$crate-$target.log"
    mkdir -p "crates/$crate/fuzz/corpus/$target"
    (cd "crates/$crate/fuzz" && cargo +nightly fuzz run "$target" "corpus/$target" "${seeds[@]}" -- \
        -max_total_time="$FUZZ_SECONDS" -seed=1 -print_final_stats=1 "${flags[@]}" >"$log" 2>&1) || true
    grep -E '^(Done|stat::number_of_executed_units|==[0-9]+==|SUMMARY)' "$log" || true
    grep -q '^Done ' "$log" || { echo "fuzzing $crate/$target failed:"; tail -60 "$log"; return 1; }
}

step "build the tests (cargo test --no-run)"
cargo test "${test_args[@]}" --no-run --quiet

if [ "$tier" = full ]; then
    # The other builds of the full tier, each into a target directory or profile of its own,
    # start now and take the CPU the tests leave (the namespace labs mostly wait on the
    # network) without slowing them. The release binary, which the flow pipeline and every
    # step after it run, goes first: at SCHED_IDLE in this script's session group, so ahead of
    # the background queue. The step "the release binary" waits for it.
    queue_start target/release-queue 1 idle \
        "release binary (cargo build --release)|cargo build --release --locked --quiet -p vecflow"
    # The rest is needed only by the last steps: loom's models, Miri's unit-test binary, the
    # fuzz targets, then Miri over the unit tests of the modules with unsafe code or lock-free
    # sharing (sFlow ring, AF_XDP rings, buffer, hugemem, qsbr, snapshot, fib), in three jobs,
    # longest first, one core each (under Miri the IPv4 table's heaviest tests take 6-19 s
    # each, the IPv6 table's run at a 12-bit first level: see their tests). Two workers take
    # them in the background (nice 19, each in a session group of its own), through all the
    # steps up to the fuzz targets' runs; a job that needs a build another worker has not
    # finished waits for it on cargo's lock. The last step waits for what is left.
    queue_start target/checks 2 background \
        "Miri's unit-test binary|miri_build" \
        "fuzz targets of dataplane|fuzz_build dataplane" \
        "loom's models (--cfg loom)|loom_test --quiet --no-run" \
        "fuzz targets of sflow|fuzz_build sflow" \
        "Miri: the FIB tests but the IPv6 table's|miri_weak_off fib:: --skip l3::fib::ip6::tests::" \
        "Miri: the IPv6 table's tests|miri_weak_off l3::fib::ip6::tests::" \
        "Miri: buffer, hugemem, sFlow ring, AF_XDP rings, qsbr, snapshot|miri_all buffer:: hugemem:: sflow::ring:: drivers::af_xdp::ring:: qsbr:: snapshot::"
fi

step "run the tests (unit, node, property, engine, sFlow, CLI$([ "$tier" = quick ] || echo ", namespace, linux-cp and decoder") tests)"
# A test that cannot run here (a tool above missing, no IPv6 loopback) fails with CI=true;
# otherwise it appends `SKIP <test>: <reason>` to this file and returns, and cargo counts it
# as passed: the summary counts it as skipped instead (cargo shows no stderr of passing tests).
mkdir -p target
export VECFLOW_SKIP_LOG="$PWD/target/skips.log"
: >"$VECFLOW_SKIP_LOG"
set +e
cargo test "${test_args[@]}" --quiet --no-fail-fast 2>&1 | tee target/test.log
test_status=${PIPESTATUS[0]}
set -e
skip_lines=$(grep -c '^SKIP ' "$VECFLOW_SKIP_LOG" || true)
ignored_tests=$(grep -E '^test result:' target/test.log | awk '{i+=$8} END {print i+0}')
# Listed now, while the test binaries are fresh (at the end of the full tier cargo took 30 s
# to list them again).
ignored_list=
if [ "$ignored_tests" -gt 0 ]; then
    ignored_list=$(cargo test "${test_args[@]}" --quiet -- --ignored --list 2>/dev/null | sed -n 's/: test$//p' | sed 's/^/IGNORED /')
fi
summary=$(grep -E '^test result:' target/test.log | awk -v s="$skip_lines" -v i="$ignored_tests" \
    '{p+=$4; f+=$6} END {p-=s; if (p<0) p=0; printf "%d passed, %d failed, %d skipped\n", p, f, s+i}')
print_summary() {
    echo "$summary"
    grep '^SKIP ' "$VECFLOW_SKIP_LOG" || true
    [ -z "$ignored_list" ] || echo "$ignored_list"
    grep -E '^---- .* stdout ----$' target/test.log | sed -E 's/^---- (.*) stdout ----$/FAILED \1/' || true
}
if [ "$test_status" != 0 ]; then
    step "summary (cargo test failed)"
    print_summary
    exit "$test_status"
fi

if [ "$tier" = quick ]; then
    step "README and docs: links and subcommands (scripts/readme-test.py --links-only)"
    scripts/readme-test.py --links-only --vecflow target/debug/vecflow

    step "summary"
    print_summary
    lab_tests=$(awk '/^\[\[test\]\]/ {t = 1; next} t && /^name = / {gsub(/"/, "", $3); print "crates/vecflow/tests/" $3 ".rs"; t = 0}' \
        crates/vecflow/Cargo.toml | paste -sd ' ' | fold -s -w 92 | sed '2,$s/^/    /')
    cat <<EOF

Not run by this tier (./test.sh --full runs them all; CI runs ./test.sh --full):
  - the tests that need root, network namespaces or outside tools (cargo feature lab-tests):
    $lab_tests
  - the flow pipeline (contrib/flow-pipeline/test-pipeline.sh)
  - the command blocks of the README and docs/ (scripts/readme-test.py)
  - the smoke runs of scripts/overload.sh, compare-peers.sh, bench-af-packet.sh, bench-punt.sh
    and fuzz-campaign.sh, the soak for a minute, the linux-cp full table
  - loom, Miri, and ${FUZZ_SECONDS} s of each of the seven cargo-fuzz targets
One lab test alone: cargo test -p vecflow --features lab-tests --test netns
EOF
    exit 0
fi


step "the release binary (started beside the tests, at SCHED_IDLE): what is left of its build"
queue_wait target/release-queue

step "flow pipeline: decoders -> Kafka -> ClickHouse, the single chain, goflow2's, and the cluster with a broker killed (contrib/flow-pipeline/test-pipeline.sh)"
contrib/flow-pipeline/test-pipeline.sh target/release/vecflow

step "README and docs: every command block as written, links and subcommands (scripts/readme-test.py)"
# The release binary (built above) is what the README's `cargo run --release` builds and what
# the blocks find as `vecflow` on their PATH (never an installed one).
cargo build --release --locked -p vecflow
scripts/readme-test.py

step "smoke run of scripts/overload.sh (5 s per run: the sFlow books add up under a 1:1 flood)"
scripts/overload.sh --seconds 5 --smoke

# The rest makes network namespaces: root only, and with CI=true its absence is a failure.
if [ "$(id -u)" != 0 ]; then
    echo "the soak and the scripts' smoke runs need root (network namespaces); ./test.sh --full is CI=true"
    exit 1
fi

step "the soak for one minute (scripts/soak.sh: routing, BGP, faults and collectors, then the books)"
scripts/soak.sh --minutes 1 --json target/soak.json

step "smoke runs of the scripts the docs point to (scripts/compare-peers.sh, scripts/bench-af-packet.sh, scripts/bench-punt.sh)"
# One short run each, so that a change they depend on (a new column in show runtime) breaks
# them here rather than silently; the measurements themselves are for the docs, not CI.
scripts/compare-peers.sh --seconds 1 --runs 1 --layouts a --json \
    --only generator-alone,kernel,vecflow-afpacket,vecflow-afxdp >target/compare-peers-smoke.json
python3 - target/compare-peers-smoke.json <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
assert [r["contender"] for r in rows] == ["generator-alone", "kernel", "vecflow-afpacket", "vecflow-afxdp"], rows
for r in rows:
    assert r["mpps"] > 0, r
    if r["contender"].startswith("vecflow"):
        assert r["clocks_per_packet"].get("ip4-lookup", 0) > 0, r
        assert all(run["sflow_samples"]["sent"] > 0 for run in r["runs"]), r
        # The samplers' books at exit: every sample taken was sent or was of a dropped packet.
        assert all(x["taken"] == x["sent"] + x["of_drops"] for x in (run["sflow_samples"] for run in r["runs"])), r
print("compare-peers.sh: " + ", ".join(f'{r["contender"]} {r["mpps"]} Mpps' for r in rows))
PY
scripts/bench-af-packet.sh 1 >target/bench-af-packet-smoke.txt 2>&1 ||
    { tail -30 target/bench-af-packet-smoke.txt; exit 1; }
grep -E '^trafgen sent [1-9][0-9]* in 1 s; vecflow forwarded [1-9]' target/bench-af-packet-smoke.txt ||
    { echo "bench-af-packet.sh forwarded nothing:"; tail -30 target/bench-af-packet-smoke.txt; exit 1; }
scripts/bench-punt.sh 1 >target/bench-punt-smoke.txt 2>&1 || { tail -30 target/bench-punt-smoke.txt; exit 1; }
grep -E '^punted [1-9][0-9]*/s to the TAP' target/bench-punt-smoke.txt ||
    { echo "bench-punt.sh punted nothing:"; tail -30 target/bench-punt-smoke.txt; exit 1; }
# Not only a smoke run: the full-table test of linux-cp (1.2 M routes through the kernel,
# the pair, the churn, the preload, the overrun), with the release build it needs.
step "linux-cp full table (scripts/lcp-full-table.sh; scripts/lcp-bgp-full-table.sh on 25 000 routes)"
# (10 s of its route churn here; 60 s by default.)
CHURN_SECONDS=10 PATH="$PWD/target/release:$PATH" scripts/lcp-full-table.sh >target/lcp-full-table.txt 2>&1 ||
    { tail -60 target/lcp-full-table.txt; exit 1; }
cat target/lcp-full-table.txt
# BGP end to end, a smoke run on a slice of the table (the whole table is a long check).
PATH="$PWD/target/release:$PATH" scripts/lcp-bgp-full-table.sh --ipv4 20000 --ipv6 5000 >target/lcp-bgp-smoke.txt 2>&1 ||
    { tail -40 target/lcp-bgp-smoke.txt; exit 1; }
grep -E '^bird: 25000 routes|lag|OK$' target/lcp-bgp-smoke.txt

# The last steps need builds of the background queue; cargo's lock holds a step that comes to
# one still under way until it is done.
step "loom: every interleaving of the sFlow ring and of QSBR (cargo test --cfg loom, built in the background)"
loom_test --quiet loom

step "${FUZZ_SECONDS} s of each fuzz target, two at a time"
scripts/netlink-seeds.sh "$PWD/target/fuzz-seeds/netlink"
jobs=()
# shellcheck source=scripts/fuzz-targets.sh
. scripts/fuzz-targets.sh
for t in "${fuzz_targets[@]}"; do
    jobs+=("fuzz $t|fuzz ${t%/*} ${t#*/} $(fuzz_args "$t" "$PWD" "$PWD/target/fuzz-seeds/netlink" | tr '\n' ' ')")
done
queue_start target/fuzz 2 normal "${jobs[@]}"
queue_wait target/fuzz

step "the background queue (builds, then Miri, from the tests' start): what is left of it"
queue_wait target/checks

step "smoke run of scripts/fuzz-campaign.sh (one 5 s slice of sflow/decode on a worktree of HEAD)"
rm -rf target/fuzz-campaign-smoke
scripts/fuzz-campaign.sh --state target/fuzz-campaign-smoke --target-dir "$PWD/crates/sflow/fuzz/target" \
    --cap-min 0 --slice-sec 5 --report target/fuzz-campaign-smoke.txt sflow/decode
grep -E '^sflow/decode +commit [0-9a-f]{7}: [1-9][0-9]* runs .*own/dependencies by minute: 0m [1-9][0-9]*/[1-9]' \
    target/fuzz-campaign-smoke.txt || { echo "fuzz-campaign.sh reported no runs or no coverage"; exit 1; }
git worktree remove --force target/fuzz-campaign-smoke/worktree

step "summary"
print_summary
