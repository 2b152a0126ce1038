//! Resolved settings: what the rest of floe reads once the layers are merged.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use secrecy::SecretString;
use url::Url;

use super::file::AirflowApi;
use super::health::HealthConfig;
use super::keys::Bindings;
use crate::units::Dur;

#[derive(Clone)]
pub enum Auth {
    None,
    Basic {
        password: SecretString,
    },
    Bearer {
        token: SecretString,
    },
    /// Trino's OAuth2 external authentication: tokens come from a login flow and a cache.
    OAuth2(OAuth2Settings),
}

/// `auth = "oauth2"`: where tokens are cached and how long a login may take.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OAuth2Settings {
    /// `$XDG_CACHE_HOME/floe/oauth2`: one file (0600) per coordinator and user.
    pub cache_dir: PathBuf,
    /// How long floe waits for the operator to finish the login in a browser
    /// (`trino.oauth2_login_timeout`).
    pub login_timeout: Duration,
    /// The lifetime of a token that is not a JWT with an `exp` claim
    /// (`trino.oauth2_token_lifetime`).
    pub token_lifetime: Duration,
}

/// Default of `trino.oauth2_login_timeout`.
pub const DEFAULT_OAUTH2_LOGIN_TIMEOUT: Duration = Duration::from_secs(300);
/// Default of `trino.oauth2_token_lifetime`.
pub const DEFAULT_OAUTH2_TOKEN_LIFETIME: Duration = Duration::from_secs(3600);

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Auth::None => "none",
            Auth::Basic { .. } => "basic(***)",
            Auth::Bearer { .. } => "bearer(***)",
            Auth::OAuth2(_) => "oauth2",
        })
    }
}

/// Tables probed per statement by default (`[refresh] probe_batch`): on Trino 476 a probe of 10
/// plans in 0.08-0.25 s, one of 50 in 1.9-3.1 s (a wide `UNION ALL` plans superlinearly).
pub const DEFAULT_PROBE_BATCH: usize = 10;

/// The stats cache's file name, in the cache directory.
pub const STATS_CACHE_FILE: &str = "stats.json";

/// A server's TLS settings (`tls.rs` holds them: the client layer below uses them).
pub use crate::tls::TlsSettings;

#[derive(Clone, Debug)]
pub struct TrinoSettings {
    pub url: Url,
    pub user: String,
    /// The catalog read (and unqualified table names' catalog): the first `trino.catalog`
    /// names.
    pub catalog: String,
    /// Further catalogs read beside it (`trino.catalog = "iceberg,delta"`; `*`: every
    /// other Iceberg and Delta Lake catalog of the cluster).
    pub more_catalogs: Vec<String>,
    /// No layer named a catalog: every Iceberg and Delta Lake catalog of the cluster is
    /// read (`iceberg` first when it has one), as far as its catalog list can be read.
    pub catalogs_by_default: bool,
    pub schemas: Vec<String>,
    pub tables: Vec<String>,
    pub auth: Auth,
    pub tls: TlsSettings,
    pub session: BTreeMap<String, String>,
    pub source: String,
    pub client_tags: Vec<String>,
    /// The longest answer read from Trino, decoded (`trino.max_response_size`).
    pub max_response_size: u64,
}

#[derive(Clone, Debug)]
pub struct AirflowSettings {
    pub url: Url,
    pub user: Option<String>,
    pub password: Option<SecretString>,
    pub token: Option<SecretString>,
    pub api: AirflowApi,
    pub tls: TlsSettings,
    pub dag_tags: Vec<String>,
    pub dag_ids: Vec<String>,
    pub runs: usize,
    pub test_connections: bool,
    /// The longest JSON answer read from Airflow, decoded (`airflow.max_response_size`).
    pub max_response_size: u64,
    /// The most of a task log kept, its end (`airflow.max_log_size`).
    pub max_log_size: u64,
}

/// Default of `trino.max_response_size` and `airflow.max_response_size`.
pub const DEFAULT_MAX_RESPONSE_SIZE: u64 = 32 * 1024 * 1024;
/// Default of `airflow.max_log_size`.
pub const DEFAULT_MAX_LOG_SIZE: u64 = 8 * 1024 * 1024;

/// `[[maintenance]]`: a table's maintenance DAG (the type lives with the mapping rules).
/// A configured `[[maintenance]]` mapping: the table's maintenance DAG and how often it
/// should succeed (`health::mapping` maps the rest by guessing).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MaintenanceMapping {
    /// `catalog.schema.table`
    pub table: String,
    pub dag_id: String,
    pub interval: Option<std::time::Duration>,
}

