//! The postmortem of one table (`floe report TABLE`, `:export md`): the incident as an
//! operator pastes it into a write-up — the findings with their reasons, the timeline and
//! its sentence, the maintenance DAG's failing task and error line, the Trino coordinator
//! it was read from, and every maintenance action the audit log holds for the table.
//!
//! Pure: the caller gathers what was read; this builds the document and renders it as
//! markdown (every server string made inert and unable to leave its table cell or code
//! span) or JSON (the real strings, serde-escaped).

use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serialize;

use super::md::{self, Align, Cell, Table};
use super::record::{DagRecord, TableRecord, timestamp};
use super::timeline::{self, DagRuns, EventKind, Timeline};
use super::{AirflowInfo, TrinoInfo};
use crate::fmt::{human_bytes, human_duration, thousands};
use crate::health::{DagFacts, Health, Severity};
use crate::lakehouse::history::{self, QueryRun, TableQueries};
use crate::lakehouse::model::{SnapshotInfo, TableRef, TableStats};
use crate::maintain::audit::Record;

/// The maintenance DAG as the postmortem tells it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DagSection {
    pub dag_id: String,
    /// The mapping was guessed from the DAG's id or tags, not configured.
    pub guessed: bool,
    pub paused: bool,
    pub last_run_state: Option<String>,
    pub last_run_at: Option<String>,
    pub last_success_at: Option<String>,
    /// Failed runs in the window floe looked at.
    pub failed_runs: u32,
    pub failing_task: Option<String>,
    /// The run the failing task belongs to, when known.
    pub failing_run: Option<String>,
    /// The error line of the failing task's log.
    pub error_line: Option<String>,
    pub import_error: Option<String>,
}

impl DagSection {
    pub fn new(f: &DagFacts) -> DagSection {
        DagSection {
            dag_id: f.dag_id.clone(),
            guessed: f.guessed,
            paused: f.paused,
            last_run_state: f.last_run_state.as_ref().map(|s| s.to_string()),
            last_run_at: timestamp(f.last_run_at),
            last_success_at: timestamp(f.last_success_at),
            failed_runs: f.failed_runs,
            failing_task: f.failing_task.clone(),
            failing_run: None,
            error_line: f.error_line.clone(),
            import_error: f.import_error.clone(),
        }
    }
}

/// The incident of one table.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Postmortem {
    pub generated_at: String,
    pub profile: String,
    /// `catalog.schema.table`
    pub name: String,
    /// The table's stats, verdict and findings (the record of `floe check --format json`).
    pub table: TableRecord,
    pub trino: TrinoInfo,
    pub airflow: Option<AirflowInfo>,
    pub dag: Option<DagSection>,
    pub timeline: Timeline,
    /// Where the actions were read from.
    pub audit_log: Option<String>,
    /// Every maintenance action on the table (and its DAG) the audit log holds, oldest first.
    pub actions: Vec<Record>,
    /// The recent queries the coordinator ran that read the table (its own record), when
    /// they were asked for.
    pub queries: Option<TableQueries>,
    /// What could not be read, so the reader knows what is missing.
    pub notes: Vec<String>,
}

/// What the caller read, for [`build`].
pub struct Sources<'a> {
    pub now: DateTime<Utc>,
    pub profile: &'a str,
    pub table: &'a TableRef,
    pub stats: Option<&'a TableStats>,
    pub health: &'a Health,
    /// Why the table's stats could not be read.
    pub error: Option<&'a str>,
    pub trino: TrinoInfo,
    pub airflow: Option<AirflowInfo>,
    pub dag: Option<DagSection>,
    /// The snapshots, when they were read.
    pub snapshots: Option<&'a [SnapshotInfo]>,
    pub runs: &'a DagRuns,
    /// A compaction older than this, with writes after it, "stopped".
    pub stale_after: chrono::Duration,
    pub audit_log: Option<String>,
    /// Every record of the audit log (outcomes), any table.
    pub audit: &'a [Record],
    /// The coordinator's record of the queries that read the table, when read.
    pub queries: Option<TableQueries>,
    pub notes: Vec<String>,
}

