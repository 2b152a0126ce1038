//! The markdown report (for a ticket or a chat message).

use chrono::SecondsFormat;

use super::Report;
use crate::fmt::human_bytes;
use crate::health::Severity;

impl Report {
    pub(super) fn markdown(&self) -> String {
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
        for w in &self.warnings {
            out.push_str(&format!("> **Warning:** {}\n\n", md_escape(w)));
        }
        if self.fatal.is_some() {
            return out;
        }
        let incidents = self.incidents();
        if !incidents.is_empty() {
            out.push_str("### Incidents\n\n");
            for (n, i) in incidents.iter().enumerate() {
                out.push_str(&format!(
                    "{}. **{}** {}",
                    n + 1,
                    i.severity.label(),
                    md_escape(&i.cause)
                ));
                if let Some(t) = i.tables_text(5) {
                    out.push_str(&format!(" → {}", md_escape(&t)));
                }
                out.push_str(&format!(
                    "  \n   next: {}\n",
                    md_escape(&super::triage::next_line(i))
                ));
            }
            out.push('\n');
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
                    md_escape(d.facts.last_run_text()),
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

fn md_escape(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}
