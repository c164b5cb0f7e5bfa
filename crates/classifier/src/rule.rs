//! Rules: a match (a key and a mask), a priority and an action id, and the match syntax of
//! Open vSwitch's `ovs-ofctl` for the fields vecflow classifies on.

use crate::key::{FRAG_ANY, FRAG_LATER, Field, FlowKey, Mask, prefix_bits};

/// What a rule matches: the bits of `mask`, equal to those of `key`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct RuleMatch {
    /// The values (only the mask's bits are set).
    pub key: FlowKey,
    /// Which bits matter.
    pub mask: Mask,
}

/// A rule of a [`crate::RuleTable`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rule {
    /// Unique id; among equal priorities the lower id wins.
    pub id: u32,
    /// Higher wins.
    pub priority: u32,
    /// What it matches.
    pub matches: RuleMatch,
    /// The action it names (the caller's numbering).
    pub action: u32,
}

impl Rule {
    /// True when `key` matches the rule.
    pub fn matches(&self, key: &FlowKey) -> bool {
        key.masked(&self.matches.mask) == self.matches.key
    }
}

/// A token of a match that is not valid, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{token}': {why}")]
pub struct ParseError {
    /// The offending token, as written.
    pub token: String,
    /// What is wrong with it.
    pub why: String,
}

fn bad(token: &str, why: impl Into<String>) -> ParseError {
    ParseError { token: token.to_string(), why: why.into() }
}

/// Ethertype IPv4.
const IPV4: u64 = 0x0800;

impl RuleMatch {
    /// Matches `field` equal to `value` under `bits` (cut to the field).
    pub fn set(&mut self, field: Field, value: u64, bits: u64) {
        self.mask.set(field, bits);
        self.key.set(field, value & bits);
    }

    /// True when the match has bits of `field`.
    pub fn has(&self, field: Field) -> bool {
        self.mask.get(field) != 0
    }

    /// Parses a match in `ovs-ofctl` syntax: comma-separated `ip`, `icmp`, `tcp`, `udp`, `sctp`,
    /// `arp` and `field=value` with the fields `in_port`, `dl_type`, `dl_vlan`, `nw_src` and
    /// `nw_dst` (`a.b.c.d` or `a.b.c.d/len`), `nw_proto`, `nw_frag` (`no`, `yes`, `first`,
    /// `later`, `not_later`), `tp_src` and `tp_dst` (`port` or `port/mask`, decimal or `0x`).
    /// IP fields need an IPv4 ethertype before them and ports a TCP, UDP or SCTP protocol, as
    /// in Open vSwitch. A match on ports never matches a later fragment (it has no L4 header).
    /// Errors name the offending token.
    pub fn parse(text: &str) -> Result<RuleMatch, ParseError> {
        let mut m = RuleMatch::default();
        for token in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let proto = |m: &mut RuleMatch, p: u64| {
                m.set(Field::Ethertype, IPV4, Field::Ethertype.full());
                m.set(Field::NwProto, p, Field::NwProto.full());
            };
            match token.split_once('=') {
                None => match token {
                    "ip" => m.set(Field::Ethertype, IPV4, Field::Ethertype.full()),
                    "arp" => m.set(Field::Ethertype, 0x0806, Field::Ethertype.full()),
                    "icmp" => proto(&mut m, 1),
                    "tcp" => proto(&mut m, 6),
                    "udp" => proto(&mut m, 17),
                    "sctp" => proto(&mut m, 132),
                    _ => return Err(bad(token, "not a protocol (ip, arp, icmp, tcp, udp, sctp) or field=value")),
                },
                Some((name, value)) => m.field(token, name.trim(), value.trim())?,
            }
        }
        if m.has(Field::TpSrc) || m.has(Field::TpDst) {
            // A later fragment has no ports to match.
            let frag = m.mask.get(Field::Frag) | FRAG_LATER;
            m.set(Field::Frag, m.key.get(Field::Frag) & !FRAG_LATER, frag);
        }
        Ok(m)
    }

    /// Parses one `name=value` token.
    fn field(&mut self, token: &str, name: &str, value: &str) -> Result<(), ParseError> {
        let ip = self.mask.get(Field::Ethertype) == Field::Ethertype.full() && self.key.get(Field::Ethertype) == IPV4;
        let l4 = ip && [6, 17, 132].contains(&self.key.get(Field::NwProto)) && self.has(Field::NwProto);
        let need = |ok: bool, what: &str| if ok { Ok(()) } else { Err(bad(token, format!("needs {what} first"))) };
        match name {
            "in_port" => self.set(Field::InPort, number(token, value, 0xffff)?, Field::InPort.full()),
            "dl_type" => self.set(Field::Ethertype, number(token, value, 0xffff)?, Field::Ethertype.full()),
            "dl_vlan" => self.set(Field::Vlan, number(token, value, 4095)?, Field::Vlan.full()),
            "nw_src" | "nw_dst" => {
                need(ip, "ip (or icmp, tcp, udp, sctp, dl_type=0x0800)")?;
                let field = if name == "nw_src" { Field::NwSrc } else { Field::NwDst };
                let (addr, len) = prefix(token, value)?;
                self.set(field, u64::from(addr), prefix_bits(field, len));
            }
            "nw_proto" => {
                need(ip, "ip (or dl_type=0x0800)")?;
                self.set(Field::NwProto, number(token, value, 255)?, Field::NwProto.full());
            }
            "nw_frag" => {
                need(ip, "ip (or dl_type=0x0800)")?;
                let (v, bits) = match value {
                    "no" => (0, FRAG_ANY),
                    "yes" => (FRAG_ANY, FRAG_ANY),
                    "first" => (FRAG_ANY, FRAG_ANY | FRAG_LATER),
                    "later" => (FRAG_ANY | FRAG_LATER, FRAG_ANY | FRAG_LATER),
                    "not_later" => (0, FRAG_LATER),
                    _ => return Err(bad(token, "nw_frag is no, yes, first, later or not_later")),
                };
                self.set(Field::Frag, v, bits);
            }
            "tp_src" | "tp_dst" => {
                need(l4, "tcp, udp or sctp (or nw_proto=6, 17 or 132)")?;
                let field = if name == "tp_src" { Field::TpSrc } else { Field::TpDst };
                let (v, bits) = match value.split_once('/') {
                    Some((v, m)) => (number(token, v, 0xffff)?, number(token, m, 0xffff)?),
                    None => (number(token, value, 0xffff)?, 0xffff),
                };
                self.set(field, v, bits);
            }
            _ => {
                return Err(bad(
                    token,
                    "unknown field (in_port, dl_type, dl_vlan, nw_src, nw_dst, nw_proto, nw_frag, tp_src, tp_dst)",
                ));
            }
        }
        Ok(())
    }
}

