//! A DAG's code through the app: read once per version, kept across a refusal only when
//! the refusal is definite, given to the DAG's facts, and the source view's keys.

use super::*;
use crate::airflow::scan::CodeRead;
use crate::app::action::Action;
use crate::app::dags::DagMsg;
use crate::app::testing::dags::with_dags;
use crate::app::testing::key;
use crate::app::update::update;
use crate::dag_code::inspect;

/// The seed's swallowing DAG, as Airflow serves its file.
pub(crate) const PERMITS: &str =
    include_str!("../../../../tests/lab/airflow/dags/compact_permits.py");

fn v3() -> SourceKey {
    SourceKey::V2 {
        dag_id: "compact_documents".into(),
        version_number: Some(3),
    }
}

/// `compact_documents`'s code arrives, its file the seed's swallowing one.
pub(crate) fn with_code() -> State {
    let mut s = with_dags();
    assert!(s.dags.code_loading.contains("compact_documents"));
    update(
        &mut s,
        Action::Dags(DagMsg::Code {
            dag_id: "compact_documents".into(),
            result: Ok(CodeRead::Read {
                key: v3(),
                source: PERMITS.into(),
                code: inspect(PERMITS, "compact_permits.py", "compact_permits"),
            }),
        }),
    );
    s
}

fn code_of(s: &State) -> Option<&CodeFacts> {
    s.dags
        .row("compact_documents")
        .and_then(|r| r.facts.as_ref())
        .and_then(|f| f.code.as_ref())
}

#[test]
fn a_read_goes_to_the_dags_facts_and_its_version_is_asked_again_not_its_file() {
    let mut s = with_code();
    assert!(!s.dags.code_loading.contains("compact_documents"));
    let code = code_of(&s).and_then(CodeFacts::code).unwrap();
    assert_eq!(code.swallowing().map(|f| f.line), Some(56));
    // The table's row carries it too (the correlation).
    let docs = s
        .tables
        .rows
        .iter()
        .find(|r| r.table.table == "documents")
        .unwrap();
    assert!(docs.dag.as_ref().is_some_and(|d| d.code.is_some()));
    // Next time only the version is asked: the known one is sent along.
    match want(&s, "compact_documents") {
        Some(Effect::LoadDagCode { known, .. }) => assert_eq!(known, Some(v3())),
        other => panic!("{other:?}"),
    }
    // Unchanged keeps what was read; new facts keep it too.
    update(
        &mut s,
        Action::Dags(DagMsg::Code {
            dag_id: "compact_documents".into(),
            result: Ok(CodeRead::Unchanged),
        }),
    );
    assert!(code_of(&s).is_some_and(|c| c.code().is_some()));
    let generation = s.dags.generation;
    update(
        &mut s,
        Action::Dags(DagMsg::Facts {
            generation,
            dag_id: "compact_documents".into(),
            result: Ok(crate::app::testing::dags::failing_facts()),
        }),
    );
    assert!(code_of(&s).is_some_and(|c| c.code().is_some()));
    // A DAG that maintains no listed table is never read.
    s.dags.rows[0].tables.clear();
    let id = s.dags.rows[0].dag.dag_id.clone();
    s.dags.code.remove(&id);
    assert_eq!(want(&s, &id), None);
}

#[test]
fn a_refusal_replaces_what_was_read_and_a_passing_failure_does_not() {
    let mut s = with_code();
    let transport = AirflowError::Transport {
        url: "http://af/api/v2/dags/compact_documents/details".into(),
        message: "connection reset".into(),
    };
    update(
        &mut s,
        Action::Dags(DagMsg::Code {
            dag_id: "compact_documents".into(),
            result: Err(transport),
        }),
    );
    assert!(code_of(&s).is_some_and(|c| c.code().is_some()));
    let refused = AirflowError::Auth {
        status: 403,
        url: "http://af/api/v2/dagSources/compact_documents?version_number=3".into(),
        message: "Forbidden".into(),
    };
    update(
        &mut s,
        Action::Dags(DagMsg::Code {
            dag_id: "compact_documents".into(),
            result: Err(refused),
        }),
    );
    let c = code_of(&s).unwrap();
    assert_eq!(c.row_note().as_deref(), Some("source refused: HTTP 403"));
    let ev = c.evidence(&|_| None);
    assert!(
        ev[0].contains("HTTP 403") && ev[0].contains("/api/v2/dagSources/compact_documents"),
        "{ev:?}"
    );
    // Not asked again before the DAG list's next full refresh.
    assert_eq!(want(&s, "compact_documents"), None);
    s.now += chrono::Duration::from_std(s.refresh_every * 5).unwrap();
    assert!(want(&s, "compact_documents").is_some());
}

#[test]
fn v_opens_the_source_at_its_first_finding_and_it_scrolls_searches_and_walks_them() {
    let mut s = with_code();
    update(&mut s, key('4'));
    // The failing DAG is first on the list.
    assert_eq!(
        s.dags.selected().map(|r| r.dag.dag_id.as_str()),
        Some("compact_documents")
    );
    update(&mut s, key('v'));
    assert_eq!(s.dags.level(), DagLevel::Source);
    let v = s.dags.source.clone().unwrap();
    assert_eq!(v.file, "compact_permits.py");
    assert_eq!(v.version, "v3");
    assert_eq!(v.lines.len(), PERMITS.lines().count());
    let marked: Vec<usize> = v.marks.iter().map(|m| m.0).collect();
    assert_eq!(marked, vec![25, 46, 49, 56]);
    assert_eq!(v.scroll, 22);
    // Enter walks the findings, and comes round again.
    for want in [46, 49, 56, 25] {
        update(
            &mut s,
            crate::app::testing::code(crossterm::event::KeyCode::Enter),
        );
        assert_eq!(s.dags.source.as_ref().unwrap().scroll, want - 3);
    }
    // `/` moves to the first match; Esc clears the search, then leaves the view.
    update(&mut s, key('/'));
    for c in "TrinoHook(".chars() {
        update(&mut s, key(c));
    }
    update(
        &mut s,
        crate::app::testing::code(crossterm::event::KeyCode::Enter),
    );
    let v = s.dags.source.as_ref().unwrap();
    assert_eq!(v.search, "trinohook(");
    assert_eq!(v.scroll, 53);
    update(&mut s, key('G'));
    let h = s.page_height();
    assert_eq!(
        s.dags.source.as_ref().unwrap().scroll,
        PERMITS.lines().count().saturating_sub(h)
    );
    let esc = crate::app::testing::code(crossterm::event::KeyCode::Esc);
    update(&mut s, esc.clone());
    assert!(s.dags.source.as_ref().unwrap().search.is_empty());
    assert_eq!(s.dags.level(), DagLevel::Source);
    update(&mut s, esc);
    assert_eq!(s.dags.level(), DagLevel::List);
}

#[test]
fn the_files_lines_are_cleaned_for_the_screen() {
    let lines = screen_lines("a\tb\r\n\u{1b}[2Jx\u{202e}y\n");
    assert_eq!(lines, vec!["a    b", "\\x1b[2Jx\\u{202e}y"]);
}
