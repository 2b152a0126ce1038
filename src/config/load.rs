//! Loading: which file, which profile, then each section layered as defaults < file <
//! profile < `FLOE_*` env < flags. Every error names the key and where it came from.

mod airflow;
mod selection;
mod trino;

pub use selection::{
    Each, Selection, load_each, load_each_with, load_selection, load_selection_with,
};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use url::Url;

use super::file::{FileConfig, HealthFile, ProfileFile};
use super::secrets::{env_bool, env_dur};
use super::settings::{Dirs, MAX_REFRESH, MIN_REFRESH, MaintenanceMapping, Overrides, Settings};
use super::{At, ConfigError, keys};

/// The default of `full_refresh_every`: every table read in full once an hour, whatever
/// the change probe says (it sees every commit; this is the safety net).
pub const DEFAULT_FULL_REFRESH: Duration = Duration::from_secs(3600);
/// The shortest `full_refresh_every` (other than `0s`, never).
const MIN_FULL_REFRESH: Duration = Duration::from_secs(60);
use super::health::HealthConfig;
use crate::sql::split_table_name;
use crate::units::Bytes;

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
    let (probe_batch, full_refresh_every) = cx.refresh_policy()?;
    let query_timeout = cx
        .file
        .query_timeout
        .map(|d| d.0)
        .unwrap_or(Duration::from_secs(300));
    let health = build_health(&cx.file.health, &cx.profile.health, &|key| cx.at(key))?;
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
    let key_bindings = keys::bind(&cx.file.keys.clone().unwrap_or_default()).map_err(|source| {
        ConfigError::Keys {
            file: cx.file_path.clone(),
            source,
        }
    })?;
    let confirm_dwell = confirm_dwell(&cx.file, &cx.file_path)?;
    let coordinator_budget = coordinator_budget(&cx.file, &cx.file_path)?;

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
        probe_batch,
        full_refresh_every,
        stats_cache: dirs.cache.join(super::settings::STATS_CACHE_FILE),
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
        ascii: if over.ascii { Some(true) } else { file.ascii },
        confirm_dwell,
        coordinator_budget,
        start_tab: file.start_tab.unwrap_or_default(),
        profiles: profiles.keys().cloned().collect(),
    })
}

/// The default of `confirm_dwell`: keys typed ahead over a slow SSH link arrive within a
/// round trip of the frame that shows the question; 300 ms covers a slow one.
pub const DEFAULT_CONFIRM_DWELL: Duration = Duration::from_millis(300);

fn confirm_dwell(file: &FileConfig, path: &Option<PathBuf>) -> Result<Duration, ConfigError> {
    let d = file.confirm_dwell.map_or(DEFAULT_CONFIRM_DWELL, |d| d.0);
    if d > Duration::from_secs(5) {
        return Err(ConfigError::OutOfRange {
            key: "confirm_dwell",
            value: quoted(d),
            file: path.clone(),
            expected: "0s to 5s",
        });
    }
    Ok(d)
}

/// The default of `coordinator_budget`: what an open floe may cost the coordinator per
/// minute of steady refreshes (planning plus task CPU, as the coordinator reports them).
pub const DEFAULT_COORDINATOR_BUDGET: Duration = Duration::from_secs(2);

/// `coordinator_budget`: 0s to 60s of the coordinator's time per minute (`0s`: no limit).
fn coordinator_budget(
    file: &FileConfig,
    path: &Option<PathBuf>,
) -> Result<Option<Duration>, ConfigError> {
    let d = file
        .coordinator_budget
        .map_or(DEFAULT_COORDINATOR_BUDGET, |d| d.0);
    if d > Duration::from_secs(60) {
        return Err(ConfigError::OutOfRange {
            key: "coordinator_budget",
            value: quoted(d),
            file: path.clone(),
            expected: "0s (no limit) to 60s of the coordinator's time per minute",
        });
    }
    Ok((!d.is_zero()).then_some(d))
}

fn env_nonempty(env: Env, k: &str) -> Option<String> {
    env(k).filter(|v| !v.trim().is_empty())
}

