//! The postmortem as markdown, one section after another: every server string made inert
//! and unable to leave its table cell or code span.

use chrono::{DateTime, Utc};

use super::{Postmortem, sequence};
use crate::fmt::{human_bytes, human_duration, thousands};
use crate::lakehouse::query_history::{self, QueryRun, TableQueries};
use crate::mutation::audit::Record;
use crate::report::markdown_writer::{self as md, Align, Cell, Table};
use crate::timeline::{self, EventKind};

/// Timeline rows the markdown shows at most (the newest; JSON keeps every event).
const MAX_TIMELINE_ROWS: usize = 60;

fn when(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M").to_string()
}

fn when_text(t: Option<&str>) -> String {
    t.and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .map(|t| when(t.with_timezone(&Utc)))
        .unwrap_or_else(|| "never".into())
}

fn opt_n(n: Option<u64>) -> String {
    n.map(thousands).unwrap_or_else(|| "-".into())
}

/// Query runs the markdown lists at most (the newest; JSON keeps every one).
const MAX_QUERY_ROWS: usize = 20;

impl Postmortem {
    /// The document as markdown, ready to paste: one section after another.
    pub fn markdown(&self) -> String {
        let mut o = String::new();
        self.heading_md(&mut o);
        self.sequence_md(&mut o);
        self.findings_md(&mut o);
        self.table_md(&mut o);
        self.timeline_md(&mut o);
        if let Some(q) = &self.queries {
            self.queries_md(q, &mut o);
        }
        self.dag_md(&mut o);
        self.actions_md(&mut o);
        self.environment_md(&mut o);
        crate::text::sanitize(&o).into_owned()
    }

    /// The title, the verdict and the timeline's sentence.
    fn heading_md(&self, o: &mut String) {
        let t = &self.table;
        o.push_str(&format!("# Postmortem: {}\n\n", md::code(&self.name)));
        o.push_str(&format!(
            "**{}** (score {}) · generated {} · profile {}\n\n",
            t.status.label(),
            t.score,
            self.generated_at,
            md::code(&self.profile)
        ));
        o.push_str(&format!("> {}\n\n", md::text(&self.timeline.sentence)));
    }

    /// `## Sequence`: symptom, cause, fix, run and result with their times (none: nothing).
    fn sequence_md(&self, o: &mut String) {
        let seq = sequence(self);
        if seq.is_empty() {
            return;
        }
        o.push_str("## Sequence\n\n");
        let mut table = Table::left(&["when (UTC)", "step", "what"]);
        for st in &seq {
            table.row([
                Cell::plain(when(st.at)),
                Cell::plain(st.step),
                Cell::text(&st.what),
            ]);
        }
        o.push_str(&table.finish());
        o.push('\n');
    }

    /// `## Findings`: each rule that did not pass, with its reason.
    fn findings_md(&self, o: &mut String) {
        let t = &self.table;
        o.push_str("## Findings\n\n");
        if let Some(e) = &t.error {
            o.push_str(&format!("The table could not be read: {}\n\n", md::text(e)));
        }
        if t.findings.is_empty() {
            o.push_str("None: every rule passes.\n\n");
            return;
        }
        let mut table = Table::left(&["severity", "rule", "reason"]);
        for f in &t.findings {
            table.row([
                Cell::plain(f.severity.label()),
                Cell::code(f.rule.as_str()),
                Cell::text(&f.message),
            ]);
        }
        o.push_str(&table.finish());
        o.push('\n');
    }

