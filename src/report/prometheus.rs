//! The Prometheus textfile report (for node_exporter's textfile collector). Every sample
//! carries the `profile` it was read through, so the reports of several clusters
//! (`floe check --all`) share one file: each metric family once, its samples per profile.

use chrono::{DateTime, Utc};

use super::{DagReport, Report, TableReport};
use crate::lakehouse::model::{TableRef, TableStats};

impl Report {
    pub(super) fn prometheus(&self) -> String {
        let mut out = Textfile::default();
        self.prometheus_into(&mut out);
        out.render()
    }

    /// This report's samples, added to `out`'s families.
    pub(super) fn prometheus_into(&self, out: &mut Textfile) {
        self.check_metrics(out);
        self.table_metrics(out);
        self.age_metrics(out);
        self.dag_metrics(out);
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
            "1 when floe reached Trino and evaluated the tables, 0 otherwise.",
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
            "When this report was generated (Unix time).",
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
        out.gauge(
            "floe_table_status",
            "Health status: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.",
            status_samples,
        );
        out.gauge(
            "floe_table_health_score",
            "Health score 0-100 (100 minus the penalties of the findings).",
            read.iter()
                .map(|(t, _)| (self.labels(&t.table), t.health.score.to_string()))
                .collect(),
        );
        // Plain counts of each table, one gauge each.
        let counts: [(&str, &str, Count); 8] = [
            (
                "floe_table_data_files",
                "Data files in the current snapshot.",
                |s| s.data_files,
            ),
            (
                "floe_table_small_files",
                "Data files below small_file_ratio x the table's target file size.",
                |s| s.small_files,
            ),
            (
                "floe_table_total_bytes",
                "Bytes of data files in the current snapshot.",
                |s| s.total_bytes,
            ),
            (
                "floe_table_records",
                "Records in data files (before deletes).",
                |s| s.records,
            ),
            (
                "floe_table_partitions",
                "Partitions holding data files.",
                |s| s.partitions,
            ),
            (
                "floe_table_small_file_partitions",
                "Partitions holding at least min_small_files small files.",
                |s| s.small_file_partitions,
            ),
            (
                "floe_table_delete_files",
                "Delete files (merge-on-read).",
                |s| s.delete_files,
            ),
            (
                "floe_table_snapshots",
                "Snapshots in the table's metadata.",
                |s| s.snapshots,
            ),
        ];
        for (name, help, value) in counts {
            out.gauge(name, help, self.per(&read, |s| Some(value(s).to_string())));
        }
    }

    /// How long since each table's last compaction and last write, and how long its
    /// oldest small file has waited.
    fn age_metrics(&self, out: &mut Textfile) {
        let read = self.read();
        let now = self.generated_at;
        out.gauge(
            "floe_table_last_compaction_age_hours",
            "Hours since the last compaction (a replace snapshot that rewrote data files); +Inf when a table with data was never compacted.",
            self.per(&read, |s| match s.last_compaction {
                Some(t) => Some(hours_since(now, t)),
                None if s.data_files > 0 => Some("+Inf".into()),
                None => None,
            }),
        );
        out.gauge(
            "floe_table_small_files_waiting_hours",
            "Hours the oldest live small data file has waited for compaction (0 when none is small). A partial optimize resets last_compaction_age_hours but not this: alert on this one.",
            self.per(&read, |s| {
                if s.small_files == 0 {
                    return Some("0.00".into());
                }
                s.oldest_small_file_at.map(|t| hours_since(now, t))
            }),
        );
        out.gauge(
            "floe_table_last_write_age_hours",
            "Hours since the last snapshot that added or removed data.",
            self.per(&read, |s| s.last_write.map(|t| hours_since(now, t))),
        );
    }

    /// Each maintenance DAG's status, last success and failed runs.
    fn dag_metrics(&self, out: &mut Textfile) {
        if self.dags.is_empty() {
            return;
        }
        let now = self.generated_at;
        let dl = |d: &DagReport| {
            format!(
                "{{profile=\"{}\",dag_id=\"{}\"}}",
                prom_escape(&self.profile),
                prom_escape(&d.facts.dag_id)
            )
        };
        out.gauge(
            "floe_dag_status",
            "Maintenance DAG status: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.",
            self.dags
                .iter()
                .map(|d| (dl(d), d.health.status.exit_code().to_string()))
                .collect(),
        );
        out.gauge(
            "floe_dag_last_success_age_hours",
            "Hours since the DAG's last successful run; +Inf when none in the window.",
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
            "Failed runs among the runs floe read.",
            self.dags
                .iter()
                .map(|d| (dl(d), d.facts.failed_runs.to_string()))
                .collect(),
        );
    }

    /// The tables whose stats were read, with their stats.
    fn read(&self) -> Vec<(&TableReport, &TableStats)> {
        self.tables
            .iter()
            .filter_map(|t| t.stats.as_ref().map(|s| (t, s)))
            .collect()
    }
}

/// The textfile's gauges in the order they were first added: a family's `HELP` and
/// `TYPE` lines once (the format allows no second), then every sample of every report.
#[derive(Default)]
pub(super) struct Textfile {
    families: Vec<Family>,
}

/// A gauge's name, help and samples (labels, value).
type Family = (String, String, Vec<(String, String)>);

impl Textfile {
    /// Samples (labels, value) of the gauge `name`.
    fn gauge(&mut self, name: &str, help: &str, samples: Vec<(String, String)>) {
        match self.families.iter_mut().find(|(n, _, _)| n == name) {
            Some((_, _, s)) => s.extend(samples),
            None => self
                .families
                .push((name.to_string(), help.to_string(), samples)),
        }
    }

    pub(super) fn render(&self) -> String {
        let mut out = String::new();
        for (name, help, samples) in &self.families {
            out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} gauge\n"));
            for (labels, v) in samples {
                out.push_str(&format!("{name}{labels} {v}\n"));
            }
        }
        out
    }
}

/// Hours from `t` to `now`, two decimals (0 for a time in the future).
fn hours_since(now: DateTime<Utc>, t: DateTime<Utc>) -> String {
    format!("{:.2}", (now - t).num_seconds().max(0) as f64 / 3600.0)
}

/// Reads one count of a table's stats.
type Count = fn(&TableStats) -> u64;

fn prom_escape(s: &str) -> String {
    crate::text::sanitize(s)
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}
