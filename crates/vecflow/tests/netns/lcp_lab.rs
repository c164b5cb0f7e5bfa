//! The linux-cp labs' shared part: a namespace deleted on drop, and vecflow routing for a
//! [`Lab`] with linux-cp on.

use crate::common::Daemon;
use crate::lab::{Lab, must, run};
use std::path::Path;

/// A network namespace made for a test, deleted (with what is in it) however the test ends.
pub(crate) struct Namespace(pub(crate) String);

impl Drop for Namespace {
    fn drop(&mut self) {
        let _ = run("ip", &["netns", "del", &self.0]);
    }
}

/// The lab's linux-cp namespace `vfl<tag>`, made (with `lo` up) before vecflow starts, as an
/// operator would.
pub(crate) fn lcp_namespace(lab: &Lab) -> Namespace {
    let lcp = Namespace(format!("vfl{}", lab.tag));
    must("ip", &["netns", "add", &lcp.0]);
    must("ip", &["-n", &lcp.0, "link", "set", "lo", "up"]);
    lcp
}

/// vecflow routing for the lab with linux-cp on: its port `wa` (10.77.0.1/24) on host A's link
/// (A is 10.77.0.2/24), its TAP `wa` in namespace `vfl<tag>` (made first, as an operator
/// would), which vecflow gives the same address. Returns the namespace, vecflow, and its configuration.
pub(crate) fn linux_cp_router(lab: &Lab, dir: &Path) -> (Namespace, Daemon, String) {
    let lcp = lcp_namespace(lab);
    lab.address("a", "10.77.0.2/24", None);
    let config = format!(
        "workers: {{count: 1}}
metrics: {{address: '127.0.0.1:{}'}}
linux-cp: {{netns: {}}}
interfaces:
  wa: {{index: 1, driver: af-packet, host-interface: {}, rx-mode: adaptive, mac: '02:fe:00:00:00:01', addresses: [10.77.0.1/24]}}
",
        metrics_port(lab),
        lcp.0,
        lab.veth("a", 1)
    );
    let (vecflow, _) = lab.start_vecflow(dir, &config);
    // vecflow set the configured address on the TAP, for Linux's sockets.
    let on_tap = must("ip", &["-n", &lcp.0, "-o", "addr", "show", "dev", "wa"]);
    assert!(on_tap.contains("10.77.0.1/24"), "the TAP has the interface's address:\n{on_tap}");
    (lcp, vecflow, config)
}

/// The Prometheus port of [`linux_cp_router`]'s vecflow, in the lab's router namespace.
pub(crate) fn metrics_port(lab: &Lab) -> u16 {
    20000 + u16::from_str_radix(&lab.tag, 16).unwrap_or(0) % 20000
}

/// vecflow's Prometheus metrics, scraped inside the lab's router namespace.
#[allow(dead_code)] // not every linux-cp test reads them
pub(crate) fn metrics(lab: &Lab) -> String {
    let url = format!("http://127.0.0.1:{}/metrics", metrics_port(lab));
    let get = "import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1]).read().decode())";
    String::from_utf8_lossy(&lab.exec(&lab.r, &["python3", "-c", get, &url]).stdout).into_owned()
}
