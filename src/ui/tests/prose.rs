//! Prose is wrapped, never cut: every pane and popup at 80x24 (and the help at 100x30)
//! shows each word of what it says whole.

use std::collections::BTreeSet;

use super::*;

/// The words on screen: runs of text between spaces and box-drawing characters.
fn words_on(term: &Terminal<TestBackend>) -> BTreeSet<String> {
    let b = term.backend().buffer();
    let mut out = BTreeSet::new();
    for y in 0..b.area.height {
        let line: String = (0..b.area.width)
            .map(|x| b[(x, y)].symbol().to_string())
            .collect();
        for w in line.split(|c: char| c.is_whitespace() || ('\u{2500}'..='\u{257f}').contains(&c)) {
            if !w.is_empty() {
                out.insert(w.to_string());
            }
        }
    }
    out
}

/// Every word of `texts` is on screen whole.
fn assert_whole(seen: &BTreeSet<String>, texts: &[String], what: &str) {
    for t in texts {
        for w in t.split_whitespace() {
            assert!(
                seen.contains(w),
                "{what}: the word {w:?} of {t:?} is cut or missing; on screen: {seen:?}"
            );
        }
    }
}

fn help_words(s: &mut State, w: u16, h: u16) -> BTreeSet<String> {
    key(s, '?');
    let mut seen = BTreeSet::new();
    // Scroll through the whole help, collecting what each page shows.
    for _ in 0..60 {
        seen.extend(words_on(&screen(s, w, h)));
        key(s, 'j');
    }
    update(
        s,
        Action::Key(
            KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE),
            std::time::Instant::now(),
        ),
    );
    seen
}

#[test]
fn the_help_cuts_no_description() {
    for (w, h) in [(60, 24), (80, 24), (100, 30), (160, 48)] {
        let mut s = all_loaded();
        let descs: Vec<String> = s
            .keymap
            .help()
            .into_iter()
            .map(|(_, d, _)| d.to_string())
            .collect();
        let seen = help_words(&mut s, w, h);
        assert_whole(&seen, &descs, &format!("help at {w}x{h}"));
    }
}

#[test]
fn the_help_is_one_column_when_two_do_not_fit() {
    let mut s = all_loaded();
    key(&mut s, '?');
    // At 80 two columns of whole descriptions fit; at 60 they do not: one column.
    let t = format!("{:?}", screen(&mut s, 80, 24).backend());
    // (the line of a right-column description holds a left-column one too)
    assert!(
        t.lines().any(|l| l.contains("quit, asks if jobs run")
            && l.split("quit, asks")
                .next()
                .is_some_and(|left| left.trim_start_matches(['"', '│', ' ']).len() > 20)),
        "{t}"
    );
    let t = format!("{:?}", screen(&mut s, 60, 24).backend());
    for line in t.lines() {
        if line.contains("quit") {
            assert!(
                !line.contains("maintenance queue") && !line.contains("back / clear"),
                "two columns at 60: {line}"
            );
        }
    }
}

#[test]
fn the_dags_tab_wraps_its_advice_without_airflow() {
    let mut s = all_loaded();
    key(&mut s, '4');
    let seen = words_on(&screen(&mut s, 80, 24));
    assert_whole(
        &seen,
        &[crate::ui::dags::AIRFLOW_ADVICE.to_string()],
        "DAGs tab without Airflow",
    );
}

#[test]
fn the_health_breakdown_and_the_confirm_popup_wrap() {
    let mut s = all_loaded();
    key(&mut s, 'i');
    let seen = words_on(&screen(&mut s, 80, 24));
    let h = s.tables.selected().unwrap().health.clone().unwrap();
    let msgs: Vec<String> = h.findings.iter().map(|f| f.message.clone()).collect();
    assert_whole(&seen, &msgs, "health breakdown at 80x24");

    let mut s = confirm_state();
    let seen = words_on(&screen(&mut s, 80, 24));
    let Some(Popup::Confirm(c)) = &s.popup else {
        panic!("the confirm popup is open")
    };
    let sql = c.plan.steps[0].sql.clone();
    assert_whole(&seen, &[sql], "confirm popup at 80x24");
}

#[test]
fn the_triage_evidence_pane_wraps_the_cause() {
    let mut s = crate::app::triage::tests::triaged();
    key(&mut s, '0');
    let seen = words_on(&screen(&mut s, 80, 24));
    let inc = s.triage.selected().unwrap().clone();
    assert_whole(
        &seen,
        std::slice::from_ref(&inc.cause),
        "triage evidence at 80x24",
    );
}
