//! Triage: the findings of every table and DAG turned into incidents, grouped by root
//! cause and ranked worst first. One unreachable endpoint → the DAGs whose errors name it
//! → the tables they maintain is one incident, not a row per table and per DAG.
//!
//! Pure: from what floe already read (table stats and verdicts, DAG facts, the loose
//! findings about Airflow) to a list of [`Incident`]s. The links are taken from what the
//! servers returned — an endpoint named in a DAG's error line and in a connection
//! finding, a DAG id in a table's mapping — never from what a name suggests.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::{DagFacts, Finding, Health, Severity};
use crate::fmt::{human_duration, thousands};
use crate::lakehouse::model::{TableRef, TableStats};

/// One table as triage sees it.
#[derive(Clone, Copy, Debug)]
pub struct TableFacts<'a> {
    pub table: &'a TableRef,
    pub stats: Option<&'a TableStats>,
    pub health: Option<&'a Health>,
    /// Why the table could not be read.
    pub error: Option<&'a str>,
    /// The DAG that maintains it (configured or guessed), when one is known.
    pub dag_id: Option<&'a str>,
    /// What the worst query that read it suffered, from the coordinator's record.
    pub suffered: Option<&'a str>,
}

/// Everything triage reads.
#[derive(Clone, Debug, Default)]
pub struct Facts<'a> {
    pub tables: Vec<TableFacts<'a>>,
    pub dags: Vec<&'a DagFacts>,
    /// Findings of no table or DAG: import errors, Airflow's connections, Airflow itself.
    pub findings: Vec<&'a Finding>,
    /// Whether Airflow is read at all (without it nothing says who maintains a table).
    pub airflow: bool,
}

/// What kind of root cause an incident has (ranked in this order within a severity).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Failing DAGs whose error names an endpoint (and the Airflow connections there).
    Endpoint,
    /// A failing DAG whose error names no endpoint.
    DagFailing,
    /// A DAG that reports success while its table's compaction stays stale.
    DagSucceedsStale,
    /// A maintenance DAG, or a DAG file, that does not import.
    ImportError,
    /// A paused maintenance DAG.
    DagPaused,
    /// A DAG without a success in its expected interval (and no failure to show).
    DagNoSuccess,
    /// Airflow connections that fail their test or point elsewhere, named by no failure.
    Connection,
    /// Airflow itself: unreachable, unhealthy, a DAG unreadable or missing.
    Airflow,
    /// Tables floe could not read.
    Unreadable,
    /// Tables waiting for compaction that no DAG maintains.
    Unmaintained,
    /// Tables waiting for compaction whose DAG reports nothing wrong.
    CompactionDue,
    /// Snapshots past retention.
    SnapshotBloat,
    /// Any other finding of a table (delete files …).
    Table,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Endpoint => "endpoint",
            Kind::DagFailing => "dag_failing",
            Kind::DagSucceedsStale => "dag_succeeds_stale",
            Kind::ImportError => "import_error",
            Kind::DagPaused => "dag_paused",
            Kind::DagNoSuccess => "dag_no_success",
            Kind::Connection => "connection",
            Kind::Airflow => "airflow",
            Kind::Unreadable => "unreadable",
            Kind::Unmaintained => "unmaintained",
            Kind::CompactionDue => "compaction_due",
            Kind::SnapshotBloat => "snapshot_bloat",
            Kind::Table => "table",
        }
    }
}

/// A table an incident affects, with what it costs in a few words.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Affected {
    pub table: TableRef,
    /// The table's name as the line shows it (`documents`, or `zoning.documents` when
    /// two schemas hold a `documents`).
    pub name: String,
    pub severity: Severity,
    /// `2,004 small files, compacted 15d ago`.
    pub summary: String,
    /// What the worst query that read it suffered (the coordinator's record), when read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suffered: Option<String>,
    #[serde(skip)]
    small_files: u64,
    /// Some partition holds two small files or more: optimize has something to merge.
    #[serde(skip)]
    mergeable: bool,
}

/// The table action for an affected table: optimize when it has something to merge;
/// else (every partition holds one small file at most) the findings, which say the
/// partitioning is the fix: a next action is one floe carries out.
fn optimize_next(a: &Affected) -> Next {
    if a.mergeable {
        Next::Optimize {
            table: a.table.clone(),
        }
    } else {
        Next::Inspect
    }
}