/// The Airflow writes the audit log records, whose statement names the DAG second
/// (`trigger compact_documents`, `clear compact_documents <run>`).
const DAG_ACTIONS: [&str; 4] = ["trigger_dag", "clear_dag_run", "pause_dag", "unpause_dag"];

/// One step of the incident as it happened: symptom, cause, fix, run, result.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Step {
    pub at: DateTime<Utc>,
    /// `symptom`, `cause`, `fix`, `run`, `result`.
    pub step: &'static str,
    pub what: String,
}

/// The incident's sequence with its times, oldest first, from what the postmortem holds:
/// the slowest query that read the table (symptom), the DAG's first failed run since its
/// last success (cause), the connection fixes and maintenance the audit log holds (fix),
/// the DAG's runs after the first fix (run), and the compactions after them (result).
pub fn sequence(p: &Postmortem) -> Vec<Step> {
    let mut out = Vec::new();
    let short = p.name.rsplit('.').next().unwrap_or(&p.name).to_string();
    let now = DateTime::parse_from_rfc3339(&p.generated_at)
        .map(|t| t.with_timezone(&Utc))
        .unwrap_or_else(|_| Utc::now());
    let first_fix = fixes(p, &mut out);
    if let Some(q) = &p.queries
        && let Some(w) = history::suffering_until(q.runs(), first_fix)
        && let Some(at) = w.run.created
    {
        out.push(Step {
            at,
            step: "symptom",
            what: w.line(&short, now),
        });
    }
    if let (Some(e), Some(d)) = (first_failure(p, first_fix.unwrap_or(now)), &p.dag) {
        out.push(Step {
            at: e.at,
            step: "cause",
            what: format!(
                "DAG {} failing from run {}{}",
                d.dag_id,
                e.id,
                d.error_line
                    .as_deref()
                    .map(|l| format!(": {}", crate::text::clip(l, 200)))
                    .unwrap_or_default()
            ),
        });
    }
    if let Some(f) = first_fix {
        for e in p.timeline.events.iter().filter(|e| e.at >= f) {
            let (step, what) = match e.kind {
                timeline::EventKind::RunSucceeded => ("run", format!("run {} succeeded", e.id)),
                timeline::EventKind::RunFailed => ("run", format!("run {} failed", e.id)),
                timeline::EventKind::Compaction => (
                    "result",
                    format!(
                        "compaction {}{}",
                        e.id,
                        e.total_files
                            .map(|n| format!(": {} data files", thousands(n)))
                            .unwrap_or_default()
                    ),
                ),
                _ => continue,
            };
            out.push(Step {
                at: e.at,
                step,
                what,
            });
        }
        out.extend(symptom_after(p, f));
    }
    out.sort_by_key(|s| s.at);
    out
}

/// The fixes and triggers of the audit log as steps (into `out`); returns the first one's
/// time.
fn fixes(p: &Postmortem, out: &mut Vec<Step>) -> Option<DateTime<Utc>> {
    let mut first_fix: Option<DateTime<Utc>> = None;
    for r in &p.actions {
        let Ok(t) = DateTime::parse_from_rfc3339(&r.time).map(|t| t.with_timezone(&Utc)) else {
            continue;
        };
        let step = match r.action.as_str() {
            "fix_connection" | "optimize" | "unpause_dag" | "clear_dag_run" => "fix",
            "trigger_dag" => "run",
            _ => continue,
        };
        first_fix = Some(first_fix.map_or(t, |f| f.min(t)));
        let files = match (r.files_before, r.files_after) {
            (Some(b), Some(a)) => format!(", files {} → {}", thousands(b), thousands(a)),
            _ => String::new(),
        };
        out.push(Step {
            at: t,
            step,
            what: format!("{} ({}{files})", r.statement, r.outcome),
        });
    }
    first_fix
}

