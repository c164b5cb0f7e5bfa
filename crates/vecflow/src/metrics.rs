//! The Prometheus endpoint of `vecflow run`: `GET /metrics` on `metrics.address` (default
//! 127.0.0.1:9482), in the OpenMetrics text format that Prometheus scrapes.
//!
//! A small HTTP/1.1 server on one thread (a scrape every few seconds needs no more). Each
//! scrape asks the main thread, which owns the dataplane, for the metrics ([`encode`]) the
//! same way an API command does. Every series is prefixed `vecflow_`; counters end in
//! `_total` and are the daemon's running totals (`clear` commands do not reset them).

use anyhow::Context;
use api::server::{Call, Request, ask, wake_acceptor};
use dataplane::Dataplane;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::mpsc::SyncSender;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// How long a scraper may take to send its request, and we to answer.
const HTTP_TIMEOUT: Duration = Duration::from_secs(5);
/// The content type of the OpenMetrics text format.
const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Labels of a per-interface series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct InterfaceLabel {
    interface: String,
}

/// Labels of a per-node series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NodeLabels {
    worker: u16,
    node: &'static str,
}

/// Labels of a drop counter.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DropLabels {
    node: &'static str,
    reason: &'static str,
    interface: String,
}

/// The labels of a route count: the VRF (`default` for the default table) and the family.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct VrfLabels {
    vrf: String,
    family: &'static str,
}

/// The routes in each table's FIBs, by VRF and family.
fn fib_routes(r: &mut Registry, dp: &Dataplane) {
    let routes = Family::<VrfLabels, Gauge>::default();
    for v in dp.vrf_summaries() {
        for (family, n) in [("ipv4", v.ipv4_routes), ("ipv6", v.ipv6_routes)] {
            routes.get_or_create(&VrfLabels { vrf: v.name.clone(), family }).set(n as i64);
        }
    }
    r.register("fib_routes", "Routes in the FIB of each VRF (default: the default table), by family", routes);
}

/// The label of a kernel route count: its kind.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabel {
    kind: &'static str,
}

/// The label of an unmirrored kernel route count: why it is not mirrored.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabel {
    reason: &'static str,
}

/// Labels of the build information series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct VersionLabel {
    version: &'static str,
}

/// Registers a counter family `name` with `help` and fills it from `rows`.
fn counters<L>(registry: &mut Registry, name: &str, help: &str, rows: impl IntoIterator<Item = (L, u64)>)
where
    L: Clone + std::fmt::Debug + std::hash::Hash + Eq + EncodeLabelSet + Send + Sync + 'static,
{
    let family = Family::<L, Counter>::default();
    for (labels, value) in rows {
        family.get_or_create(&labels).inc_by(value);
    }
    registry.register(name, help, family);
}

