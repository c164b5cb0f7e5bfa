//! The `flow-cache` section (each worker's megaflow cache) and the checks of the `flows` rules.

use crate::net::{ConfigError, default_true, invalid};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Each worker's megaflow cache for the flow rules (`flow-classify`): which layers run and
/// their sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct FlowCacheConfig {
    /// The exact-match cache (8192 entries, heavy flows; default true).
    #[serde(default = "default_true")]
    pub emc: bool,
    /// The Cuckoo Distributor, predicting each flow's megaflow subtable (default true).
    #[serde(default = "default_true")]
    pub cd: bool,
    /// Flows the Cuckoo Distributor predicts, a power of two 8–16777216 (default 1048576:
    /// 4 MiB per worker). Size it to the concurrent flows.
    #[serde(default = "default_cd_entries")]
    pub cd_entries: u32,
    /// Megaflows a worker holds at most, 1–1000000 (default 200000).
    #[serde(default = "default_max_megaflows")]
    pub max_megaflows: u32,
}

fn default_cd_entries() -> u32 {
    1 << 20
}
fn default_max_megaflows() -> u32 {
    200_000
}

impl Default for FlowCacheConfig {
    fn default() -> Self {
        FlowCacheConfig {
            emc: true,
            cd: true,
            cd_entries: default_cd_entries(),
            max_megaflows: default_max_megaflows(),
        }
    }
}

impl FlowCacheConfig {
    pub(crate) fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

impl FlowCacheConfig {
    /// Checks the cache's sizes.
    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        if !(8..=1 << 24).contains(&self.cd_entries) || !self.cd_entries.is_power_of_two() {
            return Err(invalid("flow-cache.cd-entries", self.cd_entries, "a power of two 8–16777216"));
        }
        if !(1..=1_000_000).contains(&self.max_megaflows) {
            return Err(invalid("flow-cache.max-megaflows", self.max_megaflows, "1–1000000"));
        }
        Ok(())
    }
}

/// Checks the `flows` rules: at most [`MAX_FLOWS`](crate::flows::MAX_FLOWS), each in
/// `ovs-ofctl` syntax and naming only interfaces that `known` accepts.
pub(crate) fn validate_rules(rules: &[String], known: impl Fn(&str) -> bool) -> Result<(), ConfigError> {
    if rules.len() > crate::flows::MAX_FLOWS {
        let max = crate::flows::MAX_FLOWS;
        return Err(invalid("flows", format!("{} rules", rules.len()), format!("at most {max}")));
    }
    for (k, text) in rules.iter().enumerate() {
        crate::flows::parse(text, k as u32, |name: &str| known(name).then_some(1))
            .map_err(|why| invalid(format!("flows[{k}]"), text, format!("a rule in ovs-ofctl syntax ({why})")))?;
    }
    Ok(())
}
