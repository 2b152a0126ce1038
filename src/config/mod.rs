//! Configuration: profiles, layering (defaults < file < `FLOE_*` env < flags), secrets.
//!
//! The file is TOML (`config.example.toml` documents every key). Unknown keys are errors
//! that name the key and the file; secrets never live in the file: `password_env`,
//! `password_command` or the `FLOE_*_PASSWORD` variables.

mod file;
mod health;
pub mod keys;
mod load;
mod schema;
mod secrets;
mod settings;
pub mod uri;

use std::fmt;

pub use crate::units::{Bytes, Dur};
pub use file::{
    AirflowApi, AirflowFile, AuthKind, FileConfig, HealthFile, MaintenanceFile, ProfileFile,
    StartTab, TrinoFile,
};
pub use health::HealthConfig;
pub use keys::KeySpec;
pub use load::{
    DEFAULT_COORDINATOR_BUDGET, DEFAULT_FULL_REFRESH, Selection, load, load_from_str,
    load_selection, load_selection_with, load_with,
};
pub use schema::json_schema;
pub use settings::{
    AirflowSettings, Auth, DEFAULT_MAX_LOG_SIZE, DEFAULT_MAX_RESPONSE_SIZE,
    DEFAULT_OAUTH2_LOGIN_TIMEOUT, DEFAULT_OAUTH2_TOKEN_LIFETIME, DEFAULT_PROBE_BATCH, Dirs,
    MAX_REFRESH, MIN_REFRESH, MaintenanceMapping, OAuth2Settings, Overrides, STATS_CACHE_FILE,
    Settings, TlsSettings, TrinoSettings,
};

/// A configuration problem, always naming what and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

fn err(msg: impl Into<String>) -> ConfigError {
    ConfigError(msg.into())
}

#[cfg(test)]
mod tests;
