//! Non-interactive reports (`floe check`): the same rules as the TUI, rendered as text,
//! JSON, a Prometheus textfile, or markdown, with Nagios exit codes.

pub mod check;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serialize;

use crate::fmt::{human_bytes, human_duration};
use crate::health::{DagFacts, Finding, Health, Severity};
use crate::lakehouse::model::{TableRef, TableStats};

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
    Prometheus,
    Markdown,
}

#[derive(Clone, Debug, Serialize)]
pub struct TrinoInfo {
    pub url: String,
    pub version: Option<String>,
    pub uptime_seconds: Option<f64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct AirflowInfo {
    pub url: String,
    pub version: Option<String>,
    pub api: Option<String>,
    pub error: Option<String>,
}

#[derive(Clone, Debug)]
pub struct TableReport {
    pub table: TableRef,
    pub stats: Option<TableStats>,
    pub health: Health,
    /// Why the table could not be read (its status is then UNKNOWN).
    pub error: Option<String>,
    pub dag: Option<DagFacts>,
}

#[derive(Clone, Debug)]
pub struct DagReport {
    pub facts: DagFacts,
    pub health: Health,
    pub tables: Vec<String>,
}

#[derive(Clone, Debug)]
pub struct Report {
    pub generated_at: DateTime<Utc>,
    pub profile: String,
    pub trino: TrinoInfo,
    pub airflow: Option<AirflowInfo>,
    pub tables: Vec<TableReport>,
    pub dags: Vec<DagReport>,
    /// Findings that belong to no table or DAG (import errors, connection mismatches).
    pub findings: Vec<Finding>,
    /// Set when nothing could be evaluated (Trino unreachable, auth failed…).
    pub fatal: Option<String>,
}

impl Report {
    /// Overall status, Nagios style: CRITICAL over WARNING over UNKNOWN over OK.
    pub fn status(&self) -> Severity {
        if self.fatal.is_some() {
            return Severity::Unknown;
        }
        let all = self
            .tables
            .iter()
            .map(|t| t.health.status)
            .chain(self.dags.iter().map(|d| d.health.status))
            .chain(self.findings.iter().map(|f| f.severity));
        let mut worst = Severity::Ok;
        for s in all {
            worst = match (worst, s) {
                (Severity::Critical, _) | (_, Severity::Critical) => Severity::Critical,
                (Severity::Warning, _) | (_, Severity::Warning) => Severity::Warning,
                (Severity::Unknown, _) | (_, Severity::Unknown) => Severity::Unknown,
                _ => Severity::Ok,
            };
        }
        worst
    }

    pub fn exit_code(&self) -> i32 {
        self.status().exit_code()
    }

    /// Tables worst first, then by score, then by name.
    pub fn sorted_tables(&self) -> Vec<&TableReport> {
        let mut v: Vec<&TableReport> = self.tables.iter().collect();
        v.sort_by(|a, b| {
            b.health
                .status
                .rank()
                .cmp(&a.health.status.rank())
                .then(a.health.score.cmp(&b.health.score))
                .then(a.table.cmp(&b.table))
        });
        v
    }

    fn counts(&self) -> (usize, usize, usize, usize) {
        let mut c = (0, 0, 0, 0);
        for t in &self.tables {
            match t.health.status {
                Severity::Critical => c.0 += 1,
                Severity::Warning => c.1 += 1,
                Severity::Unknown => c.2 += 1,
                _ => c.3 += 1,
            }
        }
        c
    }

    /// The first line of every format's text: what a pager or a cron mail shows.
    pub fn summary_line(&self) -> String {
        if let Some(f) = &self.fatal {
            return format!("UNKNOWN: {f}");
        }
        let (c, w, u, ok) = self.counts();
        let mut s = format!(
            "{}: {} tables: {c} critical, {w} warning, {u} unknown, {ok} ok",
            self.status().label(),
            self.tables.len()
        );
        if !self.dags.is_empty() {
            let failing = self
                .dags
                .iter()
                .filter(|d| d.health.status >= Severity::Warning)
                .count();
            s.push_str(&format!(
                "; {} DAGs, {failing} need attention",
                self.dags.len()
            ));
        }
        s
    }

    pub fn render(&self, format: Format) -> String {
        match format {
            Format::Text => self.text(),
            Format::Json => self.json(),
            Format::Prometheus => self.prometheus(),
            Format::Markdown => self.markdown(),
        }
    }

    fn age_hours(&self, t: Option<DateTime<Utc>>) -> Option<f64> {
        t.map(|t| {
            ((self.generated_at - t).num_milliseconds().max(0) as f64 / 3_600_000.0 * 100.0).round()
                / 100.0
        })
    }

    fn age_text(&self, t: Option<DateTime<Utc>>) -> String {
        match t {
            Some(t) => human_duration((self.generated_at - t).num_seconds()),
            None => "never".into(),
        }
    }

