-- What pipeline.sh creates on each ClickHouse shard for `vecflow collect --kafka`'s rows (one
-- JSON object per flow, discard or counter sample, one per Kafka message: ClickHouse 18.16's
-- Kafka engine loses the rest of a message of several rows when a block fills inside it).
-- pipeline.sh fills in:
--   @KAFKA@      the brokers, host:port,host:port...
--   @TOPIC@      this shard's topic (an agent's datagrams always go to the same topic, so all
--                of an agent's rows are on one shard)
--   @GROUP@      this shard's consumer group
--   @CONSUMERS@  consumers: one per partition of the topic
-- Rows go from the Kafka engine table `queue` through three materialized views into the
-- shard's `*_local` tables; `vecflow.flows`, `vecflow.discards` and `vecflow.counters` are
-- Distributed tables over every shard (cluster `vecflow`) and are what queries read.
--
-- A row is one sample: (sampler_address, sub_agent_id, sequence_num, sample_index) names it,
-- with time_received (set once by the decoder) against an agent that restarted its sequence.
-- Kafka's consumers deliver at least once, so after a fault a row can arrive twice: the
-- tables are ReplacingMergeTree on that key, which keeps one when parts merge (at once with
-- OPTIMIZE TABLE ... FINAL, or when a query reads ... FINAL).
CREATE DATABASE IF NOT EXISTS vecflow;

CREATE TABLE IF NOT EXISTS vecflow.queue (
    type String,
    time_received UInt64,
    sampler_address String,
    sub_agent_id UInt32,
    sequence_num UInt32,
    uptime_ms UInt32,
    sample_index UInt16,
    sample_seq UInt32,
    source_id_class UInt32,
    source_id_index UInt32,
    sampling_rate UInt32,
    sample_pool UInt32,
    drops UInt32,
    in_if UInt32,
    out_if UInt32,
    reason UInt32,
    reason_name String,
    packets UInt32,
    bytes UInt32,
    etype UInt16,
    vlan UInt32,
    src_mac String,
    dst_mac String,
    src_addr String,
    dst_addr String,
    proto UInt8,
    src_port UInt16,
    dst_port UInt16,
    tos UInt8,
    next_hop String,
    src_prefix_len UInt8,
    dst_prefix_len UInt8,
    mpls_in Array(UInt32),
    mpls_out Array(UInt32),
    if_index UInt32,
    if_type UInt32,
    if_speed UInt64,
    if_direction UInt32,
    if_status UInt32,
    in_octets UInt64,
    in_ucast_pkts UInt32,
    in_multicast_pkts UInt32,
    in_broadcast_pkts UInt32,
    in_discards UInt32,
    in_errors UInt32,
    in_unknown_protos UInt32,
    out_octets UInt64,
    out_ucast_pkts UInt32,
    out_multicast_pkts UInt32,
    out_broadcast_pkts UInt32,
    out_discards UInt32,
    out_errors UInt32,
    promiscuous_mode UInt32
) ENGINE = Kafka('@KAFKA@', '@TOPIC@', '@GROUP@', 'JSONEachRow', '', '', @CONSUMERS@);

CREATE TABLE IF NOT EXISTS vecflow.flows_local (
    date Date,
    time_received DateTime,
    sampler_address String,
    sub_agent_id UInt32,
    sequence_num UInt32,
    sample_index UInt16,
    sample_seq UInt32,
    sampling_rate UInt32,
    sample_pool UInt32,
    drops UInt32,
    in_if UInt32,
    out_if UInt32,
    packets UInt32,
    bytes UInt32,
    etype UInt16,
    vlan UInt32,
    src_mac String,
    dst_mac String,
    src_addr String,
    dst_addr String,
    proto UInt8,
    src_port UInt16,
    dst_port UInt16,
    tos UInt8,
    next_hop String,
    src_prefix_len UInt8,
    dst_prefix_len UInt8,
    mpls_in Array(UInt32),
    mpls_out Array(UInt32)
) ENGINE = ReplacingMergeTree() PARTITION BY date
    ORDER BY (sampler_address, sub_agent_id, sequence_num, sample_index, time_received);