/// A decimal or `0x` hexadecimal number up to `max`.
fn number(token: &str, text: &str, max: u64) -> Result<u64, ParseError> {
    let parsed = match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => text.parse(),
    };
    match parsed {
        Ok(v) if v <= max => Ok(v),
        _ => Err(bad(token, format!("'{text}' is not a number from 0 to {max}"))),
    }
}

/// An IPv4 address with an optional prefix length (32 without).
fn prefix(token: &str, text: &str) -> Result<(u32, u32), ParseError> {
    let (addr, len) = match text.split_once('/') {
        Some((a, l)) => {
            (a, l.parse::<u32>().ok().filter(|&l| l <= 32).ok_or_else(|| bad(token, "prefix length is 0 to 32"))?)
        }
        None => (text, 32),
    };
    let addr: std::net::Ipv4Addr = addr.parse().map_err(|_| bad(token, format!("'{addr}' is not an IPv4 address")))?;
    Ok((u32::from(addr), len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seed_rules_parse_to_their_masks() {
        let m = RuleMatch::parse("udp,nw_src=2.0.0.0/9").unwrap();
        assert_eq!((m.key.get(Field::Ethertype), m.key.get(Field::NwProto)), (0x0800, 17));
        assert_eq!((m.mask.get(Field::NwSrc), m.key.get(Field::NwSrc)), (0xff80_0000, 0x0200_0000));
        let p = RuleMatch::parse("udp,nw_src=21.0.0.0/8,tp_dst=21").unwrap();
        assert_eq!((p.key.get(Field::TpDst), p.mask.get(Field::TpDst)), (21, 0xffff));
        assert_eq!((p.mask.get(Field::Frag), p.key.get(Field::Frag)), (FRAG_LATER, 0), "never a later fragment");
        let h = RuleMatch::parse("in_port=3, tcp, tp_src=0x1000/0xf000, nw_frag=first").unwrap();
        assert_eq!((h.key.get(Field::InPort), h.key.get(Field::TpSrc), h.mask.get(Field::TpSrc)), (3, 0x1000, 0xf000));
        assert_eq!(h.key.get(Field::Frag), FRAG_ANY);
    }

    #[test]
    fn errors_name_the_bad_token() {
        let e = |t: &str| RuleMatch::parse(t).unwrap_err().to_string();
        assert_eq!(e("udp,nw_src=2.0.0.0/33"), "'nw_src=2.0.0.0/33': prefix length is 0 to 32");
        assert_eq!(e("udp,nw_dst=2.0.0"), "'nw_dst=2.0.0': '2.0.0' is not an IPv4 address");
        assert_eq!(e("nw_src=1.2.3.4"), "'nw_src=1.2.3.4': needs ip (or icmp, tcp, udp, sctp, dl_type=0x0800) first");
        assert_eq!(e("ip,tp_dst=80"), "'tp_dst=80': needs tcp, udp or sctp (or nw_proto=6, 17 or 132) first");
        assert_eq!(e("udp,tp_dst=70000"), "'tp_dst=70000': '70000' is not a number from 0 to 65535");
        assert!(e("udp,foo=1").starts_with("'foo=1': unknown field"));
        assert!(e("udpp").starts_with("'udpp': not a protocol"));
    }
}
