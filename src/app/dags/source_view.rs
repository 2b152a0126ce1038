//! The maintenance DAGs' own code: read once per version of a DAG's file (only for the
//! DAGs floe maps to tables), what it says attached to the DAG's facts (triage, the
//! correlation), and the source view of the DAGs tab (`v`, or Enter on a finding from
//! Triage): the file with line numbers, the finding lines marked, `/` search, `n` to the
//! next finding. The file is the server's text: every line is cleaned (`text::sanitize`,
//! tabs expanded) before it is kept for the screen.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::DagLevel;
use crate::airflow::endpoints::sources::SourceKey;
use crate::airflow::{AirflowError, Dag};
use crate::app::action::Effect;
use crate::app::state::{Level, State};
use crate::dag_code::CodeFacts;

pub use crate::airflow::scan::CodeRead;

/// One DAG's code as floe last read it.
#[derive(Clone, Debug, PartialEq)]
pub struct CodeEntry {
    /// The version it was read at (`None` when it could not be read).
    pub key: Option<SourceKey>,
    pub read_at: DateTime<Utc>,
    /// The file, as Airflow served it.
    pub source: Option<Arc<str>>,
    pub facts: CodeFacts,
}

/// The source view: one DAG's file.
#[derive(Clone, Debug, PartialEq)]
pub struct SourceView {
    pub dag_id: String,
    pub file: String,
    /// Which version (`version 3`), for the title.
    pub version: String,
    /// The file's lines, cleaned for the screen.
    pub lines: Vec<String>,
    /// Finding lines (1-based) with what each says, in line order.
    pub marks: Vec<(usize, String)>,
    /// First visible line (0-based).
    pub scroll: usize,
    /// `/` search (lower-cased); matching lines are highlighted.
    pub search: String,
    /// Where the parse failed, when it did.
    pub unparsed: Option<String>,
}

impl SourceView {
    fn new(dag_id: &str, entry: &CodeEntry, source: &str) -> SourceView {
        let code = entry.facts.code();
        let size = |_: &str| None;
        let marks = code
            .map(|c| {
                c.advice(&size)
                    .iter()
                    .map(|f| (f.line, crate::text::one_line(&f.text(&c.file))))
                    .collect()
            })
            .unwrap_or_default();
        SourceView {
            dag_id: dag_id.to_string(),
            file: code.map(|c| c.file.clone()).unwrap_or_default(),
            version: entry.key.as_ref().map(SourceKey::short).unwrap_or_default(),
            lines: screen_lines(source),
            marks,
            scroll: 0,
            search: String::new(),
            unparsed: code
                .and_then(|c| c.unparsed.as_ref())
                .map(|u| crate::text::one_line(&u.message)),
        }
    }

    /// Scroll so that 1-based `line` shows near the top.
    pub fn show_line(&mut self, line: usize) {
        self.scroll = line.saturating_sub(3);
    }
}

/// The file's lines as the screen may show them: control characters made visible, tabs
/// as four spaces, a `\r` before the newline dropped.
pub fn screen_lines(source: &str) -> Vec<String> {
    source
        .strip_suffix('\n')
        .unwrap_or(source)
        .split('\n')
        .map(|l| {
            let l = l.strip_suffix('\r').unwrap_or(l).replace('\t', "    ");
            crate::text::sanitize(&l).into_owned()
        })
        .collect()
}

/// How often a version that may change unseen (Airflow 2's file token, an unreadable
/// source) is read again: at the DAG list's full refresh.
fn reread_every(s: &State) -> chrono::Duration {
    chrono::Duration::from_std(s.refresh_every * 5).unwrap_or_default()
}

/// The read of `dag_id`'s code when it is due: a DAG floe maps to a table, not being
/// read, and never read, or whose version may have changed.
pub fn want(s: &State, dag_id: &str) -> Option<Effect> {
    let row = s.dags.row(dag_id)?;
    if row.tables.is_empty() || s.dags.code_loading.contains(dag_id) {
        return None;
    }
    let known = match s.dags.code.get(dag_id) {
        None => None,
        Some(e) if e.key.as_ref().is_some_and(SourceKey::is_fixed) => e.key.clone(),
        Some(e) if s.now - e.read_at >= reread_every(s) => None,
        Some(_) => return None,
    };
    Some(Effect::LoadDagCode {
        dag: Box::new(row.dag.clone()),
        known,
    })
}

/// The reads due for every DAG floe maps to a table.
pub fn wanted(s: &mut State) -> Vec<Effect> {
    let ids: Vec<String> = s.dags.rows.iter().map(|r| r.dag.dag_id.clone()).collect();
    let fx: Vec<Effect> = ids.iter().filter_map(|id| want(s, id)).collect();
    mark_loading(s, &fx);
    fx
}

/// Record the reads about to be sent, so none is sent twice.
pub fn mark_loading(s: &mut State, fx: &[Effect]) {
    for e in fx {
        if let Effect::LoadDagCode { dag, .. } = e {
            s.dags.code_loading.insert(dag.dag_id.clone());
        }
    }
}