    // ------------------------------------------------------------------ text
    fn text(&self) -> String {
        let mut out = String::new();
        out.push_str(&self.summary_line());
        out.push('\n');
        let version = self.trino.version.as_deref().unwrap_or("?");
        out.push_str(&format!(
            "trino {} (version {version}{}) profile {} at {}\n",
            self.trino.url,
            self.trino
                .uptime_seconds
                .map(|u| format!(", up {}", human_duration(u as i64)))
                .unwrap_or_default(),
            self.profile,
            self.generated_at.to_rfc3339_opts(SecondsFormat::Secs, true)
        ));
        if let Some(a) = &self.airflow {
            out.push_str(&format!(
                "airflow {} ({}{})\n",
                a.url,
                a.version.as_deref().unwrap_or("?"),
                a.error
                    .as_ref()
                    .map(|e| format!(", {e}"))
                    .unwrap_or_default()
            ));
        }
        if self.fatal.is_some() {
            return out;
        }
        out.push('\n');
        out.push_str(&format!(
            "{:<8} {:>5}  {:<40} {:>8} {:>8} {:>9} {:>10} {:>9} {:>10}\n",
            "STATUS", "SCORE", "TABLE", "FILES", "SMALL", "AVG", "SIZE", "SNAPS", "COMPACTED"
        ));
        for t in self.sorted_tables() {
            let name = t.table.to_string();
            match &t.stats {
                Some(s) => out.push_str(&format!(
                    "{:<8} {:>5}  {:<40} {:>8} {:>8} {:>9} {:>10} {:>9} {:>10}\n",
                    t.health.status.label(),
                    t.health.score,
                    name,
                    s.data_files,
                    s.small_files,
                    s.avg_file_size()
                        .map(human_bytes)
                        .unwrap_or_else(|| "-".into()),
                    human_bytes(s.total_bytes),
                    s.snapshots,
                    self.age_text(s.last_compaction),
                )),
                None => out.push_str(&format!(
                    "{:<8} {:>5}  {:<40} {}\n",
                    t.health.status.label(),
                    "-",
                    name,
                    t.error.as_deref().unwrap_or("not read")
                )),
            }
        }
        let noteworthy: Vec<_> = self
            .sorted_tables()
            .into_iter()
            .filter(|t| {
                t.health
                    .findings
                    .iter()
                    .any(|f| f.severity > Severity::Info)
            })
            .collect();
        if !noteworthy.is_empty() {
            out.push_str("\nFindings:\n");
            for t in noteworthy {
                out.push_str(&format!("{} {}\n", t.health.status.label(), t.table));
                for f in &t.health.findings {
                    out.push_str(&finding_line(f));
                }
            }
        }
        if !self.dags.is_empty() {
            out.push_str("\nDAGs:\n");
            for d in &self.dags {
                out.push_str(&format!(
                    "{:<8} {} (last run {}, last success {}){}\n",
                    d.health.status.label(),
                    d.facts.dag_id,
                    d.facts.last_run_state.as_deref().unwrap_or("none"),
                    match d.facts.last_success_at {
                        Some(t) => format!("{} ago", self.age_text(Some(t))),
                        None => "never".into(),
                    },
                    if d.tables.is_empty() {
                        String::new()
                    } else {
                        format!(" maintains {}", d.tables.join(", "))
                    }
                ));
                for f in &d.health.findings {
                    out.push_str(&finding_line(f));
                }
            }
        }
        if !self.findings.is_empty() {
            out.push_str("\nOther findings:\n");
            for f in &self.findings {
                out.push_str(&finding_line(f));
            }
        }
        out
    }

    // ------------------------------------------------------------------ json
    fn json(&self) -> String {
        #[derive(Serialize)]
        struct J<'a> {
            status: Severity,
            summary: String,
            generated_at: String,
            profile: &'a str,
            trino: &'a TrinoInfo,
            airflow: &'a Option<AirflowInfo>,
            error: &'a Option<String>,
            tables: Vec<serde_json::Value>,
            dags: Vec<serde_json::Value>,
            findings: &'a [Finding],
        }
        let ts =
            |t: Option<DateTime<Utc>>| t.map(|t| t.to_rfc3339_opts(SecondsFormat::Millis, true));
        let tables = self
            .sorted_tables()
            .into_iter()
            .map(|t| {
                let s = t.stats.clone().unwrap_or_default();
                let have = t.stats.is_some();
                let n = |v: u64| if have { serde_json::json!(v) } else { serde_json::Value::Null };
                serde_json::json!({
                    "catalog": t.table.catalog,
                    "schema": t.table.schema,
                    "table": t.table.table,
                    "status": t.health.status,
                    "score": t.health.score,
                    "data_files": n(s.data_files),
                    "small_files": n(s.small_files),
                    "total_bytes": n(s.total_bytes),
                    "records": n(s.records),
                    "partitions": n(s.partitions),
                    "partitioned": have.then_some(s.partitioned),
                    "small_file_partitions": n(s.small_file_partitions),
                    "snapshots": n(s.snapshots),
                    "delete_files": n(s.delete_files),
                    "target_file_size": n(s.target_file_size),
                    "last_compaction_at": ts(s.last_compaction),
                    "last_compaction_age_hours": self.age_hours(s.last_compaction),
                    "last_write_at": ts(s.last_write),
                    "oldest_snapshot_at": ts(s.oldest_snapshot),
                    "maintenance_dag": t.dag.as_ref().map(|d| serde_json::json!({
                        "dag_id": d.dag_id, "guessed": d.guessed, "last_run_state": d.last_run_state,
                    })),
                    "error": t.error,
                    "findings": t.health.findings,
                })
            })
            .collect();
        let dags = self
            .dags
            .iter()
            .map(|d| {
                serde_json::json!({
                    "dag_id": d.facts.dag_id,
                    "status": d.health.status,
                    "paused": d.facts.paused,
                    "last_run_state": d.facts.last_run_state,
                    "last_run_at": ts(d.facts.last_run_at),
                    "last_success_at": ts(d.facts.last_success_at),
                    "failed_runs": d.facts.failed_runs,
                    "failing_task": d.facts.failing_task,
                    "error_line": d.facts.error_line,
                    "import_error": d.facts.import_error,
                    "tables": d.tables,
                    "findings": d.health.findings,
                })
            })
            .collect();
        let j = J {
            status: self.status(),
            summary: self.summary_line(),
            generated_at: self.generated_at.to_rfc3339_opts(SecondsFormat::Secs, true),
            profile: &self.profile,
            trino: &self.trino,
            airflow: &self.airflow,
            error: &self.fatal,
            tables,
            dags,
            findings: &self.findings,
        };
        let mut s = serde_json::to_string_pretty(&j).expect("report serializes");
        s.push('\n');
        s
    }

