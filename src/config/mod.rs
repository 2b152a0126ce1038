//! Configuration: profiles, layering (defaults < file < `FLOE_*` env < flags), secrets.
//!
//! The file is TOML (`config.example.toml` documents every key). Unknown keys are errors
//! that name the key and the file; secrets never live in the file: `password_env`,
//! `password_command` or the `FLOE_*_PASSWORD` variables.

pub mod keys;
pub mod units;
pub mod uri;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use secrecy::SecretString;
use serde::Deserialize;
use url::Url;

use crate::health::HealthConfig;
use crate::lakehouse::sql::split_table_name;
pub use keys::KeySpec;
pub use units::{Bytes, Dur};

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

// ---------------------------------------------------------------------------------------
// File model (every struct rejects unknown keys)
// ---------------------------------------------------------------------------------------

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    pub default_profile: Option<String>,
    pub readonly: Option<bool>,
    pub refresh: Option<Dur>,
    pub max_concurrent_queries: Option<usize>,
    pub query_timeout: Option<Dur>,
    pub audit_log: Option<PathBuf>,
    pub export_dir: Option<PathBuf>,
    pub mouse: Option<bool>,
    pub trino: Option<TrinoFile>,
    pub airflow: Option<AirflowFile>,
    pub health: Option<HealthFile>,
    pub keys: Option<BTreeMap<String, KeySpec>>,
    pub maintenance: Option<Vec<MaintenanceFile>>,
    pub profiles: Option<BTreeMap<String, ProfileFile>>,
}

#[derive(Debug, Default, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct ProfileFile {
    pub readonly: Option<bool>,
    pub refresh: Option<Dur>,
    pub trino: Option<TrinoFile>,
    pub airflow: Option<AirflowFile>,
    pub health: Option<HealthFile>,
    pub maintenance: Option<Vec<MaintenanceFile>>,
}

#[derive(Debug, Default, Deserialize, Clone)]
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
}

#[derive(Debug, Default, Deserialize, Clone)]
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
}

#[derive(Debug, Default, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct HealthFile {
    pub target_file_size: Option<Bytes>,
    pub small_file_ratio: Option<f64>,
    pub min_small_files: Option<u64>,
    pub compaction_warn: Option<Dur>,
    pub compaction_critical: Option<Dur>,
    pub snapshot_retention: Option<Dur>,
    pub max_snapshots: Option<u64>,
    pub delete_file_ratio_warn: Option<f64>,
    pub delete_file_ratio_critical: Option<f64>,
    pub dag_interval: Option<Dur>,
}

#[derive(Debug, Deserialize, Clone, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct MaintenanceFile {
    pub table: String,
    pub dag_id: String,
    pub interval: Option<Dur>,
}

#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum AuthKind {
    None,
    Basic,
    Bearer,
}

#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum AirflowApi {
    #[default]
    Auto,
    V1,
    V2,
}

// ---------------------------------------------------------------------------------------
// Resolved settings
// ---------------------------------------------------------------------------------------

#[derive(Clone)]
pub enum Auth {
    None,
    Basic { password: SecretString },
    Bearer { token: SecretString },
}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Auth::None => "none",
            Auth::Basic { .. } => "basic(***)",
            Auth::Bearer { .. } => "bearer(***)",
        })
    }
}

#[derive(Clone, Debug)]
pub struct TlsSettings {
    pub ca_file: Option<PathBuf>,
    pub insecure_skip_verify: bool,
}

#[derive(Clone, Debug)]
pub struct TrinoSettings {
    pub url: Url,
    pub user: String,
    pub catalog: String,
    pub schemas: Vec<String>,
    pub tables: Vec<String>,
    pub auth: Auth,
    pub tls: TlsSettings,
    pub session: BTreeMap<String, String>,
    pub source: String,
    pub client_tags: Vec<String>,
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
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MaintenanceMapping {
    /// `catalog.schema.table`
    pub table: String,
    pub dag_id: String,
    pub interval: Option<Duration>,
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
    pub query_timeout: Duration,
    pub health: HealthConfig,
    pub maintenance: Vec<MaintenanceMapping>,
    pub keys: BTreeMap<String, KeySpec>,
    pub audit_log: PathBuf,
    pub export_dir: PathBuf,
    pub log_dir: PathBuf,
    pub mouse: bool,
    /// Every profile the file defines (for `:profile NAME`).
    pub profiles: Vec<String>,
}

pub const MIN_REFRESH: Duration = Duration::from_secs(5);

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
    pub refresh: Option<Dur>,
    pub ca_file: Option<PathBuf>,
    pub insecure_skip_verify: bool,
}

