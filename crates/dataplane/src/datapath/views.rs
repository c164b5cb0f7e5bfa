//! [`Features`], the snapshot and the worker's counters as each feature's nodes see them: the
//! traits the features declare (`interface::InterfaceWorker`, `l3::L3Worker`,
//! `flows::FlowsWorker`, …) implemented here, the one place that knows every feature. Each
//! accessor is inlined, so a node generic over its trait compiles to the field reads it made
//! when it named these types.

use super::{Features, Tables, WorkerCounters};
use crate::drivers::generator::GenCounters;
use crate::drivers::{DriversWorker, GeneratorCounting, WorkerPorts};
use crate::flows::classify::WorkerCache;
use crate::flows::{FlowCacheCounters, FlowCounting, FlowTables, Flows, FlowsWorker, MAX_FLOWS};
use crate::interface::{DropInfo, IfCounters, InterfaceCounters, InterfaceTable, InterfaceTables, InterfaceWorker};
use crate::l3::fib::Fibs;
use crate::l3::{L3, L3Tables, L3Worker};
use crate::lcp::LcpWorker;
use crate::lcp::worker::LinuxCpWorker;
use crate::neighbor::punt::{Punt, PuntCounters, PuntCounting, PuntWorker};
use crate::runtime::counter::Counter;
use crate::runtime::drops::DropReason;
use std::sync::Arc;

impl InterfaceTables for Tables {
    #[inline(always)]
    fn interfaces(&self) -> &InterfaceTable {
        &self.interfaces
    }
}

impl L3Tables for Tables {
    #[inline(always)]
    fn l3(&self) -> &L3 {
        &self.l3
    }
}

impl FlowTables for Tables {
    #[inline(always)]
    fn flows(&self) -> &Flows {
        &self.flows
    }
}

impl InterfaceCounters for WorkerCounters {
    #[inline(always)]
    fn interface(&self, index: u16) -> &IfCounters {
        WorkerCounters::interface(self, index)
    }

    #[inline(always)]
    fn error(&self, rx_if: u16, reason: DropReason) -> &Counter {
        WorkerCounters::error(self, rx_if, reason)
    }
}

impl PuntCounting for WorkerCounters {
    #[inline(always)]
    fn punt(&self) -> &PuntCounters {
        &self.punt
    }
}

impl FlowCounting for WorkerCounters {
    #[inline(always)]
    fn flow_cache(&self) -> &FlowCacheCounters {
        &self.flow_cache
    }

    #[inline(always)]
    fn flow_hits(&self, rule: u32) -> &Counter {
        &self.flow_hits[rule as usize % MAX_FLOWS]
    }
}

impl GeneratorCounting for WorkerCounters {
    #[inline(always)]
    fn generator(&self) -> &GenCounters {
        &self.generator
    }
}

impl InterfaceWorker for Features {
    type Snapshot = Tables;

    const DROPS: &'static [DropInfo] = &super::registry::DROPS;

    #[inline(always)]
    fn snapshot(&self) -> &Arc<Tables> {
        &self.tables
    }
}

impl PuntWorker for Features {
    #[inline(always)]
    fn punt(&mut self) -> &mut Punt {
        &mut self.punt
    }
}

impl L3Worker for Features {
    #[inline(always)]
    fn fibs(&self) -> &Fibs {
        &self.fib
    }
}

impl FlowsWorker for Features {
    #[inline(always)]
    fn flow_cache(&mut self) -> &mut WorkerCache {
        &mut self.flow_cache
    }
}

impl LinuxCpWorker for Features {
    #[inline(always)]
    fn linux_cp(&mut self) -> Option<&mut LcpWorker> {
        self.lcp.as_mut()
    }
}

impl DriversWorker for Features {
    #[inline(always)]
    fn ports(&mut self) -> &mut WorkerPorts {
        &mut self.drivers
    }
}