/// The dataplane's metrics in the OpenMetrics text format.
pub fn encode(dp: &Dataplane) -> String {
    let mut r = Registry::with_prefix("vecflow");
    let info = Family::<VersionLabel, Gauge>::default();
    info.get_or_create(&VersionLabel { version: env!("CARGO_PKG_VERSION") }).set(1);
    r.register("build_info", "vecflow's version (always 1)", info);
    let uptime = Gauge::<f64, std::sync::atomic::AtomicU64>::default();
    uptime.set(dp.uptime());
    r.register("uptime_seconds", "Seconds since the dataplane started", uptime);

    // Interface counters: every field of `show interface`, one family each.
    let stats: Vec<(String, serde_json::Value)> = dp
        .interfaces()
        .iter()
        .map(|i| {
            let mut v = serde_json::to_value(dp.interface_stats(i.index)).expect("plain counters");
            if i.parent.is_none() {
                v["rx_miss"] = dp.link(i.index).rx_miss.get().into();
            }
            (i.name.clone(), v)
        })
        .collect();
    let fields: Vec<String> =
        stats.first().and_then(|(_, v)| v.as_object()).map(|o| o.keys().cloned().collect()).unwrap_or_default();
    for field in fields {
        let rows = stats
            .iter()
            .filter_map(|(name, v)| Some((InterfaceLabel { interface: name.clone() }, v.get(&field)?.as_u64()?)));
        let help = format!("Interface counter '{}', as show interface prints it", field.replace('_', " "));
        counters(&mut r, &format!("interface_{field}"), &help, rows);
    }
    let up = Family::<InterfaceLabel, Gauge>::default();
    for i in dp.interfaces() {
        let oper = i.admin_up && dp.link(i.index).oper_up.get() == 1;
        up.get_or_create(&InterfaceLabel { interface: i.name.clone() }).set(i64::from(oper));
    }
    r.register("interface_up", "1 when the interface is administratively up and its link is up", up);
    fib_routes(&mut r, dp);

    // Graph nodes, per worker.
    let runtime = dp.runtime();
    let per_node = |f: fn(&dataplane::runtime::graph::NodeStats) -> u64| {
        runtime
            .iter()
            .flat_map(move |w| {
                w.nodes.iter().filter(|(_, s)| s.calls + s.suspends > 0).map(move |(n, s)| {
                    (NodeLabels { worker: w.id, node: dataplane::datapath::registry::NodeFacts::name(*n) }, f(s))
                })
            })
            .collect::<Vec<_>>()
    };
    counters(
        &mut r,
        "node_calls",
        "Times a node ran on a vector (input nodes: polls that got packets)",
        per_node(|s| s.calls),
    );
    counters(&mut r, "node_vectors", "Packets a node processed", per_node(|s| s.vectors));
    counters(&mut r, "node_suspends", "Input polls that found nothing to do", per_node(|s| s.suspends));
    counters(&mut r, "node_clocks", "TSC ticks spent in a node", per_node(|s| s.clocks));
    counters(
        &mut r,
        "node_fused",
        "Packets a node handled inside another node's fused pass (their ticks are that node's)",
        per_node(|s| s.fused),
    );
    let hz = Gauge::<i64>::default();
    hz.set(i64::try_from(dataplane::runtime::tsc::hz()).unwrap_or(i64::MAX));
    r.register("tsc_hertz", "TSC ticks per second (to turn node clocks into seconds)", hz);

    // Drops by reason.
    let drops = dp
        .errors()
        .into_iter()
        .map(|e| (DropLabels { node: e.node, reason: e.reason, interface: e.interface }, e.count));
    counters(&mut r, "drops", "Packets dropped, by node, reason and input interface (show errors)", drops);

    sflow(&mut r, dp);
    linux_cp(&mut r, dp);
    let mut out = String::new();
    prometheus_client::encoding::text::encode(&mut out, &r).expect("writing to a String cannot fail");
    out
}

/// The sFlow agent's series, when sFlow is on: each data source's samples and the agent's
/// datagrams.
fn sflow(r: &mut Registry, dp: &Dataplane) {
    let Some((_, totals, sources)) = dp.sflow() else { return };
    let by_source = |f: fn(&dataplane::control::counters::SflowSourceRow) -> u64| {
        sources.iter().map(move |s| (InterfaceLabel { interface: s.interface.clone() }, f(s))).collect::<Vec<_>>()
    };
    counters(r, "sflow_samples_taken", "Flow samples taken by the samplers", by_source(|s| s.sampler.taken));
    counters(r, "sflow_samples_sent", "Flow samples sent in datagrams", by_source(|s| s.samples_sent));
    counters(
        r,
        "sflow_samples_dropped",
        "Flow samples lost because a worker's sample ring was full",
        by_source(|s| s.sampler.ring_full),
    );
    counters(r, "sflow_discards", "Discard samples taken", by_source(|s| s.sampler.discards));
    counters(
        r,
        "sflow_discards_lost",
        "Drops not reported as discard samples (rate limit or full ring)",
        by_source(|s| s.sampler.discards_lost),
    );
    let agent: [(&str, &str, u64); 5] = [
        ("sflow_datagrams", "sFlow datagrams built", totals.datagrams),
        ("sflow_datagrams_sent", "sFlow datagrams sent to collectors", totals.datagrams_sent),
        ("sflow_send_errors", "sFlow datagram sends that failed", totals.send_failures),
        ("sflow_counter_samples", "Counter samples sent", totals.counter_samples),
        ("sflow_discard_samples", "Discard samples sent", totals.discard_samples),
    ];
    for (name, help, value) in agent {
        let c = Counter::<u64>::default();
        c.inc_by(value);
        r.register(name, help, c);
    }
}