/// Where floe keeps things, following XDG (`directories`).
#[derive(Clone, Debug)]
pub struct Dirs {
    pub config: PathBuf,
    pub state: PathBuf,
    pub data: PathBuf,
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
            if let Some(s) = p.state_dir() {
                d.state = s.to_path_buf();
            }
        }
        d
    }
}

/// Load with the process environment.
pub fn load(over: &Overrides) -> Result<Settings, ConfigError> {
    let env = |k: &str| std::env::var(k).ok();
    load_with(over, &env, &Dirs::system())
}

/// Load with an explicit environment (tests).
pub fn load_with(
    over: &Overrides,
    env: &dyn Fn(&str) -> Option<String>,
    dirs: &Dirs,
) -> Result<Settings, ConfigError> {
    let env_nonempty = |k: &str| env(k).filter(|v| !v.trim().is_empty());

    // 1. Which file.
    let (path, required) = if let Some(p) = &over.config {
        (Some(p.clone()), true)
    } else if let Some(p) = env_nonempty("FLOE_CONFIG") {
        (Some(PathBuf::from(p)), true)
    } else {
        (Some(dirs.config.join("config.toml")), false)
    };
    let (file, file_path) = match path {
        Some(p) if p.exists() => (read_file(&p)?, Some(p)),
        Some(p) if required => {
            return Err(err(format!("config file {} does not exist", p.display())));
        }
        _ => (FileConfig::default(), None),
    };
    let where_ = || {
        file_path
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "(no config file)".into())
    };

    // 2. Which profile.
    let profiles: BTreeMap<String, ProfileFile> = file.profiles.clone().unwrap_or_default();
    let wanted = over
        .profile
        .clone()
        .or_else(|| env_nonempty("FLOE_PROFILE"))
        .or_else(|| file.default_profile.clone());
    let (profile_name, profile) = match wanted {
        Some(name) => match profiles.get(&name) {
            Some(p) => (name, p.clone()),
            // The implicit profile needs no section.
            None if name == "default" => (name, ProfileFile::default()),
            None => {
                let known: Vec<_> = profiles.keys().cloned().collect();
                return Err(err(format!(
                    "profile {name:?} is not defined in {} (profiles: {})",
                    where_(),
                    if known.is_empty() {
                        "none".into()
                    } else {
                        known.join(", ")
                    }
                )));
            }
        },
        None => match profiles.get("default") {
            Some(p) => ("default".into(), p.clone()),
            None => ("default".into(), ProfileFile::default()),
        },
    };
    let key_in = |k: &str| format!("{k} (profile {profile_name:?} in {})", where_());

    // 3. Trino: top-level section < profile section < env < flags.
    let t = merge_trino(
        file.trino.clone().unwrap_or_default(),
        profile.trino.clone().unwrap_or_default(),
    );
    let mut endpoint = uri::TrinoEndpoint::default();
    let url_text = over
        .trino
        .clone()
        .or_else(|| env_nonempty("FLOE_TRINO_URL"))
        .or_else(|| t.url.clone());
    let url_origin = if over.trino.is_some() {
        "--trino".to_string()
    } else if env_nonempty("FLOE_TRINO_URL").is_some() {
        "FLOE_TRINO_URL".to_string()
    } else {
        key_in("trino.url")
    };
    if let Some(text) = &url_text {
        endpoint = uri::parse_trino_uri(text).map_err(|e| err(format!("{url_origin}: {e}")))?;
    }
    let url = endpoint.url.clone().ok_or_else(|| {
        err(format!(
            "no Trino URL: pass --trino URL, set FLOE_TRINO_URL, or set trino.url in {}",
            file_path
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| dirs.config.join("config.toml").display().to_string())
        ))
    })?;
    let user = over
        .user
        .clone()
        .or_else(|| env_nonempty("FLOE_TRINO_USER"))
        .or_else(|| endpoint.user.clone())
        .or_else(|| t.user.clone())
        .or_else(|| env_nonempty("USER"))
        .unwrap_or_else(|| "floe".into());
    let catalog = over
        .catalog
        .clone()
        .or_else(|| env_nonempty("FLOE_TRINO_CATALOG"))
        .or_else(|| endpoint.catalog.clone())
        .or_else(|| t.catalog.clone())
        .unwrap_or_else(|| "iceberg".into());
    let schemas = if !over.schemas.is_empty() {
        over.schemas.clone()
    } else if let Some(s) = env_nonempty("FLOE_SCHEMAS") {
        s.split(',')
            .map(|x| x.trim().to_string())
            .filter(|x| !x.is_empty())
            .collect()
    } else if let Some(s) = &endpoint.schema {
        vec![s.clone()]
    } else {
        t.schemas.clone().unwrap_or_default()
    };
    let tables = if !over.tables.is_empty() {
        over.tables.clone()
    } else {
        t.tables.clone().unwrap_or_default()
    };

    let password = secret(
        env,
        "FLOE_TRINO_PASSWORD",
        t.password_env.as_deref(),
        t.password_command.as_deref(),
        &key_in("trino.password_env"),
        &key_in("trino.password_command"),
    )?;
    let token = secret(
        env,
        "FLOE_TRINO_TOKEN",
        t.token_env.as_deref(),
        t.token_command.as_deref(),
        &key_in("trino.token_env"),
        &key_in("trino.token_command"),
    )?;
    let auth_kind = t.auth.unwrap_or(if token.is_some() {
        AuthKind::Bearer
    } else if password.is_some() {
        AuthKind::Basic
    } else {
        AuthKind::None
    });
    let auth = match auth_kind {
        AuthKind::None => Auth::None,
        AuthKind::Basic => {
            let password = password.ok_or_else(|| {
                err(format!(
                    "{}: basic auth needs a password: set FLOE_TRINO_PASSWORD, trino.password_env or trino.password_command",
                    key_in("trino.auth")
                ))
            })?;
            if url.scheme() != "https" {
                return Err(err(format!(
                    "{}: Trino accepts passwords only over HTTPS, but the URL is {url}",
                    key_in("trino.auth")
                )));
            }
            Auth::Basic { password }
        }
        AuthKind::Bearer => Auth::Bearer {
            token: token.ok_or_else(|| {
                err(format!(
                    "{}: bearer auth needs a token: set FLOE_TRINO_TOKEN, trino.token_env or trino.token_command",
                    key_in("trino.auth")
                ))
            })?,
        },
    };
    let ca_file = over.ca_file.clone().or_else(|| t.ca_file.clone());
    if let Some(ca) = &ca_file
        && !ca.exists()
    {
        return Err(err(format!(
            "{}: CA file {} does not exist",
            key_in("trino.ca_file"),
            ca.display()
        )));
    }
    let trino = TrinoSettings {
        url,
        user,
        catalog,
        schemas,
        tables,
        auth,
        tls: TlsSettings {
            ca_file,
            insecure_skip_verify: over.insecure_skip_verify
                || endpoint.insecure_skip_verify
                || t.insecure_skip_verify.unwrap_or(false),
        },
        session: t.session.clone().unwrap_or_default(),
        source: t.source.clone().unwrap_or_else(|| "floe".into()),
        client_tags: t.client_tags.clone().unwrap_or_default(),
    };

    // 4. Airflow (optional).
    let a = merge_airflow(
        file.airflow.clone().unwrap_or_default(),
        profile.airflow.clone().unwrap_or_default(),
    );
    let airflow_url = over
        .airflow
        .clone()
        .or_else(|| env_nonempty("FLOE_AIRFLOW_URL"))
        .or_else(|| a.url.clone());
    let airflow = match airflow_url {
        None => None,
        Some(text) => {
            let url = Url::parse(text.trim()).map_err(|e| {
                err(format!(
                    "{}: invalid Airflow URL {text:?}: {e}",
                    key_in("airflow.url")
                ))
            })?;
            if !matches!(url.scheme(), "http" | "https") {
                return Err(err(format!(
                    "{}: invalid Airflow URL {text:?}: expected http:// or https://",
                    key_in("airflow.url")
                )));
            }
            if url.password().is_some() {
                return Err(err(format!(
                    "{}: the Airflow URL contains a password: use FLOE_AIRFLOW_PASSWORD, airflow.password_env or airflow.password_command",
                    key_in("airflow.url")
                )));
            }
            let password = secret(
                env,
                "FLOE_AIRFLOW_PASSWORD",
                a.password_env.as_deref(),
                a.password_command.as_deref(),
                &key_in("airflow.password_env"),
                &key_in("airflow.password_command"),
            )?;
            let token = secret(
                env,
                "FLOE_AIRFLOW_TOKEN",
                a.token_env.as_deref(),
                a.token_command.as_deref(),
                &key_in("airflow.token_env"),
                &key_in("airflow.token_command"),
            )?;
            let user = over
                .airflow_user
                .clone()
                .or_else(|| env_nonempty("FLOE_AIRFLOW_USER"))
                .or_else(|| a.user.clone())
                .or_else(|| (!url.username().is_empty()).then(|| url.username().to_string()));
            let mut clean = url.clone();
            let _ = clean.set_username("");
            Some(AirflowSettings {
                url: clean,
                user,
                password,
                token,
                api: a.api.unwrap_or_default(),
                tls: TlsSettings {
                    ca_file: a.ca_file.clone(),
                    insecure_skip_verify: a.insecure_skip_verify.unwrap_or(false),
                },
                dag_tags: a
                    .dag_tags
                    .clone()
                    .unwrap_or_else(|| vec!["maintenance".into()]),
                dag_ids: a.dag_ids.clone().unwrap_or_default(),
                runs: a.runs.unwrap_or(25).clamp(1, 100),
                test_connections: a.test_connections.unwrap_or(true),
            })
        }
    };

    // 5. Everything else.
    let readonly = over.readonly
        || env_bool(env, "FLOE_READONLY")?.unwrap_or(false)
        || profile.readonly.or(file.readonly).unwrap_or(false);
    let refresh = match over
        .refresh
        .or(env_dur(env, "FLOE_REFRESH")?)
        .or(profile.refresh)
        .or(file.refresh)
    {
        Some(d) => d.0,
        None => Duration::from_secs(60),
    };
    if refresh < MIN_REFRESH {
        return Err(err(format!(
            "refresh {} is below the minimum of 5s ({})",
            humantime::format_duration(refresh),
            key_in("refresh")
        )));
    }
    let max_concurrent_queries = file.max_concurrent_queries.unwrap_or(4);
    if !(1..=64).contains(&max_concurrent_queries) {
        return Err(err(format!(
            "max_concurrent_queries = {max_concurrent_queries} in {}: expected 1 to 64",
            where_()
        )));
    }
    let query_timeout = file
        .query_timeout
        .map(|d| d.0)
        .unwrap_or(Duration::from_secs(300));
    let health = build_health(&file.health, &profile.health, &key_in("health"))?;
    let mut maintenance = Vec::new();
    for m in file
        .maintenance
        .iter()
        .flatten()
        .chain(profile.maintenance.iter().flatten())
    {
        let parts = split_table_name(&m.table);
        if parts.len() != 3 {
            return Err(err(format!(
                "maintenance table {:?} in {}: expected catalog.schema.table",
                m.table,
                where_()
            )));
        }
        maintenance.push(MaintenanceMapping {
            table: m.table.clone(),
            dag_id: m.dag_id.clone(),
            interval: m.interval.map(|d| d.0),
        });
    }
    let mut airflow = airflow;
    if let Some(a) = &mut airflow {
        // The DAGs of [[maintenance]] are maintenance DAGs whatever their tags.
        for m in &maintenance {
            if !a.dag_ids.contains(&m.dag_id) {
                a.dag_ids.push(m.dag_id.clone());
            }
        }
    }
    let keys = file.keys.clone().unwrap_or_default();
    keys::bind(&keys).map_err(|e| err(format!("{e} in [keys] of {}", where_())))?;

    Ok(Settings {
        profile: profile_name,
        file: file_path,
        trino,
        airflow,
        readonly,
        refresh,
        max_concurrent_queries,
        query_timeout,
        health,
        maintenance,
        keys,
        audit_log: file
            .audit_log
            .clone()
            .unwrap_or_else(|| dirs.state.join("audit.jsonl")),
        export_dir: file
            .export_dir
            .clone()
            .unwrap_or_else(|| dirs.data.join("exports")),
        log_dir: dirs.state.clone(),
        mouse: file.mouse.unwrap_or(false),
        profiles: profiles.keys().cloned().collect(),
    })
}

