#!/usr/bin/env python3
"""Replaces kernel routes at a steady rate, as a busy BGP daemon would.

Each round changes the gateway of every prefix in a list, alternating between two gateways
(the first round sets the second: the routes are expected through the first),
through a netlink socket of its own: RTM_NEWROUTE with NLM_F_CREATE | NLM_F_REPLACE, sent in
one message every 10 ms (no acknowledgements asked; the errors the kernel sends back are read
and counted). Run it in the namespace whose table it changes:

    ip netns exec NS scripts/route-churn.py --routes FILE --dev DEV \\
        --via 10.77.0.2 --via 10.77.0.3 --rate 100000 --seconds 60

FILE holds one route a line with its prefix in the third field (`route add PREFIX via ...`, as
`vecflow generate routes` prints); the routes must be in the main table with protocol bgp.
It prints one line: what it sent, the rate it kept, the errors, and the gateway every prefix
of the list has at the end. It exits with 1 when the kernel refused a replace, or when it kept
less than 90 % of the rate (the kernel, or this machine, too slow for it).
"""

import argparse
import errno
import ipaddress
import socket
import struct
import sys
import time

RTM_NEWROUTE, NLMSG_ERROR = 24, 2
NLM_F_REQUEST, NLM_F_REPLACE, NLM_F_CREATE = 0x1, 0x100, 0x400
RTA_DST, RTA_OIF, RTA_GATEWAY = 1, 4, 5
RT_TABLE_MAIN, RTPROT_BGP, RTN_UNICAST = 254, 186, 1
# Messages in one send: the kernel takes at most about 416 KiB in one (its default wmem).
SEND_MAX = 4096


def attribute(kind, value):
    """One route attribute (its length is a multiple of 4 for every one used here)."""
    return struct.pack("=HH", 4 + len(value), kind) + value


def replace(prefix, gateway, oif):
    """The RTM_NEWROUTE message that points `prefix` at `gateway` out of `oif`."""
    family = socket.AF_INET if prefix.version == 4 else socket.AF_INET6
    body = struct.pack("=BBBBBBBBI", family, prefix.prefixlen, 0, 0, RT_TABLE_MAIN, RTPROT_BGP, 0, RTN_UNICAST, 0)
    body += attribute(RTA_DST, prefix.network_address.packed)
    body += attribute(RTA_GATEWAY, gateway.packed) + attribute(RTA_OIF, struct.pack("=i", oif))
    return struct.pack("=IHHII", 16 + len(body), RTM_NEWROUTE, NLM_F_REQUEST | NLM_F_REPLACE | NLM_F_CREATE, 0, 0) + body


def gateway_of(round_):
    """The gateway (0 or 1) round `round_` points every prefix at; round -1 is the routes
    as they were, through the first."""
    return (round_ + 1) % 2


def refusals(sock):
    """Reads what the kernel sent back without waiting: the errors (negative errno) in it; a
    lost answer (ENOBUFS: this socket's buffer overran) counts as one."""
    errors = []
    while True:
        try:
            data = sock.recv(1 << 20, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return errors
        except OSError as e:
            if e.errno != errno.ENOBUFS:
                raise
            errors.append(-e.errno)
            continue
        at = 0
        while at + 20 <= len(data):
            length, kind = struct.unpack_from("=IH", data, at)
            if kind == NLMSG_ERROR:
                (code,) = struct.unpack_from("=i", data, at + 16)
                if code:
                    errors.append(code)
            at += max(16, (length + 3) & ~3)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--routes", required=True, help="file of routes, the prefix in the third field")
    ap.add_argument("--dev", required=True, help="the interface the gateways are on")
    ap.add_argument("--via", action="append", required=True, help="a gateway (give two)")
    ap.add_argument("--rate", type=int, default=100_000, help="replaces per second (default 100000)")
    ap.add_argument("--seconds", type=float, default=60, help="how long (default 60)")
    ap.add_argument("--count", type=int, default=100_000, help="prefixes taken from the file (default 100000)")
    args = ap.parse_args()
    if len(args.via) != 2:
        sys.exit("route-churn.py: --via: give exactly two gateways")
    if not 100 <= args.rate <= 1_000_000:
        sys.exit("route-churn.py: --rate: from 100 to 1000000 replaces per second")
    gateways = [ipaddress.ip_address(v) for v in args.via]
    with open(args.routes) as f:
        prefixes = [ipaddress.ip_network(line.split()[2]) for _, line in zip(range(args.count), f)]
    if not prefixes or any(p.version != gateways[0].version for p in prefixes) or gateways[1].version != gateways[0].version:
        sys.exit("route-churn.py: the prefixes and both gateways must be of one family, and there must be prefixes")
    oif = socket.if_nametoindex(args.dev)
    messages = [[replace(p, g, oif) for p in prefixes] for g in gateways]

    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 22)
    per_tick, n = max(1, args.rate // 100), len(prefixes)
    sent, errors, start = 0, [], time.monotonic()
    while time.monotonic() - start < args.seconds:
        # The messages from `sent` on: prefix sent % n, in round sent // n; the kernel handles
        # every message of a send before it returns.
        at = sent
        while at < sent + per_tick:
            i, round_ = at % n, at // n
            take = min(n - i, sent + per_tick - at, SEND_MAX)
            sock.send(b"".join(messages[gateway_of(round_)][i : i + take]))
            at += take
        sent = at
        errors += refusals(sock)
        ahead = start + sent / args.rate - time.monotonic()
        if ahead > 0:
            time.sleep(ahead)
    took = time.monotonic() - start
    errors += refusals(sock)
    # The last message to each prefix: its gateway.
    last_round = (sent - 1) // n
    ends = {str(g): 0 for g in gateways}
    for i in range(n):
        round_ = last_round if i <= (sent - 1) % n else last_round - 1
        ends[str(gateways[gateway_of(round_)])] += 1
    rate = sent / took
    print(
        f"{sent} replaces in {took:.1f} s ({rate:.0f}/s) over {n} prefixes, {len(errors)} refused"
        + (f" (first: errno {-errors[0]})" if errors else "")
        + "; at the end: "
        + ", ".join(f"{k} prefixes via {g}" for g, k in ends.items())
    )
    sys.exit(1 if errors or rate < 0.9 * args.rate else 0)


if __name__ == "__main__":
    main()