/// The Linux control plane's series, when it is on: frames each TAP carried (its policed and
/// queue-full drops are in `vecflow_drops_total`) and the netlink listener's counters.
fn linux_cp(r: &mut Registry, dp: &Dataplane) {
    let Some(lcp) = dp.linux_cp() else { return };
    let name = |index: u16| dp.interfaces().iter().find(|i| i.index == index).map_or(String::new(), |i| i.name.clone());
    let per_tap = |f: fn(&dataplane::lcp::io::TapCounters) -> u64| {
        lcp.pairs().map(|(index, _, _, c)| (InterfaceLabel { interface: name(index) }, f(c))).collect::<Vec<_>>()
    };
    counters(r, "lcp_punted", "Frames sent up the interface's linux-cp TAP", per_tap(|c| c.punted.load(Relaxed)));
    counters(
        r,
        "lcp_punt_lost",
        "Frames for the TAP lost because Linux's TAP queue was full",
        per_tap(|c| c.punt_lost.load(Relaxed)),
    );
    counters(r, "lcp_injected", "Frames Linux wrote on the TAP, sent out", per_tap(|c| c.injected.load(Relaxed)));
    counters(
        r,
        "lcp_inject_lost",
        "Frames Linux wrote on the TAP that found no room toward the worker",
        per_tap(|c| c.inject_lost.load(Relaxed)),
    );
    kernel_routes(r, dp);
    // Every namespace's listener (the default table's and each VRF's) together.
    type Count = fn(&dataplane::lcp::listener::ListenerCounters) -> &std::sync::atomic::AtomicU64;
    let listener: [(&str, &str, Count); 4] = [
        ("lcp_netlink_messages", "Netlink notifications the linux-cp listeners took in", |c| &c.messages),
        ("lcp_netlink_dumps", "Netlink dumps of links and addresses (the first and each after an overrun)", |c| {
            &c.dumps
        }),
        ("lcp_netlink_overruns", "Times the kernel dropped netlink notifications (ENOBUFS)", |c| &c.overruns),
        ("lcp_netlink_resync_changes", "Changes only a dump after an overrun found", |c| &c.resync_changes),
    ];
    for (name, help, count) in listener {
        let counter = Counter::<u64>::default();
        counter.inc_by(lcp.listeners().filter_map(|(_, _, c)| c).map(|c| count(c).load(Relaxed)).sum());
        r.register(name, help, counter);
    }
}

/// The kernel's routes linux-cp mirrors into the FIB, by kind, and those it does not, by why.
fn kernel_routes(r: &mut Registry, dp: &Dataplane) {
    let k = dp.kernel_routes();
    let family = Family::<KindLabel, Gauge>::default();
    for (kind, n) in k.by_kind() {
        family.get_or_create(&KindLabel { kind }).set(n as i64);
    }
    r.register("lcp_kernel_routes", "The kernel's routes linux-cp mirrors into the FIB, by kind", family);
    let family = Family::<ReasonLabel, Gauge>::default();
    for (why, n) in k.unmirrored() {
        family.get_or_create(&ReasonLabel { reason: why }).set(n as i64);
    }
    r.register("lcp_kernel_routes_unmirrored", "The kernel's routes linux-cp does not mirror, by why", family);
    let Some(lcp) = dp.linux_cp() else { return };
    let view = lcp.view_counts();
    let (largest_batch, longest_slice) = k.largest();
    let gauges: [(&str, &str, i64); 4] = [
        (
            "lcp_view_routes",
            "Routes (of every table) in linux-cp's kernel views, one per namespace",
            view.routes as i64,
        ),
        ("lcp_routes_waiting", "Prefixes whose kernel route changed and waits to be mirrored", view.waiting as i64),
        (
            "lcp_routes_waiting_max",
            "The most prefixes that ever waited to be mirrored at once",
            view.most_waiting as i64,
        ),
        ("lcp_largest_batch", "The most kernel routes mirrored in one batch", largest_batch as i64),
    ];
    for (name, help, value) in gauges {
        let gauge = Gauge::<i64>::default();
        gauge.set(value);
        r.register(name, help, gauge);
    }
    let slice = Gauge::<f64, std::sync::atomic::AtomicU64>::default();
    slice.set(longest_slice.as_secs_f64());
    r.register(
        "lcp_longest_slice_seconds",
        "The longest the main thread mirrored kernel routes without answering API calls",
        slice,
    );
}