CREATE TABLE IF NOT EXISTS vecflow.discards_local (
    date Date,
    time_received DateTime,
    sampler_address String,
    sub_agent_id UInt32,
    sequence_num UInt32,
    sample_index UInt16,
    sample_seq UInt32,
    drops UInt32,
    in_if UInt32,
    out_if UInt32,
    reason UInt32,
    reason_name String,
    packets UInt32,
    bytes UInt32,
    etype UInt16,
    vlan UInt32,
    src_addr String,
    dst_addr String,
    proto UInt8,
    src_port UInt16,
    dst_port UInt16
) ENGINE = ReplacingMergeTree() PARTITION BY date
    ORDER BY (sampler_address, sub_agent_id, sequence_num, sample_index, time_received);

CREATE TABLE IF NOT EXISTS vecflow.counters_local (
    date Date,
    time_received DateTime,
    sampler_address String,
    sub_agent_id UInt32,
    sequence_num UInt32,
    sample_index UInt16,
    sample_seq UInt32,
    uptime_ms UInt32,
    if_index UInt32,
    if_type UInt32,
    if_speed UInt64,
    if_status UInt32,
    in_octets UInt64,
    in_ucast_pkts UInt32,
    in_multicast_pkts UInt32,
    in_broadcast_pkts UInt32,
    in_discards UInt32,
    in_errors UInt32,
    out_octets UInt64,
    out_ucast_pkts UInt32,
    out_multicast_pkts UInt32,
    out_broadcast_pkts UInt32,
    out_discards UInt32,
    out_errors UInt32
) ENGINE = ReplacingMergeTree() PARTITION BY date
    ORDER BY (sampler_address, sub_agent_id, sequence_num, sample_index, time_received);

CREATE MATERIALIZED VIEW IF NOT EXISTS vecflow.flows_mv TO vecflow.flows_local AS
SELECT
    toDate(toDateTime(time_received)) AS date, toDateTime(time_received) AS time_received,
    sampler_address, sub_agent_id, sequence_num, sample_index, sample_seq,
    sampling_rate, sample_pool, drops, in_if, out_if, packets, bytes, etype, vlan,
    src_mac, dst_mac, src_addr, dst_addr, proto, src_port, dst_port, tos,
    next_hop, src_prefix_len, dst_prefix_len, mpls_in, mpls_out
FROM vecflow.queue WHERE type = 'flow';

CREATE MATERIALIZED VIEW IF NOT EXISTS vecflow.discards_mv TO vecflow.discards_local AS
SELECT
    toDate(toDateTime(time_received)) AS date, toDateTime(time_received) AS time_received,
    sampler_address, sub_agent_id, sequence_num, sample_index, sample_seq,
    drops, in_if, out_if, reason, reason_name, packets, bytes, etype, vlan,
    src_addr, dst_addr, proto, src_port, dst_port
FROM vecflow.queue WHERE type = 'discard';

CREATE MATERIALIZED VIEW IF NOT EXISTS vecflow.counters_mv TO vecflow.counters_local AS
SELECT
    toDate(toDateTime(time_received)) AS date, toDateTime(time_received) AS time_received,
    sampler_address, sub_agent_id, sequence_num, sample_index, sample_seq, uptime_ms,
    if_index, if_type, if_speed, if_status,
    in_octets, in_ucast_pkts, in_multicast_pkts, in_broadcast_pkts, in_discards, in_errors,
    out_octets, out_ucast_pkts, out_multicast_pkts, out_broadcast_pkts, out_discards, out_errors
FROM vecflow.queue WHERE type = 'counters';

-- What queries read: every shard's rows.
CREATE TABLE IF NOT EXISTS vecflow.flows AS vecflow.flows_local
    ENGINE = Distributed(vecflow, vecflow, flows_local);
CREATE TABLE IF NOT EXISTS vecflow.discards AS vecflow.discards_local
    ENGINE = Distributed(vecflow, vecflow, discards_local);
CREATE TABLE IF NOT EXISTS vecflow.counters AS vecflow.counters_local
    ENGINE = Distributed(vecflow, vecflow, counters_local);
