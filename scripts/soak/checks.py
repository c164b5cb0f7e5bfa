"""The soak's books: interfaces against their peer veths, the collectors' sequence numbers,
the estimates, sample pools and drops, resources; a JSON report and a one-screen summary."""

import json
import math
import os
import re
import time

import parts
from lab import HOSTS, PORTS


def settle(lab, api, secs=30):
    """vecflow's interface counters and the veths' (both ends), read until two reads a second
    apart agree (nothing moves any more)."""
    last = None
    deadline = time.monotonic() + secs
    while time.monotonic() < deadline:
        now = {"vecflow": parts.counters(api),
               "host": {h: lab.link_counters(h, lab.host_veth(h)) for h in HOSTS},
               "router": {h: lab.link_counters("r", lab.router_veth(h)) for h in HOSTS}}
        if now == last:
            return now
        last = now
        time.sleep(1)
    raise RuntimeError("the counters kept moving for 30 s after the traffic stopped")


def interface_checks(books, errors):
    """Each port's books against its host's veth: what the host sent is what vecflow
    received or the kernel dropped before vecflow could read it (`rx_miss`); what vecflow
    sent is what the host received (a frame the kernel refused is a `tx-error` drop, not
    sent); and every frame received was forwarded (reached an output interface), answered
    here (`rx_local`) or dropped before output (drops at the tx nodes come after forwarding)."""
    before_output, tx_errors = {}, {}
    for row in errors.get("errors", []):
        into = tx_errors if row["node"].endswith("-tx") else before_output
        into[row["interface"]] = into.get(row["interface"], 0) + row["count"]
    out = []
    for h in HOSTS:
        name = PORTS[h][0]
        v, host, rt = books["vecflow"][name], books["host"][h], books["router"][h]
        rows = {
            "host tx = vecflow rx + rx-miss": (host["tx_packets"], v["rx_packets"] + v.get("rx_miss", 0)),
            "vecflow tx = host rx": (v["tx_packets"], host["rx_packets"]),
            "rx = forwarded + local + dropped before output":
                (v["rx_packets"], v["rx_forwarded"] + v["rx_local"] + before_output.get(name, 0)),
        }
        for what, (left, right) in rows.items():
            out.append({"check": f"{name}: {what}", "ok": left == right, "left": left, "right": right})
        out[-2]["veth_tx_dropped"] = rt["tx_dropped"]
    out.append({"check": "tx errors (frames the kernel refused), by input interface", "ok": True, **tx_errors})
    return out


def goflow2_sequences(lab):
    """goflow2's two lives: the datagram sequence numbers each received, per agent and
    sub-agent."""
    lives = []
    for part in (1, 2):
        seqs = {}
        try:
            text = open(os.path.join(lab.dir, f"goflow2-{part}.json")).read()
        except OSError:
            text = ""
        dec = json.JSONDecoder()
        i = 0
        while i < len(text):
            while i < len(text) and text[i].isspace():
                i += 1
            if i >= len(text):
                break
            obj, i = dec.raw_decode(text, i)
            m = obj["message"]
            seqs.setdefault(f"{m['agent-ip']}/{m['sub-agent-id']}", []).append(m["sequence-number"])
        lives.append(seqs)
    return lives


def collector_checks(lab, datagrams):
    """`vecflow collect` saw every datagram in order; goflow2 saw every datagram but a run of
    consecutive ones, the ones sent while it was down."""
    out = []
    lines = [line for line in open(os.path.join(lab.dir, "collect.json")) if line.startswith("{")]
    summary = json.loads(lines[-1]) if lines else {}
    agents = summary.get("agents", [])
    received = sum(x["datagrams"] for x in agents)
    lost = sum(x["lost_datagrams"] + x["out_of_order"] + x["restarts"] for x in agents)
    out.append({"check": "vecflow collect: every datagram, in order", "ok": received == datagrams and lost == 0,
                "left": received, "right": datagrams, "lost_or_reordered": lost})
    lives = goflow2_sequences(lab)
    keys = set(lives[0]) | set(lives[1])
    for key in sorted(keys):
        first, second = sorted(lives[0].get(key, [])), sorted(lives[1].get(key, []))
        contiguous = all(s == list(range(s[0], s[0] + len(s))) for s in (first, second) if s)
        gap = (second[0] - first[-1] - 1) if first and second else None
        total = len(first) + len(second) + (gap or 0)
        out.append({"check": f"goflow2 {key}: gap-free but while down", "ok": contiguous and bool(gap) and
                    total == datagrams, "before": len(first), "after": len(second), "gap": gap,
                    "left": total, "right": datagrams})
    return out, summary


