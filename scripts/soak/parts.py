"""What runs in the soak's namespaces: vecflow, BIRD, the two collectors, trafgen and iperf3, and the
API as clients use it (whole requests, and requests abandoned half way)."""

import json
import os
import re
import signal
import socket
import time

from lab import HOSTS, PORTS, wait_until

ROUTER_AS = 65000
FLAP_PREFIX = "10.71.2.0/24"  # announced by host b's BIRD, withdrawn and announced again


def vecflow_yaml(lab, sflow_ports, mtu, applied_routes):
    """vecflow's configuration: linux-cp in ns l, the four ports (AF_XDP in rx-mode adaptive
    with two queues, AF_PACKET adaptive), sFlow 1:100 with drop monitoring on every port to
    the two collectors, `mtu` per port name and the routes of `applied_routes` (prefix, via)."""
    lines = ["workers: {count: 1}", "metrics: {enabled: false}", f"linux-cp: {{netns: {lab.ns['l']}}}",
             "interfaces:"]
    for h in HOSTS:
        name, driver = PORTS[h]
        extra = "af-xdp: {queues: 2}, " if driver == "af-xdp" else ""
        lines.append(
            f"  {name}: {{index: {lab.k(h)}, driver: {driver}, {extra}host-interface: {lab.router_veth(h)}, "
            f"rx-mode: adaptive, mac: '02:fe:00:00:00:0{lab.k(h)}', mtu: {mtu.get(name, 1500)}, "
            f"addresses: [{lab.router_addr(h)}/24], sflow: {{drop-monitoring: true}}}}")
    if applied_routes:
        lines.append("routes:")
        lines += [f"  - {{prefix: {p}, via: {v}}}" for p, v in applied_routes]
    collectors = ", ".join(f"{{address: 127.0.0.1, port: {p}}}" for p in sflow_ports)
    lines.append(f"sflow: {{sampling-rate: 100, polling-interval: 5, drop-limit: 1000, collectors: [{collectors}]}}")
    return "\n".join(lines) + "\n"


def bird_conf(router_id, asn, sessions, extra=""):
    """BIRD 2: router `router_id` in AS `asn` with BGP `sessions` (name, neighbor, peer AS,
    export filter), its kernel protocol exporting BGP routes, and an `extra` part."""
    bgp = "".join(
        f"protocol bgp {n} from peer {{ neighbor {addr} as {peer}; ipv4 {{ import all; export {export}; }}; }}\n"
        for n, addr, peer, export in sessions)
    return f"""log stderr all;
router id {router_id};
protocol device {{ scan time 1; }}
protocol kernel k4 {{ ipv4 {{ import none; export where source = RTS_BGP; }}; merge paths on; }}
template bgp peer {{ local as {asn}; hold time 30; connect retry time 1; error wait time 1, 5; }}
{extra}
{bgp}"""


def start_birds(lab, birdc):
    """BIRD in ns l (AS 65000, a session to every host) and on every host (AS 65001…,
    announcing its loopback; host b also the flapping prefix, in protocol `flap`)."""
    sessions = [(f"h{h}", lab.host_addr(h), ROUTER_AS + lab.k(h), "all") for h in HOSTS]
    start_bird(lab, "l", "bird-router", bird_conf(lab.router_addr("a"), ROUTER_AS, sessions))
    for h in HOSTS:
        extra = """protocol direct loop { ipv4 { import where net ~ [10.255.0.0/16+]; }; interface "lo"; }"""
        if h == "b":
            extra += f"\nprotocol static flap {{ ipv4; route {FLAP_PREFIX} blackhole; }}"
        to_router = [("r", lab.router_addr(h), ROUTER_AS, "where source = RTS_DEVICE || source = RTS_STATIC")]
        start_bird(lab, h, f"bird-{h}", bird_conf(lab.host_addr(h), ROUTER_AS + lab.k(h), to_router, extra))
    wait_until("the four BGP sessions Established",
               lambda: all(f"h{h} " in out and out.count("Established") == 4
                           for out in [birdc("bird-router", "show protocols")] for h in HOSTS), 60)


