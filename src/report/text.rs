//! The text report: a summary line, a table of tables, then the findings.

use chrono::SecondsFormat;

use super::Report;
use crate::fmt::{human_bytes, human_duration};
use crate::health::{Finding, Severity};
use crate::text::fold_whitespace;

impl Report {
    pub(super) fn text(&self) -> String {
        let mut out = String::new();
        out.push_str(&self.summary_line());
        out.push('\n');
        for w in &self.warnings {
            out.push_str(&format!("WARNING: {w}\n"));
        }
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
        out.push_str(&self.incidents_text());
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
                    d.facts.last_run_text(),
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
                for l in self.code_lines(&d.facts) {
                    out.push_str(&format!("  {}\n", fold_whitespace(&l)));
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
}

impl Report {
    /// The incidents, worst first: one line each with the tables they affect, then the
    /// next actions.
    fn incidents_text(&self) -> String {
        let incidents = self.incidents();
        if incidents.is_empty() {
            return String::new();
        }
        let mut out = format!("\nIncidents ({}, worst first):\n", incidents.len());
        for (n, i) in incidents.iter().enumerate() {
            out.push_str(&format!(
                "{:>2}. {:<8} {}",
                n + 1,
                i.severity.label(),
                fold_whitespace(&i.cause)
            ));
            if let Some(t) = i.tables_text(5) {
                out.push_str(&format!(" → {}", fold_whitespace(&t)));
            }
            out.push('\n');
            out.push_str(&format!("    next: {}\n", super::incidents::next_line(i)));
        }
        out
    }
}

/// One finding in the text report.
fn finding_line(f: &Finding) -> String {
    format!("  [{}] {}: {}\n", f.severity.label(), f.rule, f.message)
}