/// The next action an incident calls for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Next {
    /// Fix (or repoint) Airflow connections, or whatever is at an endpoint.
    FixConnection {
        connections: Vec<String>,
        endpoint: Option<String>,
    },
    /// Read the failing task's log.
    ReadLog { dag_id: String },
    /// Trigger a run of the DAG (after the cause is fixed).
    Trigger { dag_id: String, after_fix: bool },
    /// Unpause the DAG.
    Unpause { dag_id: String },
    /// Fix the DAG file that does not import.
    FixImport { what: String },
    /// Read the DAG's code: it reports success without doing its work.
    ReadDagCode { dag_id: String },
    /// Optimize the table (the worst of the incident).
    Optimize { table: TableRef },
    /// Expire the table's snapshots.
    ExpireSnapshots { table: TableRef },
    /// Map a maintenance DAG to the tables (`[[maintenance]]`).
    MapDag,
    /// Look at the findings.
    Inspect,
}

impl Next {
    /// The action in words, without a key (`trigger compact_documents after fixing`).
    pub fn text(&self) -> String {
        match self {
            Next::FixConnection {
                connections,
                endpoint,
            } => match (connections.is_empty(), endpoint) {
                (false, _) => format!("fix Airflow connection {}", connections.join(", ")),
                (true, Some(e)) => format!("fix what the DAG reaches at {e}"),
                (true, None) => "fix the connection".into(),
            },
            Next::ReadLog { dag_id } => format!("read the log of {dag_id}"),
            Next::Trigger { dag_id, after_fix } => {
                if *after_fix {
                    format!("trigger {dag_id} after fixing")
                } else {
                    format!("trigger {dag_id}")
                }
            }
            Next::Unpause { dag_id } => format!("unpause {dag_id}"),
            Next::FixImport { what } => format!("fix the import of {what}"),
            Next::ReadDagCode { dag_id } => {
                format!("read {dag_id}'s code: it reports success without compacting")
            }
            Next::Optimize { table } => format!("optimize {}", table.table),
            Next::ExpireSnapshots { table } => format!("expire snapshots of {}", table.table),
            Next::MapDag => "map a maintenance DAG ([[maintenance]])".into(),
            Next::Inspect => "read the findings".into(),
        }
    }
}

/// Where Enter takes the operator to see the evidence.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "to", rename_all = "snake_case")]
pub enum Jump {
    /// The DAG's newest failed run and its failing task's log.
    DagFailure { dag_id: String },
    /// The DAG in the DAGs tab.
    Dag { dag_id: String },
    /// The table's partitions.
    Partitions { table: TableRef },
    /// The table's snapshots.
    Snapshots { table: TableRef },
    /// The table's row (and its findings).
    Table { table: TableRef },
    /// The DAGs tab (import errors, Airflow's state).
    Dags,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Incident {
    pub severity: Severity,
    pub kind: Kind,
    /// The root cause with its evidence, in one line.
    pub cause: String,
    /// Affected tables, worst first.
    pub tables: Vec<Affected>,
    /// DAGs involved, in the order the cause names them.
    pub dags: Vec<String>,
    /// The evidence in full: error lines, connection findings, the tables' findings.
    pub evidence: Vec<String>,
    pub next: Vec<Next>,
    pub jump: Jump,
}

impl Incident {
    /// `cause → documents: 2,004 small files, compacted 15d ago; and 2 more tables`.
    pub fn summary(&self) -> String {
        let mut s = self.cause.clone();
        if let Some(t) = self.tables_text(2) {
            s.push_str(" → ");
            s.push_str(&t);
        }
        s
    }

    /// The affected tables in words, the first `max` with their summary.
    pub fn tables_text(&self, max: usize) -> Option<String> {
        if self.tables.is_empty() {
            return None;
        }
        let mut parts: Vec<String> = self
            .tables
            .iter()
            .take(max)
            .map(|a| format!("{}: {}", a.name, a.summary))
            .collect();
        let rest = self.tables.len().saturating_sub(max);
        if rest > 0 {
            parts.push(format!(
                "and {rest} more table{}",
                if rest == 1 { "" } else { "s" }
            ));
        }
        Some(parts.join("; "))
    }

    /// The DAG the incident's DAG actions (`t`, `p`) act on.
    pub fn dag(&self) -> Option<&str> {
        self.dags.first().map(String::as_str)
    }

    /// The table the incident's table actions (`o`, `x`) act on: the worst one.
    pub fn worst_table(&self) -> Option<&TableRef> {
        self.tables.first().map(|a| &a.table)
    }

