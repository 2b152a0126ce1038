//! The Prometheus textfile report (for node_exporter's textfile collector). Every sample
//! carries the `profile` it was read through, so the reports of several clusters
//! (`floe check --all`) share one file: each metric family once, its samples per profile.
//! `floe serve` serves the same families from each cluster's last refresh. Every family's
//! type and help come from [`super::metrics::METRICS`].

use chrono::{DateTime, Utc};

use super::metrics::{Metric, metric};
use super::{DagReport, Report, TableReport};
use crate::health::{Finding, Severity};
use crate::lakehouse::model::{TableRef, TableStats};

impl Report {
    pub(super) fn prometheus(&self) -> String {
        let mut out = Textfile::default();
        self.prometheus_into(&mut out);
        out.render()
    }

    /// This report's samples, added to `out`'s families.
    pub(crate) fn prometheus_into(&self, out: &mut Textfile) {
        self.check_metrics(out);
        self.table_metrics(out);
        self.age_metrics(out);
        self.finding_metrics(out);
        self.dag_metrics(out);
        self.connection_metrics(out);
    }

    /// `{profile="…"}`, the labels of a sample about the whole check.
    fn check_labels(&self) -> String {
        format!("{{profile=\"{}\"}}", prom_escape(&self.profile))
    }

    /// A table's labels: its profile, catalog, schema and name.
    fn labels(&self, t: &TableRef) -> String {
        format!(
            "{{profile=\"{}\",catalog=\"{}\",schema=\"{}\",table=\"{}\"}}",
            prom_escape(&self.profile),
            prom_escape(&t.catalog),
            prom_escape(&t.schema),
            prom_escape(&t.table)
        )
    }

    /// One sample a read table, where `f` has a value for its stats.
    fn per(
        &self,
        read: &[(&TableReport, &TableStats)],
        f: impl Fn(&TableStats) -> Option<String>,
    ) -> Vec<(String, String)> {
        read.iter()
            .filter_map(|(t, s)| f(s).map(|v| (self.labels(&t.table), v)))
            .collect()
    }

    /// Whether the check ran, and when.
    fn check_metrics(&self, out: &mut Textfile) {
        out.gauge(
            "floe_check_success",
            vec![(
                self.check_labels(),
                if self.fatal.is_some() {
                    "0".into()
                } else {
                    "1".into()
                },
            )],
        );
        out.gauge(
            "floe_check_timestamp_seconds",
            vec![(
                self.check_labels(),
                self.generated_at.timestamp().to_string(),
            )],
        );
    }

    /// Each table's status, score and plain counts.
    fn table_metrics(&self, out: &mut Textfile) {
        let read = self.read();
        let status_samples = self
            .tables
            .iter()
            .map(|t| {
                (
                    self.labels(&t.table),
                    t.health.status.exit_code().to_string(),
                )
            })
            .collect();
        let info = self
            .tables
            .iter()
            .filter_map(|t| {
                let f = t.format?;
                let labels = self.labels(&t.table);
                let base = labels.trim_end_matches('}');
                Some((
                    format!("{base},format=\"{}\"}}", f.label()),
                    "1".to_string(),
                ))
            })
            .collect();
        out.gauge("floe_table_format", info);
        out.gauge("floe_table_status", status_samples);
        out.gauge(
            "floe_table_health_score",
            read.iter()
                .map(|(t, _)| (self.labels(&t.table), t.health.score.to_string()))
                .collect(),
        );
        // Plain counts of each table, one gauge each.
        let counts: [(&str, Count); 8] = [
            ("floe_table_data_files", |s| s.data_files),
            ("floe_table_small_files", |s| s.small_files),
            ("floe_table_total_bytes", |s| s.total_bytes),
            ("floe_table_records", |s| s.records),
            ("floe_table_partitions", |s| s.partitions),
            ("floe_table_small_file_partitions", |s| {
                s.small_file_partitions
            }),
            ("floe_table_delete_files", |s| s.delete_files),
            ("floe_table_snapshots", |s| s.snapshots),
        ];
        for (name, value) in counts {
            out.gauge(name, self.per(&read, |s| Some(value(s).to_string())));
        }
    }

    /// How long since each table's last compaction and last write, and how long its
    /// oldest small file has waited.
    fn age_metrics(&self, out: &mut Textfile) {
        let read = self.read();
        let now = self.generated_at;
        out.gauge(
            "floe_table_last_compaction_age_hours",
            self.per(&read, |s| match s.last_compaction {
                Some(t) => Some(hours_since(now, t)),
                None if s.data_files > 0 => Some("+Inf".into()),
                None => None,
            }),
        );
        // 0 when the verdict says no compaction waits (no small file, or none a compaction
        // could merge: each alone in its partition), as the TUI's "small files no longer
        // waiting" says after a run.
        out.gauge(
            "floe_table_small_files_waiting_hours",
            read.iter()
                .filter_map(|(t, s)| {
                    let v = if s.small_files == 0 || !t.health.waits_for_compaction() {
                        "0.00".to_string()
                    } else {
                        hours_since(now, s.oldest_small_file_at?)
                    };
                    Some((self.labels(&t.table), v))
                })
                .collect(),
        );
        out.gauge(
            "floe_table_last_write_age_hours",
            self.per(&read, |s| s.last_write.map(|t| hours_since(now, t))),
        );
    }

