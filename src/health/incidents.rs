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

use super::{DagFacts, Finding, Health, Rule, Severity};
use crate::lakehouse::model::{TableRef, TableStats};

mod affected;
mod code;
mod connections;
mod dags;
mod endpoints;
mod failing;
mod fixed;
mod incident;

pub use affected::Affected;
use affected::{
    affected, has_rule, optimize_next, rule_severity, sort_affected, status_of, table_evidence,
};
use connections::{ConnFinding, conn_finding, conn_state, ids};
use dags::{dag_cause, dag_failure_line, dag_jump, paused, runs, unpause};
pub use endpoints::endpoints;
pub use incident::{Incident, Jump, Kind, Next};

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
    /// Who else rewrites it now, when floe read that one does (`compact_documents, 40 %`).
    pub running: Option<&'a str>,
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
    /// Airflow connections floe fixed, and when: a DAG whose error names one and whose
    /// last run came before the fix waits for a run, not for another suspect.
    pub fixed: BTreeMap<String, DateTime<Utc>>,
}

/// The incidents, worst first.
pub fn incidents(facts: &Facts, now: DateTime<Utc>) -> Vec<Incident> {
    let mut t = Triage::new(facts, now);
    t.failing_dags();
    t.other_dags();
    t.connections();
    t.loose_findings();
    t.tables();
    t.ranked()
}

/// One triage run: the facts, what the passes have taken so far, and their incidents.
/// Each pass claims what it explains (tables, loose findings, DAGs) so a later pass
/// does not explain it again; the passes run most specific cause first.
struct Triage<'f, 'a> {
    facts: &'f Facts<'a>,
    now: DateTime<Utc>,
    /// How many tables share each (lower-cased) name, and each schema and name (`None`:
    /// the name alone; a schema's name is shared across catalogs).
    names: BTreeMap<(Option<String>, String), usize>,
    /// Tables that need attention.
    troubled: Vec<&'f TableFacts<'a>>,
    /// The connection findings among [`Facts::findings`].
    conns: Vec<ConnFinding<'a>>,
    /// Tables an incident holds.
    claimed: BTreeSet<&'a TableRef>,
    /// Loose findings an incident holds, by their place in [`Facts::findings`].
    used: BTreeSet<usize>,
    /// DAGs an incident holds.
    handled: BTreeSet<&'a str>,
    out: Vec<Incident>,
}

impl<'f, 'a> Triage<'f, 'a> {
    fn new(facts: &'f Facts<'a>, now: DateTime<Utc>) -> Self {
        let mut names: BTreeMap<(Option<String>, String), usize> = BTreeMap::new();
        for t in &facts.tables {
            let table = t.table.table.to_lowercase();
            *names.entry((None, table.clone())).or_default() += 1;
            *names
                .entry((Some(t.table.schema.to_lowercase()), table))
                .or_default() += 1;
        }
        Triage {
            facts,
            now,
            names,
            troubled: facts
                .tables
                .iter()
                .filter(|t| status_of(t) >= Severity::Warning)
                .collect(),
            conns: facts
                .findings
                .iter()
                .enumerate()
                .filter_map(|(i, f)| conn_finding(i, f))
                .collect(),
            claimed: BTreeSet::new(),
            used: BTreeSet::new(),
            handled: BTreeSet::new(),
            out: Vec::new(),
        }
    }

    /// The table's name as lines show it: the bare name unless two schemas share it, its
    /// catalog too when two catalogs share its schema and name.
    fn name_of(&self, t: &TableRef) -> String {
        let shared = |schema: Option<&str>| {
            let key = (schema.map(str::to_lowercase), t.table.to_lowercase());
            self.names.get(&key).copied().unwrap_or(0) > 1
        };
        let qualified = format!("{}.{}", t.schema, t.table);
        if shared(Some(&t.schema)) {
            format!("{}.{qualified}", t.catalog)
        } else if shared(None) {
            qualified
        } else {
            t.table.clone()
        }
    }

    /// The troubled tables `dag_id` maintains.
    fn tables_of(&self, dag_id: &str) -> Vec<&'f TableFacts<'a>> {
        self.troubled
            .iter()
            .filter(|t| t.dag_id == Some(dag_id))
            .copied()
            .collect()
    }

