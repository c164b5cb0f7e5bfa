"""A host on an 802.1Q VLAN, in user space (the kernels here have no 802.1Q module).

Usage: vlan_host.py ROLE DEV VID MAC IP SECONDS [GATEWAY DESTINATION COUNT]

Both roles answer ARP requests for IP on VLAN VID and count every frame they send and
receive (outgoing copies excluded), by VLAN. ROLE `server` also echoes UDP datagrams to port
7 back to the frame's sender for SECONDS. ROLE `client` resolves GATEWAY by ARP, sends COUNT
UDP datagrams to DESTINATION (port 7) through it, 0.1 s apart, and collects the echoes until
SECONDS have passed. Prints one JSON object: sent, received (by VLAN, "none" for untagged),
the TTLs and VLANs of the UDP datagrams received, and the gateway's MAC.
"""
import json
import select
import socket
import struct
import sys
import time

SOL_PACKET, PACKET_AUXDATA, PACKET_OUTGOING, TP_STATUS_VLAN_VALID = 263, 8, 4, 0x10
ETH_P_ALL, TPID, IPV4, ARP = 0x0003, 0x8100, 0x0800, 0x0806

role, dev, vid, mac_text, ip_text, seconds = sys.argv[1:7]
vid, seconds = int(vid), float(seconds)
mac, ip = bytes.fromhex(mac_text.replace(":", "")), socket.inet_aton(ip_text)
sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
sock.bind((dev, 0))
sock.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
stats = {"sent": 0, "received": {}, "udp": [], "gateway_mac": None}


def checksum(data):
    total = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def send(dst_mac, ethertype, payload):
    frame = dst_mac + mac + struct.pack("!HHH", TPID, vid, ethertype) + payload
    sock.send(frame.ljust(64, b"\0"))
    stats["sent"] += 1


def arp(op, target_mac, target_ip, dst_mac):
    body = struct.pack("!HHBBH", 1, IPV4, 6, 4, op) + mac + ip + target_mac + target_ip
    send(dst_mac, ARP, body)


def udp(dst_mac, src_ip, dst_ip, sport, dport, payload):
    length = 8 + len(payload)
    header = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + length, 0, 0, 64, 17, 0, src_ip, dst_ip)
    header = header[:10] + struct.pack("!H", checksum(header)) + header[12:]
    send(dst_mac, IPV4, header + struct.pack("!HHHH", sport, dport, length, 0) + payload)


def receive(timeout):
    """The next frame received within `timeout` s: (vlan or None, src MAC, ethertype, payload)."""
    while True:
        ready, _, _ = select.select([sock], [], [], max(timeout, 0))
        if not ready:
            return None
        data, ancillary, _, address = sock.recvmsg(65536, socket.CMSG_SPACE(20))
        if address[2] == PACKET_OUTGOING:
            continue
        tag = None
        for level, kind, value in ancillary:
            if level == SOL_PACKET and kind == PACKET_AUXDATA:
                status, _, _, _, _, tci, _ = struct.unpack("=IIIHHHH", value[:20])
                if status & TP_STATUS_VLAN_VALID:
                    tag = tci & 0xFFF
        if tag is None and struct.unpack("!H", data[12:14])[0] == TPID:
            tag = struct.unpack("!H", data[14:16])[0] & 0xFFF
            data = data[:12] + data[16:]
        key = "none" if tag is None else str(tag)
        stats["received"][key] = stats["received"].get(key, 0) + 1
        return tag, data[6:12], struct.unpack("!H", data[12:14])[0], data[14:]


def handle(frame):
    """Answers ARP for our address; echoes (server) or records (both) UDP to us."""
    tag, src_mac, ethertype, payload = frame
    if tag != vid:
        return
    if ethertype == ARP and len(payload) >= 28:
        op, sender_mac, sender_ip, target_ip = struct.unpack("!H", payload[6:8])[0], payload[8:14], payload[14:18], payload[24:28]
        if op == 1 and target_ip == ip:
            arp(2, sender_mac, sender_ip, sender_mac)
        elif op == 2 and stats["gateway_mac"] is None and sys.argv[1] == "client" and sender_ip == socket.inet_aton(sys.argv[7]):
            stats["gateway_mac"] = sender_mac.hex(":")
    elif ethertype == IPV4 and len(payload) >= 28 and payload[9] == 17 and payload[16:20] == ip:
        ihl = (payload[0] & 15) * 4
        sport, dport = struct.unpack("!HH", payload[ihl:ihl + 4])
        length = struct.unpack("!H", payload[ihl + 4:ihl + 6])[0]
        stats["udp"].append({"ttl": payload[8], "vlan": tag, "from": socket.inet_ntoa(payload[12:16])})
        if role == "server" and dport == 7:
            udp(src_mac, ip, payload[12:16], dport, sport, payload[ihl + 8:ihl + length])


end = time.time() + seconds
if role == "client":
    gateway, destination, count = socket.inet_aton(sys.argv[7]), socket.inet_aton(sys.argv[8]), int(sys.argv[9])
    while stats["gateway_mac"] is None and time.time() < end:
        arp(1, b"\0" * 6, gateway, b"\xff" * 6)
        until = time.time() + 0.3
        while stats["gateway_mac"] is None and (frame := receive(until - time.time())):
            handle(frame)
    if stats["gateway_mac"] is not None:
        gateway_mac = bytes.fromhex(stats["gateway_mac"].replace(":", ""))
        for seq in range(count):
            udp(gateway_mac, ip, destination, 40000, 7, struct.pack("!I", seq) + b"vecflow vlan test")
            until = time.time() + 0.1
            while frame := receive(until - time.time()):
                handle(frame)
while frame := receive(end - time.time()):
    handle(frame)
print(json.dumps(stats))