/// The cause: the first failed run of the failing streak that was going on at `until`
/// (the first fix, or now) — the failures after the last success before the streak's
/// newest failure. A success after the fix (the verified fix itself) does not hide it.
fn first_failure(p: &Postmortem, until: DateTime<Utc>) -> Option<&timeline::Event> {
    let runs = || p.timeline.events.iter().filter(|e| e.at < until);
    let newest_failure = runs()
        .filter(|e| e.kind == timeline::EventKind::RunFailed)
        .map(|e| e.at)
        .max()?;
    let dag_ok = p
        .dag
        .as_ref()
        .and_then(|d| d.last_success_at.as_deref())
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.with_timezone(&Utc));
    let last_ok = runs()
        .filter(|e| e.kind == timeline::EventKind::RunSucceeded)
        .map(|e| e.at)
        .chain(dag_ok)
        .filter(|t| *t < newest_failure)
        .max();
    runs()
        .filter(|e| e.kind == timeline::EventKind::RunFailed)
        .filter(|e| last_ok.is_none_or(|ok| e.at > ok))
        .min_by_key(|e| e.at)
}

/// The later runs of the query that suffered (the symptom), from `since` (the first fix):
/// the result a reader of the table sees.
pub fn symptom_after(p: &Postmortem, since: DateTime<Utc>) -> Vec<Step> {
    let short = p.name.rsplit('.').next().unwrap_or(&p.name);
    let Some(q) = &p.queries else {
        return Vec::new();
    };
    let Some(w) = history::suffering_until(q.runs(), Some(since)) else {
        return Vec::new();
    };
    let shape = history::shape(&w.run.query);
    q.runs()
        .iter()
        .filter(|r| r.query_id != w.run.query_id && history::shape(&r.query) == shape)
        .filter_map(|r| Some((r.created.filter(|c| *c >= since)?, r.elapsed_ms?)))
        .map(|(at, ms)| Step {
            at,
            step: "result",
            what: format!(
                "{} on {short} took {} (the symptom's run: {})",
                history::who(w.run),
                history::elapsed_text(ms),
                history::elapsed_text(w.elapsed_ms)
            ),
        })
        .collect()
}

/// The audit records about `table` (its `catalog.schema.table`), and the writes to its
/// maintenance DAG `dag_id`, oldest first.
pub fn actions_for(records: &[Record], table: &str, dag_id: Option<&str>) -> Vec<Record> {
    let mut v: Vec<Record> = records
        .iter()
        .filter(|r| {
            r.table
                .as_deref()
                .is_some_and(|t| t.eq_ignore_ascii_case(table))
                || dag_id.is_some_and(|d| {
                    DAG_ACTIONS.contains(&r.action.as_str())
                        && r.statement.split_whitespace().nth(1) == Some(d)
                })
        })
        .cloned()
        .collect();
    v.sort_by(|a, b| a.time.cmp(&b.time));
    v
}

/// The connection fixes of the audit log whose connection the DAG's error line names
/// (`… (connection trino_documents): …`): the fix of this incident's cause.
pub fn connection_fixes(records: &[Record], error_line: Option<&str>) -> Vec<Record> {
    let Some(line) = error_line else {
        return Vec::new();
    };
    let named = |id: &str| {
        let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
        line.match_indices(id).any(|(i, _)| {
            !line[..i].chars().next_back().is_some_and(word)
                && !line[i + id.len()..].chars().next().is_some_and(word)
        })
    };
    records
        .iter()
        .filter(|r| r.action == "fix_connection")
        .filter(|r| {
            r.statement
                .strip_prefix("set connection ")
                .and_then(|rest| rest.split_whitespace().next())
                .is_some_and(|id| !id.is_empty() && named(id))
        })
        .cloned()
        .collect()
}

/// [`actions_for`] and the [`connection_fixes`], oldest first.
fn all_actions(records: &[Record], table: &str, dag: Option<&DagSection>) -> Vec<Record> {
    let mut v = actions_for(records, table, dag.map(|d| d.dag_id.as_str()));
    v.extend(connection_fixes(
        records,
        dag.and_then(|d| d.error_line.as_deref()),
    ));
    v.sort_by(|a, b| a.time.cmp(&b.time));
    v
}