def start_bird(lab, where, name, conf):
    """BIRD in namespace `where` on `conf`, its files named `name`.* in the work directory."""
    path = os.path.join(lab.dir, name)
    with open(path + ".conf", "w") as f:
        f.write(conf)
    lab.spawn(where, name, ["bird", "-f", "-c", path + ".conf", "-s", path + ".ctl", "-P", path + ".pid"])


class Api:
    """vecflow's JSON-RPC API on its Unix socket, one connection per call."""

    def __init__(self, path):
        """The API on socket `path`."""
        self.path = path

    def _connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(30)
        s.connect(self.path)
        return s

    def cli(self, command):
        """Runs a CLI command; its JSON result. Raises with the daemon's error."""
        with self._connect() as s:
            req = {"jsonrpc": "2.0", "id": 1, "method": "cli", "params": {"command": command}}
            s.sendall(json.dumps(req).encode() + b"\n")
            buf = b""
            while not buf.endswith(b"\n"):
                chunk = s.recv(1 << 20)
                if not chunk:
                    raise RuntimeError(f"{command}: the daemon closed the connection")
                buf += chunk
        answer = json.loads(buf)
        if "error" in answer:
            raise RuntimeError(f"{command}: {answer['error'].get('message')}")
        return answer["result"]

    def vanish(self, how):
        """A client that goes away mid-request: `connect` (says nothing), `half` (half a
        request line), `unread` (a whole request, gone before the answer)."""
        with self._connect() as s:
            if how == "half":
                s.sendall(b'{"jsonrpc": "2.0", "id": 7, "method": "cli", "params": {"comm')
            elif how == "unread":
                req = {"jsonrpc": "2.0", "id": 8, "method": "cli", "params": {"command": "show ip fib"}}
                s.sendall(json.dumps(req).encode() + b"\n")
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")


def counters(api):
    """vecflow's interfaces: name → counters (with `rx_miss`)."""
    out = api.cli("show interface")
    return {i["interface"]["name"]: i["counters"] for i in out["json"]["interfaces"]}


def start_collectors(lab, vecflow, ports, goflow2, part):
    """`vecflow collect --summary --json` on ports[0] (for the whole run) and goflow2 (raw
    mode, every datagram as JSON) on ports[1], both in ns r on 127.0.0.1."""
    summary = open(os.path.join(lab.dir, "collect.json"), "w")
    collect = lab.spawn("r", "collect", [vecflow, "collect", "--summary", "--json", "--bind", "127.0.0.1",
                                         "--port", str(ports[0])], stdout=summary)
    return collect, start_goflow2(lab, goflow2, ports[1], part)


def start_goflow2(lab, goflow2, port, part):
    """goflow2 on `port`, its JSON in goflow2-`part`.json; waits until it listens."""
    out = open(os.path.join(lab.dir, f"goflow2-{part}.json"), "w")
    p = lab.spawn("r", f"goflow2-{part}", [goflow2, "-listen", f"sflow://127.0.0.1:{port}", "-produce", "raw",
                                           "-format", "json", "-addr", "127.0.0.1:0"], stdout=out)
    wait_until("goflow2 listening", lambda: f":{port:04X}" in lab.exec("r", "cat", "/proc/net/udp"), 10, 0.05)
    return p


def iperf3_server(lab, h, port):
    """An iperf3 server on host `h`'s loopback, port `port`; waits until it listens."""
    # Bound to the loopback, so that every answer leaves from it.
    lab.spawn(h, f"iperf3-server-{h}-{port}", ["iperf3", "-s", "-p", str(port), "-B", lab.loopback(h)])
    listening = lambda: f":{port:04X}" in lab.exec(h, "cat", "/proc/net/tcp")
    wait_until(f"iperf3 on {h}:{port}", listening, 10, 0.05)


def iperf3_client(lab, src, dst, port, secs, extra, name):
    """iperf3 from `src`'s loopback to `dst`'s, its JSON report in `name`.json."""
    out = open(os.path.join(lab.dir, f"{name}.json"), "w")
    return lab.spawn(src, name, ["iperf3", "-c", lab.loopback(dst), "-B", lab.loopback(src), "-p", str(port),
                                 "-t", str(secs), "-J", *extra], stdout=out)


