//! `vecflow bench --scenario sample-cost`: what one flow sample costs the worker, measured
//! directly: reserve a ring slot, copy 128 header bytes, complete the slot from the buffer's
//! metadata and publish it. A sampler at 1:1 chooses every one of 64 buffers holding a
//! 1500-byte frame forwarded from p0 to p1, then publishes them together, as after a vector;
//! the agent's side (draining the ring) runs between batches, outside the clock.

use anyhow::Context;
use dataplane::config::Config;
use dataplane::control::routes::build_forwarding;
use dataplane::datapath::WorkerCounters;
use dataplane::runtime::buffer::BufferPool;
use dataplane::runtime::qsbr::Qsbr;
use dataplane::runtime::tsc;
use dataplane::sflow::ring::Ring;
use dataplane::sflow::{DropBudget, RX, SflowWorker, WorkerBudget};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Samples per batch: chosen, then published together, as after one vector.
const BATCH: u32 = 64;

/// Samples per second and TSC cycles per sample, over `window`.
pub fn cost(window: Duration, hz: u64) -> anyhow::Result<(f64, f64)> {
    let config = Config::load("interfaces: {p0: {index: 1, l2xc: p1}, p1: {index: 2, l2xc: p0}}")?;
    let f = build_forwarding(&config, Arc::new(Qsbr::new(1))).context("sample-cost tables")?;
    let mut pool = BufferPool::new(BATCH)?;
    let mut buffers = vec![0u32; BATCH as usize];
    pool.alloc(&mut buffers);
    let frame: Vec<u8> = (0..1500u32).map(|b| b as u8).collect();
    for &i in &buffers {
        pool.write_frame(i, &frame);
        let m = pool.meta_mut(i);
        (m.rx_if, m.tx_if) = (1, 2); // received on p0, forwarded out of p1
    }
    let counters = Arc::new(WorkerCounters::new());
    let (producer, mut consumer) = Ring::new(4096).split();
    let budget = WorkerBudget::new(DropBudget::new(1), 0);
    let mut sf = SflowWorker::new(
        &[dataplane::sflow::DataSource { port: 1, rate: 1, stages: RX }],
        &[],
        budget,
        128,
        1,
        producer,
        vec![counters.clone()],
    );
    let (mut samples, mut ticks) = (0u64, 0u64);
    let start = Instant::now();
    while start.elapsed() < window {
        for _ in 0..1000 {
            let t0 = tsc::now();
            for &i in &buffers {
                sf.sample_one(&mut pool, i, 1, RX, &counters);
            }
            sf.publish(&pool, &f.tables.interfaces, &f.tables.l3);
            ticks += tsc::ticks(t0, tsc::now());
            samples += consumer.drain(usize::MAX, |_| true) as u64;
        }
    }
    if samples == 0 {
        anyhow::bail!("sample-cost: no sample taken");
    }
    let secs = ticks as f64 / hz as f64;
    Ok((samples as f64 / secs, ticks as f64 / samples as f64))
}
