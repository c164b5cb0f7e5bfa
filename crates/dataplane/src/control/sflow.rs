//! The sFlow agent of a running dataplane: the settings its samplers and agent follow, made
//! from the configuration; the rings and budgets a start hands to each worker's sampler; the
//! agent thread.

use super::engine::{Dataplane, StartError};
use crate::config::Config;
use crate::datapath::WorkerCounters;
use crate::interface::Interface;
use crate::l3::vrf::PublishedVrfs;
use crate::runtime::qsbr::Qsbr;
use crate::sflow::agent::{self, AgentSetup, AgentShared, SourceRoutes};
use crate::sflow::ring::{Consumer, Producer, Ring};
use crate::sflow::{DataSource, DropBudget, LiveSettings, PortCounters, Refill, Settings, SflowWorker, WorkerBudget};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::thread::JoinHandle;

/// The running sFlow agent.
pub(super) struct SflowRuntime {
    /// The ports sampled now.
    pub(super) sources: Vec<DataSource>,
    /// Where changed settings go to the samplers and the agent.
    pub(super) live: Arc<LiveSettings>,
    /// The agent's counters and what it sent, by port.
    pub(super) shared: Arc<AgentShared>,
    /// Tells the agent thread to send what is left and stop.
    pub(super) stop: Arc<AtomicBool>,
    /// The agent thread, until it is joined.
    pub(super) thread: Option<JoinHandle<std::io::Result<()>>>,
    /// The agent address datagrams carry.
    pub(super) agent: IpAddr,
    /// Where the VRFs' tables go to the agent (for the source prefix length of a sample).
    pub(super) vrfs: Arc<PublishedVrfs>,
}

/// The sFlow settings samplers and the agent follow, from a validated configuration (empty
/// when sFlow is off).
pub(super) fn sflow_settings(config: &Config, interfaces: &[Interface]) -> Settings {
    let Some(sf) = &config.sflow else { return Settings::default() };
    let of = |i: &Interface| config.interfaces.get(&i.name).and_then(|c| c.sflow);
    let sources = interfaces
        .iter()
        .filter_map(|i| {
            let c = of(i).filter(|s| s.enable)?;
            let dir = c.direction.unwrap_or(sf.direction);
            let stages = if dir.rx() { crate::sflow::RX } else { 0 } | if dir.tx() { crate::sflow::TX } else { 0 };
            Some(DataSource { port: i.index, rate: c.sampling_rate.unwrap_or(sf.sampling_rate), stages })
        })
        .collect();
    let monitored = interfaces.iter().filter(|i| of(i).is_some_and(|s| s.drop_monitoring)).map(|i| i.index).collect();
    Settings { sources, monitored, header_bytes: sf.header_bytes, polling_interval: sf.polling_interval }
}

/// What a starting dataplane's samplers and agent share, made before the first worker: the
/// settings, one ring per worker, the discard samples' budget and every worker's counters.
pub(super) struct SflowStart {
    settings: Settings,
    live: Arc<LiveSettings>,
    /// Each worker's end of its ring, popped in worker order.
    producers: Vec<Producer>,
    /// The agent's ends of the rings, in worker order.
    consumers: Vec<Consumer>,
    drop_budget: Arc<DropBudget>,
    /// Every worker's counters: each sampler sums a sample's pool over all of them.
    counters: Vec<Arc<WorkerCounters>>,
}

impl SflowStart {
    /// The shared parts for `config`'s workers over `interfaces`, with `counters` (one per
    /// worker).
    pub(super) fn new(config: &Config, interfaces: &[Interface], counters: Vec<Arc<WorkerCounters>>) -> Self {
        let settings = sflow_settings(config, interfaces);
        let (mut producers, consumers): (Vec<_>, Vec<_>) = match &config.sflow {
            Some(sf) => (0..config.workers.count).map(|_| Ring::new(sf.ring_depth).split()).unzip(),
            None => (Vec::new(), Vec::new()),
        };
        producers.reverse();
        SflowStart {
            live: Arc::new(LiveSettings::new(settings.clone())),
            settings,
            producers,
            consumers,
            drop_budget: DropBudget::new(usize::from(config.workers.count)),
            counters,
        }
    }

    /// Worker `id`'s sampler (the workers are asked in order), or `None` when sFlow is off.
    pub(super) fn sampler(&mut self, config: &Config, id: u16) -> Option<SflowWorker<WorkerCounters>> {
        let sf = config.sflow.as_ref()?;
        let seed = crate::sflow::worker_seed(sf.seed, id);
        tracing::debug!(worker = id, seed, configured = sf.seed.is_some(), "sFlow sampler seed");
        let sampler = SflowWorker::new(
            &self.settings.sources,
            &self.settings.monitored,
            WorkerBudget::new(self.drop_budget.clone(), usize::from(id)),
            sf.header_bytes,
            seed,
            self.producers.pop().expect("one ring per worker"),
            self.counters.clone(),
        );
        Some(sampler.following(self.live.clone()))
    }
}

impl Dataplane {
    /// Starts the sFlow agent, when the configuration has sFlow, on the rings of `start`; it
    /// reads the FIB as reader `workers.count` of `qsbr`.
    pub(super) fn start_agent(&mut self, start: SflowStart, qsbr: &Arc<Qsbr>) -> Result<(), StartError> {
        let config = &self.config;
        let Some(sf) = &config.sflow else { return Ok(()) };
        let agent = sf.agent_address.or(config.first_address()).expect("validated: an agent address");
        let (shared, stop) = (Arc::new(AgentShared::new()), Arc::new(AtomicBool::new(false)));
        let ports: Vec<u16> = start.settings.sources.iter().map(|s| s.port).collect();
        let workers: Vec<Arc<dyn PortCounters>> =
            start.counters.into_iter().map(|c| c as Arc<dyn PortCounters>).collect();
        let if_indices = self.sflow_if_indices();
        let polling = crate::sflow::Polling::new(
            sf.polling_interval,
            &ports,
            &self.interfaces,
            workers.clone(),
            self.ports.links.clone(),
            0x9011_5eed,
        );
        let vrfs = Arc::new(PublishedVrfs::new(self.tables.l3.vrfs.clone()));
        let setup = AgentSetup {
            rings: start.consumers,
            workers,
            routes: SourceRoutes::new(self.routing.fib.fibs(), vrfs.clone()),
            qsbr: qsbr.register(usize::from(config.workers.count)),
            agent,
            sub_agent_id: sf.sub_agent_id,
            max_datagram: usize::from(sf.max_datagram_size),
            collectors: sf.collectors.iter().map(|c| SocketAddr::new(c.address, c.port)).collect(),
            polling: polling.reporting(if_indices.clone()),
            if_indices,
            shared: shared.clone(),
            stop: stop.clone(),
            drop_budget: start.drop_budget,
            refill: Refill::new(sf.drop_limit, usize::from(config.workers.count)),
            live: start.live.clone(),
            avoid_cpus: config.workers.cores.clone(),
            nice: sf.agent_nice,
        };
        let thread = Some(agent::spawn(setup)?);
        let sources = start.settings.sources;
        self.sflow = Some(SflowRuntime { sources, live: start.live, shared, stop, thread, agent, vrfs });
        Ok(())
    }
}