/// The running HTTP endpoint. Dropping it stops it at once: the listening socket and a
/// scrape in progress are shut down, and a scrape waiting for the main thread gets its answer
/// from [`api::server::refuse_pending`].
pub struct Exporter {
    listener: Arc<TcpListener>,
    stop: Arc<AtomicBool>,
    /// The connection being served, if any (a clone, to shut it down).
    serving: Arc<Mutex<Option<TcpStream>>>,
    thread: Option<JoinHandle<()>>,
}

impl Exporter {
    /// Listens on `address`; scrapes are answered by the main thread through `calls`. A busy
    /// address is an error naming `metrics.address`.
    pub fn bind(address: SocketAddr, calls: SyncSender<Call>) -> anyhow::Result<Exporter> {
        let listener = Arc::new(TcpListener::bind(address).with_context(|| format!("metrics.address: {address}"))?);
        let address = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let serving = Arc::new(Mutex::new(None));
        let (l, s, current) = (listener.clone(), stop.clone(), serving.clone());
        let thread = std::thread::Builder::new()
            .name("vecflow-metrics".into())
            .spawn(move || {
                dataplane::runtime::privileges::thread_start();
                for stream in l.incoming() {
                    let Ok(stream) = stream else {
                        if s.load(Relaxed) {
                            return;
                        }
                        continue;
                    };
                    *current.lock().expect("not poisoned") = stream.try_clone().ok();
                    // Checked after publishing the connection: a drop that ran before it
                    // found nothing to shut down, but had set the flag.
                    if s.load(Relaxed) {
                        return;
                    }
                    let _ = serve(stream, &calls);
                    *current.lock().expect("not poisoned") = None;
                }
            })
            .context("starting the metrics thread")?;
        tracing::info!("metrics on http://{address}/metrics");
        Ok(Exporter { listener, stop, serving, thread: Some(thread) })
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        self.stop.store(true, Relaxed);
        wake_acceptor(&*self.listener);
        if let Some(c) = self.serving.lock().expect("not poisoned").take() {
            let _ = c.shutdown(Shutdown::Both);
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Answers one HTTP request: the metrics for `GET /metrics`, an error status otherwise.
fn serve(stream: TcpStream, calls: &SyncSender<Call>) -> std::io::Result<()> {
    stream.set_read_timeout(Some(HTTP_TIMEOUT))?;
    stream.set_write_timeout(Some(HTTP_TIMEOUT))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.by_ref().take(8192).read_line(&mut request_line)?;
    // The headers, up to the blank line (ignored).
    let mut header = String::new();
    while reader.by_ref().take(8192).read_line(&mut header)? > 2 {
        header.clear();
    }
    let mut words = request_line.split_whitespace();
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let (status, content_type, body) = match (method, target.split('?').next().unwrap_or("")) {
        ("GET", "/metrics") => match ask_main_thread(calls) {
            Some(text) => ("200 OK", CONTENT_TYPE, text),
            None => ("503 Service Unavailable", "text/plain", "vecflow is stopping\n".to_string()),
        },
        ("GET", _) => ("404 Not Found", "text/plain", "only /metrics is here\n".to_string()),
        _ => ("405 Method Not Allowed", "text/plain", "GET /metrics\n".to_string()),
    };
    let mut out = stream;
    write!(
        out,
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    out.flush()
}

/// The metrics text, from the main thread.
fn ask_main_thread(calls: &SyncSender<Call>) -> Option<String> {
    ask(calls, Request::Metrics, HTTP_TIMEOUT).ok().map(|r| r.text)
}