    /// `## Table`: the table's stats, when they were read.
    fn table_md(&self, o: &mut String) {
        let t = &self.table;
        if t.data_files.is_none() {
            return;
        }
        o.push_str("## Table\n\n");
        let mut table = Table::new(&[
            ("data files", Align::Right),
            ("small files", Align::Right),
            ("avg file", Align::Right),
            ("size", Align::Right),
            ("partitions", Align::Right),
            ("snapshots", Align::Right),
            ("last compaction (UTC)", Align::Left),
            ("last write (UTC)", Align::Left),
        ]);
        let avg = match (t.total_bytes, t.data_files) {
            (Some(b), Some(n)) if n > 0 => human_bytes(b / n),
            _ => "-".into(),
        };
        table.row([
            Cell::plain(opt_n(t.data_files)),
            Cell::plain(opt_n(t.small_files)),
            Cell::plain(avg),
            Cell::plain(t.total_bytes.map(human_bytes).unwrap_or_else(|| "-".into())),
            Cell::plain(opt_n(t.partitions)),
            Cell::plain(opt_n(t.snapshots)),
            Cell::plain(when_text(t.last_compaction_at.as_deref())),
            Cell::plain(when_text(t.last_write_at.as_deref())),
        ]);
        o.push_str(&table.finish());
        o.push('\n');
    }

    /// `## Timeline`: the newest rows of the timeline, runs of appends folded into one.
    fn timeline_md(&self, o: &mut String) {
        o.push_str("## Timeline\n\n");
        let events = &self.timeline.events;
        if events.is_empty() {
            o.push_str("No snapshots or DAG runs to show.\n\n");
            return;
        }
        // Runs of ordinary appends fold into one row: the events that matter stand out.
        let rows = timeline::rows(events);
        let skip = rows.len().saturating_sub(MAX_TIMELINE_ROWS);
        if skip > 0 {
            o.push_str(&format!(
                "The newest {MAX_TIMELINE_ROWS} of {} rows ({skip} earlier left out; the JSON report has every event).\n\n",
                rows.len()
            ));
        }
        let mut table = Table::new(&[
            ("when (UTC)", Align::Left),
            ("event", Align::Left),
            ("data files", Align::Right),
            ("snapshot / run", Align::Left),
        ]);
        for row in &rows[skip..] {
            table.row(timeline_cells(row));
        }
        o.push_str(&table.finish());
        o.push('\n');
    }

    /// floe ran the query `id` (an action of the audit log names it).
    fn audited(&self, id: &str) -> bool {
        self.actions
            .iter()
            .any(|a| a.query_id.as_deref() == Some(id))
    }

    /// `## Queries`: what the queries that read the table suffered, from the coordinator.
    fn queries_md(&self, q: &TableQueries, o: &mut String) {
        o.push_str("## Queries\n\n");
        let short = self.name.rsplit('.').next().unwrap_or(&self.name);
        let now = DateTime::parse_from_rfc3339(&self.generated_at)
            .map(|t| t.with_timezone(&Utc))
            .unwrap_or_else(|_| Utc::now());
        let (runs, unconfirmed) = match q {
            TableQueries::Unavailable { reason } => {
                o.push_str(&format!("Not read: {}.\n\n", md::text(reason)));
                return;
            }
            TableQueries::Runs { runs, unconfirmed } => (runs, *unconfirmed),
        };
        match query_history::suffering(runs) {
            Some(w) => o.push_str(&format!(
                "From the coordinator's own record: {}.\n\n",
                md::text(&w.line(short, now))
            )),
            None if runs.is_empty() => o.push_str(&format!(
                "No query that read {} is in the coordinator's recent history.\n\n",
                md::code(short)
            )),
            // Only its maintenance is in the record: the table below is writes, not reads.
            None => {
                let floes = runs.iter().filter(|r| self.audited(&r.query_id)).count();
                o.push_str(&format!(
                    "No query that read {} is in the coordinator's recent history: the {} below {} its maintenance, not {} ({floes} floe's own, {} not).\n\n",
                    md::code(short),
                    runs.len(),
                    if runs.len() == 1 { "is" } else { "are" },
                    if runs.len() == 1 { "a read" } else { "reads" },
                    runs.len() - floes
                ));
            }
        }
        if !runs.is_empty() {
            o.push_str(&query_table(runs, |id| self.audited(id)));
            o.push('\n');
            if runs.len() > MAX_QUERY_ROWS {
                o.push_str(&format!(
                    "The newest {MAX_QUERY_ROWS} of {} runs (the JSON report has them all).\n\n",
                    runs.len()
                ));
            }
        }
        if unconfirmed > 0 {
            o.push_str(&format!(
                "{unconfirmed} more queries named the table, but the coordinator no longer kept their details or would not show them.\n\n"
            ));
        }
    }

