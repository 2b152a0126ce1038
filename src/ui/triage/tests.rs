//! The Triage tab on screen: snapshots at 80x24 and 160x48, readable without colour,
//! inert with hostile server text.

use crate::health::Rule;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

use crate::app::action::Action;
use crate::app::dags::DagMsg;
use crate::app::state::State;
use crate::app::testing::key;
use crate::app::triage::tests::triaged;
use crate::app::update::update;
use crate::trino::ServerInfo;

fn screen(s: &mut State, w: u16, h: u16) -> Terminal<TestBackend> {
    update(s, Action::Resize(w, h));
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| crate::ui::draw(f, s)).unwrap();
    term
}

fn on_triage() -> State {
    let mut s = triaged();
    let info: ServerInfo = serde_json::from_str(
        r#"{"nodeVersion":{"version":"480"},"environment":"lab","coordinator":true,"starting":false,"uptime":"2.50h"}"#,
    )
    .unwrap();
    update(
        &mut s,
        Action::Connection(crate::app::connection::ConnectionMsg::ServerInfo(Ok(info))),
    );
    update(&mut s, key('0'));
    s.status = None;
    s
}

fn text(term: &Terminal<TestBackend>) -> String {
    let buf = term.backend().buffer();
    let w = buf.area.width as usize;
    buf.content()
        .chunks(w)
        .map(|row| row.iter().map(|c| c.symbol()).collect::<String>())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn triage_80x24() {
    let mut s = on_triage();
    let term = screen(&mut s, 80, 24);
    insta::assert_snapshot!("triage_80x24", term.backend());
    let t = text(&term);
    assert!(t.contains(" 0 Triage "), "{t}");
    assert!(t.contains("DAG compact_documents failing 14 runs"), "{t}");
}

#[test]
fn triage_160x48() {
    let mut s = on_triage();
    insta::assert_snapshot!("triage_160x48", screen(&mut s, 160, 48).backend());
}

#[test]
fn readable_without_colour() {
    let mut s = on_triage();
    s.no_color = true;
    let term = screen(&mut s, 80, 24);
    let buf = term.backend().buffer();
    for cell in buf.content() {
        assert_eq!(cell.fg, ratatui::style::Color::Reset, "{cell:?}");
    }
    let t = text(&term);
    // Severity is a word, not a colour.
    assert!(t.contains("CRIT"), "{t}");
}

#[test]
fn hostile_server_text_is_inert() {
    let mut s = on_triage();
    let hostile = crate::text::hostile_sample();
    let mut f = crate::app::testing::dags::failing_facts();
    f.error_line = Some(format!("boom at evil.example:8080 {hostile}"));
    let generation = s.dags.generation;
    update(
        &mut s,
        Action::Dags(DagMsg::Facts {
            generation,
            dag_id: "compact_documents".into(),
            result: Ok(f),
        }),
    );
    update(
        &mut s,
        Action::Dags(DagMsg::ConnectionFindings(vec![crate::health::Finding {
            rule: Rule::AirflowConnectionFailing,
            severity: crate::health::Severity::Critical,
            message: format!(
                "Airflow connection x{hostile} points at evil.example:8080 and fails its test: {hostile}"
            ),
            penalty: 0,
        }])),
    );
    for (w, h) in [(80, 24), (160, 48)] {
        let term = screen(&mut s, w, h);
        let t = text(&term);
        if w == 160 {
            assert!(t.contains("evil.example:8080"), "{t}");
        }
        for cell in term.backend().buffer().content() {
            assert!(crate::text::is_inert(cell.symbol()), "{:?}", cell.symbol());
        }
    }
}
