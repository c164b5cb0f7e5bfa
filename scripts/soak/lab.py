"""The soak's network: namespaces, veths, addresses and the processes that run in them.

    ns a: 10.255.70.1 on lo ─ 10.70.1.2 ─veth─ xa (AF_XDP)   ┐
    ns b: 10.255.70.2 on lo ─ 10.70.2.2 ─veth─ pb (AF_PACKET) │ ns r: vecflow run, collectors
    ns c: 10.255.70.3 on lo ─ 10.70.3.2 ─veth─ xc (AF_XDP)    │       (127.0.0.1)
    ns d: 10.255.70.4 on lo ─ 10.70.4.2 ─veth─ pd (AF_PACKET) ┘
                                       ns l: the TAPs xa, pb, xc, pd and BIRD (AS 65000)

Every host runs BIRD (AS 65001 to 65004) and announces its loopback; vecflow forwards between
the loopbacks of the pairs a-b and c-d on the routes BIRD installs in ns l (linux-cp mirrors
them into the FIB). Everything is named after a random tag and removed by `Lab.close`.
"""

import json
import os
import random
import signal
import subprocess
import time

HOSTS = "abcd"
# The router's port facing each host: name, driver.
PORTS = {"a": ("xa", "af-xdp"), "b": ("pb", "af-packet"), "c": ("xc", "af-xdp"), "d": ("pd", "af-packet")}


def run(*args, check=True):
    """Runs a command; its stdout. Raises with its stderr when it fails and `check`."""
    out = subprocess.run(args, capture_output=True, text=True)
    if check and out.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {out.stderr.strip()}")
    return out.stdout


class Proc:
    """A process the soak started, its output in a log file, in a process group of its own:
    stopped with a signal to the group (trafgen's workers are child processes)."""

    def __init__(self, name, args, log, stdout=None):
        self.name, self.log = name, log
        err = open(log, "ab")
        self.popen = subprocess.Popen(args, stdout=stdout or err, stderr=err, stdin=subprocess.DEVNULL,
                                      start_new_session=True)

    def alive(self):
        """True while the process runs."""
        return self.popen.poll() is None

    def stop(self, sig=signal.SIGTERM, timeout=15):
        """Sends `sig`, waits up to `timeout` s (then kills); the exit status."""
        if self.alive():
            os.killpg(self.popen.pid, sig)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait()
        return self.popen.returncode


class Lab:
    """The namespaces and veths, and every process started in them (stopped by `close`)."""

    def __init__(self, workdir):
        self.tag = f"{random.randrange(1 << 16):04x}"
        self.dir = workdir
        self.ns = {h: f"vsk{h}{self.tag}" for h in HOSTS + "rl"}
        self.procs = []

    # --- names and addresses ---
    def host_veth(self, h):
        """Host `h`'s end of its link."""
        return f"vsk{h}0{self.tag}"

    def router_veth(self, h):
        """The router's end of host `h`'s link (vecflow's port)."""
        return f"vsk{h}1{self.tag}"

    @staticmethod
    def k(h):
        """Host `h`'s number, 1 to 4: its subnet, port index and AS."""
        return HOSTS.index(h) + 1

    def host_addr(self, h):
        """Host `h`'s address on its link."""
        return f"10.70.{self.k(h)}.2"

    def router_addr(self, h):
        """vecflow's address on host `h`'s link."""
        return f"10.70.{self.k(h)}.1"

    def loopback(self, h):
        """Host `h`'s loopback address, announced by BGP."""
        return f"10.255.70.{self.k(h)}"

    # --- building ---
    def build(self):
        """Makes the namespaces, veths, addresses and fallback routes."""
        for ns in self.ns.values():
            run("ip", "netns", "add", ns)
            run("ip", "-n", ns, "link", "set", "lo", "up")
        for h in HOSTS:
            hv, rv = self.host_veth(h), self.router_veth(h)
            q = ["numtxqueues", "2", "numrxqueues", "2"]
            run("ip", "link", "add", hv, *q, "netns", self.ns[h], "type", "veth", "peer", "name", rv, *q,
                "netns", self.ns["r"])
            for ns, dev in ((self.ns[h], hv), (self.ns["r"], rv)):
                self.sysctl(ns, f"net.ipv6.conf.{dev}.disable_ipv6", "1")
                run("ip", "-n", ns, "link", "set", dev, "up")
            # AF_XDP hands over no "checksum left undone" flag: a host facing it computes its own.
            # No TSO or GSO on the hosts: the kernel counts a 64 KB super-frame as one packet,
            # vecflow the frames on the wire, and the soak compares the two.
            off = ["tx", "off"] if PORTS[h][1] == "af-xdp" else []
            self.exec(h, "ethtool", "-K", hv, "tso", "off", "gso", "off", *off)
            run("ip", "-n", self.ns[h], "addr", "add", f"{self.host_addr(h)}/24", "dev", hv)
            run("ip", "-n", self.ns[h], "addr", "add", f"{self.loopback(h)}/32", "dev", "lo")
            # Below BGP's routes: while a session is down, traffic still goes to the router
            # (which drops it, counted) rather than failing in the host's sockets.
            run("ip", "-n", self.ns[h], "route", "add", "10.255.70.0/24", "via", self.router_addr(h), "metric", "1000")

    def sysctl(self, ns, key, value):
        """Sets sysctl `key` in namespace `ns`."""
        run("ip", "netns", "exec", ns, "sysctl", "-qw", f"{key}={value}")

    def exec(self, where, *args, check=True):
        """Runs a command in namespace `where` (a host letter, "r" or "l"); its stdout."""
        return run("ip", "netns", "exec", self.ns[where], *args, check=check)

    def spawn(self, where, name, args, stdout=None):
        """Starts a process in namespace `where`, its stderr (and stdout unless given) in
        `name`.log of the work directory."""
        p = Proc(name, ["ip", "netns", "exec", self.ns[where], *args], os.path.join(self.dir, f"{name}.log"), stdout)
        self.procs.append(p)
        return p

    def link_counters(self, where, dev):
        """The kernel's counters of `dev` in namespace `where` (`ip -s -j link`): rx and tx
        packets and drops."""
        j = json.loads(run("ip", "-n", self.ns[where], "-s", "-j", "link", "show", "dev", dev))[0]["stats64"]
        return {"rx_packets": j["rx"]["packets"], "rx_dropped": j["rx"]["dropped"],
                "tx_packets": j["tx"]["packets"], "tx_dropped": j["tx"]["dropped"]}

    def set_link(self, h, up):
        """Sets host `h`'s end of its link up or down."""
        run("ip", "-n", self.ns[h], "link", "set", self.host_veth(h), "up" if up else "down")

    def close(self):
        """Kills every process started and deletes the namespaces."""
        for p in reversed(self.procs):
            p.stop(signal.SIGKILL, 5)
        for ns in self.ns.values():
            run("ip", "netns", "del", ns, check=False)


def wait_until(what, cond, secs, step=0.25):
    """Polls `cond` until it returns something true (returned) or `secs` pass (raises)."""
    deadline = time.monotonic() + secs
    while True:
        got = cond()
        if got:
            return got
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {secs} s waiting for {what}")
        time.sleep(step)
