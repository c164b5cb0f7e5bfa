//! Any bytes → a configuration or an error that names a field. A configuration that is
//! accepted builds its interfaces (unique names and indices), adjacencies and tables without
//! a panic: every check the builders rely on (`expect("validated …")`) is made by `validate`.
#![no_main]

use dataplane::config::Config;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match Config::load(text) {
        Ok(c) => {
            let vrfs = dataplane::l3::vrf::VrfIds::default().assign(&c.vrfs);
            let ifs = dataplane::interface::build::build_interfaces(&c.interfaces, c.workers.count, |v| vrfs.index(v));
            let mut names: Vec<&str> = ifs.iter().map(|i| i.name.as_str()).collect();
            let mut idx: Vec<u16> = ifs.iter().map(|i| i.index).collect();
            names.sort_unstable();
            names.dedup();
            idx.sort_unstable();
            idx.dedup();
            assert_eq!((names.len(), idx.len()), (ifs.len(), ifs.len()), "names and indices are unique");
            let mut objects = dataplane::l3::objects::Objects::default();
            let (l3, _) = dataplane::control::tables::build_l3(&c, &ifs, &vrfs, &mut objects, &|_, _| true)
                .expect("a validated configuration's labels fit the objects");
            let mut routes = dataplane::l3::connected(&ifs, c.linux_cp.is_some());
            routes.extend(dataplane::l3::configured(&c.routes, &ifs, &vrfs));
            assert!(routes.keys().all(|&(_, a, len)| len <= if a.is_ipv4() { 32 } else { 128 }));
            let flows = dataplane::control::tables::build_flows(&c, &ifs);
            let _ = dataplane::datapath::Tables::new(&ifs, l3.with_objects(&objects, &ifs), flows);
        }
        Err(e) => assert!(e.to_string().contains(": "), "an error names its field: {e}"),
    }
});