#[derive(Clone, Debug)]
pub struct Settings {
    pub profile: String,
    pub file: Option<PathBuf>,
    pub trino: TrinoSettings,
    pub airflow: Option<AirflowSettings>,
    pub readonly: bool,
    pub refresh: Duration,
    pub max_concurrent_queries: usize,
    /// Tables per change-probe statement (`probe_batch`).
    pub probe_batch: usize,
    /// How long after the last full read of every table the next refresh reads every
    /// table again, whatever the change probe says (`full_refresh_every`; `None`: never).
    pub full_refresh_every: Option<Duration>,
    /// What the steady refreshes may cost the coordinator per minute, planning plus task
    /// CPU (`coordinator_budget`; `None`: no limit).
    pub coordinator_budget: Option<Duration>,
    /// The last stats per table, for a warm start (`$XDG_CACHE_HOME/floe/stats.json`).
    pub stats_cache: PathBuf,
    pub query_timeout: Duration,
    pub health: HealthConfig,
    pub maintenance: Vec<MaintenanceMapping>,
    /// `[keys]` resolved over the defaults.
    pub keys: Bindings,
    pub audit_log: PathBuf,
    pub export_dir: PathBuf,
    pub log_dir: PathBuf,
    pub mouse: bool,
    /// ASCII only (`--ascii`, `ascii`); `None`: from the locale.
    pub ascii: Option<bool>,
    /// How long a confirmation is on screen before it takes `confirm` (`confirm_dwell`).
    pub confirm_dwell: Duration,
    /// The tab floe opens on.
    pub start_tab: super::StartTab,
    /// Every profile the file defines (for `:profile NAME`).
    pub profiles: Vec<String>,
}

impl Settings {
    /// What the operator must see at a glance about how floe connects (the TUI header,
    /// the top of `floe check`): today, TLS verification turned off.
    pub fn warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        if self.trino.tls.insecure_skip_verify {
            w.push(format!(
                "TLS certificate verification is OFF for Trino {} (insecure_skip_verify or verify=false in the URI): anyone on the path can read queries and credentials",
                self.trino.url
            ));
        }
        if let Some(a) = self.airflow.as_ref().filter(|a| a.tls.insecure_skip_verify) {
            w.push(format!(
                "TLS certificate verification is OFF for Airflow {} (airflow.insecure_skip_verify)",
                a.url
            ));
        }
        w
    }
}

pub const MIN_REFRESH: Duration = Duration::from_secs(5);
/// The longest refresh interval (`refresh`, `:refresh`): a longer one is surely a typo, and
/// `300000y` would not even fit a date.
pub const MAX_REFRESH: Duration = Duration::from_secs(86_400);

/// What the command line says (every field optional; flags win over everything).
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    pub config: Option<PathBuf>,
    pub profile: Option<String>,
    pub trino: Option<String>,
    pub user: Option<String>,
    pub catalog: Option<String>,
    pub schemas: Vec<String>,
    pub tables: Vec<String>,
    pub airflow: Option<String>,
    pub airflow_user: Option<String>,
    pub readonly: bool,
    /// `--ascii`: draw ASCII whatever the locale says.
    pub ascii: bool,
    pub refresh: Option<Dur>,
    pub ca_file: Option<PathBuf>,
    pub insecure_skip_verify: bool,
    /// `--auth`: Trino's authentication kind, over `trino.auth`.
    pub auth: Option<super::file::AuthKind>,
}

/// Where floe keeps things, following XDG (`directories`).
#[derive(Clone, Debug)]
pub struct Dirs {
    pub config: PathBuf,
    pub state: PathBuf,
    pub data: PathBuf,
    /// `$XDG_CACHE_HOME/floe`: what can be thrown away (OAuth2 tokens).
    pub cache: PathBuf,
}

impl Dirs {
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Dirs {
        let home = env("HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("."));
        let xdg = |var: &str, fallback: &str| {
            env(var)
                .filter(|v| !v.is_empty() && Path::new(v).is_absolute())
                .map(PathBuf::from)
                .unwrap_or_else(|| home.join(fallback))
                .join("floe")
        };
        Dirs {
            config: xdg("XDG_CONFIG_HOME", ".config"),
            state: xdg("XDG_STATE_HOME", ".local/state"),
            data: xdg("XDG_DATA_HOME", ".local/share"),
            cache: xdg("XDG_CACHE_HOME", ".cache"),
        }
    }

    /// The real process environment (through `directories` when XDG vars are unset).
    pub fn system() -> Dirs {
        let env = |k: &str| std::env::var(k).ok();
        let mut d = Dirs::from_env(&env);
        if std::env::var_os("XDG_CONFIG_HOME").is_none()
            && let Some(p) = directories::ProjectDirs::from("", "", "floe")
        {
            d.config = p.config_dir().to_path_buf();
            d.data = p.data_dir().to_path_buf();
        }
        if std::env::var_os("XDG_CACHE_HOME").is_none()
            && let Some(p) = directories::ProjectDirs::from("", "", "floe")
        {
            d.cache = p.cache_dir().to_path_buf();
            if let Some(s) = p.state_dir() {
                d.state = s.to_path_buf();
            }
        }
        d
    }
}