/// A read's answer: kept (a refusal or an absence replaces what was known; another
/// failure keeps an earlier read), then given to the DAG's facts.
pub fn on_code(s: &mut State, dag_id: &str, result: Result<CodeRead, AirflowError>) {
    s.dags.code_loading.remove(dag_id);
    let now = s.now;
    match result {
        Ok(CodeRead::Unchanged) => {}
        Ok(CodeRead::Read { key, source, code }) => {
            s.dags.code.insert(
                dag_id.to_string(),
                CodeEntry {
                    key: Some(key),
                    read_at: now,
                    source: Some(Arc::from(source)),
                    facts: CodeFacts::Read(code),
                },
            );
            refresh_view(s, dag_id);
        }
        Err(e) => {
            let definite = matches!(e.status(), Some(401 | 403 | 404));
            let keep = !definite
                && s.dags
                    .code
                    .get(dag_id)
                    .is_some_and(|c| matches!(c.facts, CodeFacts::Read(_)));
            if !keep {
                s.dags.code.insert(
                    dag_id.to_string(),
                    CodeEntry {
                        key: None,
                        read_at: now,
                        source: None,
                        facts: CodeFacts::Unread {
                            status: e.status(),
                            error: e.to_string(),
                        },
                    },
                );
            }
            tracing::info!(dag_id, error = %e, "cannot read the DAG's source");
        }
    }
    attach(s, dag_id);
    super::correlate(s);
}

/// Give the DAG's facts what its code says.
pub fn attach(s: &mut State, dag_id: &str) {
    let facts = s.dags.code.get(dag_id).map(|e| e.facts.clone());
    if let Some(f) = s
        .dags
        .rows
        .iter_mut()
        .find(|r| r.dag.dag_id == dag_id)
        .and_then(|r| r.facts.as_mut())
    {
        f.code = facts;
    }
}

/// A new version read while its view is open: the view follows it, at the same place.
fn refresh_view(s: &mut State, dag_id: &str) {
    let Some(v) = s.dags.source.as_ref().filter(|v| v.dag_id == dag_id) else {
        return;
    };
    let (scroll, search) = (v.scroll, v.search.clone());
    if let Some(e) = s.dags.code.get(dag_id)
        && let Some(src) = e.source.clone()
    {
        let mut nv = SourceView::new(dag_id, e, &src);
        nv.scroll = scroll.min(nv.lines.len().saturating_sub(1));
        nv.search = search;
        s.dags.source = Some(nv);
    }
}

/// `v` on the DAGs tab (or Enter on a finding from Triage): the selected DAG's source, at
/// `line` or its first finding.
pub fn open(s: &mut State, line: Option<usize>) -> Vec<Effect> {
    let Some(dag) = s.dags.selected().map(|r| r.dag.clone()) else {
        s.set_status(Level::Info, "no DAG selected");
        return Vec::new();
    };
    open_dag(s, &dag, line)
}

fn open_dag(s: &mut State, dag: &Dag, line: Option<usize>) -> Vec<Effect> {
    let id = dag.dag_id.clone();
    let Some(entry) = s.dags.code.get(&id).cloned() else {
        let mapped = s.dags.row(&id).is_some_and(|r| !r.tables.is_empty());
        if !mapped {
            s.set_status(
                Level::Info,
                format!("{id} maintains no table floe lists: its source is not read"),
            );
            return Vec::new();
        }
        s.set_status(Level::Info, format!("reading the source of {id}…"));
        let fx: Vec<Effect> = want(s, &id).into_iter().collect();
        mark_loading(s, &fx);
        return fx;
    };
    let Some(src) = entry.source.clone() else {
        if let CodeFacts::Unread { error, .. } = &entry.facts {
            s.set_status(
                Level::Error,
                format!("cannot read the source of {id}: {error}"),
            );
        }
        return Vec::new();
    };
    let mut v = SourceView::new(&id, &entry, &src);
    if let Some(l) = line.or_else(|| v.marks.first().map(|m| m.0)) {
        v.show_line(l);
    }
    s.dags.source = Some(v);
    s.dags.level = Some(DagLevel::Source);
    Vec::new()
}

/// Scroll the source view by `delta` lines.
pub fn scroll(s: &mut State, delta: isize, height: usize) {
    if let Some(v) = &mut s.dags.source {
        let max = v.lines.len().saturating_sub(height.max(1));
        v.scroll = (v.scroll as isize + delta).clamp(0, max as isize) as usize;
    }
}

/// `/` in the source view: the first matching line from the top.
pub fn search(s: &mut State, text: &str) {
    if let Some(v) = &mut s.dags.source {
        v.search = text.to_lowercase();
        if !v.search.is_empty()
            && let Some(i) = v
                .lines
                .iter()
                .position(|l| l.to_lowercase().contains(&v.search))
        {
            v.scroll = i.saturating_sub(1);
        }
    }
}

/// Enter in the source view: the next finding below the top line (the first again after
/// the last).
pub fn next_finding(s: &mut State) {
    if let Some(v) = &mut s.dags.source {
        let top = v.scroll + 3;
        let next = v
            .marks
            .iter()
            .map(|m| m.0)
            .find(|&l| l > top)
            .or_else(|| v.marks.first().map(|m| m.0));
        if let Some(l) = next {
            v.show_line(l);
        }
    }
}

/// The code of every DAG by id, as read so far (kept across DAG list refreshes).
pub type CodeCache = BTreeMap<String, CodeEntry>;

#[cfg(test)]
mod tests;
