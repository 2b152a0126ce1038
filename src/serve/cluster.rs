//! One cluster of `floe serve`: its connection, its refresh and the records it keeps
//! between refreshes, and what each refresh publishes. A refresh is the TUI's steady one
//! (the first a full read unless the stats cache has the cluster's tables; then the
//! coordinator's recent writes, the probe rotation within `full_refresh_every` and the
//! coordinator budget), run headless by [`crate::refresh::drive::drive`], with Airflow read
//! beside it as `floe check` reads it; the report of both is rendered into the cluster's
//! families once, and the stats cache written when a table changed.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

use crate::cache::Entry;
use crate::config::Settings;
use crate::lakehouse::model::{TableRef, TableStats};
use crate::lakehouse::queries::Lakehouse;
use crate::refresh::{Refresh, RefreshPolicy, TableRead, VecRecords, drive};
use crate::report::Report;
use crate::report::check::{self, Running};
use crate::report::metrics::METRICS;
use crate::report::prometheus::{Textfile, prom_escape};
use crate::trino::{Client, Cost, TrinoError};

/// How long one refresh may take before it is given up (its statements cancelled on
/// Trino) and counted as failed: `floe check`'s default deadline.
pub const REFRESH_DEADLINE: Duration = check::DEFAULT_TIMEOUT;

/// What a scrape reads of one cluster: its families as its last refresh rendered them and
/// the facts the exporter's own metrics are computed from at the scrape.
#[derive(Clone, Debug)]
pub struct Published {
    pub profile: String,
    /// `{profile="…"}`, escaped.
    pub labels: String,
    pub period: Duration,
    /// When the cluster was started (the last refresh's age counts from it before the
    /// first refresh ends).
    pub started: DateTime<Utc>,
    /// When the last refresh that listed the tables ended.
    pub last_ok: Option<DateTime<Utc>>,
    /// Whether the last refresh listed the tables (`None`: none ended yet).
    pub up: Option<bool>,
    /// Whether the last refresh read Airflow (`None`: no Airflow, or none ended yet).
    pub airflow_up: Option<bool>,
    pub refreshes: u64,
    pub failures: u64,
    /// Tables whose last read failed.
    pub read_errors: Option<usize>,
    pub duration: Option<Duration>,
    /// What the cluster's statements have cost its coordinator since it started.
    pub cost: Cost,
    /// The sample lines of each family the report writes, by index in `METRICS`.
    pub families: Vec<(usize, String)>,
    /// The last refresh's first line (`floe check`'s), for /healthz.
    pub summary: String,
}

impl Published {
    fn empty() -> Published {
        Published {
            profile: String::new(),
            labels: String::new(),
            period: Duration::ZERO,
            started: Utc::now(),
            last_ok: None,
            up: None,
            airflow_up: None,
            refreshes: 0,
            failures: 0,
            read_errors: None,
            duration: None,
            cost: Cost::default(),
            families: Vec::new(),
            summary: String::new(),
        }
    }

    /// A cluster's publication after a refresh that read it, with no cost counted yet:
    /// what a benchmark or a test of the exposition serves.
    pub fn of(profile: &str, period: Duration, families: Vec<(usize, String)>) -> Published {
        Published {
            profile: profile.to_string(),
            labels: format!("{{profile=\"{}\"}}", prom_escape(profile)),
            period,
            last_ok: Some(Utc::now()),
            up: Some(true),
            refreshes: 1,
            families,
            ..Published::empty()
        }
    }

    /// The sample lines of the family at `index` of `METRICS`.
    pub fn family(&self, index: usize) -> Option<&str> {
        self.families
            .iter()
            .find(|(i, _)| *i == index)
            .map(|(_, s)| s.as_str())
    }
}

/// What decides whether a reloaded profile is the same cluster: the same coordinator,
/// user and tables. Everything else (credentials, Airflow, thresholds, the period) is
/// taken over by the cluster as it is.
pub fn scope(s: &Settings) -> (String, String, String, String, Vec<String>, Vec<String>) {
    (
        s.profile.clone(),
        s.trino.url.to_string(),
        s.trino.user.clone(),
        s.trino.catalog.clone(),
        s.trino.schemas.clone(),
        s.trino.tables.clone(),
    )
}

