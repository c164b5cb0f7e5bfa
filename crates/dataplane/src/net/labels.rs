//! MPLS labels as the configuration writes them: the range a label may take and how many a
//! stack may hold.

use super::{ConfigError, invalid};

/// The largest MPLS label (20 bits).
pub(crate) const MAX_LABEL: u32 = (1 << 20) - 1;

/// Checks a label stack written at `field`: each label 16 to [`MAX_LABEL`] (0–15 are
/// reserved), at most 8 of them.
pub(crate) fn check_labels(field: &str, labels: &[u32]) -> Result<(), ConfigError> {
    match labels.iter().find(|&&l| !(16..=MAX_LABEL).contains(&l)) {
        Some(l) => Err(invalid(field, l, "labels 16 to 1048575")),
        None if labels.len() > 8 => Err(invalid(field, format!("{} labels", labels.len()), "at most 8 labels")),
        None => Ok(()),
    }
}
