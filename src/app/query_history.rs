//! What the queries suffered, per table: the coordinator's record of the recent queries
//! that read it, asked for the table whose health breakdown is open (and a watched run's)
//! once per refresh, and for the worst tables of the Triage tab's first incidents once
//! every [`TRIAGE_EVERY`] refreshes. This module owns those answers; the breakdown and the
//! incidents read them.

use std::collections::HashMap;

use super::action::{Action, Effect};
use super::state::{Popup, State, Tab};
use crate::lakehouse::model::TableRef;
use crate::lakehouse::query_history::{self, TableQueries};

/// Incidents (from the top) whose worst table's queries the Triage tab asks for.
pub const TRIAGE_TABLES: usize = 5;
/// Runs the breakdown lists under the worst one.
pub const BREAKDOWN_RUNS: usize = 5;
/// Refreshes between two reads of the Triage tab's tables' queries. Each read is a
/// statement over the coordinator's whole record (a regular expression over the text of
/// every query it keeps); an incident's evidence (the dashboard query that took 4m12s) is
/// minutes old anyway, and a table opened in the breakdown is read again every refresh.
pub const TRIAGE_EVERY: u64 = 5;

#[derive(Clone, Debug, PartialEq)]
pub enum QueryLoad {
    Loading,
    Loaded(TableQueries),
    Failed(String),
}

#[derive(Clone, Debug, Default)]
pub struct QueriesView {
    /// Per table: the tables generation it was asked in, and the answer.
    pub by_table: HashMap<TableRef, (u64, QueryLoad)>,
}

/// The result of [`Effect::LoadQueries`].
pub fn on_loaded(
    s: &mut State,
    table: TableRef,
    result: Result<TableQueries, crate::trino::TrinoError>,
) {
    let generation = s
        .queries
        .by_table
        .get(&table)
        .map(|(g, _)| *g)
        .unwrap_or(s.tables.refresh.passes());
    let load = match result {
        Ok(q) => QueryLoad::Loaded(q),
        Err(e) => QueryLoad::Failed(e.to_string()),
    };
    s.queries.by_table.insert(table, (generation, load));
}

/// Ask for `t`'s queries unless they were asked for in the last `every` refreshes.
fn want(s: &mut State, t: &TableRef, every: u64, fx: &mut Vec<Effect>) {
    let generation = s.tables.refresh.passes();
    let fresh = s
        .queries
        .by_table
        .get(t)
        .is_some_and(|(g, l)| generation < g + every || *l == QueryLoad::Loading);
    if !fresh {
        s.queries
            .by_table
            .insert(t.clone(), (generation, QueryLoad::Loading));
        fx.push(Effect::LoadQueries { table: t.clone() });
    }
}

/// The loads what is on screen needs: the open breakdown's table, the Triage tab's
/// first incidents' worst tables.
pub fn wanted(s: &mut State) -> Vec<Effect> {
    // The open breakdown's and a watched run's first (every refresh), then Triage's.
    let mut tables: Vec<(TableRef, u64)> = Vec::new();
    if let Some(Popup::Health(t)) = &s.popup {
        tables.push((t.clone(), 1));
    }
    // After a watched run: the next runs of the query its table suffered.
    tables.extend(
        super::dags::watch::query_tables(s)
            .into_iter()
            .map(|t| (t, 1)),
    );
    if s.tab == Tab::Triage {
        tables.extend(
            s.triage
                .incidents
                .iter()
                .filter_map(|i| i.worst_table().cloned())
                .take(TRIAGE_TABLES)
                .map(|t| (t, TRIAGE_EVERY)),
        );
    }
    let mut fx = Vec::new();
    for (t, every) in tables {
        if s.tables.row(&t).is_some_and(|r| r.stats().is_some()) {
            want(s, &t, every, &mut fx);
        }
    }
    fx
}

/// `the dashboard query on documents took 4m12s reading 18,000 splits; …` when the
/// coordinator's record holds a query that read `t`.
pub fn suffered(s: &State, t: &TableRef) -> Option<String> {
    match s.queries.by_table.get(t) {
        Some((_, QueryLoad::Loaded(q))) => {
            query_history::suffering(q.runs()).map(|w| w.line(&t.table, s.now))
        }
        _ => None,
    }
}

/// The breakdown's lines about `t`'s queries.
pub fn lines(s: &State, t: &TableRef) -> Vec<String> {
    match s.queries.by_table.get(t) {
        None => Vec::new(),
        Some((_, QueryLoad::Loading)) => {
            vec!["queries: reading the coordinator's query history…".into()]
        }
        Some((_, QueryLoad::Failed(e))) => {
            vec![format!(
                "queries: the coordinator's query history could not be read: {e}"
            )]
        }
        Some((_, QueryLoad::Loaded(q))) => query_history::lines(q, &t.table, s.now, BREAKDOWN_RUNS),
    }
}

