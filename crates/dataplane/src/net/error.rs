//! The configuration error every section's checks return.

use std::fmt;

/// A configuration error that names the field, the value and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// The YAML could not be parsed into the model (syntax, unknown key, wrong type).
    #[error("config: {0}")]
    Parse(String),
    /// A value is out of range or refers to something that does not exist.
    #[error("{field}: {value} is not allowed; allowed: {allowed}")]
    Invalid {
        /// Dotted path of the field, e.g. `interfaces.port0.mtu`.
        field: String,
        /// The offending value as written.
        value: String,
        /// What would be accepted.
        allowed: String,
    },
}

/// The error for `value` of `field`, with what is `allowed`.
pub(crate) fn invalid(field: impl Into<String>, value: impl fmt::Display, allowed: impl Into<String>) -> ConfigError {
    ConfigError::Invalid { field: field.into(), value: value.to_string(), allowed: allowed.into() }
}
