-- What an operator asks the flow pipeline first. Every count is scaled by the sampling rate
-- (each flow sample stands for `sampling_rate` packets). Each query starts with a
-- "-- name:" line; contrib/flow-pipeline/test-pipeline.sh runs every one of them.

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