    /// `## Maintenance DAG`: the DAG's state, its failing task and error line.
    fn dag_md(&self, o: &mut String) {
        o.push_str("## Maintenance DAG\n\n");
        let Some(d) = &self.dag else {
            o.push_str(&format!(
                "{}.\n\n",
                md::text(match &self.airflow {
                    None => "Airflow is not configured: no DAG was read",
                    Some(a) if a.error.is_some() => "Airflow could not be read",
                    Some(_) => "No maintenance DAG maps to this table",
                })
            ));
            return;
        };
        o.push_str(&format!(
            "- DAG: {}{}{}\n",
            md::code(&d.dag_id),
            if d.guessed {
                " (mapping guessed from its id or tags)"
            } else {
                ""
            },
            if d.paused { ", **paused**" } else { "" }
        ));
        o.push_str(&format!(
            "- last run: {} ({}); last success: {}; failed runs in the window: {}\n",
            d.last_run_state
                .as_deref()
                .map(md::code)
                .unwrap_or_else(|| "none".into()),
            when_text(d.last_run_at.as_deref()),
            when_text(d.last_success_at.as_deref()),
            d.failed_runs
        ));
        if let Some(task) = &d.failing_task {
            o.push_str(&format!(
                "- failing task: {}{}\n",
                md::code(task),
                d.failing_run
                    .as_deref()
                    .map(|r| format!(" of run {}", md::code(r)))
                    .unwrap_or_default()
            ));
        }
        if let Some(e) = &d.error_line {
            o.push_str(&format!("- error: {}\n", md::code(e)));
        }
        if let Some(e) = &d.import_error {
            o.push_str(&format!("- import error: {}\n", md::code(e)));
        }
        for l in &d.code {
            o.push_str(&format!("- {}\n", md::text(l)));
        }
        o.push('\n');
    }

    /// `## Maintenance actions`: what the audit log holds for the table and its DAG.
    fn actions_md(&self, o: &mut String) {
        o.push_str("## Maintenance actions\n\n");
        if self.actions.is_empty() {
            o.push_str(&format!(
                "None recorded in the audit log{}.\n\n",
                self.audit_log
                    .as_deref()
                    .map(|p| format!(" {}", md::code(p)))
                    .unwrap_or_default()
            ));
            return;
        }
        if let Some(p) = &self.audit_log {
            o.push_str(&format!("From the audit log {}.\n\n", md::code(p)));
        }
        let mut table = Table::new(&[
            ("time (UTC)", Align::Left),
            ("action", Align::Left),
            ("partition", Align::Left),
            ("outcome", Align::Left),
            ("query id", Align::Left),
            ("files before → after", Align::Left),
            ("duration", Align::Right),
            ("by", Align::Left),
            ("statement", Align::Left),
        ]);
        for a in &self.actions {
            table.row(action_cells(a));
        }
        o.push_str(&table.finish());
        o.push('\n');
    }

    /// `## Environment`: the servers the postmortem was read from, and what was not read.
    fn environment_md(&self, o: &mut String) {
        o.push_str("## Environment\n\n");
        o.push_str(&format!(
            "- Trino {} version {}{}\n",
            md::code(&self.trino.url),
            md::text(self.trino.version.as_deref().unwrap_or("unknown")),
            self.trino
                .uptime_seconds
                .map(|u| format!(", coordinator up {}", human_duration(u as i64)))
                .unwrap_or_default()
        ));
        if let Some(a) = &self.airflow {
            o.push_str(&format!(
                "- Airflow {} version {}{}\n",
                md::code(&a.url),
                md::text(a.version.as_deref().unwrap_or("unknown")),
                a.error
                    .as_deref()
                    .map(|e| format!(" (unreachable: {})", md::text(e)))
                    .unwrap_or_default()
            ));
        }
        for n in &self.notes {
            o.push_str(&format!("- not read: {}\n", md::text(n)));
        }
    }
}