fn read_file(path: &Path) -> Result<FileConfig, ConfigError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| err(format!("cannot read config file {}: {e}", path.display())))?;
    toml::from_str(&text).map_err(|e| {
        err(format!(
            "config file {}: {}",
            path.display(),
            e.to_string().trim_end()
        ))
    })
}

fn merge_trino(base: TrinoFile, over: TrinoFile) -> TrinoFile {
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
    }
}

fn merge_airflow(base: AirflowFile, over: AirflowFile) -> AirflowFile {
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
    }
}

fn build_health(
    base: &Option<HealthFile>,
    over: &Option<HealthFile>,
    key: &str,
) -> Result<HealthConfig, ConfigError> {
    let mut h = HealthConfig::default();
    for f in [base, over].into_iter().flatten() {
        if let Some(v) = f.target_file_size {
            h.target_file_size = v.0;
        }
        if let Some(v) = f.small_file_ratio {
            h.small_file_ratio = v;
        }
        if let Some(v) = f.min_small_files {
            h.min_small_files = v;
        }
        if let Some(v) = f.compaction_warn {
            h.compaction_warn = v.0;
        }
        if let Some(v) = f.compaction_critical {
            h.compaction_critical = v.0;
        }
        if let Some(v) = f.snapshot_retention {
            h.snapshot_retention = v.0;
        }
        if let Some(v) = f.max_snapshots {
            h.max_snapshots = v;
        }
        if let Some(v) = f.delete_file_ratio_warn {
            h.delete_file_ratio_warn = v;
        }
        if let Some(v) = f.delete_file_ratio_critical {
            h.delete_file_ratio_critical = v;
        }
        if let Some(v) = f.dag_interval {
            h.dag_interval = v.0;
        }
    }
    if !(h.small_file_ratio > 0.0 && h.small_file_ratio <= 1.0) {
        return Err(err(format!(
            "{key}.small_file_ratio = {}: expected a ratio in (0, 1]",
            h.small_file_ratio
        )));
    }
    if h.target_file_size == 0 {
        return Err(err(format!("{key}.target_file_size must be above 0")));
    }
    if h.compaction_critical < h.compaction_warn {
        return Err(err(format!(
            "{key}.compaction_critical ({}) is shorter than compaction_warn ({})",
            humantime::format_duration(h.compaction_critical),
            humantime::format_duration(h.compaction_warn)
        )));
    }
    if h.delete_file_ratio_critical < h.delete_file_ratio_warn {
        return Err(err(format!(
            "{key}.delete_file_ratio_critical is below delete_file_ratio_warn"
        )));
    }
    Ok(h)
}