    /// Each table's findings by rule (the worst of a rule's, once), and the DAG that
    /// maintains it: what an alert on one rule (a compaction DAG green while its table
    /// stays stale) selects, and the DAG it names.
    fn finding_metrics(&self, out: &mut Textfile) {
        let mut findings = Vec::new();
        let mut dags = Vec::new();
        for t in &self.tables {
            let labels = self.labels(&t.table);
            let base = labels.trim_end_matches('}');
            for (rule, severity) in by_rule(&t.health.findings) {
                findings.push((
                    format!("{base},rule=\"{rule}\"}}"),
                    severity.exit_code().to_string(),
                ));
            }
            if let Some(d) = &t.dag {
                dags.push((
                    format!("{base},dag_id=\"{}\"}}", prom_escape(&d.dag_id)),
                    "1".to_string(),
                ));
            }
        }
        out.gauge("floe_table_finding", findings);
        out.gauge("floe_table_maintenance_dag", dags);
    }

    /// `{profile="…",dag_id="…"}`
    fn dag_labels(&self, d: &DagReport) -> String {
        format!(
            "{{profile=\"{}\",dag_id=\"{}\"}}",
            prom_escape(&self.profile),
            prom_escape(&d.facts.dag_id)
        )
    }

    /// Each of Airflow's Trino connections as Airflow's test of it says (untested ones
    /// have no sample: nothing is known of them).
    fn connection_metrics(&self, out: &mut Textfile) {
        let samples = self
            .connections
            .iter()
            .filter_map(|c| {
                let passed = c.test?;
                Some((
                    format!(
                        "{{profile=\"{}\",connection=\"{}\",endpoint=\"{}\"}}",
                        prom_escape(&self.profile),
                        prom_escape(&c.id),
                        prom_escape(&c.endpoint)
                    ),
                    if passed { "1" } else { "0" }.to_string(),
                ))
            })
            .collect();
        out.gauge("floe_airflow_connection_test_success", samples);
    }

    /// Each maintenance DAG's status, last success and failed runs.
    fn dag_metrics(&self, out: &mut Textfile) {
        if self.dags.is_empty() {
            return;
        }
        let now = self.generated_at;
        let dl = |d: &DagReport| self.dag_labels(d);
        out.gauge(
            "floe_dag_status",
            self.dags
                .iter()
                .map(|d| (dl(d), d.health.status.exit_code().to_string()))
                .collect(),
        );
        out.gauge(
            "floe_dag_last_success_age_hours",
            self.dags
                .iter()
                .map(|d| {
                    let v = match d.facts.last_success_at {
                        Some(t) => hours_since(now, t),
                        None => "+Inf".into(),
                    };
                    (dl(d), v)
                })
                .collect(),
        );
        out.gauge(
            "floe_dag_failed_runs",
            self.dags
                .iter()
                .map(|d| (dl(d), d.facts.failed_runs.to_string()))
                .collect(),
        );
        let findings = self
            .dags
            .iter()
            .flat_map(|d| {
                let base = dl(d);
                let base = base.trim_end_matches('}').to_string();
                by_rule(&d.health.findings)
                    .into_iter()
                    .map(move |(rule, sev)| {
                        (
                            format!("{base},rule=\"{rule}\"}}"),
                            sev.exit_code().to_string(),
                        )
                    })
            })
            .collect();
        out.gauge("floe_dag_finding", findings);
    }

    /// The tables whose stats were read, with their stats.
    fn read(&self) -> Vec<(&TableReport, &TableStats)> {
        self.tables
            .iter()
            .filter_map(|t| t.stats.as_ref().map(|s| (t, s)))
            .collect()
    }
}

/// The textfile's families in the order they were first added: a family's `HELP` and
/// `TYPE` lines once (the format allows no second), then every sample of every report.
#[derive(Default)]
pub(crate) struct Textfile {
    families: Vec<Family>,
}

/// A family and its samples (labels, value).
pub(crate) type Family = (&'static Metric, Vec<(String, String)>);

impl Textfile {
    /// Samples (labels, value) of the gauge `name` (listed in `METRICS`).
    fn gauge(&mut self, name: &str, samples: Vec<(String, String)>) {
        match self.families.iter_mut().find(|(m, _)| m.name == name) {
            Some((_, s)) => s.extend(samples),
            None => self.families.push((metric(name), samples)),
        }
    }

    /// Every family with its samples, in the order first added.
    pub(crate) fn into_families(self) -> Vec<Family> {
        self.families
    }

    pub(super) fn render(&self) -> String {
        let mut out = String::new();
        for (m, samples) in &self.families {
            let name = m.name;
            out.push_str(&format!("# HELP {name} {}\n# TYPE {name} gauge\n", m.help));
            for (labels, v) in samples {
                out.push_str(&format!("{name}{labels} {v}\n"));
            }
        }
        out
    }
}

/// A verdict's findings, once a rule: the worst severity of each rule's, in rule order
/// (two findings of one rule would make two samples of one series).
fn by_rule(findings: &[Finding]) -> Vec<(&'static str, Severity)> {
    let mut out: std::collections::BTreeMap<crate::health::Rule, Severity> = Default::default();
    for f in findings {
        let e = out.entry(f.rule).or_insert(f.severity);
        *e = super::worst(*e, f.severity);
    }
    out.into_iter().map(|(r, s)| (r.as_str(), s)).collect()
}

/// Hours from `t` to `now`, two decimals (0 for a time in the future).
fn hours_since(now: DateTime<Utc>, t: DateTime<Utc>) -> String {
    format!("{:.2}", (now - t).num_seconds().max(0) as f64 / 3600.0)
}

/// Reads one count of a table's stats.
type Count = fn(&TableStats) -> u64;

/// A label value as the text format and OpenMetrics both take it: the server's control
/// characters made visible first (the formats know only `\\`, `\"` and `\n`), then escaped.
pub(crate) fn prom_escape(s: &str) -> String {
    crate::text::sanitize(s)
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}
