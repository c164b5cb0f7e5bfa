#!/usr/bin/env python3
"""Drives a running flow pipeline (pipeline.sh up) with real vecflow routers and counts, per
agent and datagram, what they sent against the rows in ClickHouse.

Each router is a vecflow instance with two generator ports: port g0 receives a UDP stream,
routed out of g1, and a trickle with TTL 1 (dropped as ttl-expired: discard samples); sFlow
samples g0 at 1:--sampling-rate (default 1:1, so that the routers, which stand for machines of
their own, take little of this machine's CPU) and polls counters every 2 s. Every router has an agent
address of its own (127.x.y.n, new for each run, so that runs against the same pipeline do not
mix). The flow samples per second asked for (--rate) are shared by the routers.

During the run it reads each pipeline process's CPU time, the UDP drops of the sFlow port's
sockets (/proc/net/udp) and, at the end, the consumer groups' lag. Faults (--faults) happen at
fixed points of the run:
  broker        SIGKILL to kafka-2 at 20 %, started again at 30 %
  shard         clickhouse-2 (or -1) stopped (SIGTERM) at 40 %, started again at 50 %
  decoder-term  SIGTERM to decoder-1 at 60 % (it drains: nothing may be lost), restarted at 65 %
  decoder-kill  SIGKILL to decoder-2 (or -1) at 75 %, restarted at 80 %: what it had received
                and not produced is lost, and is counted exactly from the sequence numbers
After the routers stop it waits for ClickHouse to have every row (or to stop changing), then
counts per agent: datagrams sent and found, the sequence numbers missing, rows against samples
sent (flow, counter and discard), and rows delivered twice (before and after OPTIMIZE ... FINAL,
which lets ReplacingMergeTree remove them).

Prints a report; --json writes it as JSON. Exits 1 when rows are missing beyond what the faults
allow (nothing, except datagrams of the SIGKILLed decoder's agents), or rows remain doubled.

Usage: load.py --dir PIPELINE_DIR [--vecflow PATH] [--routers N] [--rate SAMPLES_PER_S]
               [--seconds S] [--sampling-rate N] [--faults broker,shard,decoder-term,decoder-kill]
               [--router-nice N] [--json FILE]
"""
import argparse
import json
import math
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CLK_TCK = os.sysconf("SC_CLK_TCK")
# What a SIGKILLed decoder may lose: datagrams sent in the seconds before the kill (its socket
# buffer and librdkafka's queue; the send time estimated from the sequence number).
KILL_WINDOW_S = 5

FAULT_PLAN = {
    "broker": [(0.20, "stop", "kafka-2", "KILL"), (0.30, "start", "kafka-2", None)],
    "shard": [(0.40, "stop", "clickhouse-LAST", "TERM"), (0.50, "start", "clickhouse-LAST", None)],
    "decoder-term": [(0.60, "stop", "decoder-1", "TERM"), (0.65, "start", "decoder-1", None)],
    "decoder-kill": [(0.75, "stop", "decoder-LAST", "KILL"), (0.80, "start", "decoder-LAST", None)],
}


def router_config(agent, seed, sflow_port, pps, sampling_rate):
    # Two generator ports: g0's stream is routed out of g1; its TTL-1 trickle is dropped. The
    # samplers' seed is fixed, so the statistical checks fail or pass the same way each run.
    return f"""workers: {{count: 1, buffers: 8192}}
metrics: {{enabled: false}}
sflow:
  agent-address: {agent}
  seed: {seed}
  sampling-rate: {sampling_rate}
  polling-interval: 2
  drop-limit: 20
  collectors: [{{address: 127.0.0.1, port: {sflow_port}}}]
interfaces:
  g0:
    mac: 02:00:00:00:00:10
    addresses: [100.64.0.1/31]
    sflow: {{drop-monitoring: true}}
    generator:
      streams:
        - template: ipv4-udp
          src-mac: 02:00:00:00:00:20
          src-ip: 16.0.0.1
          dst-ip: 48.0.0.1
          src-range: {{count: 250, mode: random}}
          dst-range: {{count: 250, mode: random}}
          rate-pps: {pps}
        - template: ipv4-udp
          src-mac: 02:00:00:00:00:20
          src-ip: 16.0.1.1
          dst-ip: 48.0.0.1
          ttl: 1
          rate-pps: 20
  g1:
    mac: 02:00:00:00:00:11
    addresses: [100.64.1.1/31]
    generator: {{streams: []}}
routes:
  - {{prefix: 48.0.0.0/24, via: 100.64.1.0}}
neighbors:
  - {{interface: g1, address: 100.64.1.0, mac: 02:00:00:00:00:21}}
"""


