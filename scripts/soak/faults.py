"""What happens to vecflow during the soak, each on its own schedule in its own thread; every
event and failure is recorded for the report."""

import collections
import os
import subprocess
import threading
import time

import parts


class Recorder:
    """Events and failures, shared by the fault threads."""

    def __init__(self, t0):
        self.t0, self.lock = t0, threading.Lock()
        self.counts, self.failures, self.timeline = {}, [], []

    def now(self):
        """Seconds since the soak started."""
        return round(time.monotonic() - self.t0, 2)

    def count(self, what, n=1):
        """Counts `n` events `what`."""
        with self.lock:
            self.counts[what] = self.counts.get(what, 0) + n

    def fail(self, what):
        """Records a failure."""
        with self.lock:
            self.failures.append(f"t={self.now()} s: {what}")

    def mark(self, what):
        """Records a one-time event on the timeline."""
        with self.lock:
            self.timeline.append((self.now(), what))


class Every(threading.Thread):
    """Calls `fn` every `period` s until `stop` is set; an exception is a recorded failure."""

    def __init__(self, rec, stop, period, name, fn):
        super().__init__(name=name, daemon=True)
        self.rec, self.stop, self.period, self.fn = rec, stop, period, fn

    def run(self):
        k = 0
        while not self.stop.wait(self.period):
            try:
                self.fn(k)
            except Exception as e:  # noqa: BLE001 — every failure goes to the report
                self.rec.fail(f"{self.name}: {e}")
            k += 1


class Soak:
    """The soak's moving parts: the running configuration (changed by `apply` each second,
    as an operator's automation would), the BGP flapper, API clients, resource samples."""

    def __init__(self, lab, api, vecflow, birdc, sflow_ports, rec, stop):
        self.lab, self.api, self.vecflow, self.birdc = lab, api, vecflow, birdc
        self.sflow_ports, self.rec, self.stop = sflow_ports, rec, stop
        self.mtu, self.routes = {}, []
        self.cfg_lock = threading.Lock()
        self.resources = []
        self.flap_ms = {"withdraw": [], "announce": []}

    def yaml(self):
        """The configuration as it stands (MTUs set, routes applied)."""
        return parts.vecflow_yaml(self.lab, self.sflow_ports, self.mtu, self.routes)

    def apply(self, k):
        """A static route added, another removed (ten prefixes in turn), by `vecflow apply`;
        the FIB must have the new route when apply returns."""
        with self.cfg_lock:
            via = self.lab.host_addr("b" if k % 2 else "d")
            self.routes = [(f"10.72.{k % 10}.0/24", via), (f"10.73.{(k + 5) % 10}.0/24", via)]
            path = os.path.join(self.lab.dir, "applied.yaml")
            with open(path, "w") as f:
                f.write(self.yaml())
            out = subprocess.run([self.vecflow, "apply", "-c", path, "--socket", self.api.path],
                                 capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(f"vecflow apply: {out.stderr.strip() or out.stdout.strip()}")
        fib = self.api.cli(f"show ip fib 10.72.{k % 10}.0/24")["text"]
        if via not in fib:
            raise RuntimeError(f"apply: 10.72.{k % 10}.0/24 via {via} not in the FIB:\n{fib}")
        self.rec.count("apply")

    def flap(self, k):
        """Host b's BIRD withdraws (even turns) or announces again the flapping prefix; the time
        until vecflow's FIB follows (from linux-cp's netlink mirror of BIRD's kernel route)."""
        withdraw = k % 2 == 0
        self.birdc("bird-b", f"{'disable' if withdraw else 'enable'} flap")
        t = time.monotonic()
        while time.monotonic() - t < 4:
            present = parts.FLAP_PREFIX in self.api.cli(f"show ip fib {parts.FLAP_PREFIX}")["text"]
            if present != withdraw:
                self.flap_ms["withdraw" if withdraw else "announce"].append(round((time.monotonic() - t) * 1000))
                self.rec.count("bgp_flap")
                return
            time.sleep(0.02)
        raise RuntimeError(f"{parts.FLAP_PREFIX} {'withdrawn' if withdraw else 'announced'}: "
                           "vecflow's FIB did not follow within 4 s")

    def clients(self, k):
        """API clients: one that reads, three that vanish (connect only, half a request, no
        read); what the last `trace add` caught, then `clear runtime` and `clear trace`; every
        fifth time a new `trace add`."""
        for how in ("connect", "half", "unread"):
            self.api.vanish(how)
        self.rec.count("api_vanished", 3)
        if "interfaces" not in self.api.cli("show interface")["json"]:
            raise RuntimeError("show interface: no interfaces in the answer")
        self.rec.count("traced_packets", len(self.api.cli("show trace")["json"]["packets"]))
        self.api.cli("clear runtime")
        self.api.cli("clear trace")
        self.rec.count("clear", 2)
        if k % 5 == 0:
            self.api.cli(f"trace add {'af-xdp-input' if k % 10 == 0 else 'af-packet-input'} 20")
            self.rec.count("trace")
        self.rec.count("api_calls", 5)

    def set_mtu(self, port, mtu):
        """`set interface mtu`, kept in the configuration that `apply` writes next."""
        with self.cfg_lock:
            self.api.cli(f"set interface mtu {port} {mtu}")
            self.mtu[port] = mtu
        self.rec.mark(f"set interface mtu {port} {mtu}")

    def sample(self, pid):
        """vecflow's resident memory, open descriptors and threads, with the threads' names; the
        threads serving API clients (one per open connection, the soak's own among them) are
        counted apart. A client thread is named by itself once it runs: until then it has the
        name of the API thread that made it, so every `vecflow-api` but that one is a client's."""
        with open(f"/proc/{pid}/status") as f:
            status = dict(line.split(":", 1) for line in f if ":" in line)
        names = []
        for t in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{t}/comm") as f:
                    names.append(f.read().strip())
            except OSError:
                pass  # a thread that ended meanwhile
        clients = names.count("vecflow-api-cli") + max(0, names.count("vecflow-api") - 1)
        self.resources.append({"t": self.rec.now(), "rss_kib": int(status["VmRSS"].split()[0]),
                               "fds": len(os.listdir(f"/proc/{pid}/fd")), "threads": len(names) - clients,
                               "api_client_threads": clients,
                               "thread_names": dict(collections.Counter(names))})

    def threads(self, pid):
        """The periodic faults and the resource sampler, started."""
        ts = [Every(self.rec, self.stop, 1, "apply", self.apply),
              Every(self.rec, self.stop, 5, "bgp-flap", self.flap),
              Every(self.rec, self.stop, 2, "api-clients", self.clients),
              Every(self.rec, self.stop, 10, "resources", lambda _k: self.sample(pid))]
        for t in ts:
            t.start()
        return ts

