//! Loading: which file, which profile, then each section layered as defaults < file <
//! profile < `FLOE_*` env < flags. Every error names the key and where it came from.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use url::Url;

use super::file::{AuthKind, FileConfig, HealthFile, ProfileFile, merge_airflow, merge_trino};
use super::secrets::{SecretKind, env_bool, env_dur, secret};
use super::settings::{
    AirflowSettings, Auth, DEFAULT_MAX_LOG_SIZE, DEFAULT_MAX_RESPONSE_SIZE,
    DEFAULT_OAUTH2_LOGIN_TIMEOUT, DEFAULT_OAUTH2_TOKEN_LIFETIME, Dirs, MAX_REFRESH, MIN_REFRESH,
    MaintenanceMapping, OAuth2Settings, Overrides, Settings, TlsSettings, TrinoSettings,
};
use super::units::Bytes;
use super::{ConfigError, err, keys, uri};
use crate::health::HealthConfig;
use crate::lakehouse::sql::split_table_name;

type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// Load with the process environment.
pub fn load(over: &Overrides) -> Result<Settings, ConfigError> {
    let env = |k: &str| std::env::var(k).ok();
    load_with(over, &env, &Dirs::system())
}

/// Load with an explicit environment (tests).
pub fn load_with(over: &Overrides, env: Env, dirs: &Dirs) -> Result<Settings, ConfigError> {
    let (file, file_path) = choose_file(over, env, dirs)?;
    load_file(over, env, dirs, file, file_path)
}

/// Load as if the config file at `origin` held `text` (`--config` and `FLOE_CONFIG` are
/// not consulted; `origin` only names the file in messages). For tests and fuzzing.
pub fn load_from_str(
    text: &str,
    origin: &Path,
    over: &Overrides,
    env: Env,
    dirs: &Dirs,
) -> Result<Settings, ConfigError> {
    let file = super::file::parse_file(text, origin)?;
    load_file(over, env, dirs, file, Some(origin.to_path_buf()))
}

/// Steps 2 and 3: the profile, then every section, from the chosen file.
fn load_file(
    over: &Overrides,
    env: Env,
    dirs: &Dirs,
    file: FileConfig,
    file_path: Option<PathBuf>,
) -> Result<Settings, ConfigError> {
    let (profile_name, profile) = choose_profile(over, env, &file, &file_path)?;
    let cx = Layers {
        over,
        env,
        dirs,
        file,
        file_path,
        profile_name,
        profile,
    };
    let trino = cx.trino()?;
    let mut airflow = cx.airflow()?;
    let (readonly, refresh, max_concurrent_queries) = cx.general()?;
    let query_timeout = cx
        .file
        .query_timeout
        .map(|d| d.0)
        .unwrap_or(Duration::from_secs(300));
    let health = build_health(&cx.file.health, &cx.profile.health, &cx.key_in("health"))?;
    let maintenance = cx.maintenance()?;
    if let Some(a) = &mut airflow {
        // The DAGs of [[maintenance]] are maintenance DAGs whatever their tags.
        for m in &maintenance {
            if !a.dag_ids.contains(&m.dag_id) {
                a.dag_ids.push(m.dag_id.clone());
            }
        }
    }
    // The key bindings are resolved once, here: the TUI's keymap is built from them.
    let key_bindings = keys::bind(&cx.file.keys.clone().unwrap_or_default())
        .map_err(|e| err(format!("{e} in [keys] of {}", cx.where_())))?;

    let Layers {
        file,
        file_path,
        profile_name,
        ..
    } = cx;
    let profiles = file.profiles.clone().unwrap_or_default();
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
        keys: key_bindings,
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

fn env_nonempty(env: Env, k: &str) -> Option<String> {
    env(k).filter(|v| !v.trim().is_empty())
}

/// The config file for messages, or `(no config file)`.
fn describe(file_path: &Option<PathBuf>) -> String {
    file_path
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "(no config file)".into())
}

/// Step 1: which file (`--config`, `FLOE_CONFIG`, or the XDG one if it exists).
fn choose_file(
    over: &Overrides,
    env: Env,
    dirs: &Dirs,
) -> Result<(FileConfig, Option<PathBuf>), ConfigError> {
    let (path, required) = if let Some(p) = &over.config {
        (Some(p.clone()), true)
    } else if let Some(p) = env_nonempty(env, "FLOE_CONFIG") {
        (Some(PathBuf::from(p)), true)
    } else {
        (Some(dirs.config.join("config.toml")), false)
    };
    Ok(match path {
        Some(p) if p.exists() => (super::file::read_file(&p)?, Some(p)),
        Some(p) if required => {
            return Err(err(format!("config file {} does not exist", p.display())));
        }
        _ => (FileConfig::default(), None),
    })
}

