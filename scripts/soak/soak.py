"""The soak: vecflow routing two host pairs through namespaces for N minutes while its
configuration, BGP routes, links, MTU and collectors change under it; then the books.
Run it as `scripts/soak.sh` (see there for the options)."""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import checks
import faults
import parts
from lab import HOSTS, Lab, wait_until

TCP_PORT = 5202


def args():
    """The command line."""
    p = argparse.ArgumentParser(prog="scripts/soak.sh", description=__doc__)
    p.add_argument("--minutes", type=float, default=10, help="length of the soak (default 10)")
    p.add_argument("--gap-us", type=int, help="µs between UDP frames of each pair (default: the gap that "
                   "gives half the highest rate that lost nothing in probes before the soak)")
    p.add_argument("--json", help="write the report here")
    p.add_argument("--keep", action="store_true", help="keep the work directory (logs, outputs)")
    return p.parse_args()


def tools():
    """The programs the soak runs; exits 2 naming what is missing."""
    gobin = os.path.join(os.environ.get("GOPATH", os.path.expanduser("~/go")), "bin")
    found = {t: shutil.which(t, path=os.environ["PATH"] + os.pathsep + gobin + ":/usr/sbin")
             for t in ("bird", "birdc", "iperf3", "trafgen", "ethtool", "ip", "goflow2")}
    missing = [t for t, p in found.items() if not p]
    if missing or os.geteuid() != 0:
        print(f"soak.sh needs root and {', '.join(missing) or 'nothing else'} "
              "(./test.sh --full installs them: bird2, iperf3, netsniff-ng, ethtool, iproute2, goflow2)", file=sys.stderr)
        sys.exit(2)
    return found


def main():
    """Runs the soak in a fresh lab, prints the summary, writes the report; exits 1 when a
    check failed (the work directory then stays)."""
    a = args()
    found = tools()
    vecflow = os.path.abspath(os.environ.get("VECFLOW", "target/release/vecflow"))
    secs = max(30, round(a.minutes * 60))
    workdir = tempfile.mkdtemp(prefix="vecflow-soak.")
    lab = Lab(workdir)
    ok = False
    try:
        report = soak(lab, vecflow, found, secs, a.gap_us)
        ok = not report["failed"]
        print(checks.summary(report))
        if a.json:
            with open(a.json, "w") as f:
                json.dump(report, f, indent=1)
    finally:
        lab.close()
        if ok and not a.keep:
            shutil.rmtree(workdir)
        else:
            print(f"soak.sh: logs and outputs in {workdir}", file=sys.stderr)
    sys.exit(0 if ok else 1)


