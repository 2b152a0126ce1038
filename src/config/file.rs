//! The file model: what `config.toml` may say. Every struct rejects unknown keys, and a
//! profile section overrides the top-level one key by key.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::ConfigError;
use super::keys::KeySpec;
use crate::units::{Bytes, Dur};

#[derive(Debug, Default, Deserialize, Clone, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    pub default_profile: Option<String>,
    /// Read every profile at once (as `--all`) unless `--profile` names one.
    pub all: Option<bool>,
    /// Named sets of profiles read at once: `--profile NAME` of a group reads its members.
    pub groups: Option<BTreeMap<String, Vec<String>>>,
    pub readonly: Option<bool>,
    pub refresh: Option<Dur>,
    pub max_concurrent_queries: Option<usize>,
    pub probe_batch: Option<usize>,
    pub full_refresh_every: Option<Dur>,
    pub coordinator_budget: Option<Dur>,
    pub query_timeout: Option<Dur>,
    pub audit_log: Option<PathBuf>,
    pub export_dir: Option<PathBuf>,
    pub mouse: Option<bool>,
    pub ascii: Option<bool>,
    pub start_tab: Option<StartTab>,
    pub confirm_dwell: Option<Dur>,
    pub trino: Option<TrinoFile>,
    pub airflow: Option<AirflowFile>,
    pub health: Option<HealthFile>,
    pub keys: Option<BTreeMap<String, KeySpec>>,
    pub maintenance: Option<Vec<MaintenanceFile>>,
    pub profiles: Option<BTreeMap<String, ProfileFile>>,
}

#[derive(Debug, Default, Deserialize, Clone, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProfileFile {
    pub readonly: Option<bool>,
    pub refresh: Option<Dur>,
    pub trino: Option<TrinoFile>,
    pub airflow: Option<AirflowFile>,
    pub health: Option<HealthFile>,
    pub maintenance: Option<Vec<MaintenanceFile>>,
}

#[derive(Debug, Default, Deserialize, Clone, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TrinoFile {
    pub url: Option<String>,
    pub user: Option<String>,
    pub catalog: Option<String>,
    pub schemas: Option<Vec<String>>,
    pub tables: Option<Vec<String>>,
    pub auth: Option<AuthKind>,
    pub password_env: Option<String>,
    pub password_command: Option<String>,
    pub token_env: Option<String>,
    pub token_command: Option<String>,
    pub ca_file: Option<PathBuf>,
    pub insecure_skip_verify: Option<bool>,
    pub session: Option<BTreeMap<String, String>>,
    pub source: Option<String>,
    pub client_tags: Option<Vec<String>>,
    pub max_response_size: Option<Bytes>,
    pub oauth2_login_timeout: Option<Dur>,
    pub oauth2_token_lifetime: Option<Dur>,
}

#[derive(Debug, Default, Deserialize, Clone, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AirflowFile {
    pub url: Option<String>,
    pub user: Option<String>,
    pub password_env: Option<String>,
    pub password_command: Option<String>,
    pub token_env: Option<String>,
    pub token_command: Option<String>,
    pub api: Option<AirflowApi>,
    pub ca_file: Option<PathBuf>,
    pub insecure_skip_verify: Option<bool>,
    pub dag_tags: Option<Vec<String>>,
    pub dag_ids: Option<Vec<String>>,
    pub runs: Option<usize>,
    pub test_connections: Option<bool>,
    pub max_response_size: Option<Bytes>,
    pub max_log_size: Option<Bytes>,
}

#[derive(Debug, Default, Deserialize, Clone, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HealthFile {
    pub target_file_size: Option<Bytes>,
    pub small_file_ratio: Option<f64>,
    pub min_small_files: Option<u64>,
    pub critical_small_files: Option<u64>,
    pub critical_partition_small_files: Option<u64>,
    pub compaction_warn: Option<Dur>,
    pub compaction_critical: Option<Dur>,
    pub snapshot_retention: Option<Dur>,
    pub max_snapshots: Option<u64>,
    pub expirable_snapshots_warn: Option<u64>,
    pub pinned_files_warn: Option<u64>,
    pub delete_file_ratio_warn: Option<f64>,
    pub delete_file_ratio_critical: Option<f64>,
    pub equality_delete_weight: Option<f64>,
    pub delete_record_ratio_warn: Option<f64>,
    pub delete_record_ratio_critical: Option<f64>,
    pub large_file_ratio: Option<f64>,
    pub small_manifest_size: Option<Bytes>,
    pub max_small_manifests: Option<u64>,
    pub critical_manifests: Option<u64>,
    pub max_metadata_files: Option<u64>,
    pub dag_interval: Option<Dur>,
    pub incremental_over: Option<Dur>,
    pub incremental_share: Option<f64>,
}