class Pipeline:
    """What pipeline.sh up left in its directory."""

    def __init__(self, d):
        self.dir = Path(d)
        ports = (self.dir / "ports").read_text().split()
        self.sflow_port, self.kafka_port, self.ch_port, self.brokers, self.shards = map(int, ports)
        self.components = (self.dir / "components").read_text().split()
        self.bootstrap = (self.dir / "bootstrap").read_text().strip()
        self.goflow2 = "goflow2" in self.components

    def pid(self, name):
        try:
            return int((self.dir / f"{name}.pid").read_text())
        except (FileNotFoundError, ValueError):
            return None

    def resolve(self, name):
        """kafka-2 etc.; *-LAST is the highest-numbered component of that kind."""
        if name.endswith("-LAST"):
            kind = name[: -len("LAST")]
            return max((c for c in self.components if c.startswith(kind)), key=lambda c: int(c.rsplit("-", 1)[1]))
        return name

    def control(self, action, name, sig):
        args = [str(HERE / "pipeline.sh"), action, name, "--dir", str(self.dir)]
        if sig:
            args += ["--signal", sig]
        subprocess.run(args, check=True)

    def ch(self, sql, shard=1):
        out = subprocess.run(
            ["clickhouse-client", "--port", str(self.ch_port + 881 + shard - 1), "--query", sql, "--format", "TabSeparated"],
            check=True, capture_output=True, text=True).stdout
        return [line.split("\t") for line in out.splitlines() if line]

    def lag(self):
        """Messages in the topics not yet committed by ClickHouse's consumer groups."""
        kafka_lib = (self.dir / "kafka-lib").read_text().strip()
        # At the lowest priority: a JVM starting takes both cores for a second, which at
        # 40 000 samples/s overflowed the decoder's socket (3 168 datagrams lost to it).
        r = subprocess.run(
            ["nice", "-n", "19", "java", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
             "-cp", f"{kafka_lib}/*", "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
             "--bootstrap-server", self.bootstrap, "--describe", "--all-groups"],
            capture_output=True, text=True)
        total = 0
        for line in r.stdout.splitlines():
            f = line.split()
            if len(f) >= 6 and f[5].isdigit():
                total += int(f[5])
        return total


def autogroup():
    """Whether the kernel groups tasks by session for the CPU (sched_autogroup_enabled)."""
    try:
        return Path("/proc/sys/kernel/sched_autogroup_enabled").read_text().strip() == "1"
    except OSError:
        return False


def router_nice_prefix(nice):
    """The command that starts a router at `nice`: plain nice, or, under autogroup (where the
    router runs in a session of its own), the session group's nice value first (without root
    the kernel takes one such value in 100 ms, hence the tries)."""
    if nice == 0:
        return []
    if autogroup():
        return ["sh", "-c", 'for try in 1 2 3 4 5 6 7 8 9 10; do echo "$0" 2>/dev/null >/proc/self/autogroup && break '
                '|| sleep 0.1; done; exec nice -n "$0" "$@"', str(nice)]
    return ["nice", "-n", str(nice)]


def cpu_seconds(pid):
    try:
        f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / CLK_TCK
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None


