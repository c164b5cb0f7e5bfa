-- What pipeline.sh creates in ClickHouse: goflow2's JSON messages from the Kafka topic
-- `flows` (one per flow sample), through a Kafka engine table and a materialized view, into
-- the MergeTree table vecflow.flows. @KAFKA@ is the broker's address.
CREATE DATABASE IF NOT EXISTS vecflow;

CREATE TABLE IF NOT EXISTS vecflow.flows_queue (
    time_received_ns UInt64,
    sampler_address String,
    sequence_num UInt32,
    sampling_rate UInt64,
    in_if UInt32,
    out_if UInt32,
    bytes UInt64,
    packets UInt64,
    etype String,
    src_vlan UInt32,
    vlan_id UInt32,
    src_addr String,
    dst_addr String,
    src_port UInt32,
    dst_port UInt32,
    proto String,
    next_hop String,
    src_net String,
    dst_net String
) ENGINE = Kafka('@KAFKA@', 'flows', 'clickhouse', 'JSONEachRow');

CREATE TABLE IF NOT EXISTS vecflow.flows (
    date Date,
    time_received DateTime,
    sampler_address String,
    sequence_num UInt32,
    sampling_rate UInt64,
    in_if UInt32,
    out_if UInt32,
    bytes UInt64,
    packets UInt64,
    etype String,
    vlan UInt32,
    src_addr String,
    dst_addr String,
    src_port UInt32,
    dst_port UInt32,
    proto String,
    next_hop String,
    src_prefix_len UInt8,
    dst_prefix_len UInt8
) ENGINE = MergeTree PARTITION BY date ORDER BY (sampler_address, time_received);

-- The datagram's sequence number (goflow2's sequence_num is the sFlow datagram's); the VLAN is
-- the frame's 802.1Q tag, else the input VLAN of the switch record; prefix lengths come from
-- the router record (src_net/dst_net are "prefix/length").
CREATE MATERIALIZED VIEW IF NOT EXISTS vecflow.flows_mv TO vecflow.flows AS
SELECT
    toDate(toDateTime(intDiv(time_received_ns, 1000000000))) AS date,
    toDateTime(intDiv(time_received_ns, 1000000000)) AS time_received,
    sampler_address,
    sequence_num,
    sampling_rate,
    in_if,
    out_if,
    bytes,
    packets,
    etype,
    if(vlan_id != 0, vlan_id, src_vlan) AS vlan,
    src_addr,
    dst_addr,
    src_port,
    dst_port,
    proto,
    next_hop,
    toUInt8OrZero(splitByChar('/', src_net)[2]) AS src_prefix_len,
    toUInt8OrZero(splitByChar('/', dst_net)[2]) AS dst_prefix_len
FROM vecflow.flows_queue;