#[derive(Debug, Deserialize, Clone, PartialEq, Eq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MaintenanceFile {
    pub table: String,
    pub dag_id: String,
    pub interval: Option<Dur>,
}

#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AuthKind {
    None,
    Basic,
    Bearer,
    // Trino's OAuth2 external authentication (`floe login`). A plain comment: a doc
    // comment would make the schema a oneOf instead of one enum.
    #[serde(rename = "oauth2")]
    OAuth2,
}

impl AuthKind {
    /// The kind named on the command line (`--auth`).
    pub fn parse(s: &str) -> Result<AuthKind, UnknownAuth> {
        match s.trim().to_ascii_lowercase().as_str() {
            "none" => Ok(AuthKind::None),
            "basic" => Ok(AuthKind::Basic),
            "bearer" => Ok(AuthKind::Bearer),
            "oauth2" => Ok(AuthKind::OAuth2),
            other => Err(UnknownAuth(other.to_string())),
        }
    }
}

/// An `--auth` that names no kind floe knows.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown auth {0:?}: expected none, basic, bearer or oauth2")]
pub struct UnknownAuth(pub String);

#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq, Default, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AirflowApi {
    #[default]
    Auto,
    V1,
    V2,
}

pub(super) fn read_file(path: &Path) -> Result<FileConfig, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Unreadable {
        file: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    parse_file(&text, path)
}

/// The text of the config file at `path`.
pub(super) fn parse_file(text: &str, path: &Path) -> Result<FileConfig, ConfigError> {
    toml::from_str(text).map_err(|e| ConfigError::Syntax {
        file: path.to_path_buf(),
        reason: e.to_string().trim_end().to_string(),
    })
}

pub(super) fn merge_trino(base: TrinoFile, over: TrinoFile) -> TrinoFile {
    TrinoFile {
        url: over.url.or(base.url),
        user: over.user.or(base.user),
        catalog: over.catalog.or(base.catalog),
        schemas: over.schemas.or(base.schemas),
        tables: over.tables.or(base.tables),
        auth: over.auth.or(base.auth),
        password_env: over.password_env.or(base.password_env),
        password_command: over.password_command.or(base.password_command),
        token_env: over.token_env.or(base.token_env),
        token_command: over.token_command.or(base.token_command),
        ca_file: over.ca_file.or(base.ca_file),
        insecure_skip_verify: over.insecure_skip_verify.or(base.insecure_skip_verify),
        session: match (base.session, over.session) {
            (Some(mut b), Some(o)) => {
                b.extend(o);
                Some(b)
            }
            (b, o) => o.or(b),
        },
        source: over.source.or(base.source),
        client_tags: over.client_tags.or(base.client_tags),
        max_response_size: over.max_response_size.or(base.max_response_size),
        oauth2_login_timeout: over.oauth2_login_timeout.or(base.oauth2_login_timeout),
        oauth2_token_lifetime: over.oauth2_token_lifetime.or(base.oauth2_token_lifetime),
    }
}

pub(super) fn merge_airflow(base: AirflowFile, over: AirflowFile) -> AirflowFile {
    AirflowFile {
        url: over.url.or(base.url),
        user: over.user.or(base.user),
        password_env: over.password_env.or(base.password_env),
        password_command: over.password_command.or(base.password_command),
        token_env: over.token_env.or(base.token_env),
        token_command: over.token_command.or(base.token_command),
        api: over.api.or(base.api),
        ca_file: over.ca_file.or(base.ca_file),
        insecure_skip_verify: over.insecure_skip_verify.or(base.insecure_skip_verify),
        dag_tags: over.dag_tags.or(base.dag_tags),
        dag_ids: over.dag_ids.or(base.dag_ids),
        runs: over.runs.or(base.runs),
        test_connections: over.test_connections.or(base.test_connections),
        max_response_size: over.max_response_size.or(base.max_response_size),
        max_log_size: over.max_log_size.or(base.max_log_size),
    }
}

/// The tab floe opens on: `auto` (the default) is the Triage tab, left for the Tables tab
/// once the first refresh finds no incident.
#[derive(Debug, Default, Deserialize, Clone, Copy, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum StartTab {
    // A doc comment here would make the schema a `oneOf` the usual validators handle
    // less well than a plain enum: the meaning is on the type.
    #[default]
    Auto,
    Triage,
    Tables,
    Dags,
}