/// What the refreshes so far add up to (the exporter's own metrics).
#[derive(Clone, Copy, Debug, Default)]
struct Tally {
    refreshes: u64,
    failures: u64,
    last_ok: Option<DateTime<Utc>>,
    up: Option<bool>,
    airflow_up: Option<bool>,
    read_errors: Option<usize>,
    duration: Option<Duration>,
}

/// One cluster's state between refreshes.
pub struct Cluster {
    settings: Settings,
    lake: Lakehouse,
    refresh: Refresh,
    records: VecRecords,
    /// The cost of the clients replaced by a reload, so the counters never go back.
    spent_before: Cost,
    /// What the stats cache holds of this cluster as last written (or read).
    cached: Vec<Entry>,
    started: DateTime<Utc>,
    tally: Tally,
    published: Arc<Published>,
}

impl Cluster {
    /// A cluster warm from the stats cache (its first refresh then probes what the cache
    /// holds and reads the coordinator's writes since); cold, its first refresh reads
    /// every table.
    pub fn new(settings: Settings) -> Result<Cluster, String> {
        let lake = lakehouse(&settings)?;
        let now = Utc::now();
        let url = settings.trino.url.to_string();
        let warm = crate::cache::load(&settings.stats_cache, &settings.profile, &url);
        let oldest = warm.iter().map(|e| e.read_at).min();
        let records = VecRecords(
            warm.iter()
                .map(|e| {
                    let r = TableRead::cached(e.stats.clone(), e.probe, e.read_at);
                    (e.table.clone(), r)
                })
                .collect(),
        );
        let mut refresh = Refresh::new(RefreshPolicy::of(&settings), 0);
        if !records.0.is_empty() {
            refresh.warm(now, oldest);
        }
        let mut c = Cluster {
            settings,
            lake,
            refresh,
            records,
            spent_before: Cost::default(),
            cached: warm,
            started: now,
            tally: Tally::default(),
            published: Arc::new(Published::empty()),
        };
        c.published = Arc::new(c.publication(Vec::new(), "no refresh ended yet".into()));
        Ok(c)
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// What the last refresh published.
    pub fn published(&self) -> Arc<Published> {
        self.published.clone()
    }

    /// Take `settings` over (a reload of the same scope): new clients, the records, the
    /// refresh and the counters kept.
    pub fn reconfigure(&mut self, settings: Settings) -> Result<(), String> {
        let lake = lakehouse(&settings)?;
        self.spent_before = add(self.spent_before, self.lake.client.cost());
        self.lake = lake;
        self.refresh.policy = RefreshPolicy::of(&settings);
        self.settings = settings;
        self.published = Arc::new(self.publication(
            self.published.families.clone(),
            self.published.summary.clone(),
        ));
        Ok(())
    }

    /// One refresh to its end (or its deadline), published.
    pub async fn refresh(&mut self) {
        let started = Instant::now();
        let running = Running::default();
        self.refresh
            .record_cost(Utc::now(), self.lake.client.cost());
        let read = tokio::time::timeout(REFRESH_DEADLINE, self.read(&running)).await;
        let (report, airflow_up) = match read {
            Ok(r) => r,
            Err(_) => {
                // The reads were dropped (their statements cancelled): the next refresh
                // starts over.
                self.refresh.abandon();
                let mut report = check::empty_report(&self.settings);
                let fatal = format!(
                    "the refresh of {} did not finish within {}; still running: {}",
                    self.settings.trino.url,
                    humantime::format_duration(REFRESH_DEADLINE),
                    running.snapshot().join("; ")
                );
                self.unknown(&mut report, fatal, None);
                (report, None)
            }
        };
        self.refresh
            .record_cost(Utc::now(), self.lake.client.cost());
        self.publish(report, airflow_up, started.elapsed());
    }

    /// Trino's refresh and Airflow's read side by side, made into the cluster's report;
    /// whether Airflow answered.
    async fn read(&mut self, running: &Running) -> (Report, Option<bool>) {
        let mut report = check::empty_report(&self.settings);
        let connecting = running.start(format!("Trino: connecting to {}", self.settings.trino.url));
        let connected = self.lake.connect().await;
        drop(connecting);
        let info = match connected {
            Ok(info) => info,
            Err(e) => {
                self.unknown(&mut report, e.to_string(), Some(e));
                return (report, None);
            }
        };
        report.trino.version = Some(info.node_version.version.clone());
        report.trino.uptime_seconds = info.uptime_secs();
        let scan = self.settings.health.scan();
        let reader = drive::Reader {
            lake: &self.lake,
            schemas: self.settings.trino.schemas.clone(),
            globs: self.settings.trino.tables.clone(),
            scan: &scan,
            refresh_every: self.settings.refresh,
        };
        let (listed, tables) = tokio::sync::oneshot::channel();
        let (refresh, records) = (&mut self.refresh, &mut self.records);
        let watching = running.clone();
        let watch = move |read: &crate::refresh::Read| {
            watching.start(format!("Trino: {}", read.describe()))
        };
        let fleet = async {
            let r = drive::drive(refresh, records, &reader, false, Utc::now, watch).await;
            let _ = listed.send(records.0.iter().map(|(t, _)| t.clone()).collect());
            r
        };
        let airflow = check::read_airflow(&self.settings, running, tables);
        let (fleet, airflow) = tokio::join!(fleet, airflow);
        let airflow_up = airflow.as_ref().map(|a| a.reached());
        if let Err(e) = fleet {
            let fatal = format!(
                "cannot list the tables of catalog {} on {}: {e}",
                self.settings.trino.catalog, self.settings.trino.url
            );
            self.unknown(&mut report, fatal, Some(e));
            return (report, airflow_up);
        }
        self.keep_in_cache().await;
        let results = self.records.0.iter().map(verdict).collect();
        check::assemble(
            &mut report,
            results,
            airflow,
            &self.settings,
            &self.settings.trino.tables,
            Utc::now(),
        );
        for t in &mut report.tables {
            t.format = Some(self.lake.format_of_catalog(&t.table.catalog));
        }
        (report, airflow_up)
    }

    /// The cluster could not be read (`fatal` says why): every table it knows is UNKNOWN.
    fn unknown(&self, report: &mut Report, fatal: String, e: Option<TrinoError>) {
        let e = e.unwrap_or_else(|| TrinoError::Internal(fatal.clone()));
        let now = Utc::now();
        report.tables = self
            .records
            .0
            .iter()
            .map(|(t, _)| check::table_report(t.clone(), Err(e.clone()), None, &self.settings, now))
            .collect();
        report.fatal = Some(fatal);
        report.generated_at = now;
    }

    /// Write what the refresh read to the stats cache, as `floe check` does, when a table
    /// changed since the last write (a steady refresh that changed nothing writes
    /// nothing).
    async fn keep_in_cache(&mut self) {
        let url = self.settings.trino.url.to_string();
        let entries: Vec<Entry> = self
            .records
            .0
            .iter()
            .filter_map(|(t, r)| {
                Some(Entry {
                    profile: self.settings.profile.clone(),
                    url: url.clone(),
                    table: t.clone(),
                    probe: r.probe,
                    read_at: r.read_at?,
                    stats: r.stats.clone()?,
                })
            })
            .collect();
        if entries == self.cached {
            return;
        }
        self.cached = entries.clone();
        let (path, profile) = (
            self.settings.stats_cache.clone(),
            self.settings.profile.clone(),
        );
        let written = tokio::task::spawn_blocking(move || {
            crate::cache::merge(&path, &profile, &url, entries).map_err(|e| (path, e))
        })
        .await;
        if let Ok(Err((path, e))) = written {
            tracing::warn!(path = %path.display(), "cannot write the stats cache: {e}");
        }
    }

    /// The refresh's report rendered into the cluster's families, with its own facts.
    fn publish(&mut self, report: Report, airflow_up: Option<bool>, took: Duration) {
        let ok = report.fatal.is_none();
        let t = &mut self.tally;
        t.refreshes += 1;
        if ok {
            t.last_ok = Some(report.generated_at);
            if t.up == Some(false) {
                tracing::info!(profile = %self.settings.profile, "refresh succeeded again");
            }
        } else {
            t.failures += 1;
            // Said once when the cluster goes down, not at every refresh while it stays.
            let why = report.fatal.as_deref().unwrap_or("");
            if t.up == Some(false) {
                tracing::debug!(profile = %self.settings.profile, "refresh failed: {why}");
            } else {
                tracing::warn!(profile = %self.settings.profile, "refresh failed: {why}");
            }
        }
        t.up = Some(ok);
        t.airflow_up = airflow_up;
        t.duration = Some(took);
        t.read_errors = Some(
            self.records
                .0
                .iter()
                .filter(|(_, r)| r.error.is_some())
                .count(),
        );
        self.published = Arc::new(self.publication(families(&report), report.summary_line()));
    }

    fn publication(&self, families: Vec<(usize, String)>, summary: String) -> Published {
        let t = self.tally;
        Published {
            labels: format!("{{profile=\"{}\"}}", prom_escape(&self.settings.profile)),
            profile: self.settings.profile.clone(),
            period: self.settings.refresh,
            started: self.started,
            last_ok: t.last_ok,
            up: t.up,
            airflow_up: t.airflow_up,
            refreshes: t.refreshes,
            failures: t.failures,
            read_errors: t.read_errors,
            duration: t.duration,
            cost: add(self.spent_before, self.lake.client.cost()),
            families,
            summary,
        }
    }
}

/// The report's families, each as the sample lines of the text and OpenMetrics formats
/// (the same for a gauge), by index in `METRICS`.
pub fn families(report: &Report) -> Vec<(usize, String)> {
    let mut tf = Textfile::default();
    report.prometheus_into(&mut tf);
    tf.into_families()
        .into_iter()
        .filter(|(_, samples)| !samples.is_empty())
        .map(|(m, samples)| {
            let index = METRICS
                .iter()
                .position(|x| x.name == m.name)
                .expect("a family of the list");
            let mut lines = String::with_capacity(samples.len() * (m.name.len() + 80));
            for (labels, value) in samples {
                lines.push_str(m.name);
                lines.push_str(&labels);
                lines.push(' ');
                lines.push_str(&value);
                lines.push('\n');
            }
            (index, lines)
        })
        .collect()
}

/// A table's verdict as the exporter serves it: its last good stats even when its last
/// read failed (the TUI's rule: a failed read keeps the last good verdict, its age known),
/// UNKNOWN when it was never read.
fn verdict((t, r): &(TableRef, TableRead)) -> (TableRef, Result<TableStats, TrinoError>) {
    let result = match (&r.stats, &r.error) {
        (Some(st), _) => Ok(st.clone()),
        (None, Some(e)) => Err(e.clone()),
        (None, None) => Err(TrinoError::Internal(format!("{t} was not read"))),
    };
    (t.clone(), result)
}

fn lakehouse(s: &Settings) -> Result<Lakehouse, String> {
    let client = Client::from_settings(&s.trino, s.query_timeout)
        .map_err(|e| format!("profile {}: {e}", s.profile))?;
    Ok(
        Lakehouse::new(client, s.trino.catalog.clone(), s.health.clone())
            .with_catalogs_of(&s.trino)
            .with_fallbacks_beside(&s.stats_cache),
    )
}

fn add(a: Cost, b: Cost) -> Cost {
    Cost {
        statements: a.statements + b.statements,
        planning_ms: a.planning_ms + b.planning_ms,
        cpu_ms: a.cpu_ms + b.cpu_ms,
        elapsed_ms: a.elapsed_ms + b.elapsed_ms,
    }
}
