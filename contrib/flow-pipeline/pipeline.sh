#!/usr/bin/env bash
# The flow pipeline for many routers, on one machine in the shape it has on many: sFlow
# decoders -> a Kafka cluster -> ClickHouse shards. Started by one command, stopped by one
# (the first `up` needs root to install what is missing). docs/monitoring.md tells more.
#
#   pipeline.sh up     [--dir DIR] [--decoders N] [--brokers N] [--partitions N] [--shards N]
#                      [--decoder vecflow|goflow2] [--vecflow PATH]
#                      [--sflow-port N] [--kafka-port N] [--clickhouse-port N]
#   pipeline.sh status [--dir DIR]
#   pipeline.sh down   [--dir DIR]
#   pipeline.sh stop   NAME [--signal KILL] [--dir DIR]   (one component, e.g. kafka-2)
#   pipeline.sh start  NAME [--dir DIR]                   (it again, as up started it)
#
# The default is the small single chain: one decoder, one KRaft Kafka node, one ClickHouse.
#   --decoders N    `vecflow collect --kafka` instances sharing the sFlow port (SO_REUSEPORT)
#   --brokers N     KRaft nodes (each broker and controller); from 3 on, topics have 3
#                   replicas and min.insync.replicas 2
#   --partitions N  partitions in all, shared out evenly over the shards' topics
#   --shards N      ClickHouse servers; shard K reads topic flows.K (just `flows` with one
#                   shard) and the decoders send all of an agent's datagrams to one topic
#   --decoder goflow2  goflow2 v2.2.6 instead (single chain only: flow samples, no sample
#                   index, schema-goflow2.sql)
# Everything (data, logs, pid files, each component's command) lives under DIR (default: a
# new temporary directory). Ports: sFlow 16343; Kafka node K (from 1) 19092 + 2(K-1), its
# controller the next port; ClickHouse shard K HTTP 18123 + (K-1), native 19004 + (K-1).
# Standard output is exactly one line, whatever was installed first (progress goes to stderr):
#   sflow=127.0.0.1:PORT kafka=127.0.0.1:PORT[,...] clickhouse=http://127.0.0.1:PORT[,...] dir=DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

cmd=${1:-}
[ -n "$cmd" ] && shift
name=""
case $cmd in start | stop) name=${1:-}; [ -n "$name" ] && shift ;; esac
dir="" sflow_port=16343 kafka_port=19092 ch_port=18123
decoders=1 brokers=1 partitions="" shards=1 decoder=vecflow vecflow="" signal=TERM
while [ $# -gt 0 ]; do
    case $1 in
        --dir) dir=$2; shift ;;
        --sflow-port) sflow_port=$2; shift ;;
        --kafka-port) kafka_port=$2; shift ;;
        --clickhouse-port) ch_port=$2; shift ;;
        --decoders) decoders=$2; shift ;;
        --brokers) brokers=$2; shift ;;
        --partitions) partitions=$2; shift ;;
        --shards) shards=$2; shift ;;
        --decoder) decoder=$2; shift ;;
        --vecflow) vecflow=$2; shift ;;
        --signal) signal=$2; shift ;;
        *) echo "unknown option $1 (see the header of $0)" >&2; exit 2 ;;
    esac
    shift
done
KAFKA_VERSION=4.1.0 GOFLOW2_VERSION=v2.2.6

