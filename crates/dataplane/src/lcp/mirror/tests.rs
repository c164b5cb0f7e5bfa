use super::*;
use crate::l3::objects::NextHop;
use crate::l3::rib::Rib;

/// The RIB as the dataplane has it, refusing batches that hold `refuse` as a full FIB would.
#[derive(Default)]
struct RibSink {
    rib: Rib,
    refuse: Option<IpPrefix>,
    resolving: Vec<Target>,
}

impl RouteSink for RibSink {
    fn apply_routes(&mut self, batch: &[RouteChange]) -> Result<(), String> {
        if batch.iter().any(|c| Some(IpPrefix { addr: c.prefix, len: c.len }) == self.refuse) {
            return Err("tbl8 groups exhausted".into());
        }
        let applied = self.rib.apply(batch, &|_, _| true).map_err(|e| e.to_string())?;
        self.rib.commit(applied);
        Ok(())
    }

    fn kernel_route_kind(&self, vrf: u16, prefix: IpPrefix) -> Option<usize> {
        kernel_route_kind(&self.rib, vrf, prefix)
    }

    fn resolve_next_hops(&mut self, targets: &[&Target]) {
        self.resolving.extend(targets.iter().map(|&t| t.clone()));
    }
}

fn p(s: &str) -> IpPrefix {
    s.parse().unwrap()
}

fn paths(vias: &[&str]) -> Target {
    let hops = vias.iter().map(|v| NextHop { via: v.parse().unwrap(), tx_if: 1, weight: 1 }).collect();
    Target::Paths { hops, push: Default::default() }
}

fn counts(k: &KernelRoutes) -> Vec<(&'static str, u64)> {
    k.by_kind().filter(|(_, n)| *n > 0).collect()
}

#[test]
fn counts_follow_replacements_and_removals() {
    let (mut k, mut sink) = (KernelRoutes::default(), RibSink::default());
    k.mirror(&mut sink, 0, vec![(p("10.1.0.0/16"), Ok(Some(paths(&["10.0.0.1"]))))]);
    assert_eq!(counts(&k), [("unicast", 1)]);
    k.mirror(&mut sink, 0, vec![(p("10.1.0.0/16"), Ok(Some(paths(&["10.0.0.1", "10.0.0.2"]))))]);
    assert_eq!(counts(&k), [("multipath", 1)], "read back from the RIB's load-balance object");
    k.mirror(&mut sink, 0, vec![(p("10.2.0.0/16"), Ok(Some(Target::Glean { tx_if: 1 })))]);
    k.mirror(&mut sink, 0, vec![(p("10.3.0.0/16"), Ok(Some(Target::Reject(crate::l3::Reject::Prohibit))))]);
    assert_eq!(counts(&k), [("multipath", 1), ("device", 1), ("prohibit", 1)]);
    let gone = ["10.1.0.0/16", "10.2.0.0/16", "10.3.0.0/16"].map(|s| (p(s), Ok(None)));
    k.mirror(&mut sink, 0, gone.to_vec());
    assert_eq!(counts(&k), []);
    assert!(sink.rib.is_empty(), "the RIB holds no kernel route");
    assert_eq!(sink.resolving.len(), 4, "each mirrored target's next hops are resolved");
}

#[test]
fn routes_not_mirrored_are_counted_by_why_until_they_are() {
    let (mut k, mut sink) = (KernelRoutes::default(), RibSink::default());
    let foreign = "through a device vecflow does not own";
    k.mirror(&mut sink, 0, vec![(p("10.1.0.0/16"), Err(foreign)), (p("10.2.0.0/16"), Err(foreign))]);
    assert_eq!(k.unmirrored().into_iter().collect::<Vec<_>>(), [(foreign, 2)]);
    assert_eq!(counts(&k), []);
    k.mirror(&mut sink, 0, vec![(p("10.1.0.0/16"), Ok(Some(paths(&["10.0.0.1"])))), (p("10.2.0.0/16"), Ok(None))]);
    assert!(k.unmirrored().is_empty(), "mirrored now, or gone");
    assert_eq!(counts(&k), [("unicast", 1)]);
    // A mirrored route that becomes one vecflow cannot mirror leaves the FIB.
    k.mirror(&mut sink, 0, vec![(p("10.1.0.0/16"), Err(foreign))]);
    assert_eq!((counts(&k), k.unmirrored().len()), (vec![], 1));
    assert!(sink.rib.is_empty());
}

#[test]
fn a_refused_batch_is_mirrored_route_by_route_leaving_out_the_refused() {
    let (mut k, mut sink) = (KernelRoutes::default(), RibSink::default());
    sink.refuse = Some(p("10.2.0.0/16"));
    let routes = ["10.1.0.0/16", "10.2.0.0/16", "10.3.0.0/16"].map(|s| (p(s), Ok(Some(paths(&["10.0.0.1"])))));
    k.mirror(&mut sink, 0, routes.to_vec());
    assert_eq!(counts(&k), [("unicast", 2)]);
    assert_eq!(k.unmirrored().into_iter().collect::<Vec<_>>(), [("refused by the FIB", 1)]);
    assert_eq!(sink.rib.len(), 2);
}
