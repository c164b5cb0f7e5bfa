#!/usr/bin/env bash
# The flow pipeline for many routers: vecflow's sFlow -> goflow2 -> Kafka -> ClickHouse, on one
# machine, started and stopped by one command (needs root to install what is missing).
#
#   pipeline.sh up     [--dir DIR] [--sflow-port N] [--kafka-port N] [--clickhouse-port N]
#   pipeline.sh status [--dir DIR]
#   pipeline.sh down   [--dir DIR]
#
# up installs what is missing (Debian's clickhouse-server, Kafka 4.1 jars from Maven Central,
# goflow2 v2.2.6 with `go install`), starts a single-node KRaft Kafka broker, ClickHouse and
# goflow2 with all their data, logs and pid files under DIR (default: a new temporary
# directory), creates the topic `flows` and the ClickHouse database `vecflow` (table `flows`
# fed from the topic through a Kafka engine table and a materialized view), and prints one line:
#   sflow=127.0.0.1:PORT kafka=127.0.0.1:PORT clickhouse=http://127.0.0.1:PORT dir=DIR
# Point each router's sflow.collectors at the sflow address. down stops what up started (by
# the pids in DIR) and keeps DIR; status says what runs.
# Ports default to non-standard ones: sFlow 16343 (goflow2's metrics on the next port), Kafka
# 19092 (its controller on the next port), ClickHouse HTTP 18123 (its native protocol on that
# port + 881: 19004).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

cmd=${1:-}
[ -n "$cmd" ] && shift
dir="" sflow_port=16343 kafka_port=19092 ch_port=18123
while [ $# -gt 0 ]; do
    case $1 in
        --dir) dir=$2; shift ;;
        --sflow-port) sflow_port=$2; shift ;;
        --kafka-port) kafka_port=$2; shift ;;
        --clickhouse-port) ch_port=$2; shift ;;
        *) echo "unknown option $1 (see the header of $0)" >&2; exit 2 ;;
    esac
    shift
done
controller_port=$((kafka_port + 1)) ch_native_port=$((ch_port + 881))
KAFKA_VERSION=4.1.0 GOFLOW2_VERSION=v2.2.6