    /// Lower-cased text a `/` filter searches.
    pub fn search_text(&self) -> String {
        let mut s = self.summary().to_lowercase();
        for t in &self.tables {
            s.push(' ');
            s.push_str(&t.table.to_string().to_lowercase());
        }
        s
    }
}

/// Rules whose finding says the table waits for compaction.
const COMPACTION_RULES: [&str; 3] = ["small_files", "compaction_stale", "never_compacted"];

/// `host:port` endpoints named in `text`, in order: `host:port` tokens (URLs included)
/// and urllib3's `host='h', port=p`. A host has a letter or is a dotted IPv4 address, so
/// times (`10:00:00`) and positions (`line 1:15`) are not endpoints.
pub fn endpoints(text: &str) -> Vec<String> {
    let mut found: Vec<(usize, String)> = Vec::new();
    let is_host = |c: char| c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '_';
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    for (k, &(i, c)) in chars.iter().enumerate() {
        if c != ':' {
            continue;
        }
        // host: the run of host characters before the colon
        let mut start = k;
        while start > 0 && is_host(chars[start - 1].1) {
            start -= 1;
        }
        let host = &text[chars.get(start).map(|x| x.0).unwrap_or(i)..i];
        // port: digits after the colon, not followed by more host characters or a colon
        let mut end = k + 1;
        while end < chars.len() && chars[end].1.is_ascii_digit() {
            end += 1;
        }
        if end == k + 1 || end - k - 1 > 5 {
            continue;
        }
        if let Some(&(_, next)) = chars.get(end)
            && (next.is_ascii_alphanumeric()
                || next == ':'
                || next == '.' && { chars.get(end + 1).is_some_and(|x| x.1.is_ascii_digit()) })
        {
            continue;
        }
        if start > 0 && chars[start - 1].1 == ':' {
            continue;
        }
        let port = &text[chars[k + 1].0..chars.get(end).map(|x| x.0).unwrap_or(text.len())];
        if valid_endpoint(host, port) {
            found.push((start, format!("{host}:{port}")));
        }
    }
    // urllib3: host='trino-old.internal', port=8080
    let mut rest = text;
    let mut base = 0;
    while let Some(p) = rest.find("host='") {
        let after = &rest[p + 6..];
        if let Some(q) = after.find('\'') {
            let host = &after[..q];
            let tail = &after[q + 1..];
            if let Some(port_text) = tail.strip_prefix(", port=") {
                let port: String = port_text
                    .chars()
                    .take_while(|c| c.is_ascii_digit())
                    .collect();
                if valid_endpoint(host, &port) {
                    found.push((base + p, format!("{host}:{port}")));
                }
            }
        }
        base += p + 6;
        rest = &rest[p + 6..];
    }
    found.sort_by_key(|(i, _)| *i);
    let mut out: Vec<String> = Vec::new();
    for (_, e) in found {
        if !out.contains(&e) {
            out.push(e);
        }
    }
    out
}

fn valid_endpoint(host: &str, port: &str) -> bool {
    let Ok(p) = port.parse::<u32>() else {
        return false;
    };
    if !(1..=65_535).contains(&p) || host.is_empty() || host.starts_with(['.', '-']) {
        return false;
    }
    let dotted_ip = host.split('.').count() == 4
        && host
            .split('.')
            .all(|o| !o.is_empty() && o.len() <= 3 && o.chars().all(|c| c.is_ascii_digit()));
    dotted_ip || host.chars().any(|c| c.is_ascii_alphabetic())
}

/// An Airflow connection as its finding describes it.
#[derive(Clone, Debug)]
struct ConnFinding<'a> {
    id: String,
    endpoint: String,
    /// It fails its test (else it points somewhere other than the Trino floe reached).
    failing: bool,
    finding: &'a Finding,
}

/// `Airflow connection ID points at HOST:PORT …` (the connection findings floe writes).
fn conn_finding(f: &Finding) -> Option<ConnFinding<'_>> {
    let failing = match f.rule {
        "airflow_connection_failing" => true,
        "airflow_connection_elsewhere" => false,
        _ => return None,
    };
    let rest = f.message.strip_prefix("Airflow connection ")?;
    let (id, after) = rest.split_once(" points at ")?;
    let endpoint = after.split_whitespace().next()?.to_string();
    Some(ConnFinding {
        id: id.to_string(),
        endpoint,
        failing,
        finding: f,
    })
}

