//! `vecflow collect --kafka`: each row (rows.rs) as one Kafka message, keyed by the agent's
//! address, produced with acknowledgements from every in-sync replica (librdkafka, through the
//! rdkafka crate), so that a broker lost loses no acknowledged message. A retry can write a
//! message twice; every row carries what makes it unique (agent, sub-agent, datagram sequence,
//! sample index), and the tables keep one of each.
//!
//! Not idempotent, though librdkafka can be: its idempotent producer (2.12.1) compares the
//! *messages* a partition has in flight with the limit of 5 *requests*
//! (rd_kafka_toppar_producer_serve), so it has one request in flight at a time, and while a
//! batch waits for it the broker thread polls with a zero timeout. With 3 replicated brokers
//! at 20 000 rows/s that spin took 65-80 % of a core per decoder, starved the decoders'
//! receive threads and the brokers, and lost 5 % of the datagrams; without idempotence the
//! decoders took 7-10 % and lost none. `--kafka-option enable.idempotence=true` turns it on.
//!
//! One row per message: ClickHouse 18.16's Kafka engine loses the rest of a message that holds
//! several rows when its block fills in the middle of it (seen: 17 of 500 000 rows). With
//! several topics (one per ClickHouse shard), an agent's messages always go to the same one;
//! within a topic, the key keeps an agent on one partition.

use anyhow::Context;
use rdkafka::ClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{BaseRecord, DeliveryResult, Producer, ProducerContext, ThreadedProducer};
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long the end of a run waits for the messages still in flight to be acknowledged.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(60);

/// Where and how to produce.
pub struct Options {
    /// Bootstrap brokers, `host:port[,host:port…]`.
    pub brokers: String,
    /// The topics; an agent's messages go to `topics[hash(agent) % len]`.
    pub topics: Vec<String>,
    /// librdkafka settings given on the command line (`KEY=VALUE`), applied last.
    pub settings: Vec<(String, String)>,
}

/// Counts of what was produced, kept by librdkafka's delivery callback.
#[derive(Default)]
pub struct Delivery {
    delivered: AtomicU64,
    failed: AtomicU64,
}

impl ClientContext for Delivery {}

impl ProducerContext for Delivery {
    type DeliveryOpaque = ();

    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        match result {
            Ok(_) => {
                self.delivered.fetch_add(1, Ordering::Relaxed);
            }
            Err((e, _)) => {
                // Each failure is a row lost: say so, but not once per row in a storm.
                let failed = self.failed.fetch_add(1, Ordering::Relaxed) + 1;
                if failed.is_power_of_two() {
                    eprintln!("vecflow collect: a row was not delivered ({failed} so far): {e}");
                }
            }
        }
    }
}

/// Where an agent's rows go: its key and its topic, worked out once per datagram.
pub struct Route {
    key: String,
    topic: usize,
}

/// A Kafka producer of datagrams' rows.
pub struct Sink {
    producer: ThreadedProducer<Delivery>,
    topics: Vec<String>,
    /// Messages (rows) handed to librdkafka.
    produced: u64,
    /// Rows the producer refused at once (never queued).
    refused: u64,
    /// Time spent waiting for room in librdkafka's queue (Kafka not keeping up).
    waited: Duration,
}