    // ------------------------------------------------------------ prometheus
    fn prometheus(&self) -> String {
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

    // -------------------------------------------------------------- markdown
    fn markdown(&self) -> String {
        let mut out = String::new();
        out.push_str(&format!(
            "## floe check: {}\n\n",
            md_escape(&self.summary_line())
        ));
        out.push_str(&format!(
            "Trino `{}` (version {}), profile `{}`, {}\n\n",
            self.trino.url,
            self.trino.version.as_deref().unwrap_or("?"),
            self.profile,
            self.generated_at.to_rfc3339_opts(SecondsFormat::Secs, true)
        ));
        if self.fatal.is_some() {
            return out;
        }
        out.push_str("| status | score | table | files | small | avg file | size | snapshots | last compaction |\n");
        out.push_str("|---|---:|---|---:|---:|---:|---:|---:|---|\n");
        for t in self.sorted_tables() {
            match &t.stats {
                Some(s) => out.push_str(&format!(
                    "| {} | {} | `{}` | {} | {} | {} | {} | {} | {} |\n",
                    t.health.status.label(),
                    t.health.score,
                    md_escape(&t.table.to_string()),
                    s.data_files,
                    s.small_files,
                    s.avg_file_size()
                        .map(human_bytes)
                        .unwrap_or_else(|| "-".into()),
                    human_bytes(s.total_bytes),
                    s.snapshots,
                    self.age_text(s.last_compaction),
                )),
                None => out.push_str(&format!(
                    "| {} | - | `{}` | | | | | | {} |\n",
                    t.health.status.label(),
                    md_escape(&t.table.to_string()),
                    md_escape(t.error.as_deref().unwrap_or(""))
                )),
            }
        }
        let mut any = false;
        for t in self.sorted_tables() {
            let f: Vec<_> = t
                .health
                .findings
                .iter()
                .filter(|f| f.severity > Severity::Info)
                .collect();
            if f.is_empty() {
                continue;
            }
            if !any {
                out.push_str("\n### Findings\n");
                any = true;
            }
            out.push_str(&format!(
                "\n**{}** `{}`\n\n",
                t.health.status.label(),
                md_escape(&t.table.to_string())
            ));
            for x in f {
                out.push_str(&format!(
                    "- **{}** {}: {}\n",
                    x.severity.label(),
                    x.rule,
                    md_escape(&x.message)
                ));
            }
        }
        if !self.dags.is_empty() {
            out.push_str("\n### DAGs\n\n| status | DAG | last run | last success | failing task |\n|---|---|---|---|---|\n");
            for d in &self.dags {
                out.push_str(&format!(
                    "| {} | `{}` | {} | {} | {} |\n",
                    d.health.status.label(),
                    md_escape(&d.facts.dag_id),
                    d.facts.last_run_state.as_deref().unwrap_or("none"),
                    self.age_text(d.facts.last_success_at),
                    md_escape(&match (&d.facts.failing_task, &d.facts.error_line) {
                        (Some(t), Some(e)) => format!("{t}: {e}"),
                        (Some(t), None) => t.clone(),
                        _ => String::new(),
                    })
                ));
            }
        }
        for f in &self.findings {
            out.push_str(&format!(
                "\n- **{}** {}: {}",
                f.severity.label(),
                f.rule,
                md_escape(&f.message)
            ));
        }
        out
    }
}

/// Reads one count of a table's stats.
type Count = fn(&TableStats) -> u64;

/// One finding in the text report.
fn finding_line(f: &Finding) -> String {
    format!("  [{}] {}: {}\n", f.severity.label(), f.rule, f.message)
}

fn prom_escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn md_escape(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

#[cfg(test)]
mod tests;
