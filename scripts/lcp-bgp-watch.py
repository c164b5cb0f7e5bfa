#!/usr/bin/env python3
"""Watches a full table arrive in the kernel and in vecflow's FIB, for lcp-bgp-full-table.sh.

Run it in the linux-cp namespace (ip netns exec NS): a netlink socket of its own counts the
kernel's route notifications (RTM_NEWROUTE in the main table from BIRD or FRR, by protocol) as
they come, timestamped; one connection to vecflow's API asks `show lcp` every 50 ms for the
routes vecflow mirrors. It stops when both hold WANT routes more than they held when it
started, or after LIMIT seconds, and prints one JSON object: when the kernel got the first and
held them all, when vecflow held them all (seconds since the epoch), and vecflow's lag behind
the kernel: at each sample, the age of the oldest route the kernel had and vecflow did not (an
upper bound: a sample comes up to 50 ms after vecflow got there), and the most
notification bytes its socket held unread at a sample (the stamps are as late as those are).

    lcp-bgp-watch.py API-SOCKET WANT LIMIT
"""

import bisect
import errno
import json
import socket
import struct
import sys
import threading
import time

RTM_NEWROUTE, RT_TABLE_MAIN = 24, 254
RTMGRP_IPV4_ROUTE, RTMGRP_IPV6_ROUTE = 0x40, 0x400
ROUTING_DAEMONS = {12, 186}  # RTPROT_BIRD, RTPROT_BGP (FRR's zebra)
SO_RCVBUFFORCE = 33


class Kernel:
    """The kernel's side: routes notified so far, and when each count was reached."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
        self.sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 1 << 28)
        self.sock.bind((0, RTMGRP_IPV4_ROUTE | RTMGRP_IPV6_ROUTE))
        self.sock.settimeout(0.2)
        self.count, self.times, self.counts = 0, [], []
        self.overruns, self.stop = 0, False

    def run(self):
        buf = bytearray(1 << 16)
        view = memoryview(buf)
        while not self.stop:
            try:
                size = self.sock.recv_into(buf)
            except socket.timeout:
                continue
            except OSError as e:
                if e.errno == errno.ENOBUFS:
                    self.overruns += 1
                    continue
                raise
            now, at = time.time(), 0
            while at + 28 <= size:
                length, kind = struct.unpack_from("=IH", view, at)
                # rtmsg after the 16-byte header: family, dst_len, src_len, tos, table, protocol.
                if kind == RTM_NEWROUTE and buf[at + 20] == RT_TABLE_MAIN and buf[at + 21] in ROUTING_DAEMONS:
                    self.count += 1
                at += max(16, (length + 3) & ~3)
            self.times.append(now)
            self.counts.append(self.count)

    def unread(self):
        """Bytes the kernel queued on this socket that the thread has not read yet (the Rmem
        column of /proc/net/netlink): a thread that falls behind stamps notifications late,
        which would make vecflow's lag look shorter than it was."""
        port = self.sock.getsockname()[0]
        with open("/proc/net/netlink") as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                if int(fields[1]) == socket.NETLINK_ROUTE and int(fields[2]) == port:
                    return int(fields[4])
        return 0

    def when(self, n):
        """When the kernel first held `n` routes (None: not yet)."""
        k = bisect.bisect_left(self.counts, n)
        return self.times[k] if k < len(self.counts) else None


def mirrored(api, answers):
    api.sendall(b'{"jsonrpc": "2.0", "id": 1, "method": "cli", "params": {"command": "show lcp"}}\n')
    return sum(json.loads(answers.readline())["result"]["json"]["kernel_routes"]["mirrored"].values())


def main():
    path, want, limit = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    kernel = Kernel()
    watcher = threading.Thread(target=kernel.run, daemon=True)
    watcher.start()
    samples, unread, deadline = [], 0, time.monotonic() + limit
    try:
        api = socket.socket(socket.AF_UNIX)
        api.connect(path)
        answers = api.makefile("rb")
        base = mirrored(api, answers)
        while time.monotonic() < deadline:
            n = mirrored(api, answers) - base
            samples.append((time.time(), n))
            unread = max(unread, kernel.unread())
            if n >= want and kernel.count >= want:
                break
            time.sleep(0.05)
    finally:
        kernel.stop = True
        watcher.join()
    # The lag at a sample: the age of the oldest route the kernel had and vecflow had not (0
    # when vecflow held all the kernel had then).
    lags = []
    for t, n in samples:
        missing_since = kernel.when(n + 1)
        lags.append(t - missing_since if missing_since is not None and missing_since <= t else 0.0)
    vecflow_all = next((t for t, n in samples if n >= want), None)
    print(
        json.dumps(
            {
                "kernel_routes": kernel.count,
                "vecflow_routes": samples[-1][1] if samples else 0,
                "first_route": kernel.when(1),
                "kernel_all": kernel.when(want),
                "vecflow_all": vecflow_all,
                "samples": len(samples),
                "max_lag": max(lags, default=None),
                "monitor_overruns": kernel.overruns,
                "monitor_unread_bytes": unread,
            }
        )
    )


if __name__ == "__main__":
    main()
