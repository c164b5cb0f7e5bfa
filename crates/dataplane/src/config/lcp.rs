//! The checks that join `linux-cp` and the interfaces: every interface's TAP name.

use super::Config;
use crate::lcp::config::valid_linux_name;
use crate::net::{ConfigError, invalid};

impl Config {
    /// The TAP name of every interface and sub-interface, by interface name: its
    /// `linux-name`, else its own name when Linux takes it.
    pub fn linux_names(&self) -> Result<Vec<(String, String)>, ConfigError> {
        let mut names = Vec::new();
        for (name, i) in &self.interfaces {
            names.push((name.clone(), i.linux_name.clone(), format!("interfaces.{name}.linux-name")));
            for (sub, s) in &i.sub_interfaces {
                let field = format!("interfaces.{name}.sub-interfaces.{sub}.linux-name");
                names.push((format!("{name}.{sub}"), s.linux_name.clone(), field));
            }
        }
        let mut seen = std::collections::BTreeMap::new();
        let mut out = Vec::new();
        for (name, linux, field) in names {
            let tap = match linux {
                Some(l) if valid_linux_name(&l) => l,
                Some(l) => return Err(invalid(field, l, "1 to 15 characters, none of them '/', ':' or a space")),
                None if valid_linux_name(&name) => name.clone(),
                None => {
                    return Err(invalid(
                        field,
                        "(none)",
                        format!(
                            "a name for the TAP of '{name}' (its own is longer than 15 characters or holds '/' or ':')"
                        ),
                    ));
                }
            };
            if let Some(other) = seen.insert(tap.clone(), name.clone()) {
                return Err(invalid(field, &tap, format!("a name no other TAP has ({other}'s TAP has it)")));
            }
            out.push((name, tap));
        }
        Ok(out)
    }

    /// Checks `linux-cp` and, when it is on, every interface's TAP name.
    pub(super) fn validate_linux_cp(&self) -> Result<(), ConfigError> {
        let Some(lcp) = &self.linux_cp else { return Ok(()) };
        lcp.validate()?;
        if let Some(name) = self.vrfs.keys().find(|v| lcp.vrf_netns(v).len() > 255) {
            let allowed = format!("a name short enough for VRF {name}'s namespace, {}", lcp.vrf_netns(name));
            return Err(invalid("linux-cp.netns", &lcp.netns, format!("{allowed} (at most 255 characters)")));
        }
        self.linux_names().map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(yaml: &str) -> Result<Vec<(String, String)>, String> {
        let c = Config::from_yaml(yaml).unwrap();
        c.validate_linux_cp().map_err(|e| e.to_string())?;
        Ok(if c.linux_cp.is_some() { c.linux_names().unwrap() } else { Vec::new() })
    }

    #[test]
    fn tap_names_default_to_the_interface_names_and_are_checked() {
        let ok = names(
            "linux-cp: {}\ninterfaces: {port0: {sub-interfaces: {7: {encapsulation: {dot1q: 7}}}}, 'Gi0/1': {linux-name: gi1}}",
        );
        assert_eq!(
            ok.unwrap(),
            [("Gi0/1".into(), "gi1".into()), ("port0".into(), "port0".into()), ("port0.7".into(), "port0.7".into())]
        );
        let e = names("linux-cp: {}\ninterfaces: {'Gi0/1': {}}").unwrap_err();
        assert!(e.starts_with("interfaces.Gi0/1.linux-name: (none) is not allowed"), "{e}");
        let e = names("linux-cp: {}\ninterfaces: {a-very-long-port-name: {}}").unwrap_err();
        assert!(e.starts_with("interfaces.a-very-long-port-name.linux-name"), "{e}");
        let e = names("linux-cp: {}\ninterfaces: {p: {linux-name: 'a:b'}}").unwrap_err();
        assert!(e.starts_with("interfaces.p.linux-name: a:b is not allowed"), "{e}");
        let e = names("linux-cp: {}\ninterfaces: {p: {}, q: {linux-name: p}}").unwrap_err();
        assert!(e.contains("interfaces.q.linux-name: p is not allowed; allowed: a name no other TAP has (p's"), "{e}");
        let e = names("linux-cp: {netns: ../x}\ninterfaces: {p: {}}").unwrap_err();
        assert!(e.starts_with("linux-cp.netns: ../x is not allowed"), "{e}");
        // Off: names are not checked.
        assert!(names("interfaces: {'Gi0/1': {}}").is_ok());
    }
}