say() { printf 'pipeline: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }
# Whatever fails without a die of its own still says what and where, never a silent exit.
set -E
trap 'status=$?; say "failed (exit $status) at line $LINENO: $BASH_COMMAND${dir:+ (logs in $dir)}"; exit $status' ERR

# Installs what is missing; Kafka's jars go to ~/.cache/vecflow-flow-pipeline (shared by runs).
install_missing() {
    if ! command -v clickhouse-server >/dev/null || ! command -v clickhouse-client >/dev/null; then
        [ "$(id -u)" = 0 ] || die "clickhouse-server is missing and only root can install it"
        say "installing clickhouse-server (apt)"
        apt-get -o DPkg::Lock::Timeout=300 update -qq
        DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq \
            clickhouse-server clickhouse-client >/dev/null
    fi
    command -v java >/dev/null || die "java (17 or later) is missing"
    command -v mvn >/dev/null || die "mvn (Maven) is missing"
    kafka_lib=${XDG_CACHE_HOME:-$HOME/.cache}/vecflow-flow-pipeline/kafka-$KAFKA_VERSION
    if [ ! -f "$kafka_lib/.complete" ]; then
        say "fetching Kafka $KAFKA_VERSION from Maven Central"
        mkdir -p "$kafka_lib"
        sed "s/@KAFKA_VERSION@/$KAFKA_VERSION/g" "$here/kafka-pom.xml" >"$kafka_lib/pom.xml"
        (cd "$kafka_lib" && mvn -q -B dependency:copy-dependencies -DoutputDirectory=lib) ||
            die "Maven could not fetch Kafka"
        touch "$kafka_lib/.complete"
    fi
    local gopath
    gopath=$(go env GOPATH 2>/dev/null || echo "$HOME/go")
    export PATH="$gopath/bin:$PATH"
    if ! command -v goflow2 >/dev/null; then
        command -v go >/dev/null || die "goflow2 is missing and so is Go to install it"
        say "installing goflow2 $GOFLOW2_VERSION (go install)"
        go install "github.com/netsampler/goflow2/v2/cmd/goflow2@$GOFLOW2_VERSION"
    fi
}

# start NAME CMD...: runs CMD in the background in its own session, logs to DIR/NAME.log,
# pid in DIR/NAME.pid.
start() {
    local name=$1; shift
    setsid "$@" >"$dir/$name.log" 2>&1 </dev/null &
    echo $! >"$dir/$name.pid"
}

# wait_for WHAT SECONDS CMD...: retries CMD until it succeeds.
wait_for() {
    local what=$1 secs=$2; shift 2
    for _ in $(seq $((secs * 10))); do
        "$@" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    die "$what did not come up in ${secs} s (logs in $dir)"
}

# ch [ARGS...]: clickhouse-client on the pipeline's server (SQL on stdin, or --query).
# shellcheck disable=SC2120
ch() { clickhouse-client --port "$ch_native_port" --multiquery "$@"; }

up() {
    install_missing
    [ -n "$dir" ] || dir=$(mktemp -d /tmp/vecflow-pipeline.XXXXXX)
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    for p in kafka clickhouse goflow2; do
        if [ -f "$dir/$p.pid" ] && kill -0 "$(cat "$dir/$p.pid")" 2>/dev/null; then
            die "$p already runs from $dir (pipeline.sh down --dir $dir first)"
        fi
    done
    echo "$sflow_port $kafka_port $ch_port" >"$dir/ports"

    # Kafka: one KRaft node that is broker and controller. The cluster id must not start
    # with '-' (it would be read as an option).
    mkdir -p "$dir/kafka-data"
    sed -e "s|@DIR@|$dir|g" -e "s|@KAFKA_PORT@|$kafka_port|g" -e "s|@CONTROLLER_PORT@|$controller_port|g" \
        "$here/kafka.properties" >"$dir/kafka.properties"
    local cluster_id
    cluster_id=$(python3 -c "import base64, uuid
while True:
    s = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip('=')
    if s[0] not in '-_': print(s); break")
    local kcp="$kafka_lib/lib/*"
    java -cp "$kcp" kafka.tools.StorageTool format --standalone -t "$cluster_id" \
        -c "$dir/kafka.properties" >"$dir/kafka-format.log" 2>&1 || die "formatting Kafka's log dir failed: $dir/kafka-format.log"
    start kafka java -Xmx512m -cp "$kcp" kafka.Kafka "$dir/kafka.properties"
    topics() { java -cp "$kcp" org.apache.kafka.tools.TopicCommand --bootstrap-server "127.0.0.1:$kafka_port" "$@"; }
    wait_for "Kafka" 60 topics --list
    # The topic exists before ClickHouse subscribes (it starts at the newest offset and only
    # notices new topics after minutes).
    topics --create --if-not-exists --topic flows --partitions 1 --replication-factor 1 >/dev/null

    # ClickHouse, with its own config (ports, paths) and the default user without password.
    mkdir -p "$dir/clickhouse/data" "$dir/clickhouse/tmp"
    sed -e "s|@DIR@|$dir|g" -e "s|@HTTP_PORT@|$ch_port|g" -e "s|@TCP_PORT@|$ch_native_port|g" \
        "$here/clickhouse.xml" >"$dir/clickhouse.xml"
    cp "$here/clickhouse-users.xml" "$dir/clickhouse-users.xml"
    start clickhouse clickhouse-server --config-file="$dir/clickhouse.xml"
    wait_for "ClickHouse" 60 ch --query "SELECT 1"
    sed -e "s|@KAFKA@|127.0.0.1:$kafka_port|g" "$here/schema.sql" | ch

    start goflow2 goflow2 -listen "sflow://127.0.0.1:$sflow_port" -format json -transport kafka \
        -transport.kafka.brokers "127.0.0.1:$kafka_port" -transport.kafka.topic flows \
        -addr "127.0.0.1:$((sflow_port + 1))"
    wait_for "goflow2" 30 bash -c "exec 3<>/dev/tcp/127.0.0.1/$((sflow_port + 1))"
    echo "sflow=127.0.0.1:$sflow_port kafka=127.0.0.1:$kafka_port clickhouse=http://127.0.0.1:$ch_port dir=$dir"
}

down() {
    [ -n "$dir" ] || die "down needs --dir DIR (the one up printed)"
    ls "$dir"/*.pid >/dev/null 2>&1 || die "nothing to stop in $dir (no pid files)"
    local p pid
    for p in goflow2 clickhouse kafka; do
        [ -f "$dir/$p.pid" ] || continue
        pid=$(cat "$dir/$p.pid")
        kill -TERM -- "-$pid" 2>/dev/null || true
        for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL -- "-$pid" 2>/dev/null || true
        rm -f "$dir/$p.pid"
    done
}

status() {
    [ -n "$dir" ] || die "status needs --dir DIR (the one up printed)"
    local p all=0
    for p in kafka clickhouse goflow2; do
        if [ -f "$dir/$p.pid" ] && kill -0 "$(cat "$dir/$p.pid")" 2>/dev/null; then
            echo "$p: running (pid $(cat "$dir/$p.pid"))"
        else
            echo "$p: stopped"; all=1
        fi
    done
    return $all
}

case $cmd in
    up) up ;;
    down) down ;;
    status) status || exit $? ;;
    *) echo "usage: $0 up|down|status [--dir DIR] [--sflow-port N] [--kafka-port N] [--clickhouse-port N]" >&2; exit 2 ;;
esac