impl Postmortem {
    /// Put in the actions of the audit log at `path` (every record of it, any table).
    pub fn with_audit(mut self, path: &std::path::Path, records: &[Record]) -> Postmortem {
        self.actions = all_actions(records, &self.name, self.dag.as_ref());
        self.audit_log = Some(path.display().to_string());
        self
    }
}

pub fn build(src: Sources<'_>) -> Postmortem {
    let name = src.table.to_string();
    let mut record = TableRecord::new(src.table, src.stats, src.health, src.now);
    record.error = src.error.map(str::to_string);
    record.maintenance_dag = src.dag.as_ref().map(|d| DagRecord {
        dag_id: d.dag_id.clone(),
        guessed: d.guessed,
        last_run_state: d.last_run_state.as_ref().map(|s| s.to_string()),
    });
    let mut notes = src.notes;
    let timeline = match src.snapshots {
        Some(s) => timeline::build(s, src.runs, src.now, src.stale_after),
        None => {
            notes.push(format!("the snapshots of {name} were not read"));
            timeline::build(&[], src.runs, src.now, src.stale_after)
        }
    };
    if let DagRuns::Failed { dag_id, error } = src.runs {
        notes.push(format!(
            "the runs of DAG {dag_id} could not be read: {error}"
        ));
    }
    Postmortem {
        generated_at: src.now.to_rfc3339_opts(SecondsFormat::Secs, true),
        profile: src.profile.to_string(),
        actions: all_actions(src.audit, &name, src.dag.as_ref()),
        name,
        table: record,
        trino: src.trino,
        airflow: src.airflow,
        dag: src.dag,
        timeline,
        audit_log: src.audit_log,
        queries: src.queries,
        notes,
    }
}

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
    /// The overall status: the table's.
    pub fn status(&self) -> Severity {
        self.table.status
    }

    /// The document as JSON: every string as the server sent it, with what serde leaves
    /// raw written as `\uXXXX`.
    pub fn json(&self) -> String {
        let text = serde_json::to_string_pretty(self).expect("a postmortem serializes");
        crate::text::json_escape_unsafe(&text) + "\n"
    }

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
        match history::suffering(runs) {
            Some(w) => o.push_str(&format!(
                "From the coordinator's own record: {}.\n\n",
                md::text(&w.line(short, now))
            )),
            None => o.push_str(&format!(
                "No query that read {} is in the coordinator's recent history.\n\n",
                md::code(short)
            )),
        }
        if !runs.is_empty() {
            o.push_str(&query_table(runs));
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
fn query_table(runs: &[QueryRun]) -> String {
    let mut table = Table::new(&[
        ("created (UTC)", Align::Left),
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
    let ms = |v: Option<u64>| v.map(history::elapsed_text).unwrap_or_else(|| "-".into());
    for r in runs.iter().take(MAX_QUERY_ROWS) {
        let by = match &r.source {
            Some(s) => format!("{s} ({})", r.user),
            None => r.user.clone(),
        };
        table.row([
            Cell::plain(r.created.map(when).unwrap_or_else(|| "-".into())),
            Cell::code(&r.state),
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
        None => a.outcome.clone(),
    };
    [
        Cell::plain(when_text(Some(&a.time))),
        Cell::text(&a.action),
        Cell::code(a.partition.as_deref().unwrap_or_default()),
        Cell::text(outcome),
        Cell::code(a.query_id.as_deref().unwrap_or_default()),
        Cell::plain(files),
        Cell::plain(human_duration((a.duration_ms / 1000) as i64)),
        Cell::text(&a.os_user),
        Cell::code(&a.statement),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::testing::dags::{ERROR, failing_facts};
    use crate::app::testing::{incident_stats, t0, tref};
    use crate::health::{HealthConfig, evaluate};

    fn trino() -> TrinoInfo {
        TrinoInfo {
            url: "http://127.0.0.1:8080/".into(),
            version: Some("480".into()),
            uptime_seconds: Some(9000.0),
        }
    }

    fn audit(table: &str, action: &str, statement: &str, query: &str) -> Record {
        let mut r = Record::now("lab", "floe", "http://127.0.0.1:8080/", action, statement);
        r.time = "2026-11-29T09:30:00.000Z".into();
        r.table = Some(table.into());
        r.query_id = Some(query.into());
        r.outcome = "succeeded".into();
        r.files_before = Some(28);
        r.files_after = Some(2);
        r.duration_ms = 4200;
        r
    }

    fn doc(
        stats: &TableStats,
        dag: Option<DagSection>,
        runs: &DagRuns,
        audit: &[Record],
    ) -> Postmortem {
        let facts = failing_facts();
        let health = evaluate(stats, Some(&facts), &HealthConfig::default(), t0());
        let table = tref("zoning", "documents");
        build(Sources {
            now: t0(),
            profile: "lab",
            table: &table,
            stats: Some(stats),
            health: &health,
            error: None,
            trino: trino(),
            airflow: None,
            dag,
            snapshots: Some(&[]),
            runs,
            stale_after: chrono::Duration::hours(36),
            audit_log: Some("/var/lib/floe/audit.jsonl".into()),
            audit,
            queries: None,
            notes: Vec::new(),
        })
    }

    #[test]
    fn the_incident_reads_as_a_write_up() {
        let audit = vec![
            audit(
                "iceberg.zoning.documents",
                "optimize",
                "ALTER TABLE \"iceberg\".\"zoning\".\"documents\" EXECUTE optimize WHERE district = 'north'",
                "20261129_093000_00042_lab01",
            ),
            audit("iceberg.audit.events", "optimize", "ALTER …", "other"),
            {
                let mut r = audit("", "trigger_dag", "trigger compact_documents", "");
                r.table = None;
                r.query_id = None;
                r
            },
        ];
        let mut dag = DagSection::new(&failing_facts());
        dag.failing_run = Some("scheduled__2026-11-29T00:00:00+00:00".into());
        let p = doc(
            &incident_stats(),
            Some(dag),
            &DagRuns::Loaded {
                dag_id: "compact_documents".into(),
                runs: vec![],
            },
            &audit,
        );
        assert_eq!(
            p.actions.len(),
            2,
            "the table's optimize and its DAG's trigger"
        );
        let md = p.markdown();
        for want in [
            "# Postmortem: `iceberg.zoning.documents`",
            "**CRITICAL**",
            "| `small_files` |",
            "| `stale_dag_failing` |",
            "- DAG: `compact_documents`",
            "- failing task: `compact` of run `scheduled__2026-11-29T00:00:00+00:00`",
            "trino-old.internal:8080",
            "`20261129_093000_00042_lab01`",
            "28 → 2",
            "- Trino `http://127.0.0.1:8080/` version 480, coordinator up 2h30m",
            "> no snapshots; compact\\_documents has no runs",
        ] {
            assert!(md.contains(want), "{want:?} not in:\n{md}");
        }
        assert!(md.contains(&md::code(ERROR)));
        assert!(!md.contains("other"), "another table's action: {md}");
        let v: serde_json::Value = serde_json::from_str(&p.json()).unwrap();
        assert_eq!(v["name"], "iceberg.zoning.documents");
        assert_eq!(v["dag"]["error_line"], ERROR);
        assert_eq!(v["actions"][0]["query_id"], "20261129_093000_00042_lab01");
        assert_eq!(v["trino"]["version"], "480");
        assert_eq!(v["table"]["status"], "CRITICAL");
    }

    #[test]
    fn runs_of_appends_fold_into_one_row_between_the_events_that_matter() {
        use crate::airflow::DagRunState;
        let t = |h: i64| t0() - chrono::Duration::hours(h);
        let snap = |i: i64, h: i64, op: &str, total: u64, deleted: Option<u64>| SnapshotInfo {
            committed_at: t(h),
            snapshot_id: 1000 + i,
            parent_id: None,
            operation: op.into(),
            added_data_files: Some(10),
            deleted_data_files: deleted,
            total_data_files: Some(total),
            added_records: None,
            total_records: None,
            total_delete_files: None,
            added_files_size: None,
            removed_files_size: None,
            trino_user: None,
            trino_query_id: None,
        };
        // 22 appends, a compaction, 38 appends, a delete, 3 appends.
        let mut snaps = Vec::new();
        let mut h = 200;
        let mut total = 0;
        for i in 0..22 {
            total += 10;
            snaps.push(snap(i, h, "append", total, None));
            h -= 1;
        }
        snaps.push(snap(22, h, "replace", 12, Some(total)));
        total = 12;
        h -= 1;
        for i in 23..61 {
            total += 10;
            snaps.push(snap(i, h, "append", total, None));
            h -= 1;
        }
        snaps.push(snap(61, h, "delete", total, None));
        h -= 1;
        for i in 62..65 {
            total += 10;
            snaps.push(snap(i, h, "append", total, None));
            h -= 1;
        }
        // A failed run of the maintenance DAG among the appends after the compaction.
        let run = crate::app::testing::dags::scheduled_run(
            "scheduled__x".into(),
            t(150) + chrono::Duration::minutes(30),
            DagRunState::Failed,
        );
        let runs = DagRuns::Loaded {
            dag_id: "compact_documents".into(),
            runs: vec![run],
        };
        let stats = incident_stats();
        let facts = failing_facts();
        let health = evaluate(&stats, Some(&facts), &HealthConfig::default(), t0());
        let table = tref("zoning", "documents");
        let p = build(Sources {
            now: t0(),
            profile: "lab",
            table: &table,
            stats: Some(&stats),
            health: &health,
            error: None,
            trino: trino(),
            airflow: None,
            dag: None,
            snapshots: Some(&snaps),
            runs: &runs,
            stale_after: chrono::Duration::hours(36),
            audit_log: None,
            audit: &[],
            notes: Vec::new(),
            queries: None,
        });
        let md = p.markdown();
        let timeline: Vec<&str> = md
            .lines()
            .skip_while(|l| *l != "## Timeline")
            .skip(4)
            .take_while(|l| l.starts_with('|'))
            .collect();
        let events: Vec<&str> = timeline
            .iter()
            .map(|l| l.split('|').nth(2).unwrap().trim())
            .collect();
        assert_eq!(
            events,
            vec![
                "· 22 appends, 11-21 01:00 → 11-21 22:00",
                "◆ compaction (replace)",
                "· 28 appends, 11-22 00:00 → 11-23 03:00",
                "✗ run failed",
                "· 10 appends, 11-23 04:00 → 11-23 13:00",
                "· write (delete)",
                "· 3 appends, 11-23 15:00 → 11-23 17:00",
            ],
            "{md}"
        );
        assert!(timeline[0].contains("| 10 → 220 |"), "{}", timeline[0]);
        // JSON keeps every event.
        let v: serde_json::Value = serde_json::from_str(&p.json()).unwrap();
        assert_eq!(v["timeline"]["events"].as_array().unwrap().len(), 66);
    }

    #[test]
    fn the_sequence_tells_symptom_cause_fix_run_and_result_with_times() {
        use crate::airflow::DagRunState;
        use crate::app::testing::dags::scheduled_run;
        use crate::lakehouse::history::{QueryRun, TableQueries};
        use chrono::TimeZone;
        let t = |h: u32, m: u32| chrono::Utc.with_ymd_and_hms(2026, 11, 29, h, m, 0).unwrap();
        let rec = |action: &str, statement: &str, time: &str| {
            let mut r = audit("", action, statement, "");
            r.table = None;
            r.query_id = None;
            r.files_before = None;
            r.files_after = None;
            r.time = time.into();
            r
        };
        let audit = vec![
            rec(
                "fix_connection",
                "set connection trino_documents host=127.0.0.1 port=8080",
                "2026-11-29T09:10:00.000Z",
            ),
            // Another DAG's connection: not this incident's fix.
            rec(
                "fix_connection",
                "set connection trino_documents_old host=h port=1",
                "2026-11-29T09:11:00.000Z",
            ),
            rec(
                "trigger_dag",
                "trigger compact_documents",
                "2026-11-29T09:12:00.000Z",
            ),
        ];
        let mut dag = DagSection::new(&failing_facts());
        dag.last_success_at = Some("2026-11-15T00:00:00Z".into());
        let runs = DagRuns::Loaded {
            dag_id: "compact_documents".into(),
            runs: vec![
                scheduled_run(
                    "scheduled__ok".into(),
                    t(0, 0) - chrono::Duration::days(14),
                    DagRunState::Success,
                ),
                scheduled_run(
                    "scheduled__first_failed".into(),
                    t(0, 0) - chrono::Duration::days(13),
                    DagRunState::Failed,
                ),
                scheduled_run("scheduled__2".into(), t(0, 0), DagRunState::Failed),
                scheduled_run("manual__fix".into(), t(9, 12), DagRunState::Success),
            ],
        };
        let mut p = doc(&incident_stats(), Some(dag), &runs, &audit);
        p.queries = Some(TableQueries::Runs {
            runs: vec![QueryRun {
                query_id: "q1".into(),
                state: "FINISHED".into(),
                user: "bi".into(),
                source: Some("dashboard".into()),
                query: "SELECT 1 FROM documents".into(),
                created: Some(t(8, 14)),
                ended: None,
                elapsed_ms: Some(252_000),
                queued_ms: None,
                cpu_ms: None,
                splits: Some(18_000),
                physical_input_bytes: None,
                physical_written_bytes: None,
                error_code: None,
            }],
            unconfirmed: 0,
        });
        let seq = sequence(&p);
        let steps: Vec<(&str, String)> = seq
            .iter()
            .map(|s| (s.step, s.at.format("%m-%d %H:%M").to_string()))
            .collect();
        assert_eq!(
            steps,
            vec![
                ("cause", "11-16 00:00".to_string()),
                ("symptom", "11-29 08:14".to_string()),
                ("fix", "11-29 09:10".to_string()),
                ("run", "11-29 09:12".to_string()),
                ("run", "11-29 09:12".to_string()),
            ],
            "{seq:#?}"
        );
        assert!(seq[0].what.starts_with(
            "DAG compact_documents failing from run scheduled__first_failed: ConnectionError"
        ));
        assert!(
            seq[1]
                .what
                .starts_with("the dashboard query on documents took 4m12s reading 18,000 splits")
        );
        assert_eq!(
            seq[2].what,
            "set connection trino_documents host=127.0.0.1 port=8080 (succeeded)"
        );
        let md = p.markdown();
        assert!(
            md.contains("## Sequence\n\n| when (UTC) | step | what |"),
            "{md}"
        );
        assert!(md.contains("| 2026-11-29 09:10 | fix | set connection trino\\_documents host=127.0.0.1 port=8080 (succeeded) |"), "{md}");

        // Written after the verified fix: the DAG's last success is the fix's run, and a
        // later run of the query was slower (a busy coordinator). The cause is still the
        // streak's first failure, the symptom still the run before the fix.
        if let Some(d) = p.dag.as_mut() {
            d.last_success_at = Some("2026-11-29T09:12:30Z".into());
        }
        if let Some(TableQueries::Runs { runs, .. }) = p.queries.as_mut() {
            let mut later = runs[0].clone();
            later.query_id = "q2".into();
            later.created = Some(t(10, 0));
            later.elapsed_ms = Some(300_000);
            later.splits = Some(360);
            runs.push(later);
        }
        let seq = sequence(&p);
        let steps: Vec<(&str, String)> = seq
            .iter()
            .map(|s| (s.step, s.at.format("%m-%d %H:%M").to_string()))
            .collect();
        assert_eq!(steps[0], ("cause", "11-16 00:00".to_string()), "{seq:#?}");
        assert_eq!(steps[1], ("symptom", "11-29 08:14".to_string()), "{seq:#?}");
        assert_eq!(
            steps.last().unwrap(),
            &("result", "11-29 10:00".to_string())
        );
        assert!(
            seq.last()
                .unwrap()
                .what
                .ends_with("took 5m (the symptom's run: 4m12s)"),
            "{seq:#?}"
        );
    }

    #[test]
    fn the_symptoms_next_runs_after_the_fix_are_its_result() {
        use crate::lakehouse::history::{QueryRun, TableQueries};
        use chrono::TimeZone;
        let t = |h: u32, m: u32| chrono::Utc.with_ymd_and_hms(2026, 11, 29, h, m, 0).unwrap();
        let run = |id: &str, at: DateTime<Utc>, ms: u64| QueryRun {
            query_id: id.into(),
            state: "FINISHED".into(),
            user: "bi".into(),
            source: Some("dashboard".into()),
            query: "SELECT district, count(*) FROM documents GROUP BY 1".into(),
            created: Some(at),
            ended: None,
            elapsed_ms: Some(ms),
            queued_ms: None,
            cpu_ms: None,
            splits: None,
            physical_input_bytes: None,
            physical_written_bytes: None,
            error_code: None,
        };
        let mut p = doc(&incident_stats(), None, &DagRuns::NoAirflow, &[]);
        p.queries = Some(TableQueries::Runs {
            runs: vec![
                run("q3", t(11, 56), 19_000),
                run("q2", t(8, 0), 18_000),
                run("q1", t(8, 14), 252_000),
            ],
            unconfirmed: 0,
        });
        let steps = symptom_after(&p, t(9, 10));
        assert_eq!(steps.len(), 1, "{steps:#?}");
        assert_eq!(steps[0].step, "result");
        assert_eq!(steps[0].at, t(11, 56));
        assert_eq!(
            steps[0].what,
            "the dashboard query on documents took 19s (the symptom's run: 4m12s)"
        );
    }

    #[test]
    fn nothing_mapped_nothing_done() {
        let p = doc(&incident_stats(), None, &DagRuns::NoAirflow, &[]);
        let md = p.markdown();
        assert!(md.contains("Airflow is not configured"), "{md}");
        assert!(md.contains("None recorded in the audit log"), "{md}");
    }

    #[test]
    fn hostile_values_stay_in_their_cell_and_span() {
        let h = crate::text::hostile_sample();
        let evil = format!("x` | **y** [z](http://e) <img src=x> ``` {h}");
        let mut dag = DagSection::new(&failing_facts());
        dag.dag_id = evil.clone();
        dag.error_line = Some(evil.clone());
        dag.failing_task = Some(evil.clone());
        let mut a = audit("iceberg.zoning.documents", &evil, &evil, &evil);
        a.partition = Some(evil.clone());
        a.error = Some(evil.clone());
        let p = doc(&incident_stats(), Some(dag), &DagRuns::NotMapped, &[a]);
        let md = p.markdown();
        assert!(crate::text::is_inert(&md), "{md:?}");
        // Every line of the actions table has exactly its 10 unescaped pipes.
        for line in md.lines().filter(|l| l.starts_with("| 2026-11-29")) {
            let unescaped = line
                .char_indices()
                .filter(|(i, c)| *c == '|' && (*i == 0 || &line[i - 1..*i] != "\\"))
                .count();
            assert_eq!(unescaped, 10, "{line}");
        }
        let text = md::text(&evil);
        assert!(text.contains("\\<img") && text.contains("\\[z\\](http") && !text.contains("**"));
        // A code span's fence is longer than any backtick run inside it.
        assert!(md.contains("- error: ````x`"), "{md}");
        let v: serde_json::Value = serde_json::from_str(&p.json()).unwrap();
        assert_eq!(v["dag"]["error_line"], evil, "JSON keeps the real string");
        assert!(crate::text::is_inert(&p.json()));
    }
}
