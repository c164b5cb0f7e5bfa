//! `show memory`: the bytes of each table that grows with the routes (as VPP's `show ip fib
//! mem`), and the process's resident size to hold them against.

use super::{Command, Registry, Reply};
use crate::control::engine::Dataplane;
use serde_json::json;
use std::fmt::Write;

/// Adds these commands to `r`.
pub(super) fn register(r: &mut Registry) {
    r.register(Command {
        words: "show memory",
        help: "bytes of the FIBs, the RIB, the adjacencies and linux-cp's kernel view, per structure and per entry, and the resident size",
        run: show_memory,
    });
}

/// One table: its name, what it holds, how many and its bytes.
struct Table {
    name: &'static str,
    holds: &'static str,
    entries: usize,
    bytes: usize,
}

/// The tables of `dp` that grow with its routes.
fn tables(dp: &Dataplane) -> Vec<Table> {
    let (fib, rib) = (dp.fib(), dp.rib());
    let objects = &rib.objects;
    let mut out = vec![
        Table {
            name: "ip4-fib",
            holds: "tbl24, every tbl8 group, the writer's routes",
            entries: fib.ip4.len(),
            bytes: fib.ip4.bytes(),
        },
        Table {
            name: "ip6-fib",
            holds: "first level, trees, hosts, the writer's routes",
            entries: fib.ip6.len(),
            bytes: fib.ip6.bytes(),
        },
        Table { name: "rib", holds: "every source's route per prefix", entries: rib.len(), bytes: rib.bytes() },
        Table {
            name: "adjacencies",
            holds: "adjacencies and load-balance objects",
            entries: objects.adjs().len() + objects.lbs().len(),
            bytes: objects.bytes(),
        },
    ];
    if dp.vrfs().iter().next().is_some() {
        let [ip4, ip6] = fib.vrf_usage();
        let vrfs = [
            Table {
                name: "vrf-ip4-fibs",
                holds: "every VRF's IPv4 table: first level, tbl8 groups in use, the writer's routes",
                entries: ip4.0,
                bytes: ip4.1,
            },
            Table {
                name: "vrf-ip6-fibs",
                holds: "every VRF's IPv6 table: first level, trees, hosts, the writer's routes",
                entries: ip6.0,
                bytes: ip6.1,
            },
        ];
        out.splice(2..2, vrfs);
    }
    if let Some(lcp) = dp.linux_cp() {
        let view = lcp.view_counts();
        out.push(Table {
            name: "lcp-view",
            holds: "linux-cp's kernel routes (trees estimated) and prefixes waiting",
            entries: view.routes,
            bytes: view.bytes,
        });
    }
    out
}

/// The process's resident size and its peak, in bytes (`VmRSS`, `VmHWM`; 0 where
/// `/proc/self/status` does not say).
pub fn resident() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| -> u64 {
        let line = status.lines().find_map(|l| l.strip_prefix(name)).unwrap_or("");
        line.trim().trim_end_matches("kB").trim().parse::<u64>().map_or(0, |kb| kb * 1024)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / f64::from(1 << 20)
}

fn show_memory(dp: &mut Dataplane, _args: &[&str]) -> Result<Reply, String> {
    let tables = tables(dp);
    let mut text = format!("{:<12} {:>10} {:>10} {:>12}  holds\n", "structure", "entries", "MiB", "bytes/entry");
    let mut rows = Vec::new();
    for t in &tables {
        let per = if t.entries == 0 { 0.0 } else { t.bytes as f64 / t.entries as f64 };
        let _ =
            writeln!(text, "{:<12} {:>10} {:>10.1} {:>12.1}  {}", t.name, t.entries, mib(t.bytes as u64), per, t.holds);
        rows.push(
            json!({"name": t.name, "holds": t.holds, "entries": t.entries, "bytes": t.bytes, "bytes_per_entry": per}),
        );
    }
    let counted: u64 = tables.iter().map(|t| t.bytes as u64).sum();
    let (rss, hwm) = resident();
    let _ = writeln!(text, "{:<23} {:>10.1}", "these tables", mib(counted));
    let _ = writeln!(text, "{:<23} {:>10.1}  (peak {:.1})", "resident (VmRSS)", mib(rss), mib(hwm));
    let json = json!({"structures": rows, "counted_bytes": counted, "rss_bytes": rss, "hwm_bytes": hwm});
    Ok(Reply { text, json })
}
