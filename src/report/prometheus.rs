//! The Prometheus textfile report (for node_exporter's textfile collector).

use super::{DagReport, Report, TableReport};
use crate::lakehouse::model::{TableRef, TableStats};

impl Report {
    pub(super) fn prometheus(&self) -> String {
        let mut out = String::new();
        let mut metric = |name: &str, help: &str, samples: Vec<(String, String)>| {
            out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} gauge\n"));
            for (labels, v) in samples {
                out.push_str(&format!("{name}{labels} {v}\n"));
            }
        };
        let labels = |t: &TableRef| {
            format!(
                "{{catalog=\"{}\",schema=\"{}\",table=\"{}\"}}",
                prom_escape(&t.catalog),
                prom_escape(&t.schema),
                prom_escape(&t.table)
            )
        };
        let read: Vec<(&TableReport, &TableStats)> = self
            .tables
            .iter()
            .filter_map(|t| t.stats.as_ref().map(|s| (t, s)))
            .collect();
        let per = |f: &dyn Fn(&TableStats) -> Option<String>| -> Vec<(String, String)> {
            read.iter()
                .filter_map(|(t, s)| f(s).map(|v| (labels(&t.table), v)))
                .collect()
        };
        metric(
            "floe_check_success",
            "1 when floe reached Trino and evaluated the tables, 0 otherwise.",
            vec![(
                String::new(),
                if self.fatal.is_some() {
                    "0".into()
                } else {
                    "1".into()
                },
            )],
        );
        metric(
            "floe_check_timestamp_seconds",
            "When this report was generated (Unix time).",
            vec![(String::new(), self.generated_at.timestamp().to_string())],
        );
        let status_samples = self
            .tables
            .iter()
            .map(|t| (labels(&t.table), t.health.status.exit_code().to_string()))
            .collect();
        metric(
            "floe_table_status",
            "Health status: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.",
            status_samples,
        );
        metric(
            "floe_table_health_score",
            "Health score 0-100 (100 minus the penalties of the findings).",
            read.iter()
                .map(|(t, _)| (labels(&t.table), t.health.score.to_string()))
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
            metric(name, help, per(&|s| Some(value(s).to_string())));
        }
        let now = self.generated_at;
        metric(
            "floe_table_last_compaction_age_hours",
            "Hours since the last compaction (a replace snapshot that rewrote data files); +Inf when a table with data was never compacted.",
            per(&|s| match s.last_compaction {
                Some(t) => Some(format!(
                    "{:.2}",
                    (now - t).num_seconds().max(0) as f64 / 3600.0
                )),
                None if s.data_files > 0 => Some("+Inf".into()),
                None => None,
            }),
        );
        metric(
            "floe_table_small_files_waiting_hours",
            "Hours the oldest live small data file has waited for compaction (0 when none is small). A partial optimize resets last_compaction_age_hours but not this: alert on this one.",
            per(&|s| {
                if s.small_files == 0 {
                    return Some("0.00".into());
                }
                s.oldest_small_file_at
                    .map(|t| format!("{:.2}", (now - t).num_seconds().max(0) as f64 / 3600.0))
            }),
        );
        metric(
            "floe_table_last_write_age_hours",
            "Hours since the last snapshot that added or removed data.",
            per(&|s| {
                s.last_write
                    .map(|t| format!("{:.2}", (now - t).num_seconds().max(0) as f64 / 3600.0))
            }),
        );
        if !self.dags.is_empty() {
            let dl = |d: &DagReport| format!("{{dag_id=\"{}\"}}", prom_escape(&d.facts.dag_id));
            metric(
                "floe_dag_status",
                "Maintenance DAG status: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.",
                self.dags
                    .iter()
                    .map(|d| (dl(d), d.health.status.exit_code().to_string()))
                    .collect(),
            );
            metric(
                "floe_dag_last_success_age_hours",
                "Hours since the DAG's last successful run; +Inf when none in the window.",
                self.dags
                    .iter()
                    .map(|d| {
                        let v = match d.facts.last_success_at {
                            Some(t) => {
                                format!("{:.2}", (now - t).num_seconds().max(0) as f64 / 3600.0)
                            }
                            None => "+Inf".into(),
                        };
                        (dl(d), v)
                    })
                    .collect(),
            );
            metric(
                "floe_dag_failed_runs",
                "Failed runs among the runs floe read.",
                self.dags
                    .iter()
                    .map(|d| (dl(d), d.facts.failed_runs.to_string()))
                    .collect(),
            );
        }
        out
    }
}

/// Reads one count of a table's stats.
type Count = fn(&TableStats) -> u64;

fn prom_escape(s: &str) -> String {
    crate::text::sanitize(s)
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}