/// The age of what waits for compaction, in words: `waiting 15d` (the oldest live small
/// file, where the server has `$entries`), else `compacted 15d ago`, or `never
/// compacted (20d of writes)`.
fn waiting(stats: &TableStats, now: DateTime<Utc>) -> String {
    let age = |t: DateTime<Utc>| human_duration((now - t).num_seconds().max(0));
    if let Some(t) = stats.oldest_small_file_at {
        return format!("waiting {}", age(t));
    }
    match (stats.last_compaction, stats.oldest_snapshot) {
        (Some(t), _) => format!("compacted {} ago", age(t)),
        (None, Some(t)) => format!("never compacted ({} of writes)", age(t)),
        (None, None) => "never compacted".into(),
    }
}

fn worst_finding(h: &Health) -> Option<&Finding> {
    h.findings
        .iter()
        .filter(|f| f.severity > Severity::Info)
        .max_by_key(|f| (f.severity.rank(), f.penalty))
}

fn status_of(t: &TableFacts) -> Severity {
    if t.error.is_some() {
        return Severity::Unknown;
    }
    t.health.map(|h| h.status).unwrap_or(Severity::Ok)
}

fn has_rule(t: &TableFacts, rules: &[&str]) -> bool {
    t.health.is_some_and(|h| {
        h.findings
            .iter()
            .any(|f| rules.contains(&f.rule) && f.severity > Severity::Info)
    })
}

/// The worst severity of `rule`'s findings over `tables` (OK when none has it).
fn rule_severity(tables: &[&TableFacts], rule: &str) -> Severity {
    tables
        .iter()
        .filter_map(|t| t.health)
        .flat_map(|h| &h.findings)
        .filter(|f| f.rule == rule)
        .map(|f| f.severity)
        .max_by_key(|s| s.rank())
        .unwrap_or(Severity::Ok)
}

/// What the table's trouble costs, in a few words.
fn affected(t: &TableFacts, name: String, now: DateTime<Utc>) -> Affected {
    let severity = status_of(t);
    let small = t.stats.map(|s| s.small_files).unwrap_or(0);
    let summary = match (t.error, t.stats, t.health) {
        (Some(e), _, _) => format!("not read: {}", crate::text::clip(e, 120)),
        (None, Some(s), _) if has_rule(t, &COMPACTION_RULES) => format!(
            "{} small files, {}",
            thousands(s.small_files),
            waiting(s, now)
        ),
        (None, Some(s), _) if has_rule(t, &["snapshot_bloat"]) => {
            let mut m = format!("{} snapshots", thousands(s.snapshots));
            if let Some(o) = s.oldest_snapshot {
                m.push_str(&format!(
                    ", oldest {}",
                    human_duration((now - o).num_seconds().max(0))
                ));
            }
            m
        }
        (None, _, Some(h)) => match worst_finding(h) {
            Some(f) => format!("{}: {}", f.rule, crate::text::clip(&f.message, 120)),
            None => "no finding above INFO".into(),
        },
        _ => "not read yet".into(),
    };
    let mergeable = t
        .stats
        .and_then(|s| s.max_partition_small_files)
        .is_none_or(|m| m >= 2);
    Affected {
        table: t.table.clone(),
        name,
        severity,
        summary,
        suffered: t.suffered.map(str::to_string),
        small_files: small,
        mergeable,
    }
}

/// Worst first: by severity, then the most small files, then by name.
fn sort_affected(v: &mut [Affected]) {
    v.sort_by(|a, b| {
        b.severity
            .rank()
            .cmp(&a.severity.rank())
            .then(b.small_files.cmp(&a.small_files))
            .then(a.table.cmp(&b.table))
    });
}

/// The evidence lines of a table: its findings above INFO, the correlation ones left out
/// (the incident's cause says them).
fn table_evidence(name: &str, t: &TableFacts) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(e) = t.error {
        out.push(format!("{name}: not read: {e}"));
    }
    if let Some(h) = t.health {
        for f in &h.findings {
            if f.severity > Severity::Info && !f.rule.starts_with("stale_dag") {
                out.push(format!("{name}: [{}] {}", f.severity.short(), f.message));
            }
        }
    }
    out
}

/// ` (paused)` after a failing DAG's id when it is also paused.
fn paused(d: &DagFacts) -> &'static str {
    if d.paused { " (paused)" } else { "" }
}

/// Unpausing comes first for the paused ones among failing DAGs.
fn unpause<'a>(dags: impl IntoIterator<Item = &'a DagFacts>) -> Vec<Next> {
    dags.into_iter()
        .filter(|d| d.paused)
        .map(|d| Next::Unpause {
            dag_id: d.dag_id.clone(),
        })
        .collect()
}

