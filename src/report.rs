//! Non-interactive reports (`floe check`): the same rules as the TUI, rendered as text,
//! JSON, a Prometheus textfile, or markdown, with Nagios exit codes.

pub mod check;
mod dag_code;
pub mod fleet;
mod incidents;
mod json;
mod markdown;
mod markdown_writer;
pub mod metrics;
pub mod postmortem;
pub mod postmortem_cli;
pub(crate) mod prometheus;
pub mod record;
mod text;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::fmt::human_duration;
use crate::health::{DagFacts, Finding, Health, Severity};
use crate::lakehouse::model::{TableRef, TableStats};

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
    Prometheus,
    Markdown,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TrinoInfo {
    pub url: String,
    pub version: Option<String>,
    pub uptime_seconds: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AirflowInfo {
    pub url: String,
    pub version: Option<String>,
    pub api: Option<crate::airflow::ApiVersion>,
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
    /// The table's format, by its catalog's connector, when known.
    pub format: Option<crate::lakehouse::delta::TableFormat>,
}

#[derive(Clone, Debug)]
pub struct DagReport {
    pub facts: DagFacts,
    pub health: Health,
    pub tables: Vec<String>,
}

/// One of Airflow's Trino connections and what Airflow's test of it said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnectionReport {
    pub id: String,
    /// `host:port` as the connection holds them.
    pub endpoint: String,
    /// `Some(true)`: its test passed; `Some(false)`: failed; `None`: not tested (Airflow
    /// refuses tests, or could not be asked).
    pub test: Option<bool>,
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
    /// Airflow's Trino connections, each with its test.
    pub connections: Vec<ConnectionReport>,
    /// Set when nothing could be evaluated (Trino unreachable, auth failed…).
    pub fatal: Option<String>,
    /// How floe connected that the operator must know (TLS verification off…).
    pub warnings: Vec<String>,
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
        all.fold(Severity::Ok, worst)
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
            // One line: a server's error holding a newline must not make a second
            // status line for whatever reads the first (Nagios, cron mail subjects).
            return format!("UNKNOWN: {}", crate::text::fold_whitespace(f));
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

    /// The report in `format`, safe to print: no control character from a server (a DAG's
    /// error line, a table name, a partition value) reaches the terminal or file raw. Text
    /// and markdown are sanitised whole; Prometheus label values are sanitised before they
    /// are escaped (its format knows only `\\`, `\"` and `\n`); JSON keeps every string,
    /// with the characters serde leaves raw (DEL, C1, bidi controls) written as `\uXXXX`.
    pub fn render(&self, format: Format) -> String {
        let out = match format {
            Format::Text => self.text(),
            Format::Json => return crate::text::json_escape_unsafe(&self.json()),
            Format::Prometheus => self.prometheus(),
            Format::Markdown => self.markdown(),
        };
        crate::text::sanitize(&out).into_owned()
    }

    fn age_text(&self, t: Option<DateTime<Utc>>) -> String {
        match t {
            Some(t) => human_duration((self.generated_at - t).num_seconds()),
            None => "never".into(),
        }
    }
}

/// The worse of two statuses, Nagios style: CRITICAL over WARNING over UNKNOWN over OK
/// (INFO counts as OK).
pub fn worst(a: Severity, b: Severity) -> Severity {
    match (a, b) {
        (Severity::Critical, _) | (_, Severity::Critical) => Severity::Critical,
        (Severity::Warning, _) | (_, Severity::Warning) => Severity::Warning,
        (Severity::Unknown, _) | (_, Severity::Unknown) => Severity::Unknown,
        _ => Severity::Ok,
    }
}

#[cfg(test)]
pub(crate) mod tests;