def sflow_checks(summary, sflow, rate):
    """Per port: the collector's sample pool (from the first flow sample to the last) against
    the packets the sampler saw and the graph forwarded, its drops against the samples lost to
    full rings, the discard samples (drop monitoring) it received against those sent, and the
    estimate of forwarded packets within twice its 95 % bound."""
    t = sflow["totals"]
    taken = sum(src["sampler"]["taken"] for src in sflow["sources"])
    sent = sum(src["samples_sent"] for src in sflow["sources"])
    out = [{"check": "samples taken = sent as flow samples + of packets the graph dropped", "left": taken,
            "right": sent + t["samples_of_drops"], "encoded": t["samples_encoded"],
            "ok": taken == sent + t["samples_of_drops"] and sent == t["samples_encoded"]}]
    rows = {r["source"]: r for r in summary.get("interfaces", [])}
    for src in sflow["sources"]:
        name, st = src["interface"], src["sampler"]
        forwarded = st["seen"] - st["dropped"]
        row = rows.get(f"0:{src['if_index']}", {})
        pool, est = row.get("pool_packets", 0), row.get("ingress", {})
        out.append({"check": f"{name}: sample pool = packets seen − dropped (to a skip at each end)",
                    "left": pool, "right": forwarded, "ok": 0 <= forwarded - pool <= 20 * rate})
        lost = row.get("dropped_samples", 0)
        out.append({"check": f"{name}: sample drops = samples lost to full rings", "left": lost,
                    "right": st["ring_full"], "ok": lost == st["ring_full"]})
        got = sum(row.get("discards", {}).values())
        out.append({"check": f"{name}: discard samples received = sent", "left": got, "right": st["discards"],
                    "not_sent_over_drop_limit": st["discards_lost"], "ok": got == st["discards"]})
        c = est.get("samples", 0)
        bound = 1.96 / math.sqrt(c) if c else 1
        error = abs(est.get("packets", 0) - forwarded) / max(forwarded, 1)
        out.append({"check": f"{name}: estimate within its bound", "left": round(est.get("packets", 0)),
                    "right": forwarded, "error_pct": round(100 * error, 2), "bound_pct": round(100 * bound, 2),
                    "ok": error <= 2 * bound})
    return out


def resource_checks(samples, secs):
    """RSS, descriptors and threads (API client threads apart) flat after warm-up (the first
    fifth, at least 20 s): the floor does not rise, the least read of the last third within 5 %
    of the least of the first third. A leak raises every read after it, so it raises the floor;
    a read that caught API clients mid-connection (their sockets, a thread not yet named) raises
    one read, which is listed with the threads' names then, not judged."""
    warm = [s for s in samples if s["t"] >= max(20, secs / 5)]
    third = max(1, len(warm) // 3)
    out = []
    for key in ("rss_kib", "fds", "threads"):
        vals = [s[key] for s in warm]
        first, last = min(vals[:third], default=0), min(vals[-third:], default=0)
        floor = min(vals, default=0)
        above = [{"t": s["t"], key: s[key], "thread_names": s.get("thread_names")}
                 for s in warm if s[key] > 1.05 * floor]
        out.append({"check": f"{key} flat after warm-up", "ok": bool(vals) and last <= 1.05 * first,
                    "floor_first_third": first, "floor_last_third": last, "min": floor,
                    "max": max(vals, default=0), "reads_above_floor": above})
    return out


def show_at_exit_datagrams(lab):
    """The datagrams the agent made in all, from `show sflow` printed at exit (after its
    last send)."""
    text = open(os.path.join(lab.dir, "show-at-exit.txt")).read()
    m = re.search(r"datagrams (\d+)", text.split("show sflow", 1)[-1])
    return int(m[1]) if m else -1


def report(lab, r):
    """Every check on what the soak `r` gathered; the report (`failed` names the checks that
    failed)."""
    rec, s = r["rec"], r["soak"]
    datagrams = show_at_exit_datagrams(lab)
    checks = interface_checks(r["books"], r["errors"])
    coll, summary = collector_checks(lab, datagrams)
    checks += coll
    checks += sflow_checks(summary, r["sflow"], 100)
    checks += resource_checks(s.resources, r["secs"])
    log = open(os.path.join(lab.dir, "vecflow.log")).read()
    checks.append({"check": "vecflow exits 0 on SIGTERM", "ok": r["exit_status"] == 0, "left": r["exit_status"]})
    checks.append({"check": "no panic", "ok": "panic" not in log})
    checks.append({"check": "every fault went as planned", "ok": not rec.failures, "failures": rec.failures})
    expected = {"apply": r["secs"] * 0.8, "bgp_flap": r["secs"] / 5 - 3}
    for what, least in expected.items():
        checks.append({"check": f"{what}: at least {int(least)}", "ok": rec.counts.get(what, 0) >= least,
                       "left": rec.counts.get(what, 0)})
    return {"seconds": r["secs"], "udp_gap_us": r["gap"], "probes": r["probes"], "traffic": r["traffic"],
            "events": rec.counts, "timeline": rec.timeline, "bgp_flap_ms": s.flap_ms, "resources": s.resources,
            "datagrams": datagrams, "books": r["books"], "checks": checks, "failed": [c["check"] for c in checks if not c["ok"]]}


def summary(rep):
    """The report on one screen."""
    lines = [f"soak: {rep['seconds']} s, UDP every {rep['udp_gap_us']} µs a pair; "
             f"events {json.dumps(rep['events'])}"]
    for n, t in rep["traffic"].items():
        lines.append(f"  {n}: {json.dumps(t)}")
    for w, ms in rep["bgp_flap_ms"].items():
        if ms:
            lines.append(f"  BGP {w} → FIB: median {sorted(ms)[len(ms) // 2]} ms, max {max(ms)} ms ({len(ms)})")
    for c in rep["checks"]:
        detail = {k: v for k, v in c.items() if k not in ("check", "ok")}
        lines.append(f"  {'ok  ' if c['ok'] else 'FAIL'} {c['check']}  {json.dumps(detail)}")
    lines.append("soak: " + ("all checks passed" if not rep["failed"] else f"{len(rep['failed'])} checks failed"))
    return "\n".join(lines)