/// The cells of one timeline row: an event, or a run of appends folded into one.
fn timeline_cells(row: &timeline::Row<'_>) -> [Cell; 4] {
    match row {
        timeline::Row::Event(e) => {
            let what = if e.kind.is_run() {
                String::new()
            } else {
                format!(" ({})", md::text(&e.what))
            };
            [
                Cell::plain(when(e.at)),
                Cell::plain(format!("{} {}{what}", e.kind.glyph(), e.kind.label())),
                Cell::plain(opt_n(e.total_files)),
                Cell::code(&e.id),
            ]
        }
        timeline::Row::Appends { count, first, last } => {
            let short = |t: DateTime<Utc>| t.format("%m-%d %H:%M").to_string();
            [
                Cell::plain(when(first.at)),
                Cell::plain(format!(
                    "{} {count} appends, {} → {}",
                    EventKind::Write.glyph(),
                    short(first.at),
                    short(last.at)
                )),
                Cell::plain(format!(
                    "{} → {}",
                    opt_n(first.total_files),
                    opt_n(last.total_files)
                )),
                Cell::plain(format!("{} … {}", md::code(&first.id), md::code(&last.id))),
            ]
        }
    }
}

/// The newest query runs as a table.
/// The runs as a table, each said to be a read or a write: floe's own (`audited`: its
/// query id is in the audit log) or another's (the DAG's, or any other writer's).
fn query_table(runs: &[QueryRun], audited: impl Fn(&str) -> bool) -> String {
    let mut table = Table::new(&[
        ("created (UTC)", Align::Left),
        ("kind", Align::Left),
        ("state", Align::Left),
        ("elapsed", Align::Right),
        ("queued", Align::Right),
        ("cpu", Align::Right),
        ("splits", Align::Right),
        ("read", Align::Right),
        ("source (user)", Align::Left),
        ("query id", Align::Left),
        ("statement", Align::Left),
    ]);
    let ms = |v: Option<u64>| {
        v.map(query_history::elapsed_text)
            .unwrap_or_else(|| "-".into())
    };
    for r in runs.iter().take(MAX_QUERY_ROWS) {
        let by = match &r.source {
            Some(s) => format!("{s} ({})", r.user),
            None => r.user.clone(),
        };
        let kind = if !query_history::is_table_procedure(&r.query) {
            "read"
        } else if audited(&r.query_id) {
            "write: floe's"
        } else {
            "write: not floe's"
        };
        table.row([
            Cell::plain(r.created.map(when).unwrap_or_else(|| "-".into())),
            Cell::plain(kind),
            Cell::code(r.state.as_str()),
            Cell::plain(ms(r.elapsed_ms)),
            Cell::plain(ms(r.queued_ms)),
            Cell::plain(ms(r.cpu_ms)),
            Cell::plain(opt_n(r.splits)),
            Cell::plain(
                r.physical_input_bytes
                    .map(human_bytes)
                    .unwrap_or_else(|| "-".into()),
            ),
            Cell::text(by),
            Cell::code(&r.query_id),
            Cell::code(crate::text::clip(&r.query, 200)),
        ]);
    }
    table.finish()
}

/// The cells of one audit record in the actions table.
fn action_cells(a: &Record) -> [Cell; 9] {
    let files = match (a.files_before, a.files_after) {
        (None, None) => "-".to_string(),
        (b, f) => format!("{} → {}", opt_n(b), opt_n(f)),
    };
    let outcome = match &a.error {
        Some(e) => format!("{}: {}", a.outcome, e),
        None => a.outcome.to_string(),
    };
    [
        Cell::plain(when_text(Some(&a.time))),
        Cell::text(a.action.as_str()),
        Cell::code(a.partition.as_deref().unwrap_or_default()),
        Cell::text(outcome),
        Cell::code(a.query_id.as_deref().unwrap_or_default()),
        Cell::plain(files),
        Cell::plain(human_duration((a.duration_ms / 1000) as i64)),
        Cell::text(&a.os_user),
        Cell::code(&a.statement),
    ]
}