def udp_sockets(port):
    """{inode: drops} of every UDP socket bound to `port` (IPv4 and IPv6)."""
    out = {}
    for table in ("/proc/net/udp", "/proc/net/udp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            f = line.split()
            if int(f[1].rsplit(":", 1)[1], 16) == port:
                out[f[9]] = int(f[-1])
    return out


class Sampler:
    """CPU seconds per component and UDP drops of the sFlow port over a run, through restarts:
    each process (pid) and socket (inode) counts from its first reading to its last, from 0
    when it appeared during the run."""

    def __init__(self, p):
        self.p, self.cpu, self.drops, self.first = p, {}, {}, True

    def sample(self):
        for c in self.p.components:
            pid = self.p.pid(c)
            v = cpu_seconds(pid) if pid else None
            if v is not None:
                self.cpu.setdefault((c, pid), [0 if not self.first else v, v])[1] = v
        for inode, d in udp_sockets(self.p.sflow_port).items():
            self.drops.setdefault(inode, [0 if not self.first else d, d])[1] = d
        self.first = False

    def cpu_seconds(self):
        out = {}
        for (c, _), (a, b) in self.cpu.items():
            out[c] = out.get(c, 0) + b - a
        return out

    def udp_drops(self):
        return sum(b - a for a, b in self.drops.values())


def sent_by(show):
    """vecflow's own account at exit: datagrams sent, and samples of each kind."""
    m = re.search(r"^datagrams (\d+) \(sent (\d+), failed (\d+), refused (\d+)\), flow samples (\d+), "
                  r"counter samples (\d+), discard samples (\d+)", show, re.M)
    if not m:
        raise SystemExit(f"no sFlow totals in the router's report:\n{show[-2000:]}")
    _, sent, failed, refused, flows, counters, discards = map(int, m.groups())
    return {"datagrams": sent, "failed": failed, "refused": refused, "flow": flows, "counters": counters, "discard": discards}


def router_truth(show):
    """What a router counted itself, from its report at exit: g0's (ifIndex 1) rx packets and
    packets forwarded, g1's (ifIndex 2) tx packets, discard samples sent."""
    section = show[show.index("vecflow# show interface"):show.index("vecflow# show errors")]
    counts, current = {}, None
    for line in section.splitlines()[2:]:
        f = line.split()
        if f and not line.startswith(" ") and len(f) > 1 and f[1].isdigit():
            current = int(f[1])
        m = re.search(r"(rx packets|rx forwarded|tx packets)\s+(\d+)$", line)
        if current is not None and m:
            counts[(current, m.group(1))] = int(m.group(2))
    return {"g0_rx": counts[(1, "rx packets")], "g0_forwarded": counts[(1, "rx forwarded")],
            "g1_tx": counts.get((2, "tx packets"), 0), "discards": sent_by(show)["discard"]}


def check_queries(p, agents, truths, sampling_rate, goflow2):
    """Runs every query of queries.sql and checks its answer against the routers' own counts.
    Needs a pipeline that holds this run's rows only. Returns the failures."""
    fails = []

    def check(ok, what):
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            fails.append(what)

    queries = {}
    for block in (HERE / "queries.sql").read_text().split("-- name: ")[1:]:
        name, sql = block.split("\n", 1)
        queries[name.strip()] = sql.strip().rstrip(";")
    def within(est, truth, samples):
        # Exact at 1:1; else within 196/sqrt(samples) % (95 % confidence).
        if sampling_rate == 1:
            return est == truth, "exact"
        bound = 196 / math.sqrt(max(samples, 1))
        return 100 * abs(est - truth) / max(truth, 1) <= bound, f"bound {bound:.2f} %"

    per_if = {}
    for router, in_if, _, packets, _, n in p.ch(queries["per_interface_per_minute"]):
        k = (router, int(in_if))
        per_if[k] = (per_if.get(k, (0, 0))[0] + int(packets), per_if.get(k, (0, 0))[1] + int(n))
    for agent in agents:
        est, n = per_if.get((agent, 1), (0, 0))
        ok, how = within(est, truths[agent]["g0_forwarded"], n)
        check(ok, f"per_interface_per_minute: {agent} ifIndex 1: {est} packets, the router forwarded {truths[agent]['g0_forwarded']} ({how})")
    total = sum(v[0] for v in per_if.values())
    vlans = p.ch(queries["per_vlan"])
    check(sum(int(r[2]) for r in vlans) == total, f"per_vlan: totals match per_interface_per_minute ({total})")
    talkers = p.ch(queries["top_talkers"])
    sizes = [int(t[1]) for t in talkers]
    check(len(talkers) == 10 and sizes == sorted(sizes, reverse=True) and all(t[0].startswith("16.0.0.") for t in talkers),
          f"top_talkers: 10 sources of 16.0.0.0/24, most bytes first ({talkers[0][0]}: {sizes[0] if sizes else 0} bytes)")
    prefixes = {r[0]: int(r[1]) for r in p.ch(queries["per_destination_prefix"])}
    tx = sum(t["g1_tx"] for t in truths.values())
    ok, how = within(prefixes.get("48.0.0.0/24", 0), tx, sum(v[1] for v in per_if.values()))
    check(set(prefixes) == {"48.0.0.0/24"} and ok, f"per_destination_prefix: {prefixes}, the routers sent {tx} ({how})")
    if goflow2:
        return fails
    reasons = {(r[0], r[1]): int(r[2]) for r in p.ch(queries["discards_by_reason"])}
    for agent in agents:
        want = truths[agent]["discards"]
        check(reasons == {**reasons, (agent, "ttl_exceeded"): want} and want > 0,
              f"discards_by_reason: {agent} ttl_exceeded {reasons.get((agent, 'ttl_exceeded'))} samples, the router sent {want}")
    last = {}
    for router, if_index, _, _, _, _, _, in_total, _ in p.ch(queries["interface_counters_per_minute"]):
        last[(router, int(if_index))] = max(last.get((router, int(if_index)), 0), int(in_total))
    for agent in agents:
        check(last.get((agent, 1)) == truths[agent]["g0_rx"],
              f"interface_counters_per_minute: {agent} ifIndex 1 last poll {last.get((agent, 1))} rx packets, the router counted {truths[agent]['g0_rx']}")
    return fails


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", required=True)
    ap.add_argument("--vecflow", default=str(HERE.parent.parent / "target/release/vecflow"))
    ap.add_argument("--routers", type=int, default=4)
    ap.add_argument("--rate", type=int, default=2000, help="flow samples per second, all routers together")
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--sampling-rate", type=int, default=1)
    ap.add_argument("--faults", default="")
    ap.add_argument("--router-nice", type=int, default=0,
                    help="run the routers at this nice value: they stand for machines of their own, and at 10 "
                         "they leave the pipeline the CPU it wants. Where the kernel groups tasks by session "
                         "(autogroup), a nice value counts only inside its group, so each router then gets a "
                         "session of its own and the value goes to that session's group")
    ap.add_argument("--json")
    ap.add_argument("--check-queries", action="store_true",
                    help="run queries.sql and check each answer against the routers' counts (a fresh pipeline only)")
    a = ap.parse_args()
    p = Pipeline(a.dir)
    faults = [f for f in a.faults.split(",") if f]
    for f in faults:
        if f not in FAULT_PLAN:
            raise SystemExit(f"--faults {f}: allowed: {', '.join(FAULT_PLAN)}")
    plan = sorted((at, act, p.resolve(name), sig, f) for f in faults for at, act, name, sig in FAULT_PLAN[f])
    for _, _, name, _, f in plan:
        if name not in p.components:
            raise SystemExit(f"--faults {f} needs component {name}, which this pipeline has not")

    run = Path(a.dir) / f"load-{int(time.time())}"
    run.mkdir()
    prefix = f"127.{random.randint(16, 254)}.{random.randint(0, 255)}"
    agents = [f"{prefix}.{i + 1}" for i in range(a.routers)]
    pps = round(a.rate / a.routers * a.sampling_rate)
    print(f"load: {a.routers} routers, {a.rate} flow samples/s ({pps} pps each at 1:{a.sampling_rate}), "
          f"{a.seconds:g} s, faults: {', '.join(faults) or 'none'}; agents {prefix}.1-{a.routers}", flush=True)

    sampler = Sampler(p)
    sampler.sample()
    routers = []
    for i, agent in enumerate(agents):
        cfg = run / f"router-{i + 1}.yaml"
        cfg.write_text(router_config(agent, i + 1, p.sflow_port, pps, a.sampling_rate))
        out = open(run / f"router-{i + 1}.show", "w")
        err = open(run / f"router-{i + 1}.log", "w")
        routers.append(subprocess.Popen(
            router_nice_prefix(a.router_nice) + [a.vecflow, "run", "-c", str(cfg), "--socket", str(run / f"router-{i + 1}.sock"), "--show-at-exit"],
            stdout=out, stderr=err, start_new_session=a.router_nice != 0 and autogroup()))
    start = time.monotonic()
    router_cpu_start = sum(cpu_seconds(r.pid) or 0 for r in routers)
    events = []
    lag_mid = None
    sampled = start
    for at, act, name, sig, f in plan + [(1.0, "end", None, None, None)]:
        while time.monotonic() - start < at * a.seconds:
            if lag_mid is None and time.monotonic() - start > 0.5 * a.seconds and not faults:
                lag_mid = p.lag()
            if time.monotonic() - sampled > 0.5:
                sampler.sample()
                sampled = time.monotonic()
            time.sleep(0.05)
        sampler.sample()
        if act == "end":
            break
        t = time.monotonic() - start
        p.control(act, name, sig)
        sampler.sample()
        events.append({"at_s": round(t, 2), "fault": f, "action": act, "component": name, "signal": sig})
        print(f"load: {t:6.1f} s  {act} {name}{' (SIG' + sig + ')' if sig else ''}", flush=True)
    lag_end = p.lag()
    router_cpu = sum(cpu_seconds(r.pid) or 0 for r in routers) - router_cpu_start
    for r in routers:
        r.send_signal(signal.SIGINT)
    for r in routers:
        r.wait(timeout=60)
    ran = time.monotonic() - start
    sampler.sample()
    cpu_share = {c: round(100 * v / ran, 1) for c, v in sampler.cpu_seconds().items()}
    cpu_share["routers"] = round(100 * router_cpu / ran, 1)
    drops = sampler.udp_drops()
    sent = {agents[i]: sent_by((run / f"router-{i + 1}.show").read_text()) for i in range(a.routers)}

    # ClickHouse's Kafka tables flush every 7.5 s: wait until every row is in, or nothing
    # changes for 30 s.
    in_list = ",".join(f"'{x}'" for x in agents)
    # goflow2's rows are flow samples only, without their index in the datagram: there, rows
    # are counted against flow samples, and neither lost datagrams nor doubles can be told.
    tables = (("flow", "flows"),) if p.goflow2 else (("flow", "flows"), ("counters", "counters"), ("discard", "discards"))
    index = "rowNumberInAllBlocks()" if p.goflow2 else "sample_index"

    def union_of(which):
        """Every row of these agents: address, datagram, sample index and kind."""
        where = ",".join(f"'{x}'" for x in which)
        return " UNION ALL ".join(
            f"SELECT sampler_address, sequence_num, {index} AS sample_index, '{k}' AS kind FROM vecflow.{t} "
            f"WHERE sampler_address IN ({where})" for k, t in tables)
    union = union_of(agents)
    kinds_sent = [k for k, _ in tables]
    want_rows = sum(sum(s[k] for k in kinds_sent) for s in sent.values())

    def distinct_rows():
        """This run's rows, a row delivered twice counted once (one agent at a time)."""
        return sum(int(p.ch(f"SELECT uniqExact(sequence_num, sample_index) FROM ({union_of([x])})")[0][0])
                   for x in agents)

    # After a fault some rows can come twice (a shard reading a partition again), so enough
    # rows is not yet every row: then the distinct ones are counted too (goflow2's rows have
    # no index to tell them apart).
    last, still = -1, time.monotonic()
    while True:
        rows = int(p.ch(f"SELECT count() FROM ({union})")[0][0])
        if rows >= want_rows and (p.goflow2 or distinct_rows() >= want_rows):
            break
        if time.monotonic() - still > 30:
            break
        if rows != last:
            last, still = rows, time.monotonic()
        time.sleep(1)
    caught_up = round(time.monotonic() - start - ran, 1)

    # One agent at a time: an exact count holds every (datagram, sample) it counts in memory,
    # and over all agents it passed ClickHouse's 2 GB a query at 18 million rows (the cluster,
    # 5 minutes at 60 000/s).
    per_agent, kinds = {}, {}
    for agent in agents:
        for n, datagrams, lo, hi, distinct in p.ch(
                f"SELECT count(), uniqExact(sequence_num), min(sequence_num), max(sequence_num), "
                f"uniqExact(sequence_num, sample_index) FROM ({union_of([agent])}) GROUP BY sampler_address"):
            per_agent[agent] = {"rows": int(n), "datagrams": int(datagrams), "first": int(lo), "last": int(hi),
                                "distinct": int(distinct)}
        kinds.update({(agent, kind): int(n) for kind, n in p.ch(
            f"SELECT kind, uniqExact(sequence_num, sample_index) FROM ({union_of([agent])}) GROUP BY kind")})
    report = {"routers": a.routers, "router_nice": a.router_nice, "rate": a.rate, "seconds": round(ran, 1), "sampling_rate": a.sampling_rate,
              "pps_per_router": pps, "faults": faults, "events": events, "cpu_percent": cpu_share,
              "udp_drops": drops, "lag_mid": lag_mid, "lag_end": lag_end, "caught_up_s": caught_up, "agents": {}}
    lost_total = dup_total = 0
    missing_by_agent = {}
    fails = []
    for agent in agents:
        s, got = sent[agent], per_agent.get(agent, {"rows": 0, "datagrams": 0, "first": 0, "last": -1, "distinct": 0})
        missing = []
        if got["datagrams"] < s["datagrams"] and not p.goflow2:
            seqs = {int(x[0]) for x in p.ch(f"SELECT DISTINCT sequence_num FROM ({union_of([agent])})")}
            missing = sorted(set(range(s["datagrams"])) - seqs)
        rows_want = sum(s[k] for k in kinds_sent)
        dups = got["rows"] - got["distinct"]
        lost_total += len(missing)
        missing_by_agent[agent] = missing
        dup_total += dups
        row = {"sent": s, "found": got, "missing_datagrams": len(missing),
               "missing_ranges": ranges(missing), "rows_missing": rows_want - got["distinct"], "duplicates": dups,
               "by_kind": {k: kinds.get((agent, k), 0) for k in kinds_sent}}
        report["agents"][agent] = row
        if s["failed"] or s["refused"]:
            fails.append(f"{agent}: the router could not send {s['failed'] + s['refused']} datagrams")
        for k in kinds_sent:
            if not missing and row["by_kind"][k] != s[k]:
                fails.append(f"{agent}: {row['by_kind'][k]} {k} rows for {s[k]} samples sent")
    dups_after = None
    if dup_total:
        for shard in range(1, p.shards + 1):
            for t in ("flows_local", "counters_local", "discards_local"):
                p.ch(f"OPTIMIZE TABLE vecflow.{t} FINAL", shard)
        dups_after = sum(int(n) - int(d) for agent in agents for n, d in p.ch(
            f"SELECT count(), uniqExact(sequence_num, sample_index) FROM ({union_of([agent])})"))
        if dups_after:
            fails.append(f"{dups_after} rows still doubled after OPTIMIZE ... FINAL")
    report.update(lost_datagrams=lost_total, duplicates=dup_total, duplicates_after_optimize=dups_after)
    # Each shard's rows of this run: after a shard was stopped, its share shows that it
    # consumed again (its agents' rows are complete above).
    if not p.goflow2:
        report["rows_per_shard"] = [int(p.ch(f"SELECT count() FROM vecflow.flows_local WHERE sampler_address IN ({in_list})", k)[0][0])
                                    for k in range(1, p.shards + 1)]
    # Only the SIGKILLed decoder may lose, and only what it held when it died: each missing
    # datagram's send time (its sequence number over the agent's datagram rate) must fall in
    # the seconds before the kill.
    kills = [e["at_s"] for e in events if e["fault"] == "decoder-kill" and e["action"] == "stop"]
    outside = 0
    for agent, row in report["agents"].items():
        per_s = sent[agent]["datagrams"] / ran
        times = [seq / per_s for seq in missing_by_agent[agent]]
        row["missing_at_s"] = [round(min(times), 2), round(max(times), 2)] if times else []
        outside += sum(1 for t in times if not any(k - KILL_WINDOW_S <= t <= k + 1 for k in kills))
    report["lost_outside_kill"] = outside
    if outside:
        fails.append(f"{outside} datagrams lost{' outside the seconds before the SIGKILL' if kills else ''}")
    if a.check_queries:
        truths = {agents[i]: router_truth((run / f"router-{i + 1}.show").read_text()) for i in range(a.routers)}
        fails += check_queries(p, agents, truths, a.sampling_rate, p.goflow2)
    report["failures"] = fails

    sent_total = sum(s["datagrams"] for s in sent.values())
    samples_total = sum(s["flow"] for s in sent.values())
    print(f"load: sent {sent_total} datagrams, {samples_total} flow samples ({samples_total / ran:.0f}/s), "
          f"{want_rows} rows in all; lost {lost_total} datagrams, {dup_total} rows twice"
          f"{'' if dups_after is None else f' ({dups_after} after OPTIMIZE FINAL)'}; UDP drops {drops}; "
          f"lag at the end {lag_end}; ClickHouse complete {caught_up} s after the routers stopped")
    print("load: CPU % of one core: " + ", ".join(f"{c} {v}" for c, v in sorted(cpu_share.items())))
    if report.get("rows_per_shard") and p.shards > 1:
        print("load: flow rows per shard: " + ", ".join(f"clickhouse-{k + 1} {n}" for k, n in enumerate(report["rows_per_shard"])))
    for agent, row in report["agents"].items():
        if row["missing_datagrams"] or row["duplicates"]:
            print(f"load: {agent}: missing {row['missing_datagrams']} datagrams {row['missing_ranges'][:10]} "
                  f"(sent at {row.get('missing_at_s')} s), "
                  f"{row['duplicates']} rows twice")
    for f in fails:
        print(f"FAIL {f}")
    if a.json:
        Path(a.json).write_text(json.dumps(report, indent=1))
    sys.exit(1 if fails else 0)


def ranges(xs):
    """[1,2,3,7] -> ["1-3", "7"]."""
    out, i = [], 0
    while i < len(xs):
        j = i
        while j + 1 < len(xs) and xs[j + 1] == xs[j] + 1:
            j += 1
        out.append(f"{xs[i]}-{xs[j]}" if j > i else str(xs[i]))
        i = j + 1
    return out


if __name__ == "__main__":
    main()