fn runs(n: u32) -> String {
    match n {
        0 | 1 => "last run failed".into(),
        n => format!("failing {n} runs"),
    }
}

fn plural<'a>(n: usize, one: &'a str, many: &'a str) -> &'a str {
    if n == 1 { one } else { many }
}

/// The incidents, worst first.
pub fn incidents(facts: &Facts, now: DateTime<Utc>) -> Vec<Incident> {
    // Names as lines show them: the bare table name unless two schemas share it.
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for t in &facts.tables {
        *counts.entry(t.table.table.to_lowercase()).or_default() += 1;
    }
    let name_of = |t: &TableRef| {
        if counts.get(&t.table.to_lowercase()).copied().unwrap_or(0) > 1 {
            format!("{}.{}", t.schema, t.table)
        } else {
            t.table.clone()
        }
    };
    let dag_by_id: BTreeMap<&str, &DagFacts> =
        facts.dags.iter().map(|d| (d.dag_id.as_str(), *d)).collect();
    // Tables that need attention, by their DAG.
    let troubled: Vec<&TableFacts> = facts
        .tables
        .iter()
        .filter(|t| status_of(t) >= Severity::Warning)
        .collect();
    let mut claimed: BTreeSet<&TableRef> = BTreeSet::new();
    let tables_of = |dag_id: &str| -> Vec<&TableFacts> {
        troubled
            .iter()
            .filter(|t| t.dag_id == Some(dag_id))
            .copied()
            .collect()
    };
    let mut out: Vec<Incident> = Vec::new();

    // Connection findings, by the endpoint they point at.
    let conns: Vec<ConnFinding> = facts
        .findings
        .iter()
        .filter_map(|f| conn_finding(f))
        .collect();
    let mut used_findings: BTreeSet<*const Finding> = BTreeSet::new();

    // Failing DAGs: by the endpoint their error names, else one incident each.
    let mut by_endpoint: BTreeMap<String, Vec<&DagFacts>> = BTreeMap::new();
    let mut failing_alone: Vec<&DagFacts> = Vec::new();
    let mut handled_dags: BTreeSet<&str> = BTreeSet::new();
    for d in &facts.dags {
        if d.import_error.is_some() || d.last_run_state.as_deref() != Some("failed") {
            continue;
        }
        // Prefer an endpoint an Airflow connection points at; else the first named.
        let named = d.error_line.as_deref().map(endpoints).unwrap_or_default();
        let chosen = named
            .iter()
            .find(|e| conns.iter().any(|c| &c.endpoint == *e))
            .or(named.first());
        match chosen {
            Some(e) => by_endpoint.entry(e.clone()).or_default().push(d),
            None => failing_alone.push(d),
        }
    }
    for (endpoint, dags) in &by_endpoint {
        let here: Vec<&ConnFinding> = conns.iter().filter(|c| &c.endpoint == endpoint).collect();
        // Connections the DAGs' own errors name (as a word), else every one at the endpoint.
        let named: Vec<&ConnFinding> = here
            .iter()
            .filter(|c| {
                dags.iter().any(|d| {
                    d.error_line
                        .as_deref()
                        .is_some_and(|e| contains_word(e, &c.id))
                })
            })
            .copied()
            .collect();
        let shown = if named.is_empty() { &here } else { &named };
        let dag_ids: Vec<String> = dags.iter().map(|d| d.dag_id.clone()).collect();
        let what = if dags.len() == 1 {
            format!(
                "DAG {}{} {}",
                dags[0].dag_id,
                paused(dags[0]),
                runs(dags[0].failed_runs)
            )
        } else {
            format!(
                "DAGs {} failing ({} failed runs)",
                dag_ids.join(", "),
                dags.iter().map(|d| d.failed_runs.max(1)).sum::<u32>()
            )
        };
        let state = |cs: &[&ConnFinding]| {
            if cs.iter().all(|c| c.failing) {
                if cs.len() == 1 {
                    "fails its test"
                } else {
                    "fail their test"
                }
            } else {
                "not the Trino floe reached"
            }
        };
        let cause = if shown.is_empty() {
            format!("{what} (its error names {endpoint})")
        } else {
            format!(
                "{what} ({} {} → {endpoint}, {})",
                plural(shown.len(), "connection", "connections"),
                shown
                    .iter()
                    .map(|c| c.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                state(shown)
            )
        };
        let mut evidence = Vec::new();
        for d in dags {
            evidence.push(dag_failure_line(d));
        }
        for c in &here {
            evidence.push(c.finding.message.clone());
            used_findings.insert(c.finding as *const Finding);
        }
        let mut tables = Vec::new();
        for d in dags {
            handled_dags.insert(d.dag_id.as_str());
            for t in tables_of(&d.dag_id) {
                if claimed.insert(t.table) {
                    let n = name_of(t.table);
                    evidence.extend(table_evidence(&n, t));
                    tables.push(affected(t, n, now));
                }
            }
        }
        sort_affected(&mut tables);
        let mut next = vec![Next::FixConnection {
            connections: shown.iter().map(|c| c.id.clone()).collect(),
            endpoint: Some(endpoint.clone()),
        }];
        next.extend(unpause(dags.iter().copied()));
        next.push(Next::Trigger {
            dag_id: dag_ids[0].clone(),
            after_fix: true,
        });
        if let Some(t) = tables.first() {
            next.push(optimize_next(t));
        }
        out.push(Incident {
            severity: Severity::Critical,
            kind: Kind::Endpoint,
            cause,
            jump: Jump::DagFailure {
                dag_id: dag_ids[0].clone(),
            },
            tables,
            dags: dag_ids,
            evidence,
            next,
        });
    }
    for d in failing_alone {
        handled_dags.insert(d.dag_id.as_str());
        let mut cause = format!("DAG {}{} {}", d.dag_id, paused(d), runs(d.failed_runs));
        match (&d.failing_task, &d.error_line) {
            (Some(t), Some(e)) => {
                cause.push_str(&format!(" (task {t}: {})", crate::text::clip(e, 160)))
            }
            (Some(t), None) => cause.push_str(&format!(" (task {t})")),
            _ => {}
        }
        let mut evidence = vec![dag_failure_line(d)];
        let tables = claim(
            &tables_of(&d.dag_id),
            &mut claimed,
            &name_of,
            &mut evidence,
            now,
        );
        let mut next = vec![Next::ReadLog {
            dag_id: d.dag_id.clone(),
        }];
        next.extend(unpause([d]));
        next.push(Next::Trigger {
            dag_id: d.dag_id.clone(),
            after_fix: true,
        });
        if let Some(t) = tables.first() {
            next.push(optimize_next(t));
        }
        out.push(Incident {
            severity: Severity::Critical,
            kind: Kind::DagFailing,
            cause,
            tables,
            dags: vec![d.dag_id.clone()],
            evidence,
            next,
            jump: Jump::DagFailure {
                dag_id: d.dag_id.clone(),
            },
        });
    }

    // The other DAG causes, one incident per DAG.
    for d in &facts.dags {
        if handled_dags.contains(d.dag_id.as_str()) {
            continue;
        }
        let mine = tables_of(&d.dag_id);
        let (kind, severity, cause, mut next) = if let Some(e) = &d.import_error {
            (
                Kind::ImportError,
                Severity::Critical,
                format!(
                    "DAG {} does not import: {}",
                    d.dag_id,
                    crate::text::clip(e, 160)
                ),
                vec![Next::FixImport {
                    what: d.dag_id.clone(),
                }],
            )
        } else if d.paused {
            // As severe as the stale compaction the pause causes costs a reader.
            let sev = rule_severity(&mine, "stale_dag_paused").max(Severity::Warning);
            (
                Kind::DagPaused,
                sev,
                format!("DAG {} is paused", d.dag_id),
                vec![Next::Unpause {
                    dag_id: d.dag_id.clone(),
                }],
            )
        } else if mine.iter().any(|t| has_rule(t, &["stale_dag_succeeds"])) {
            (
                Kind::DagSucceedsStale,
                rule_severity(&mine, "stale_dag_succeeds"),
                format!(
                    "DAG {} reports success{} but its table's compaction stays stale",
                    d.dag_id,
                    d.last_success_at
                        .map(|t| format!(
                            " ({} ago)",
                            human_duration((now - t).num_seconds().max(0))
                        ))
                        .unwrap_or_default()
                ),
                vec![Next::ReadDagCode {
                    dag_id: d.dag_id.clone(),
                }],
            )
        } else if d.last_run_at.is_none() {
            // Unpaused and never run: it has maintained nothing, so its tables are not
            // "maintained by a DAG that reports nothing wrong".
            (
                Kind::DagNoSuccess,
                Severity::Warning,
                format!(
                    "DAG {} is unpaused and has never run (expected every {})",
                    d.dag_id,
                    human_duration(d.expected_interval.as_secs() as i64)
                ),
                vec![Next::ReadDagCode {
                    dag_id: d.dag_id.clone(),
                }],
            )
        } else if d.last_run_at.is_some()
            && d.last_success_at
                .is_none_or(|t| (now - t).num_seconds() > 2 * d.expected_interval.as_secs() as i64)
        {
            (
                Kind::DagNoSuccess,
                Severity::Warning,
                format!(
                    "DAG {} has no success for {} (expected every {})",
                    d.dag_id,
                    d.last_success_at
                        .map(|t| human_duration((now - t).num_seconds().max(0)))
                        .unwrap_or_else(|| "the whole window".into()),
                    human_duration(d.expected_interval.as_secs() as i64)
                ),
                vec![Next::ReadLog {
                    dag_id: d.dag_id.clone(),
                }],
            )
        } else {
            continue;
        };
        let mut evidence = Vec::new();
        if let Some(e) = &d.import_error {
            evidence.push(format!("DAG {}: {e}", d.dag_id));
        }
        let tables = claim(&mine, &mut claimed, &name_of, &mut evidence, now);
        if let Some(t) = tables.first() {
            next.push(optimize_next(t));
        }
        let severity = tables.iter().map(|t| t.severity).fold(severity, worse);
        out.push(Incident {
            severity,
            kind,
            cause,
            tables,
            dags: vec![d.dag_id.clone()],
            evidence,
            next,
            jump: Jump::Dag {
                dag_id: d.dag_id.clone(),
            },
        });
    }

    // Connections no failing DAG names: by endpoint.
    let mut rest: BTreeMap<&str, Vec<&ConnFinding>> = BTreeMap::new();
    for c in &conns {
        if !used_findings.contains(&(c.finding as *const Finding)) {
            rest.entry(c.endpoint.as_str()).or_default().push(c);
        }
    }
    for (endpoint, cs) in rest {
        for c in &cs {
            used_findings.insert(c.finding as *const Finding);
        }
        let failing = cs.iter().any(|c| c.failing);
        let ids: Vec<String> = cs.iter().map(|c| c.id.clone()).collect();
        out.push(Incident {
            severity: if failing {
                Severity::Critical
            } else {
                Severity::Warning
            },
            kind: Kind::Connection,
            cause: format!(
                "Airflow {} {} → {endpoint} {}",
                plural(cs.len(), "connection", "connections"),
                ids.join(", "),
                if failing {
                    if cs.len() == 1 {
                        "fails its test"
                    } else {
                        "fail their test"
                    }
                } else {
                    "is not the Trino floe reached"
                }
            ),
            tables: Vec::new(),
            dags: Vec::new(),
            evidence: cs.iter().map(|c| c.finding.message.clone()).collect(),
            next: vec![Next::FixConnection {
                connections: ids,
                endpoint: Some(endpoint.to_string()),
            }],
            jump: Jump::Dags,
        });
    }

    // Every other loose finding: its own incident.
    for f in &facts.findings {
        if used_findings.contains(&(*f as *const Finding)) || f.severity <= Severity::Info {
            continue;
        }
        let (kind, next) = match f.rule {
            "dag_import_error" => (
                Kind::ImportError,
                vec![Next::FixImport {
                    what: "the DAG file".into(),
                }],
            ),
            _ => (Kind::Airflow, vec![Next::Inspect]),
        };
        out.push(Incident {
            severity: f.severity,
            kind,
            cause: f.message.clone(),
            tables: Vec::new(),
            dags: Vec::new(),
            evidence: vec![format!(
                "[{}] {}: {}",
                f.severity.short(),
                f.rule,
                f.message
            )],
            next,
            jump: Jump::Dags,
        });
    }

    // Tables no DAG incident claimed, by what troubles them.
    let mut groups: BTreeMap<Kind, Vec<&TableFacts>> = BTreeMap::new();
    for t in &troubled {
        if claimed.contains(t.table) {
            continue;
        }
        let kind = if t.error.is_some() {
            Kind::Unreadable
        } else if has_rule(t, &COMPACTION_RULES) {
            let dag_ok = t.dag_id.is_some_and(|d| dag_by_id.contains_key(d));
            if dag_ok {
                Kind::CompactionDue
            } else {
                Kind::Unmaintained
            }
        } else if has_rule(t, &["snapshot_bloat"]) {
            Kind::SnapshotBloat
        } else {
            Kind::Table
        };
        groups.entry(kind).or_default().push(t);
    }
    for (kind, ts) in groups {
        if kind == Kind::Table {
            // Unrelated findings: one incident per table.
            for t in ts {
                let mut evidence = Vec::new();
                let tables = claim(&[t], &mut claimed, &name_of, &mut evidence, now);
                let first = &tables[0];
                out.push(Incident {
                    severity: first.severity,
                    kind,
                    cause: format!("table {}", first.name),
                    jump: Jump::Table {
                        table: first.table.clone(),
                    },
                    next: vec![Next::Inspect],
                    tables,
                    dags: Vec::new(),
                    evidence,
                });
            }
            continue;
        }
        let mut evidence = Vec::new();
        let tables = claim(&ts, &mut claimed, &name_of, &mut evidence, now);
        let n = tables.len();
        let tbl = plural(n, "table", "tables");
        let wait = plural(n, "waits", "wait");
        let (cause, next, jump) = match kind {
            Kind::Unreadable => (
                format!("{n} {tbl} could not be read"),
                vec![Next::Inspect],
                Jump::Table {
                    table: tables[0].table.clone(),
                },
            ),
            Kind::Unmaintained => (
                if facts.airflow {
                    format!(
                        "{n} {tbl} {wait} for compaction and no DAG maintains {}",
                        plural(n, "it", "them")
                    )
                } else {
                    format!("{n} {tbl} {wait} for compaction (Airflow not configured)")
                },
                {
                    let mut v = vec![optimize_next(&tables[0])];
                    if facts.airflow {
                        v.push(Next::MapDag);
                    }
                    v
                },
                Jump::Partitions {
                    table: tables[0].table.clone(),
                },
            ),
            Kind::CompactionDue => (
                format!(
                    "{n} {tbl} {wait} for compaction while {} DAG reports nothing wrong",
                    plural(n, "its", "their")
                ),
                vec![optimize_next(&tables[0])],
                Jump::Partitions {
                    table: tables[0].table.clone(),
                },
            ),
            _ => (
                format!(
                    "{n} {tbl} {} snapshots past retention",
                    plural(n, "keeps", "keep")
                ),
                vec![Next::ExpireSnapshots {
                    table: tables[0].table.clone(),
                }],
                Jump::Snapshots {
                    table: tables[0].table.clone(),
                },
            ),
        };
        let severity = tables.iter().map(|t| t.severity).fold(Severity::Ok, worse);
        out.push(Incident {
            severity,
            kind,
            cause,
            tables,
            dags: Vec::new(),
            evidence,
            next,
            jump,
        });
    }

    out.sort_by(|a, b| {
        b.severity
            .rank()
            .cmp(&a.severity.rank())
            .then(a.kind.cmp(&b.kind))
            .then(
                b.tables
                    .iter()
                    .map(|t| t.small_files)
                    .sum::<u64>()
                    .cmp(&a.tables.iter().map(|t| t.small_files).sum::<u64>()),
            )
            .then(a.cause.cmp(&b.cause))
    });
    out
}

/// The worse of two severities ("worst first" order).
fn worse(a: Severity, b: Severity) -> Severity {
    if b.rank() > a.rank() { b } else { a }
}

/// Claim `ts` for an incident: their affected rows (worst first) and evidence.
fn claim<'a>(
    ts: &[&TableFacts<'a>],
    claimed: &mut BTreeSet<&'a TableRef>,
    name_of: &dyn Fn(&TableRef) -> String,
    evidence: &mut Vec<String>,
    now: DateTime<Utc>,
) -> Vec<Affected> {
    let mut out = Vec::new();
    for t in ts {
        if claimed.insert(t.table) {
            let n = name_of(t.table);
            evidence.extend(table_evidence(&n, t));
            out.push(affected(t, n, now));
        }
    }
    sort_affected(&mut out);
    out
}

/// `DAG compact_documents: 14 failed runs; task compact: ConnectionError: …`.
fn dag_failure_line(d: &DagFacts) -> String {
    let mut s = format!("DAG {}: last run failed", d.dag_id);
    if d.failed_runs > 1 {
        s.push_str(&format!(" ({} failed runs in the window)", d.failed_runs));
    }
    if let Some(t) = &d.failing_task {
        s.push_str(&format!("; task {t}"));
    }
    if let Some(e) = &d.error_line {
        s.push_str(&format!(": {e}"));
    }
    s
}

/// Whether `word` occurs in `text` with no identifier character on either side.
fn contains_word(text: &str, word: &str) -> bool {
    if word.is_empty() {
        return false;
    }
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(word).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + word.len()..].chars().next();
        !before.is_some_and(ident) && !after.is_some_and(ident)
    })
}

#[cfg(test)]
mod tests;
