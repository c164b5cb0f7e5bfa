#!/usr/bin/env bash
# Writes real rtnetlink datagrams, seeds for the `netlink` fuzz target, to DIR (one file per
# datagram): dumps of links, addresses, neighbors, next-hop objects and IPv4 and IPv6 routes
# (multipath with weights, next-hop objects and groups, blackhole and unreachable routes,
# several tables) from a namespace of its own, made and removed here. Needs root, ip(8) and
# python3; without root it writes nothing (DIR is still made) and says so.
set -euo pipefail
dir=${1:?usage: scripts/netlink-seeds.sh DIR}
mkdir -p "$dir"
if [ "$(id -u)" != 0 ]; then
    echo "netlink-seeds: needs root (a namespace of its own); no seeds written" >&2
    exit 0
fi
mkdir -p "$dir"
ns=vfseed$$
trap 'ip netns del "$ns" 2>/dev/null || true' EXIT
ip netns add "$ns"
ip -n "$ns" link set lo up
ip -n "$ns" link add d0 type veth peer name d1
ip -n "$ns" link set d0 up
ip -n "$ns" link set d1 up mtu 9000
ip -n "$ns" addr add 10.9.0.1/24 dev d0
ip -n "$ns" addr add 10.9.1.1/24 dev d1
ip -n "$ns" addr add fd00:9::1/64 dev d0
ip -n "$ns" neigh add 10.9.0.2 lladdr 02:00:00:00:09:02 dev d0 nud permanent
ip -n "$ns" neigh add fd00:9::2 lladdr 02:00:00:00:09:03 dev d0 nud reachable
ip -n "$ns" route add 48.0.0.0/8 via 10.9.0.2
ip -n "$ns" route add 49.0.0.0/16 nexthop via 10.9.0.2 weight 3 nexthop via 10.9.1.2 weight 1
ip -n "$ns" route append 48.0.0.0/8 via 10.9.1.2 metric 10
ip -n "$ns" route add blackhole 50.0.0.0/8
ip -n "$ns" route add unreachable 51.0.0.0/8
ip -n "$ns" route add 52.0.0.0/8 via 10.9.0.2 table 100
ip -n "$ns" route add 2001:db8::/32 via fd00:9::2
ip -n "$ns" addr add fd00:10::1/64 dev d1
ip -n "$ns" route add 2001:db9::/32 nexthop via fd00:9::2 dev d0 nexthop via fd00:10::2 dev d1
ip -n "$ns" nexthop add id 1 via 10.9.0.2 dev d0
ip -n "$ns" nexthop add id 2 via 10.9.1.2 dev d1
ip -n "$ns" nexthop add id 3 group 1,3/2
ip -n "$ns" route add 53.0.0.0/8 nhid 3
ip netns exec "$ns" python3 - "$dir" <<'PY'
import os, socket, struct, sys
out = sys.argv[1]
s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
s.bind((0, 0))
n = 0
# (message type, family, body): links, addresses, neighbors, next-hop objects, routes.
for seq, (kind, body) in enumerate([(18, struct.pack("Bxxxiii", 0, 0, 0, 0)),
                                    (22, struct.pack("BBBBi", 0, 0, 0, 0, 0)),
                                    (30, struct.pack("BxxxiHBB", 0, 0, 0, 0, 0)),
                                    (106, struct.pack("BBBBI", 0, 0, 0, 0, 0)),
                                    (26, struct.pack("BBBBBBBBI", socket.AF_INET, 0, 0, 0, 0, 0, 0, 0, 0)),
                                    (26, struct.pack("BBBBBBBBI", socket.AF_INET6, 0, 0, 0, 0, 0, 0, 0, 0))], 1):
    s.send(struct.pack("IHHII", 16 + len(body), kind, 0x301, seq, 0) + body)
    done = False
    while not done:
        d = s.recv(1 << 20)
        n += 1
        with open(os.path.join(out, f"dump-{kind}-{n}"), "wb") as f:
            f.write(d)
        at = 0
        while at + 16 <= len(d):
            length, t = struct.unpack_from("IH", d, at)
            if t in (2, 3) or length < 16:
                done = True
                break
            at += (length + 3) & ~3
print(f"netlink-seeds: {n} datagrams in {out}")
PY
