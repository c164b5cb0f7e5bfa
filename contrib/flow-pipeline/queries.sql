-- What an operator asks the flow pipeline first. Every count is scaled by the sampling rate
-- (each flow sample stands for `sampling_rate` packets). Each query starts with a "-- name:"
-- line; contrib/flow-pipeline/load.py --check-queries runs every one of them and checks its
-- answer against what the routers themselves counted. The flow queries work on both decoders'
-- tables; discards and counters come from `vecflow collect --kafka` only.

-- name: per_interface_per_minute
-- Estimated packets and bytes per router and input interface per minute.
SELECT
    sampler_address AS router,
    in_if,
    toStartOfMinute(time_received) AS minute,
    sum(packets * sampling_rate) AS packets,
    sum(bytes * sampling_rate) AS bytes,
    count() AS samples
FROM vecflow.flows
GROUP BY router, in_if, minute
ORDER BY router, in_if, minute;

-- name: top_talkers
-- The ten sources that sent the most bytes in the last hour, across every router.
SELECT
    src_addr,
    sum(bytes * sampling_rate) AS bytes,
    sum(packets * sampling_rate) AS packets
FROM vecflow.flows
WHERE time_received > now() - 3600
GROUP BY src_addr
ORDER BY bytes DESC
LIMIT 10;

-- name: per_vlan
-- Estimated traffic per VLAN (0: untagged) per router.
SELECT
    sampler_address AS router,
    vlan,
    sum(packets * sampling_rate) AS packets,
    sum(bytes * sampling_rate) AS bytes
FROM vecflow.flows
GROUP BY router, vlan
ORDER BY router, vlan;

-- name: per_destination_prefix
-- Estimated traffic per destination prefix, as each router's FIB matched it (the extended
-- router record's prefix length; IPv4).
SELECT
    concat(IPv4NumToString(bitAnd(IPv4StringToNum(dst_addr),
        bitNot(toUInt32(bitShiftLeft(toUInt64(1), 32 - dst_prefix_len) - 1)))), '/', toString(dst_prefix_len)) AS prefix,
    sum(packets * sampling_rate) AS packets,
    sum(bytes * sampling_rate) AS bytes
FROM vecflow.flows
WHERE dst_prefix_len > 0 AND position(dst_addr, ':') = 0
GROUP BY prefix
ORDER BY bytes DESC
LIMIT 20;

-- name: discards_by_reason
-- Discard samples per router and reason: what the routers dropped, and why.
SELECT
    sampler_address AS router,
    reason_name,
    count() AS samples,
    sum(drops) AS not_sampled
FROM vecflow.discards
GROUP BY router, reason_name
ORDER BY router, samples DESC;

-- name: interface_counters_per_minute
-- Each interface's counters over time: packets and octets in and out per minute, from the
-- counter samples (the last poll of the minute less the first; a 32-bit packet counter that
-- wraps inside a minute makes that minute's delta wrong: at 1 Mpps one wraps every 71 min),
-- and the totals at the minute's last poll.
SELECT
    sampler_address AS router,
    if_index,
    toStartOfMinute(time_received) AS minute,
    max(in_ucast_pkts) - min(in_ucast_pkts) AS in_packets,
    max(in_octets) - min(in_octets) AS in_octets,
    max(out_ucast_pkts) - min(out_ucast_pkts) AS out_packets,
    max(out_octets) - min(out_octets) AS out_octets,
    max(in_ucast_pkts) AS in_packets_total,
    max(out_ucast_pkts) AS out_packets_total
FROM vecflow.counters
GROUP BY router, if_index, minute
ORDER BY router, if_index, minute;