say() { printf 'pipeline: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }
# Whatever fails without a die of its own still says what and where, never a silent exit.
set -E
trap 'status=$?; say "failed (exit $status) at line $LINENO: $BASH_COMMAND${dir:+ (logs in $dir)}"; exit $status' ERR

# count NAME VALUE MAX: VALUE must be a whole number from 1 to MAX.
count() {
    [[ $2 =~ ^[0-9]+$ ]] && [ "$2" -ge 1 ] && [ "$2" -le "$3" ] ||
        die "--$1 $2: allowed: a whole number from 1 to $3"
}

kafka_lib=${XDG_CACHE_HOME:-$HOME/.cache}/vecflow-flow-pipeline/kafka-$KAFKA_VERSION

# Installs what is missing; Kafka's jars go to ~/.cache/vecflow-flow-pipeline (shared by
# runs). Nothing here writes to standard output.
install_missing() {
    if ! command -v clickhouse-server >/dev/null || ! command -v clickhouse-client >/dev/null; then
        [ "$(id -u)" = 0 ] || die "clickhouse-server is missing and only root can install it"
        say "installing clickhouse-server (apt)"
        apt-get -o DPkg::Lock::Timeout=300 update -qq >&2
        DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq \
            clickhouse-server clickhouse-client >/dev/null
    fi
    command -v java >/dev/null || die "java (17 or later) is missing"
    command -v mvn >/dev/null || die "mvn (Maven) is missing"
    # Fetched again when kafka-pom.xml changed since (its copy is kept beside the jars).
    local pom
    pom=$(sed "s/@KAFKA_VERSION@/$KAFKA_VERSION/g" "$here/kafka-pom.xml")
    if [ ! -f "$kafka_lib/.complete" ] || [ "$pom" != "$(cat "$kafka_lib/pom.xml" 2>/dev/null)" ]; then
        say "fetching Kafka $KAFKA_VERSION from Maven Central (log: $kafka_lib/mvn.log)"
        rm -rf "$kafka_lib"
        mkdir -p "$kafka_lib"
        printf '%s\n' "$pom" >"$kafka_lib/pom.xml"
        # Maven prints terminal codes on stdout even with -q -B: all of it goes to the log.
        (cd "$kafka_lib" && mvn -q -B dependency:copy-dependencies -DoutputDirectory=lib) \
            >"$kafka_lib/mvn.log" 2>&1 || die "Maven could not fetch Kafka: $kafka_lib/mvn.log"
        touch "$kafka_lib/.complete"
    fi
    if [ "$decoder" = goflow2 ] && ! command -v goflow2 >/dev/null; then
        command -v go >/dev/null || die "goflow2 is missing and so is Go to install it"
        say "installing goflow2 $GOFLOW2_VERSION (go install)"
        go install "github.com/netsampler/goflow2/v2/cmd/goflow2@$GOFLOW2_VERSION" >&2
    fi
}
gopath=$(go env GOPATH 2>/dev/null || echo "$HOME/go")
export PATH="$gopath/bin:$PATH"

# The vecflow binary the decoders run: --vecflow, else the one on PATH, else this checkout's
# release (then debug) build.
find_vecflow() {
    local v
    for v in "$vecflow" "$(command -v vecflow || true)" "$here/../../target/release/vecflow" "$here/../../target/debug/vecflow"; do
        [ -n "$v" ] && [ -x "$v" ] && { vecflow=$(cd "$(dirname "$v")" && pwd)/$(basename "$v"); return 0; }
    done
    die "no vecflow binary (give --vecflow PATH, put vecflow on PATH, or cargo build --release)"
}

# launch NAME: runs DIR/NAME.cmd (written by `up`) in the background in its own session,
# logging to DIR/NAME.log (appended: a restart keeps what came before), pid in DIR/NAME.pid.
launch() {
    local name=$1
    setsid bash "$dir/$name.cmd" >>"$dir/$name.log" 2>&1 </dev/null &
    echo $! >"$dir/$name.pid"
}
# define NAME CMD...: writes the command that starts component NAME, then starts it.
define() {
    local name=$1; shift
    printf 'exec' >"$dir/$name.cmd"
    printf ' %q' "$@" >>"$dir/$name.cmd"
    echo >>"$dir/$name.cmd"
    echo "$name" >>"$dir/components"
    launch "$name"
}

running() { [ -f "$dir/$1.pid" ] && kill -0 "$(cat "$dir/$1.pid")" 2>/dev/null; }

# wait_for WHAT SECONDS CMD...: retries CMD until it succeeds.
wait_for() {
    local what=$1 secs=$2; shift 2
    for _ in $(seq $((secs * 10))); do
        "$@" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    die "$what did not come up in ${secs} s (logs in $dir)"
}

# ch K [ARGS...]: clickhouse-client on shard K (SQL on stdin, or --query).
ch() { local k=$1; shift; clickhouse-client --port "$((ch_port + 881 + k - 1))" --multiquery "$@"; }

# The Kafka cluster: BROKERS KRaft nodes, each broker and controller, with static voters.
start_kafka() {
    local k voters="" bootstrap="" rf=$((brokers < 3 ? brokers : 3)) isr=$((brokers < 3 ? 1 : 2))
    for ((k = 1; k <= brokers; k++)); do
        voters+="${voters:+,}$k@127.0.0.1:$((kafka_port + 2 * (k - 1) + 1))"
        bootstrap+="${bootstrap:+,}127.0.0.1:$((kafka_port + 2 * (k - 1)))"
    done
    local cluster_id
    cluster_id=$(python3 -c "import base64, uuid
while True:
    s = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip('=')
    if s[0] not in '-_': print(s); break")
    local kcp="$kafka_lib/lib/*" heap=$((brokers > 1 ? 384 : 512))
    for ((k = 1; k <= brokers; k++)); do
        local port=$((kafka_port + 2 * (k - 1)))
        mkdir -p "$dir/kafka-$k-data"
        sed -e "s|@DATA@|$dir/kafka-$k-data|g" -e "s|@NODE@|$k|g" -e "s|@KAFKA_PORT@|$port|g" \
            -e "s|@CONTROLLER_PORT@|$((port + 1))|g" -e "s|@VOTERS@|$voters|g" \
            -e "s|@RF@|$rf|g" -e "s|@ISR@|$isr|g" "$here/kafka.properties" >"$dir/kafka-$k.properties"
        java -cp "$kcp" kafka.tools.StorageTool format -t "$cluster_id" -c "$dir/kafka-$k.properties" \
            >"$dir/kafka-$k-format.log" 2>&1 || die "formatting Kafka's log dir failed: $dir/kafka-$k-format.log"
        define "kafka-$k" java "-Xmx${heap}m" -cp "$kcp" kafka.Kafka "$dir/kafka-$k.properties"
    done
    echo "$bootstrap" >"$dir/bootstrap"
    echo "$kafka_lib/lib" >"$dir/kafka-lib"
    # (Kafka's tools log at warn: their info lines would fill this script's stderr.)
    topics() { java -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp "$kcp" org.apache.kafka.tools.TopicCommand --bootstrap-server "$bootstrap" "$@"; }
    wait_for "Kafka" 90 topics --list
    # The topics exist before ClickHouse subscribes (it starts at the newest offset and only
    # notices new topics after minutes).
    local s
    for ((s = 1; s <= shards; s++)); do
        topics --create --if-not-exists --topic "$(topic "$s")" --partitions $((partitions / shards)) \
            --replication-factor "$rf" --config "min.insync.replicas=$isr" >/dev/null
    done
}

# The topic shard K reads.
topic() { if [ "$shards" = 1 ]; then echo flows; else echo "flows.$(($1 - 1))"; fi; }

# SHARDS ClickHouse servers, each with the cluster `vecflow` (all of them) for the
# Distributed tables, and its share of the partitions.
start_clickhouse() {
    local k servers=""
    for ((k = 1; k <= shards; k++)); do
        servers+="<shard><replica><host>127.0.0.1</host><port>$((ch_port + 881 + k - 1))</port></replica></shard>"
    done
    local bootstrap
    bootstrap=$(cat "$dir/bootstrap")
    for ((k = 1; k <= shards; k++)); do
        local d="$dir/clickhouse-$k"
        mkdir -p "$d/data" "$d/tmp"
        sed -e "s|@DIR@|$d|g" -e "s|@USERS@|$dir/clickhouse-users.xml|g" -e "s|@HTTP_PORT@|$((ch_port + k - 1))|g" \
            -e "s|@TCP_PORT@|$((ch_port + 881 + k - 1))|g" -e "s|@SERVERS@|$servers|g" \
            "$here/clickhouse.xml" >"$d/config.xml"
        define "clickhouse-$k" clickhouse-server --config-file="$d/config.xml"
    done
    cp "$here/clickhouse-users.xml" "$dir/clickhouse-users.xml"
    for ((k = 1; k <= shards; k++)); do
        wait_for "ClickHouse shard $k" 60 ch "$k" --query "SELECT 1"
        if [ "$decoder" = goflow2 ]; then
            sed -e "s|@KAFKA@|$bootstrap|g" "$here/schema-goflow2.sql" | ch "$k"
        else
            sed -e "s|@KAFKA@|$bootstrap|g" -e "s|@TOPIC@|$(topic "$k")|g" -e "s|@GROUP@|clickhouse-$k|g" \
                -e "s|@CONSUMERS@|$((partitions / shards))|g" "$here/schema.sql" | ch "$k"
        fi
    done
}

start_decoders() {
    local bootstrap k all_topics=""
    bootstrap=$(cat "$dir/bootstrap")
    if [ "$decoder" = goflow2 ]; then
        define goflow2 goflow2 -listen "sflow://127.0.0.1:$sflow_port" -format json -transport kafka \
            -transport.kafka.brokers "$bootstrap" -transport.kafka.topic flows -addr "127.0.0.1:$((sflow_port + 1))"
        wait_for "goflow2" 30 bash -c "exec 3<>/dev/tcp/127.0.0.1/$((sflow_port + 1))"
        return
    fi
    for ((k = 1; k <= shards; k++)); do all_topics+="${all_topics:+,}$(topic "$k")"; done
    # The decoders are the one stage that cannot make its senders wait (UDP): as root they run
    # at nice -10, ahead of the brokers' and shards' many threads when the CPU is short. Where
    # the kernel groups tasks by session (sched_autogroup_enabled, most distributions' default),
    # a nice value counts only within its session's group, and the groups share the CPU
    # equally: every component has a session of its own (setsid), so the decoder's group gets
    # the nice value too. Without it (and with librdkafka's busy loop, since left out: see
    # collect/kafka.rs) a decoder had a fifth of a core at 20 000 samples/s and its socket
    # overflowed.
    local prio=()
    if [ "$(id -u)" = 0 ]; then
        prio=(nice -n -10)
        if [ "$(cat /proc/sys/kernel/sched_autogroup_enabled 2>/dev/null)" = 1 ]; then
            prio=(sh -c 'echo -10 >/proc/self/autogroup && exec "$@"' decoder "${prio[@]}")
        fi
    fi
    for ((k = 1; k <= decoders; k++)); do
        # 32 MiB of socket buffer: about 3 s of 40 000 samples/s, for the moments the busy
        # machine gives the decoders no CPU (a JVM starting, a shard merging).
        define "decoder-$k" "${prio[@]}" "$vecflow" collect --bind 127.0.0.1 --port "$sflow_port" --reuse-port \
            --receive-buffer 33554432 --kafka "$bootstrap" --topic "$all_topics"
    done
    for ((k = 1; k <= decoders; k++)); do
        wait_for "decoder-$k" 30 grep -q "listening on" "$dir/decoder-$k.log"
    done
}

up() {
    count decoders "$decoders" 64
    count brokers "$brokers" 9
    count shards "$shards" 16
    partitions=${partitions:-$shards}
    count partitions "$partitions" 1024
    [ $((partitions % shards)) = 0 ] || die "--partitions $partitions: allowed: a multiple of --shards ($shards), each shard reads as many"
    case $decoder in
        vecflow) find_vecflow ;;
        goflow2) [ "$decoders" = 1 ] && [ "$shards" = 1 ] && [ "$partitions" = 1 ] ||
            die "--decoder goflow2: allowed only for the single chain (--decoders 1 --shards 1 --partitions 1)" ;;
        *) die "--decoder $decoder: allowed: vecflow, goflow2" ;;
    esac
    install_missing
    [ -n "$dir" ] || dir=$(mktemp -d /tmp/vecflow-pipeline.XXXXXX)
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    if [ -f "$dir/components" ]; then
        local c
        while read -r c; do running "$c" && die "$c already runs from $dir (pipeline.sh down --dir $dir first)"; done <"$dir/components"
        rm -f "$dir"/*.cmd "$dir/components"
    fi
    : >"$dir/components"
    echo "$sflow_port $kafka_port $ch_port $brokers $shards" >"$dir/ports"
    start_kafka
    start_clickhouse
    start_decoders
    local k chs=""
    for ((k = 1; k <= shards; k++)); do chs+="${chs:+,}http://127.0.0.1:$((ch_port + k - 1))"; done
    echo "sflow=127.0.0.1:$sflow_port kafka=$(cat "$dir/bootstrap") clickhouse=$chs dir=$dir"
}

need_dir() { [ -n "$dir" ] || die "$cmd needs --dir DIR (the one up printed)"; [ -f "$dir/components" ] || die "nothing was started from $dir"; }

# stop SIGNAL NAME...: signals each component's process group, then waits up to 60 s for each
# (a decoder drains and waits for Kafka's acknowledgements), then kills what remains. All at
# once: Kafka nodes stopped one by one would leave the last without its controller quorum,
# waiting out the minute.
stop() {
    local sig=$1 name pid
    shift
    for name; do
        [ -f "$dir/$name.pid" ] && kill "-$sig" -- "-$(cat "$dir/$name.pid")" 2>/dev/null || true
    done
    for name; do
        [ -f "$dir/$name.pid" ] || continue
        pid=$(cat "$dir/$name.pid")
        for _ in $(seq 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL -- "-$pid" 2>/dev/null || true
        rm -f "$dir/$name.pid"
    done
}

down() {
    need_dir
    # Decoders first (they drain into Kafka), then ClickHouse, then Kafka.
    local kind
    for kind in 'decoder|goflow2' clickhouse kafka; do
        # shellcheck disable=SC2046 # one name per line
        stop TERM $(grep -E "^($kind)" "$dir/components" || true)
    done
}

status() {
    need_dir
    local c all=0
    while read -r c; do
        if running "$c"; then echo "$c: running (pid $(cat "$dir/$c.pid"))"; else echo "$c: stopped"; all=1; fi
    done <"$dir/components"
    return $all
}

one() {
    need_dir
    [ -n "$name" ] && grep -qx "$name" "$dir/components" ||
        die "$cmd: no component ${name:-(none given)} in $dir (allowed: $(paste -sd ' ' "$dir/components"))"
    case $cmd in
        stop) stop "$signal" "$name" ;;
        start) running "$name" && die "$name already runs"; launch "$name" ;;
    esac
}

case $cmd in
    up) up ;;
    down) down ;;
    status) status || exit $? ;;
    start | stop) one ;;
    *) echo "usage: $0 up|down|status|start NAME|stop NAME [options] (see the header of $0)" >&2; exit 2 ;;
esac