    /// Claim `ts` for an incident: their affected rows (worst first), their evidence
    /// appended to `evidence`. Tables an earlier incident claimed are left out.
    fn claim(&mut self, ts: &[&TableFacts<'a>], evidence: &mut Vec<String>) -> Vec<Affected> {
        let mut out = Vec::new();
        for t in ts {
            if self.claimed.insert(t.table) {
                let n = self.name_of(t.table);
                evidence.extend(table_evidence(&n, t));
                out.push(affected(t, n, self.now));
            }
        }
        sort_affected(&mut out);
        out
    }

    /// A failing DAG whose error names no endpoint.
    fn dag_failing(&mut self, d: &'a DagFacts) {
        self.handled.insert(d.dag_id.as_str());
        let mut cause = format!("DAG {}{} {}", d.dag_id, paused(d), runs(d.failed_runs));
        match (&d.failing_task, &d.error_line) {
            (Some(t), Some(e)) => {
                cause.push_str(&format!(" (task {t}: {})", crate::text::clip(e, 160)))
            }
            (Some(t), None) => cause.push_str(&format!(" (task {t})")),
            _ => {}
        }
        let mut evidence = vec![dag_failure_line(d)];
        let tables = self.claim(&self.tables_of(&d.dag_id), &mut evidence);
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
        self.out.push(Incident {
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

    /// The other DAG causes, one incident per DAG.
    fn other_dags(&mut self) {
        for &d in &self.facts.dags {
            if self.handled.contains(d.dag_id.as_str()) {
                continue;
            }
            let mine = self.tables_of(&d.dag_id);
            let Some((kind, severity, cause, mut next)) = dag_cause(d, &mine, self.now) else {
                continue;
            };
            let mut evidence = Vec::new();
            if let Some(e) = &d.import_error {
                evidence.push(format!("DAG {}: {e}", d.dag_id));
            }
            // What its own code says: advice for a DAG that does not do its work.
            if matches!(kind, Kind::DagSucceedsStale | Kind::DagNoSuccess)
                && let Some(c) = &d.code
            {
                evidence.extend(c.evidence(&|t| self.large_table(t)));
                next.extend(self.code_connections(d, &mut evidence));
            }
            let tables = self.claim(&mine, &mut evidence);
            if let Some(t) = tables.first() {
                next.push(optimize_next(t));
            }
            let severity = tables.iter().map(|t| t.severity).fold(severity, worse);
            self.out.push(Incident {
                severity,
                kind,
                cause,
                tables,
                dags: vec![d.dag_id.clone()],
                evidence,
                next,
                jump: dag_jump(d, kind),
            });
        }
    }

    /// Connections no failing DAG names: one incident per endpoint.
    fn connections(&mut self) {
        let mut rest: BTreeMap<String, Vec<ConnFinding<'a>>> = BTreeMap::new();
        for c in &self.conns {
            if c.trouble && !self.used.contains(&c.index) {
                rest.entry(c.endpoint.clone()).or_default().push(c.clone());
            }
        }
        for (endpoint, cs) in rest {
            self.used.extend(cs.iter().map(|c| c.index));
            let shown: Vec<&ConnFinding> = cs.iter().collect();
            let failing = cs.iter().any(|c| c.failing);
            self.out.push(Incident {
                severity: if failing {
                    Severity::Critical
                } else {
                    Severity::Warning
                },
                kind: Kind::Connection,
                cause: format!(
                    "Airflow {} {} → {endpoint} {}",
                    plural(cs.len(), "connection", "connections"),
                    ids(&shown).join(", "),
                    conn_state(&shown, None)
                ),
                tables: Vec::new(),
                dags: Vec::new(),
                evidence: cs.iter().map(|c| c.finding.message.clone()).collect(),
                next: vec![Next::FixConnection {
                    connections: ids(&shown),
                    endpoint: Some(endpoint),
                }],
                jump: Jump::Dags,
            });
        }
    }

    /// Every other loose finding above INFO: its own incident.
    fn loose_findings(&mut self) {
        for (i, f) in self.facts.findings.iter().enumerate() {
            if self.used.contains(&i) || f.severity <= Severity::Info {
                continue;
            }
            let (kind, next) = match f.rule {
                Rule::DagImportError => (
                    Kind::ImportError,
                    vec![Next::FixImport {
                        what: "the DAG file".into(),
                    }],
                ),
                _ => (Kind::Airflow, vec![Next::Inspect]),
            };
            self.out.push(Incident {
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
    }

    /// Tables no DAG incident claimed, grouped by what troubles them.
    fn tables(&mut self) {
        let dags: BTreeSet<&str> = self.facts.dags.iter().map(|d| d.dag_id.as_str()).collect();
        let mut groups: BTreeMap<Kind, Vec<&'f TableFacts<'a>>> = BTreeMap::new();
        for &t in &self.troubled {
            if self.claimed.contains(t.table) {
                continue;
            }
            let kind = if t.error.is_some() {
                Kind::Unreadable
            } else if has_rule(t, &Rule::COMPACTION) {
                if t.dag_id.is_some_and(|d| dags.contains(d)) {
                    Kind::CompactionDue
                } else {
                    Kind::Unmaintained
                }
            } else if has_rule(t, &[Rule::SnapshotBloat]) {
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
                    self.table(t);
                }
            } else {
                self.table_group(kind, &ts);
            }
        }
    }

    /// A table whose findings share no cause with another's.
    fn table(&mut self, t: &'f TableFacts<'a>) {
        let mut evidence = Vec::new();
        let tables = self.claim(&[t], &mut evidence);
        let first = &tables[0];
        self.out.push(Incident {
            severity: first.severity,
            kind: Kind::Table,
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

    /// Tables with one trouble (unreadable, unmaintained, compaction due, snapshot bloat).
    fn table_group(&mut self, kind: Kind, ts: &[&'f TableFacts<'a>]) {
        let mut evidence = Vec::new();
        let tables = self.claim(ts, &mut evidence);
        let airflow = self.facts.airflow;
        let n = tables.len();
        let tbl = plural(n, "table", "tables");
        let wait = plural(n, "waits", "wait");
        let worst = tables[0].table.clone();
        let (cause, next, jump) = match kind {
            Kind::Unreadable => (
                format!("{n} {tbl} could not be read"),
                vec![Next::Inspect],
                Jump::Table { table: worst },
            ),
            Kind::Unmaintained => (
                if airflow {
                    format!(
                        "{n} {tbl} {wait} for compaction and no DAG maintains {}",
                        plural(n, "it", "them")
                    )
                } else {
                    format!("{n} {tbl} {wait} for compaction (Airflow not configured)")
                },
                {
                    let mut v = vec![optimize_next(&tables[0])];
                    if airflow {
                        v.push(Next::MapDag);
                    }
                    v
                },
                Jump::Partitions { table: worst },
            ),
            Kind::CompactionDue => (
                format!(
                    "{n} {tbl} {wait} for compaction while {} DAG reports nothing wrong",
                    plural(n, "its", "their")
                ),
                vec![optimize_next(&tables[0])],
                Jump::Partitions { table: worst },
            ),
            _ => (
                format!(
                    "{n} {tbl} {} snapshots past retention",
                    plural(n, "keeps", "keep")
                ),
                vec![Next::ExpireSnapshots {
                    table: worst.clone(),
                }],
                Jump::Snapshots { table: worst },
            ),
        };
        let severity = tables.iter().map(|t| t.severity).fold(Severity::Ok, worse);
        self.out.push(Incident {
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

    /// The incidents, worst first: by severity, kind, the most small files, the cause.
    fn ranked(mut self) -> Vec<Incident> {
        let small = |i: &Incident| i.tables.iter().map(|t| t.small_files).sum::<u64>();
        self.out.sort_by(|a, b| {
            b.severity
                .rank()
                .cmp(&a.severity.rank())
                .then(a.kind.cmp(&b.kind))
                .then(small(b).cmp(&small(a)))
                .then(a.cause.cmp(&b.cause))
        });
        self.out
    }
}

fn plural<'a>(n: usize, one: &'a str, many: &'a str) -> &'a str {
    if n == 1 { one } else { many }
}

/// The worse of two severities ("worst first" order).
fn worse(a: Severity, b: Severity) -> Severity {
    if b.rank() > a.rank() { b } else { a }
}

#[cfg(test)]
mod tests;
