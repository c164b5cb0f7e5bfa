#!/usr/bin/env python3
"""Watches a full table arrive in the kernel and in vecflow's FIB, for lcp-bgp-full-table.sh.

Run it in the linux-cp namespace (ip netns exec NS): a netlink socket of its own counts the
kernel's route notifications (RTM_NEWROUTE in the main table from BIRD or FRR, by protocol) as
they come, timestamped; one connection to vecflow's API asks `show lcp` every 50 ms for the
routes vecflow mirrors. It stops when both hold WANT routes more than they held when it
started, or after LIMIT seconds, and prints one JSON object: when the kernel and vecflow first
held them all (seconds since the epoch), and vecflow's lag behind the kernel: at each sample,
how long before it the kernel had held as many routes as vecflow then held (an upper bound: a
sample comes up to 50 ms after vecflow got there).

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
        while not self.stop:
            try:
                data = self.sock.recv(1 << 20)
            except socket.timeout:
                continue
            except OSError as e:
                if e.errno == errno.ENOBUFS:
                    self.overruns += 1
                    continue
                raise
            now, at = time.time(), 0
            while at + 28 <= len(data):
                length, kind = struct.unpack_from("=IH", data, at)
                # rtmsg after the 16-byte header: family, dst_len, src_len, tos, table, protocol.
                if kind == RTM_NEWROUTE and data[at + 20] == RT_TABLE_MAIN and data[at + 21] in ROUTING_DAEMONS:
                    self.count += 1
                at += max(16, (length + 3) & ~3)
            self.times.append(now)
            self.counts.append(self.count)

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
    watcher = threading.Thread(target=kernel.run)
    watcher.start()
    api = socket.socket(socket.AF_UNIX)
    api.connect(path)
    answers = api.makefile("rb")
    base = mirrored(api, answers)
    samples, deadline = [], time.monotonic() + limit
    try:
        while time.monotonic() < deadline:
            n = mirrored(api, answers) - base
            samples.append((time.time(), n))
            if n >= want and kernel.count >= want:
                break
            time.sleep(0.05)
    finally:
        kernel.stop = True
        watcher.join()
    lags = []
    for t, n in samples:
        held = kernel.when(n) if n > 0 else None
        if held is not None:
            lags.append(max(0.0, t - held))
    vecflow_all = next((t for t, n in samples if n >= want), None)
    print(
        json.dumps(
            {
                "kernel_routes": kernel.count,
                "vecflow_routes": samples[-1][1] if samples else 0,
                "first_route": kernel.times[0] if kernel.times else None,
                "kernel_all": kernel.when(want),
                "vecflow_all": vecflow_all,
                "samples": len(samples),
                "max_lag": max(lags, default=None),
                "monitor_overruns": kernel.overruns,
            }
        )
    )


if __name__ == "__main__":
    main()