/// The action a [`Effect::LoadQueries`] sends back.
pub fn reply(table: TableRef, result: Result<TableQueries, crate::trino::TrinoError>) -> Action {
    Action::Queries { table, result }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::testing::{loaded, tref};
    use crate::app::update::update;
    use crate::lakehouse::query_history::QueryRun;

    fn run(elapsed: u64) -> QueryRun {
        QueryRun {
            query_id: format!("q{elapsed}"),
            state: crate::lakehouse::query_history::QueryState::Finished,
            user: "alice".into(),
            source: Some("dashboard\u{1b}[2J".into()),
            query: "SELECT count(*) FROM documents".into(),
            created: None,
            ended: None,
            elapsed_ms: Some(elapsed),
            queued_ms: None,
            cpu_ms: None,
            splits: Some(18_000),
            physical_input_bytes: None,
            physical_written_bytes: None,
            error_code: None,
        }
    }

    #[test]
    fn the_breakdown_asks_once_per_refresh_and_shows_the_answer() {
        let mut s = loaded();
        let docs = tref("zoning", "documents");
        s.popup = Some(Popup::Health(docs.clone()));
        let fx = wanted(&mut s);
        assert_eq!(
            fx,
            vec![Effect::LoadQueries {
                table: docs.clone()
            }]
        );
        assert!(wanted(&mut s).is_empty(), "asked once");
        assert_eq!(
            lines(&s, &docs),
            vec!["queries: reading the coordinator's query history…"]
        );
        update(
            &mut s,
            Action::Queries {
                table: docs.clone(),
                result: Ok(TableQueries::Runs {
                    runs: vec![run(252_000), run(18_000), run(17_000)],
                    unconfirmed: 0,
                }),
            },
        );
        let l = lines(&s, &docs);
        assert!(
            l[0].starts_with("queries: the dashboard\u{1b}[2J query on documents took 4m12s reading 18,000 splits"),
            "{l:?}"
        );
        assert_eq!(l.len(), 4, "{l:?}");
        let line = suffered(&s, &docs).unwrap();
        assert!(line.contains("(3 runs) 18s"), "{line}");
        // The breakdown's text is sanitised where it is drawn.
        assert!(!crate::text::sanitize(&l[0]).contains('\u{1b}'));
    }

    #[test]
    fn triage_asks_every_fifth_refresh_and_the_breakdown_every_refresh() {
        let mut s = loaded();
        s.tab = Tab::Triage;
        crate::app::triage::rebuild(&mut s);
        let tables: Vec<TableRef> = s.tables.rows.iter().map(|r| r.table.clone()).collect();
        // What `fx` and the wants after it ask for, each answered.
        let asked = |s: &mut State, mut fx: Vec<Effect>| -> Vec<TableRef> {
            fx.extend(wanted(s));
            let out: Vec<TableRef> = fx
                .iter()
                .filter_map(|e| match e {
                    Effect::LoadQueries { table } => Some(table.clone()),
                    _ => None,
                })
                .collect();
            for t in &out {
                let none = TableQueries::Runs {
                    runs: vec![],
                    unconfirmed: 0,
                };
                on_loaded(s, t.clone(), Ok(none));
            }
            out
        };
        let first = asked(&mut s, Vec::new());
        assert!(!first.is_empty(), "the incidents' worst tables");
        let mut counts = Vec::new();
        for _ in 0..TRIAGE_EVERY {
            let fx = crate::app::testing::relist(&mut s, tables.clone());
            counts.push(asked(&mut s, fx).len());
        }
        let mut expected = vec![0; TRIAGE_EVERY as usize];
        expected[TRIAGE_EVERY as usize - 1] = first.len();
        assert_eq!(counts, expected, "asked again the fifth refresh on");
        // The breakdown opened on one of them: read again at every refresh.
        s.popup = Some(Popup::Health(first[0].clone()));
        for _ in 0..2 {
            let fx = crate::app::testing::relist(&mut s, tables.clone());
            assert_eq!(asked(&mut s, fx), vec![first[0].clone()]);
        }
    }

    #[test]
    fn a_drawn_frame_asks_for_nothing() {
        // The runtime runs no effect of Drawn: a load asked there would stay "reading".
        let mut s = loaded();
        s.popup = Some(Popup::Health(tref("zoning", "documents")));
        assert!(update(&mut s, Action::Drawn(std::time::Instant::now())).is_empty());
        assert!(s.queries.by_table.is_empty());
        let now = s.now;
        let fx = update(&mut s, Action::Tick(now));
        assert!(
            fx.iter().any(|e| matches!(e, Effect::LoadQueries { .. })),
            "{fx:?}"
        );
    }

    #[test]
    fn no_history_is_a_line_not_an_error() {
        let mut s = loaded();
        let docs = tref("zoning", "documents");
        s.popup = Some(Popup::Health(docs.clone()));
        wanted(&mut s);
        update(
            &mut s,
            Action::Queries {
                table: docs.clone(),
                result: Ok(TableQueries::Unavailable {
                    reason: "the coordinator at http://t/ keeps no query history".into(),
                }),
            },
        );
        assert_eq!(
            lines(&s, &docs),
            vec!["queries: the coordinator at http://t/ keeps no query history"]
        );
        assert!(s.status.is_none(), "not an error: {:?}", s.status);
        assert!(suffered(&s, &docs).is_none());
    }
}