/// Resolve a secret: the fixed `FLOE_*` variable, then `*_env`, then `*_command`.
fn secret(
    env: &dyn Fn(&str) -> Option<String>,
    fixed_var: &str,
    env_key: Option<&str>,
    command: Option<&str>,
    env_key_name: &str,
    command_key_name: &str,
) -> Result<Option<SecretString>, ConfigError> {
    if let Some(v) = env(fixed_var).filter(|v| !v.is_empty()) {
        return Ok(Some(SecretString::from(v)));
    }
    if let Some(var) = env_key {
        return match env(var).filter(|v| !v.is_empty()) {
            Some(v) => Ok(Some(SecretString::from(v))),
            None => Err(err(format!(
                "{env_key_name}: environment variable {var} is not set"
            ))),
        };
    }
    if let Some(cmd) = command {
        let out = Command::new("sh")
            .arg("-c")
            .arg(cmd)
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| err(format!("{command_key_name}: cannot run {cmd:?}: {e}")))?;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            return Err(err(format!(
                "{command_key_name}: {cmd:?} exited with {}: {}",
                out.status,
                stderr.trim()
            )));
        }
        let text = String::from_utf8_lossy(&out.stdout)
            .trim_end_matches(['\n', '\r'])
            .to_string();
        if text.is_empty() {
            return Err(err(format!("{command_key_name}: {cmd:?} printed nothing")));
        }
        return Ok(Some(SecretString::from(text)));
    }
    Ok(None)
}

fn env_bool(env: &dyn Fn(&str) -> Option<String>, var: &str) -> Result<Option<bool>, ConfigError> {
    match env(var).map(|v| v.trim().to_ascii_lowercase()) {
        None => Ok(None),
        Some(v) if v.is_empty() => Ok(None),
        Some(v) => match v.as_str() {
            "1" | "true" | "yes" | "on" => Ok(Some(true)),
            "0" | "false" | "no" | "off" => Ok(Some(false)),
            _ => Err(err(format!("{var}={v}: expected true or false"))),
        },
    }
}

fn env_dur(env: &dyn Fn(&str) -> Option<String>, var: &str) -> Result<Option<Dur>, ConfigError> {
    match env(var).filter(|v| !v.trim().is_empty()) {
        None => Ok(None),
        Some(v) => Dur::parse(&v)
            .map(Some)
            .map_err(|e| err(format!("{var}: {e}"))),
    }
}

#[cfg(test)]
mod tests;
