//! Configuration: profiles, layering (defaults < file < `FLOE_*` env < flags), secrets.
//!
//! The file is TOML (`config.example.toml` documents every key). Unknown keys are errors
//! that name the key and the file; secrets never live in the file: `password_env`,
//! `password_command` or the `FLOE_*_PASSWORD` variables.

mod error;
mod file;
mod health;
pub mod keys;
mod load;
mod schema;
mod secrets;
mod settings;
pub mod uri;

pub use crate::units::{Bytes, Dur};
pub use error::{At, ConfigError};
pub use file::{
    AirflowApi, AirflowFile, AuthKind, FileConfig, HealthFile, MaintenanceFile, ProfileFile,
    StartTab, TrinoFile, UnknownAuth,
};
pub use health::HealthConfig;
pub use keys::{BindError, KeySpec};
pub use load::{
    DEFAULT_COORDINATOR_BUDGET, DEFAULT_FULL_REFRESH, Each, Selection, load, load_each,
    load_each_with, load_from_str, load_selection, load_selection_with, load_with,
};
pub use schema::json_schema;
pub use secrets::{CommandError, SecretError};
pub use settings::{
    AirflowSettings, Auth, DEFAULT_MAX_LOG_SIZE, DEFAULT_MAX_RESPONSE_SIZE,
    DEFAULT_OAUTH2_LOGIN_TIMEOUT, DEFAULT_OAUTH2_TOKEN_LIFETIME, DEFAULT_PROBE_BATCH, Dirs,
    MAX_REFRESH, MIN_REFRESH, MaintenanceMapping, OAuth2Settings, Overrides, STATS_CACHE_FILE,
    Settings, TlsSettings, TrinoSettings,
};

#[cfg(test)]
mod tests;