/// Step 2: which profile (`--profile`, `FLOE_PROFILE`, `default_profile`, `default`).
fn choose_profile(
    over: &Overrides,
    env: Env,
    file: &FileConfig,
    file_path: &Option<PathBuf>,
) -> Result<(String, ProfileFile), ConfigError> {
    let profiles: BTreeMap<String, ProfileFile> = file.profiles.clone().unwrap_or_default();
    let wanted = over
        .profile
        .clone()
        .or_else(|| env_nonempty(env, "FLOE_PROFILE"))
        .or_else(|| file.default_profile.clone());
    Ok(match wanted {
        Some(name) => match profiles.get(&name) {
            Some(p) => (name, p.clone()),
            // The implicit profile needs no section.
            None if name == "default" => (name, ProfileFile::default()),
            None => {
                let known: Vec<_> = profiles.keys().cloned().collect();
                return Err(err(format!(
                    "profile {name:?} is not defined in {} (profiles: {})",
                    describe(file_path),
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
    })
}

/// Step 3: the layers of the chosen file and profile, resolved section by section.
struct Layers<'a> {
    over: &'a Overrides,
    env: Env<'a>,
    dirs: &'a Dirs,
    file: FileConfig,
    file_path: Option<PathBuf>,
    profile_name: String,
    profile: ProfileFile,
}

impl Layers<'_> {
    fn env_nonempty(&self, k: &str) -> Option<String> {
        env_nonempty(self.env, k)
    }

    fn where_(&self) -> String {
        describe(&self.file_path)
    }

    fn key_in(&self, k: &str) -> String {
        format!("{k} (profile {:?} in {})", self.profile_name, self.where_())
    }

    /// Trino: top-level section < profile section < env < flags.
    fn trino(&self) -> Result<TrinoSettings, ConfigError> {
        let over = self.over;
        let t = merge_trino(
            self.file.trino.clone().unwrap_or_default(),
            self.profile.trino.clone().unwrap_or_default(),
        );
        let mut endpoint = uri::TrinoEndpoint::default();
        let url_text = over
            .trino
            .clone()
            .or_else(|| self.env_nonempty("FLOE_TRINO_URL"))
            .or_else(|| t.url.clone());
        let url_origin = if over.trino.is_some() {
            "--trino".to_string()
        } else if self.env_nonempty("FLOE_TRINO_URL").is_some() {
            "FLOE_TRINO_URL".to_string()
        } else {
            self.key_in("trino.url")
        };
        if let Some(text) = &url_text {
            endpoint = uri::parse_trino_uri(text).map_err(|e| err(format!("{url_origin}: {e}")))?;
        }
        let url = endpoint.url.clone().ok_or_else(|| {
            err(format!(
                "no Trino URL: pass --trino URL, set FLOE_TRINO_URL, or set trino.url in {}",
                self.file_path
                    .as_ref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_else(|| self.dirs.config.join("config.toml").display().to_string())
            ))
        })?;
        let user = over
            .user
            .clone()
            .or_else(|| self.env_nonempty("FLOE_TRINO_USER"))
            .or_else(|| endpoint.user.clone())
            .or_else(|| t.user.clone())
            .or_else(|| self.env_nonempty("USER"))
            .unwrap_or_else(|| "floe".into());
        let catalog = over
            .catalog
            .clone()
            .or_else(|| self.env_nonempty("FLOE_TRINO_CATALOG"))
            .or_else(|| endpoint.catalog.clone())
            .or_else(|| t.catalog.clone())
            .unwrap_or_else(|| "iceberg".into());
        let schemas = if !over.schemas.is_empty() {
            over.schemas.clone()
        } else if let Some(s) = self.env_nonempty("FLOE_SCHEMAS") {
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
        let auth = self.trino_auth(&t, &url)?;
        let ca_file = over.ca_file.clone().or_else(|| t.ca_file.clone());
        if let Some(ca) = &ca_file
            && !ca.exists()
        {
            return Err(err(format!(
                "{}: CA file {} does not exist",
                self.key_in("trino.ca_file"),
                ca.display()
            )));
        }
        Ok(TrinoSettings {
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
            max_response_size: size(
                t.max_response_size,
                DEFAULT_MAX_RESPONSE_SIZE,
                &self.key_in("trino.max_response_size"),
            )?,
        })
    }

    /// Trino authentication: `trino.auth`, or whichever secret is set.
    fn trino_auth(&self, t: &super::file::TrinoFile, url: &Url) -> Result<Auth, ConfigError> {
        let password = secret(
            self.env,
            SecretKind::Password,
            "FLOE_TRINO_PASSWORD",
            t.password_env.as_deref(),
            t.password_command.as_deref(),
            &self.key_in("trino.password_env"),
            &self.key_in("trino.password_command"),
        )?;
        let token = secret(
            self.env,
            SecretKind::Token,
            "FLOE_TRINO_TOKEN",
            t.token_env.as_deref(),
            t.token_command.as_deref(),
            &self.key_in("trino.token_env"),
            &self.key_in("trino.token_command"),
        )?;
        let auth_kind = self.over.auth.or(t.auth).unwrap_or(if token.is_some() {
            AuthKind::Bearer
        } else if password.is_some() {
            AuthKind::Basic
        } else {
            AuthKind::None
        });
        Ok(match auth_kind {
            AuthKind::None => Auth::None,
            AuthKind::Basic => {
                let password = password.ok_or_else(|| {
                    err(format!(
                        "{}: basic auth needs a password: set FLOE_TRINO_PASSWORD, trino.password_env or trino.password_command",
                        self.key_in("trino.auth")
                    ))
                })?;
                if url.scheme() != "https" {
                    return Err(err(format!(
                        "{}: Trino accepts passwords only over HTTPS, but the URL is {url}",
                        self.key_in("trino.auth")
                    )));
                }
                Auth::Basic { password }
            }
            AuthKind::Bearer => {
                let token = token.ok_or_else(|| {
                    err(format!(
                        "{}: bearer auth needs a token: set FLOE_TRINO_TOKEN, trino.token_env or trino.token_command",
                        self.key_in("trino.auth")
                    ))
                })?;
                refuse_plain_http(url, "a Trino token", &self.key_in("trino.url"))?;
                Auth::Bearer { token }
            }
            AuthKind::OAuth2 => {
                refuse_plain_http(url, "OAuth2 tokens", &self.key_in("trino.url"))?;
                let positive = |d: Option<super::units::Dur>, default: Duration, key: &str| {
                    let d = d.map(|d| d.0).unwrap_or(default);
                    if d.is_zero() {
                        return Err(err(format!("{}: must be longer than 0s", self.key_in(key))));
                    }
                    Ok(d)
                };
                Auth::OAuth2(OAuth2Settings {
                    cache_dir: self.dirs.cache.join("oauth2"),
                    login_timeout: positive(
                        t.oauth2_login_timeout,
                        DEFAULT_OAUTH2_LOGIN_TIMEOUT,
                        "trino.oauth2_login_timeout",
                    )?,
                    token_lifetime: positive(
                        t.oauth2_token_lifetime,
                        DEFAULT_OAUTH2_TOKEN_LIFETIME,
                        "trino.oauth2_token_lifetime",
                    )?,
                })
            }
        })
    }

    /// Airflow (optional): configured when a URL is.
    fn airflow(&self) -> Result<Option<AirflowSettings>, ConfigError> {
        let over = self.over;
        let a = merge_airflow(
            self.file.airflow.clone().unwrap_or_default(),
            self.profile.airflow.clone().unwrap_or_default(),
        );
        let airflow_url = over
            .airflow
            .clone()
            .or_else(|| self.env_nonempty("FLOE_AIRFLOW_URL"))
            .or_else(|| a.url.clone());
        let Some(text) = airflow_url else {
            return Ok(None);
        };
        let url = Url::parse(text.trim()).map_err(|e| {
            err(format!(
                "{}: invalid Airflow URL {text:?}: {e}",
                self.key_in("airflow.url")
            ))
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(err(format!(
                "{}: invalid Airflow URL {text:?}: expected http:// or https://",
                self.key_in("airflow.url")
            )));
        }
        if url.password().is_some() {
            return Err(err(format!(
                "{}: the Airflow URL contains a password: use FLOE_AIRFLOW_PASSWORD, airflow.password_env or airflow.password_command",
                self.key_in("airflow.url")
            )));
        }
        let password = secret(
            self.env,
            SecretKind::Password,
            "FLOE_AIRFLOW_PASSWORD",
            a.password_env.as_deref(),
            a.password_command.as_deref(),
            &self.key_in("airflow.password_env"),
            &self.key_in("airflow.password_command"),
        )?;
        let token = secret(
            self.env,
            SecretKind::Token,
            "FLOE_AIRFLOW_TOKEN",
            a.token_env.as_deref(),
            a.token_command.as_deref(),
            &self.key_in("airflow.token_env"),
            &self.key_in("airflow.token_command"),
        )?;
        if password.is_some() || token.is_some() {
            refuse_plain_http(
                &url,
                if token.is_some() {
                    "an Airflow token"
                } else {
                    "an Airflow password"
                },
                &self.key_in("airflow.url"),
            )?;
        }
        let user = over
            .airflow_user
            .clone()
            .or_else(|| self.env_nonempty("FLOE_AIRFLOW_USER"))
            .or_else(|| a.user.clone())
            .or_else(|| (!url.username().is_empty()).then(|| url.username().to_string()));
        let mut clean = url.clone();
        let _ = clean.set_username("");
        Ok(Some(AirflowSettings {
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
            max_response_size: size(
                a.max_response_size,
                DEFAULT_MAX_RESPONSE_SIZE,
                &self.key_in("airflow.max_response_size"),
            )?,
            max_log_size: size(
                a.max_log_size,
                DEFAULT_MAX_LOG_SIZE,
                &self.key_in("airflow.max_log_size"),
            )?,
        }))
    }

    /// Read-only mode, refresh interval and query concurrency.
    fn general(&self) -> Result<(bool, Duration, usize), ConfigError> {
        let (file, profile) = (&self.file, &self.profile);
        let readonly = self.over.readonly
            || env_bool(self.env, "FLOE_READONLY")?.unwrap_or(false)
            || profile.readonly.or(file.readonly).unwrap_or(false);
        let refresh = match self
            .over
            .refresh
            .or(env_dur(self.env, "FLOE_REFRESH")?)
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
                self.key_in("refresh")
            )));
        }
        if refresh > MAX_REFRESH {
            return Err(err(format!(
                "refresh {} is above the maximum of 1d ({})",
                humantime::format_duration(refresh),
                self.key_in("refresh")
            )));
        }
        let max_concurrent_queries = file.max_concurrent_queries.unwrap_or(4);
        if !(1..=64).contains(&max_concurrent_queries) {
            return Err(err(format!(
                "max_concurrent_queries = {max_concurrent_queries} in {}: expected 1 to 64",
                self.where_()
            )));
        }
        Ok((readonly, refresh, max_concurrent_queries))
    }

    /// `[[maintenance]]` of the file, then of the profile.
    fn maintenance(&self) -> Result<Vec<MaintenanceMapping>, ConfigError> {
        let mut maintenance = Vec::new();
        for m in self
            .file
            .maintenance
            .iter()
            .flatten()
            .chain(self.profile.maintenance.iter().flatten())
        {
            let parts = split_table_name(&m.table);
            if parts.len() != 3 {
                return Err(err(format!(
                    "maintenance table {:?} in {}: expected catalog.schema.table",
                    m.table,
                    self.where_()
                )));
            }
            maintenance.push(MaintenanceMapping {
                table: m.table.clone(),
                dag_id: m.dag_id.clone(),
                interval: m.interval.map(|d| d.0),
            });
        }
        Ok(maintenance)
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

/// A response-size limit: at least 64 KiB (smaller would refuse ordinary answers).
fn size(value: Option<Bytes>, default: u64, key: &str) -> Result<u64, ConfigError> {
    const MIN: u64 = 64 * 1024;
    match value {
        None => Ok(default),
        Some(Bytes(n)) if n >= MIN => Ok(n),
        Some(b) => Err(err(format!("{key}: {b} is too small (at least 64KiB)"))),
    }
}

/// Credentials never cross the network in clear text: over `http://` they are refused,
/// except to this machine (an SSH tunnel, `ssh -L 8080:airflow:8080`, is the way to reach
/// a plain-HTTP server safely).
fn refuse_plain_http(url: &Url, what: &str, key: &str) -> Result<(), ConfigError> {
    if url.scheme() != "http" || is_loopback(url) {
        return Ok(());
    }
    Err(err(format!(
        "{key}: refusing to send {what} over plain HTTP to {url}: use https://, or an SSH tunnel to 127.0.0.1"
    )))
}

fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}