def soak(lab, vecflow, found, secs, gap):
    """Builds the lab, starts everything, finds the rate (unless `gap` µs is given), runs the
    traffic and the faults for `secs` s, settles, stops vecflow; the report."""
    log = lambda what: print(f"[{time.strftime('%H:%M:%S')}] {what}", file=sys.stderr, flush=True)
    log(f"building the lab (tag {lab.tag}) in {lab.dir}")
    lab.build()
    base = 20000 + int(lab.tag, 16) % 20000
    sflow_ports = [base, base + 1]
    birdc = lambda name, cmd: subprocess.run([found["birdc"], "-s", os.path.join(lab.dir, name + ".ctl"),
                                              *cmd.split()], capture_output=True, text=True).stdout
    collect, goflow2 = parts.start_collectors(lab, vecflow, sflow_ports, found["goflow2"], 1)
    sock = os.path.join(lab.dir, "api.sock")
    config = os.path.join(lab.dir, "vecflow.yaml")
    with open(config, "w") as f:
        f.write(parts.vecflow_yaml(lab, sflow_ports, {}, []))
    show = open(os.path.join(lab.dir, "show-at-exit.txt"), "w")
    vf = lab.spawn("r", "vecflow", [vecflow, "run", "--show-at-exit", "-c", config, "--socket", sock], stdout=show)
    subprocess.run([vecflow, "ctl", "--socket", sock, "--wait=60"], check=True, capture_output=True)
    api = parts.Api(sock)
    log("vecflow runs; starting BIRD on the router and the four hosts")
    parts.start_birds(lab, birdc)
    for h in HOSTS:
        wait_until(f"{lab.loopback(h)}/32 in vecflow's FIB",
                   lambda: f"{lab.loopback(h)}/32" in api.cli(f"show ip fib {lab.loopback(h)}/32")["text"], 30)
    for h in "ac":
        parts.iperf3_server(lab, h, TCP_PORT)
    udp_pairs = [("a", "b"), ("c", "d")]
    tcp = lambda t, tag: [parts.iperf3_client(lab, src, dst, TCP_PORT, t, ["-P", "2", "-b", "20M"],
                                              f"{tag}-tcp-{src}{dst}") for src, dst in (("b", "a"), ("d", "c"))]
    probes = []
    if gap is None:
        log("finding the shortest gap between UDP frames without loss (both pairs at once, TCP beside)")
        best, probes = parts.calibrate(lab, udp_pairs, 3, [400, 200, 100, 50, 20, 10, 5, 2], tcp)
        # Half the fastest clean rate, for the faults' share of the CPU: the clean probe
        # closest below it (trafgen's rate is not proportional to 1/gap). With none clean (a
        # machine busy with something else), the slowest probe's: the books count the loss.
        clean = [p for p in probes if not p["lost"]] or probes[:1]
        if best is None:
            log(f"no probe was free of loss: {probes}; running at the slowest")
        half = max(p["pps"] for p in clean) / 2
        gap = min((p for p in clean if p["pps"] <= half), key=lambda p: half - p["pps"], default=clean[0])["gap_us"]
    log(f"soak: {secs} s, UDP a→b and c→d every {gap} µs, TCP b→a and d→c")
    rec = faults.Recorder(time.monotonic())
    stop = threading.Event()
    s = faults.Soak(lab, api, vecflow, birdc, sflow_ports, rec, stop)
    received = {dst: parts.udp_received(lab, dst) for _, dst in udp_pairs}
    floods = {f"udp-{src}{dst}": parts.udp_flood(lab, src, dst, gap, f"udp-{src}{dst}") for src, dst in udp_pairs}
    clients = {c.name: c for c in tcp(secs, "soak")}
    s.sample(vf.popen.pid)
    threads = s.threads(vf.popen.pid)
    down = min(30, secs // 4)
    schedule = [(0.2 * secs, "mtu 1400", lambda: s.set_mtu("pd", 1400)),
                (0.2 * secs + min(20, secs / 10), "mtu 1500", lambda: s.set_mtu("pd", 1500)),
                (0.3 * secs, "collector down", lambda: goflow2.stop(signal.SIGTERM)),
                (0.3 * secs + down, "collector up",
                 lambda: parts.start_goflow2(lab, found["goflow2"], sflow_ports[1], 2)),
                (0.5 * secs, "link d down", lambda: lab.set_link("d", False)),
                (0.5 * secs + 5, "link d up", lambda: lab.set_link("d", True))]
    for at, what, fn in sorted(schedule, key=lambda e: e[0]):
        time.sleep(max(0, at - (time.monotonic() - rec.t0)))
        rec.mark(what)
        log(what)
        fn()
    time.sleep(max(0, secs - (time.monotonic() - rec.t0)))
    sent = {name: parts.flood_sent(f) for name, f in floods.items()}
    for c in clients.values():
        c.popen.wait(60)
    stop.set()
    for t in threads:
        t.join()
    log("traffic over; stopping BIRD and letting the counters settle")
    for p in lab.procs:
        if p.name.startswith("bird"):
            p.stop()
    books = checks.settle(lab, api)
    sflow = api.cli("show sflow")["json"]
    errors = api.cli("show errors")["json"]
    status = vf.stop(signal.SIGTERM, 30)
    time.sleep(2)
    for p in (collect, *[p for p in lab.procs if p.name.startswith("goflow2")]):
        p.stop(signal.SIGINT if p is collect else signal.SIGTERM)
    traffic = {n: parts.iperf3_result(lab, n) for n in clients}
    for (src, dst), name in zip(udp_pairs, floods):
        got = parts.udp_received(lab, dst) - received[dst]
        traffic[name] = {"sent": sent[name], "pps": round(sent[name] / secs), "received": got}
    return checks.report(lab, dict(secs=secs, gap=gap, probes=probes, rec=rec, soak=s, books=books,
                                   sflow=sflow, errors=errors, exit_status=status, traffic=traffic, down=down))


if __name__ == "__main__":
    main()