/// A duration as a message quotes the value written: `"1m"`.
fn quoted(d: Duration) -> String {
    format!("{:?}", humantime::format_duration(d).to_string())
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
            return Err(ConfigError::NoFile { file: p });
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
                return Err(ConfigError::UnknownProfile {
                    name,
                    file: file_path.clone(),
                    known: profiles.keys().cloned().collect(),
                });
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

    /// Key `k` as resolved for this profile.
    fn at(&self, k: &str) -> Box<At> {
        Box::new(At::Profile {
            key: k.to_string(),
            profile: self.profile_name.clone(),
            file: self.file_path.clone(),
        })
    }

    /// A top-level key `k` out of its bounds (`expected`).
    fn out_of_range(
        &self,
        key: &'static str,
        value: String,
        expected: &'static str,
    ) -> ConfigError {
        ConfigError::OutOfRange {
            key,
            value,
            file: self.file_path.clone(),
            expected,
        }
    }

    /// Tables per change probe, and how long after a full read all are read again
    /// (`0s`: never).
    fn refresh_policy(&self) -> Result<(usize, Option<Duration>), ConfigError> {
        let batch = self
            .file
            .probe_batch
            .unwrap_or(super::settings::DEFAULT_PROBE_BATCH);
        if !(1..=500).contains(&batch) {
            return Err(self.out_of_range("probe_batch", batch.to_string(), "1 to 500"));
        }
        let every = self
            .file
            .full_refresh_every
            .map_or(DEFAULT_FULL_REFRESH, |d| d.0);
        if every.is_zero() {
            return Ok((batch, None));
        }
        if every < MIN_FULL_REFRESH {
            return Err(self.out_of_range(
                "full_refresh_every",
                quoted(every),
                "1m or longer, or 0s for never",
            ));
        }
        Ok((batch, Some(every)))
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
            return Err(ConfigError::RefreshBelow {
                at: self.at("refresh"),
                value: refresh,
            });
        }
        if refresh > MAX_REFRESH {
            return Err(ConfigError::RefreshAbove {
                at: self.at("refresh"),
                value: refresh,
            });
        }
        let max_concurrent_queries = file.max_concurrent_queries.unwrap_or(4);
        if !(1..=64).contains(&max_concurrent_queries) {
            return Err(self.out_of_range(
                "max_concurrent_queries",
                max_concurrent_queries.to_string(),
                "1 to 64",
            ));
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
                return Err(ConfigError::MaintenanceTable {
                    table: m.table.clone(),
                    file: self.file_path.clone(),
                });
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

/// The health thresholds of the file, then of the profile; `at` names a key of `[health]`.
fn build_health(
    base: &Option<HealthFile>,
    over: &Option<HealthFile>,
    at: &dyn Fn(&str) -> Box<At>,
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
        if let Some(v) = f.critical_small_files {
            h.critical_small_files = v;
        }
        if let Some(v) = f.critical_partition_small_files {
            h.critical_partition_small_files = v;
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
        if let Some(v) = f.expirable_snapshots_warn {
            h.expirable_snapshots_warn = v;
        }
        if let Some(v) = f.pinned_files_warn {
            h.pinned_files_warn = v;
        }
        if let Some(v) = f.delete_file_ratio_warn {
            h.delete_file_ratio_warn = v;
        }
        if let Some(v) = f.delete_file_ratio_critical {
            h.delete_file_ratio_critical = v;
        }
        if let Some(v) = f.equality_delete_weight {
            h.equality_delete_weight = v;
        }
        if let Some(v) = f.delete_record_ratio_warn {
            h.delete_record_ratio_warn = v;
        }
        if let Some(v) = f.delete_record_ratio_critical {
            h.delete_record_ratio_critical = v;
        }
        if let Some(v) = f.large_file_ratio {
            h.large_file_ratio = v;
        }
        if let Some(v) = f.small_manifest_size {
            h.small_manifest_size = v.0;
        }
        if let Some(v) = f.max_small_manifests {
            h.max_small_manifests = v;
        }
        if let Some(v) = f.critical_manifests {
            h.critical_manifests = v;
        }
        if let Some(v) = f.max_metadata_files {
            h.max_metadata_files = v;
        }
        if let Some(v) = f.dag_interval {
            h.dag_interval = v.0;
        }
        if let Some(v) = f.incremental_over {
            h.incremental_over = v.0;
        }
        if let Some(v) = f.incremental_share {
            h.incremental_share = v;
        }
    }
    let wrong = |key: &str, problem: String| {
        Err(ConfigError::Threshold {
            at: at(&format!("health.{key}")),
            problem,
        })
    };
    if !(h.incremental_share > 0.0 && h.incremental_share <= 1.0) {
        return wrong(
            "incremental_share",
            format!("{}: expected a share in (0, 1]", h.incremental_share),
        );
    }
    if !(h.small_file_ratio > 0.0 && h.small_file_ratio <= 1.0) {
        return wrong(
            "small_file_ratio",
            format!("{}: expected a ratio in (0, 1]", h.small_file_ratio),
        );
    }
    if h.target_file_size == 0 {
        return wrong("target_file_size", "must be above 0".into());
    }
    if h.compaction_critical < h.compaction_warn {
        return wrong(
            "compaction_critical",
            format!(
                "{} is shorter than compaction_warn ({})",
                humantime::format_duration(h.compaction_critical),
                humantime::format_duration(h.compaction_warn)
            ),
        );
    }
    if h.delete_record_ratio_critical < h.delete_record_ratio_warn {
        return wrong(
            "delete_record_ratio_critical",
            format!(
                "{} is below delete_record_ratio_warn ({})",
                h.delete_record_ratio_critical, h.delete_record_ratio_warn
            ),
        );
    }
    if h.equality_delete_weight.is_nan() || h.equality_delete_weight < 1.0 {
        return wrong(
            "equality_delete_weight",
            format!("{}: expected at least 1", h.equality_delete_weight),
        );
    }
    if h.large_file_ratio.is_nan() || h.large_file_ratio <= 1.0 {
        return wrong(
            "large_file_ratio",
            format!("{}: expected above 1", h.large_file_ratio),
        );
    }
    if h.delete_file_ratio_critical < h.delete_file_ratio_warn {
        return wrong(
            "delete_file_ratio_critical",
            format!(
                "{} is below delete_file_ratio_warn ({})",
                h.delete_file_ratio_critical, h.delete_file_ratio_warn
            ),
        );
    }
    Ok(h)
}

/// A response-size limit: at least 64 KiB (smaller would refuse ordinary answers).
fn size(value: Option<Bytes>, default: u64, at: Box<At>) -> Result<u64, ConfigError> {
    const MIN: u64 = 64 * 1024;
    match value {
        None => Ok(default),
        Some(Bytes(n)) if n >= MIN => Ok(n),
        Some(size) => Err(ConfigError::TooSmall { at, size }),
    }
}

/// Credentials never cross the network in clear text: over `http://` they are refused,
/// except to this machine (an SSH tunnel, `ssh -L 8080:airflow:8080`, is the way to reach
/// a plain-HTTP server safely).
fn refuse_plain_http(url: &Url, what: &'static str, at: Box<At>) -> Result<(), ConfigError> {
    if url.scheme() != "http" || super::uri::is_loopback(url) {
        return Ok(());
    }
    Err(ConfigError::PlainHttp {
        at,
        what,
        url: url.to_string(),
    })
}
