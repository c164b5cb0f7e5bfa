//! Any bytes as a configuration applied live to one running dataplane, built once per process
//! (`common/running.rs`, whose configuration is the base): `Dataplane::apply` takes it whole or refuses it whole. After a refusal
//! the running configuration, FIBs and neighbors are exactly as before; after an apply, the
//! running configuration is the one given; either way the base configuration applies again.
//! No panic, and the workers keep running throughout.
#![no_main]

use dataplane::config::Config;
use dataplane::control::cli::Registry;
use dataplane::control::engine::Dataplane;
use libfuzzer_sys::fuzz_target;
use std::sync::{Mutex, OnceLock};

#[path = "common/running.rs"]
mod running;

struct Harness {
    dp: Dataplane,
    registry: Registry,
    base: Config,
}

fn harness() -> &'static Mutex<Harness> {
    static H: OnceLock<Mutex<Harness>> = OnceLock::new();
    H.get_or_init(|| {
        let (dp, registry, base) = running::start();
        Mutex::new(Harness { dp, registry, base })
    })
}

/// What a refused apply must leave as it was: the running configuration, and the tables as
/// the CLI shows them in JSON.
fn observable(h: &mut Harness) -> (String, Vec<serde_json::Value>) {
    let config = serde_json::to_string(h.dp.config()).expect("a configuration serializes");
    let shown = ["show ip fib", "show ip6 fib", "show mpls fib", "show ip neighbors", "show interface address"]
        .iter()
        .map(|c| h.registry.execute(&mut h.dp, c).expect("a show command").json)
        .collect();
    (config, shown)
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(config) = Config::load(text) else { return };
    let mut h = harness().lock().unwrap_or_else(|p| p.into_inner());
    let h = &mut *h;
    let before = observable(h);
    match h.dp.apply(&config) {
        Ok(()) => assert_eq!(h.dp.config(), &config, "the running configuration is the one applied"),
        Err(e) => {
            assert!(!e.to_string().is_empty());
            assert_eq!(observable(h), before, "a refused apply changed something: {e}");
        }
    }
    let base = h.base.clone();
    h.dp.apply(&base).expect("the base configuration applies again");
    assert!(h.registry.execute(&mut h.dp, "show runtime").is_ok());
});
