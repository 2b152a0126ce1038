//! The markdown report (for a ticket or a chat message), written with the reports' one
//! markdown writer ([`super::markdown_writer`]): identifiers as code spans, prose escaped.

use chrono::SecondsFormat;

use super::markdown_writer::{self as md, Align, Cell, Table};
use super::{Report, TableReport};
use crate::fmt::human_bytes;
use crate::health::{Finding, Severity};

impl Report {
    pub(super) fn markdown(&self) -> String {
        let mut out = String::new();
        self.heading_md(&mut out);
        if self.fatal.is_some() {
            return out;
        }
        self.incidents_md(&mut out);
        self.tables_md(&mut out);
        self.findings_md(&mut out);
        self.dags_md(&mut out);
        for f in &self.findings {
            out.push('\n');
            out.push_str(&finding_item(f));
        }
        out
    }

    /// The summary, where it was read from, and the warnings.
    fn heading_md(&self, out: &mut String) {
        out.push_str(&format!(
            "## floe check: {}\n\n",
            md::text(&self.summary_line())
        ));
        out.push_str(&format!(
            "Trino {} (version {}), profile {}, {}\n\n",
            md::code(&self.trino.url),
            md::text(self.trino.version.as_deref().unwrap_or("?")),
            md::code(&self.profile),
            self.generated_at.to_rfc3339_opts(SecondsFormat::Secs, true)
        ));
        for w in &self.warnings {
            out.push_str(&format!("> **Warning:** {}\n\n", md::text(w)));
        }
    }

    /// `### Incidents`, worst first, each with its next step.
    fn incidents_md(&self, out: &mut String) {
        let incidents = self.incidents();
        if incidents.is_empty() {
            return;
        }
        out.push_str("### Incidents\n\n");
        for (n, i) in incidents.iter().enumerate() {
            out.push_str(&format!(
                "{}. **{}** {}",
                n + 1,
                i.severity.label(),
                md::text(&i.cause)
            ));
            if let Some(t) = i.tables_text(5) {
                out.push_str(&format!(" → {}", md::text(&t)));
            }
            out.push_str(&format!(
                "  \n   next: {}\n",
                md::text(&super::incidents::next_line(i))
            ));
        }
        out.push('\n');
    }

    /// The table of tables, worst first.
    fn tables_md(&self, out: &mut String) {
        let mut table = Table::new(&[
            ("status", Align::Left),
            ("score", Align::Right),
            ("table", Align::Left),
            ("files", Align::Right),
            ("small", Align::Right),
            ("avg file", Align::Right),
            ("size", Align::Right),
            ("snapshots", Align::Right),
            ("last compaction", Align::Left),
        ]);
        for t in self.sorted_tables() {
            table.row(self.table_cells(t));
        }
        out.push_str(&table.finish());
    }

    fn table_cells(&self, t: &TableReport) -> [Cell; 9] {
        let status = Cell::plain(t.health.status.label());
        let name = Cell::code(t.table.to_string());
        match &t.stats {
            Some(s) => [
                status,
                Cell::plain(t.health.score.to_string()),
                name,
                Cell::plain(s.data_files.to_string()),
                Cell::plain(s.small_files.to_string()),
                Cell::plain(
                    s.avg_file_size()
                        .map(human_bytes)
                        .unwrap_or_else(|| "-".into()),
                ),
                Cell::plain(human_bytes(s.total_bytes)),
                Cell::plain(s.snapshots.to_string()),
                Cell::plain(self.age_text(s.last_compaction)),
            ],
            None => [
                status,
                Cell::plain("-"),
                name,
                Cell::plain(""),
                Cell::plain(""),
                Cell::plain(""),
                Cell::plain(""),
                Cell::plain(""),
                Cell::text(t.error.as_deref().unwrap_or("")),
            ],
        }
    }

    /// `### Findings`: each table's findings above info, worst table first.
    fn findings_md(&self, out: &mut String) {
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
                "\n**{}** {}\n\n",
                t.health.status.label(),
                md::code(&t.table.to_string())
            ));
            for x in f {
                out.push_str(&finding_item(x));
                out.push('\n');
            }
        }
    }

    /// `### DAGs`: each maintenance DAG's state and failing task.
    fn dags_md(&self, out: &mut String) {
        if self.dags.is_empty() {
            return;
        }
        out.push_str("\n### DAGs\n\n");
        let mut table = Table::left(&["status", "DAG", "last run", "last success", "failing task"]);
        for d in &self.dags {
            let f = &d.facts;
            let failing = match (&f.failing_task, &f.error_line) {
                (Some(t), Some(e)) => format!("{}: {}", md::code(t), md::code(e)),
                (Some(t), None) => md::code(t),
                _ => String::new(),
            };
            table.row([
                Cell::plain(d.health.status.label()),
                Cell::code(&f.dag_id),
                f.last_run_state
                    .as_ref()
                    .map_or(Cell::plain("none"), |s| Cell::code(s.as_str())),
                Cell::plain(self.age_text(f.last_success_at)),
                Cell::plain(failing),
            ]);
        }
        out.push_str(&table.finish());
        // What each DAG's own code says (advice, with file and line).
        let code: Vec<String> = self
            .dags
            .iter()
            .flat_map(|d| {
                self.code_lines(&d.facts)
                    .into_iter()
                    .map(|l| format!("- {}: {}", md::code(&d.facts.dag_id), md::text(&l)))
                    .collect::<Vec<_>>()
            })
            .collect();
        if !code.is_empty() {
            out.push_str("\n#### DAG code\n\n");
            out.push_str(&code.join("\n"));
            out.push('\n');
        }
    }
}

/// `- **WARNING** \`rule\`: message`, without its newline.
fn finding_item(f: &Finding) -> String {
    format!(
        "- **{}** {}: {}",
        f.severity.label(),
        md::code(f.rule.as_str()),
        md::text(&f.message)
    )
}