def iperf3_result(lab, name):
    """The end of an iperf3 JSON report: the bytes received, or its error."""
    try:
        with open(os.path.join(lab.dir, f"{name}.json")) as f:
            j = json.load(f)
    except (OSError, ValueError):
        return {"error": "no report"}
    if "error" in j:
        return {"error": j["error"]}
    return {"bytes_received": j["end"]["sum_received"]["bytes"]}


def trafgen_conf(lab, src, dst):
    """A trafgen packet: 64-byte IPv4/UDP frames from `src`'s loopback (random source port)
    to `dst`'s, port 5201 (nothing listens: the host counts them as UDP NoPorts), through the
    router's port facing `src`."""
    mac = json.loads(lab.exec(src, "ip", "-j", "link", "show", "dev", lab.host_veth(src)))[0]["address"]
    hexes = lambda text, sep, base: ", ".join(str(int(x, base)) for x in text.split(sep))
    return f"""{{
  2, 254, 0, 0, 0, {lab.k(src)},
  {hexes(mac, ":", 16)},
  c16(0x0800),
  0x45, 0x00, c16(46), c16(0), c16(0), 64, 17, csumip(14, 33),
  {hexes(lab.loopback(src), ".", 10)},
  {hexes(lab.loopback(dst), ".", 10)},
  drnd(2), c16(5201), c16(26), c16(0),
  fill(0x00, 18)
}}
"""


def udp_received(lab, h):
    """UDP datagrams host `h` received (delivered or to no port), from its /proc/net/snmp."""
    rows = [line.split() for line in lab.exec(h, "cat", "/proc/net/snmp").splitlines() if line.startswith("Udp:")]
    udp = dict(zip(rows[0][1:], map(int, rows[1][1:])))
    return udp["InDatagrams"] + udp["NoPorts"] + udp["InErrors"]


def udp_flood(lab, src, dst, gap_us, name):
    """trafgen on `src` sending to `dst` (see `trafgen_conf`), one frame every `gap_us` µs or
    a little more (it sleeps between frames: steady, unlike its `-b` rate, which sends each
    second's frames in one burst), until `flood_sent` stops it."""
    conf = os.path.join(lab.dir, f"{name}.trafgen")
    with open(conf, "w") as f:
        f.write(trafgen_conf(lab, src, dst))
    return lab.spawn(src, name, ["trafgen", "--dev", lab.host_veth(src), "--conf", conf, "--cpus", "1",
                                 "--no-sock-mem", "-t", f"{gap_us}us", "-C"])


def flood_sent(flood):
    """Stops a `udp_flood` (SIGINT: it prints its count); the frames it sent."""
    flood.stop(signal.SIGINT)
    with open(flood.log) as f:
        counts = re.findall(r"(\d+) packets outgoing", f.read())
    if not counts:
        raise RuntimeError(f"{flood.name}: trafgen printed no count (see {flood.log})")
    return int(counts[-1])


def calibrate(lab, pairs, secs, gaps_us, tcp):
    """The shortest gap of `gaps_us` (longest first) at which every pair of `pairs` (source,
    destination) loses nothing over `secs` beside the TCP flows that `tcp(secs, tag)` starts,
    or None; each probe's gap, rate and loss."""
    best, probes = None, []
    for gap in gaps_us:
        before = {dst: udp_received(lab, dst) for _, dst in pairs}
        floods = [udp_flood(lab, src, dst, gap, f"probe-{gap}us-{src}{dst}") for src, dst in pairs]
        beside = tcp(secs, f"probe-{gap}us")
        time.sleep(secs)
        sent = [flood_sent(f) for f in floods]
        for c in beside:
            c.popen.wait(30)
        time.sleep(0.5)
        lost = sum(n - (udp_received(lab, dst) - before[dst]) for n, (_, dst) in zip(sent, pairs))
        probes.append({"gap_us": gap, "pps": round(sum(sent) / len(sent) / secs), "lost": lost})
        if lost > 0:
            break
        best = gap
    return best, probes