impl Sink {
    /// Connects (lazily: librdkafka connects in the background and retries).
    pub fn open(o: Options) -> anyhow::Result<Sink> {
        anyhow::ensure!(
            !o.topics.is_empty() && o.topics.iter().all(|t| !t.is_empty()),
            "--topic: a topic name is empty"
        );
        let mut config = ClientConfig::new();
        config
            .set("bootstrap.servers", &o.brokers)
            .set("client.id", format!("vecflow-collect-{}", std::process::id()))
            // Every in-sync replica has the message before it counts as sent. Not idempotent
            // (the module's comment says why): a retry may repeat a message, and the tables
            // drop the repeat; rows do not depend on their order.
            .set("acks", "all")
            .set("enable.idempotence", "false")
            .set("max.in.flight.requests.per.connection", "5")
            // Rows arrive one by one: wait to send them in batches, compressed (lz4 took an
            // eighth off the brokers' CPU at 20 000 rows/s); fewer, larger requests are what
            // replicated brokers keep up with.
            .set("linger.ms", "100")
            .set("compression.type", "lz4")
            // Room for a minute and more of rows while Kafka is slow or a leader moves: the
            // decoder only stops reading its socket (and loses) when this is full.
            .set("queue.buffering.max.messages", "2000000")
            .set("queue.buffering.max.kbytes", "2097152");
        for (k, v) in &o.settings {
            config.set(k, v);
        }
        let producer: ThreadedProducer<Delivery> =
            config.create_with_context(Delivery::default()).with_context(|| format!("--kafka {}", o.brokers))?;
        Ok(Sink { producer, topics: o.topics, produced: 0, refused: 0, waited: Duration::ZERO })
    }

    /// Where `agent`'s rows go.
    pub fn route(&self, agent: IpAddr) -> Route {
        Route { key: agent.to_string(), topic: topic_index(agent, self.topics.len()) }
    }

    /// Queues one row; waits while librdkafka's queue is full. A row the producer refuses
    /// (too large, say) is counted, and the rest goes on.
    pub fn send(&mut self, to: &Route, payload: &[u8]) {
        let mut record = BaseRecord::to(&self.topics[to.topic]).key(to.key.as_str()).payload(payload);
        loop {
            match self.producer.send(record) {
                Ok(()) => break,
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), r)) => {
                    record = r;
                    let start = Instant::now();
                    std::thread::sleep(Duration::from_millis(1));
                    self.waited += start.elapsed();
                }
                Err((e, _)) => {
                    self.refused += 1;
                    if self.refused.is_power_of_two() {
                        eprintln!("vecflow collect: a row was refused by the producer ({} so far): {e}", self.refused);
                    }
                    return;
                }
            }
        }
        self.produced += 1;
    }

    /// Waits until every message is acknowledged or failed (at most a minute), and says what
    /// happened on standard error.
    pub fn finish(self) -> anyhow::Result<()> {
        let start = Instant::now();
        let flushed = self.producer.flush(FLUSH_TIMEOUT);
        let d = self.producer.context();
        let (delivered, failed) = (d.delivered.load(Ordering::Relaxed), d.failed.load(Ordering::Relaxed));
        let pending = self.produced.saturating_sub(delivered + failed);
        eprintln!(
            "vecflow collect: kafka: {} rows produced ({:.1} s waiting for room in the queue), {} refused, {delivered} delivered, {failed} failed, {pending} not acknowledged after {:.1} s",
            self.produced,
            self.waited.as_secs_f64(),
            self.refused,
            start.elapsed().as_secs_f64()
        );
        flushed.context("waiting for Kafka to acknowledge what was produced")?;
        anyhow::ensure!(failed == 0 && self.refused == 0, "{} rows did not reach Kafka", failed + self.refused);
        Ok(())
    }
}

/// Which of `n` topics an agent's messages go to: FNV-1a of its address, so the choice is the
/// same in every decoder and every run.
fn topic_index(agent: IpAddr, n: usize) -> usize {
    let fnv = |octets: &[u8]| {
        octets.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
    };
    let hash = match agent {
        IpAddr::V4(a) => fnv(&a.octets()),
        IpAddr::V6(a) => fnv(&a.octets()),
    };
    (hash % n as u64) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agent_always_goes_to_the_same_topic_and_agents_spread() {
        let agents: Vec<IpAddr> = (1..=64).map(|i| IpAddr::from([127, 0, 0, i])).collect();
        let first: Vec<usize> = agents.iter().map(|&a| topic_index(a, 2)).collect();
        let again: Vec<usize> = agents.iter().map(|&a| topic_index(a, 2)).collect();
        assert_eq!(first, again);
        let ones = first.iter().filter(|&&t| t == 1).count();
        assert!((16..=48).contains(&ones), "{ones} of 64 agents on topic 1");
        assert!(agents.iter().all(|&a| topic_index(a, 1) == 0));
    }
}
