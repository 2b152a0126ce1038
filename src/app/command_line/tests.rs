//! The `:` line: every form parses to the keymap's commands and runs what the key runs.

use super::*;
use crate::app::action::{Action, Effect};
use crate::app::export::ExportFormat;
use crate::app::state::{Level, Popup, State};
use crate::app::testing::{code, key, loaded, t0};
use crate::app::update::update;
use crossterm::event::KeyCode;

fn command(s: &mut State, line: &str) -> Vec<Effect> {
    update(s, key(':'));
    for c in line.chars() {
        update(s, key(c));
    }
    update(s, code(KeyCode::Enter))
}

#[test]
fn refresh_intervals_are_bounded() {
    let mut s = loaded();
    let before = s.refresh_every;
    for bad in ["300000y", "2d", "86401s", "4s"] {
        command(&mut s, &format!("refresh {bad}"));
        let st = s.status.clone().unwrap();
        assert_eq!(st.level, Level::Error, "{bad}: {}", st.text);
        assert!(
            st.text.contains("at least 5s and at most 1d"),
            "{bad}: {}",
            st.text
        );
        assert_eq!(s.refresh_every, before, "{bad} kept the old interval");
    }
    command(&mut s, "refresh 1d");
    assert_eq!(s.refresh_every, MAX_REFRESH);
    // The ticks after it go on.
    update(&mut s, Action::Tick(t0() + chrono::Duration::seconds(1)));
    assert!(s.next_refresh_in().unwrap() > 86_000);
}

#[test]
fn command_line() {
    let mut s = loaded();
    s.profiles = vec!["lab".into(), "prod".into()];
    let run = |s: &mut State, line: &str| {
        update(s, key(':'));
        for c in line.chars() {
            update(s, key(c));
        }
        update(s, code(KeyCode::Enter))
    };
    run(&mut s, "refresh 30s");
    assert_eq!(s.refresh_every, std::time::Duration::from_secs(30));
    run(&mut s, "refresh 2s");
    assert!(s.status.as_ref().unwrap().text.contains("at least 5s"));
    let fx = run(&mut s, "profile prod");
    assert_eq!(fx, vec![Effect::SwitchProfile("prod".into())]);
    run(&mut s, "profile nope");
    assert!(s.status.as_ref().unwrap().text.contains("lab, prod"));
    run(&mut s, "bogus");
    assert!(
        s.status
            .as_ref()
            .unwrap()
            .text
            .contains("unknown command :bogus")
    );
    let fx = run(&mut s, "schema zoning");
    assert_eq!(s.schemas, vec!["zoning"]);
    assert!(fx.iter().any(
        |e| matches!(e, Effect::Read { read: crate::refresh::Read::List { schemas, .. }, .. } if schemas == &vec!["zoning".to_string()])
    ));
    let fx = run(&mut s, "export json");
    assert!(matches!(
        &fx[..],
        [Effect::Export {
            format: ExportFormat::Json,
            ..
        }]
    ));
    let fx = run(&mut s, "q");
    assert_eq!(fx, vec![Effect::Quit]);
    assert!(s.quit);
}

/// What a key does and what its `:` line does, on two copies of the same state.
fn key_and_line(k: char, line: &str) -> ((Vec<Effect>, State), (Vec<Effect>, State)) {
    let mut a = loaded();
    let fa = update(&mut a, key(k));
    let mut b = loaded();
    let fb = command(&mut b, line);
    ((fa, a), (fb, b))
}

#[test]
fn a_colon_command_does_what_its_key_does() {
    // ? resets the help's scroll; :help used to open it where it was left.
    let mut s = loaded();
    update(&mut s, key('?'));
    update(&mut s, key('j'));
    update(&mut s, key('j'));
    assert_eq!(s.help_scroll, 2);
    update(&mut s, code(KeyCode::Esc));
    command(&mut s, "help");
    assert_eq!(s.popup, Some(Popup::Help));
    assert_eq!(
        s.help_scroll, 0,
        ":help opens the help at its top, as ? does"
    );
    // The same effects and the same question from o and :optimize.
    let ((fa, a), (fb, b)) = key_and_line('o', "optimize");
    assert_eq!(fa, fb);
    assert_eq!(a.popup, b.popup);
    assert!(a.popup.is_some() || !fa.is_empty(), "o asked for something");
    // A tab by its key's number or its name.
    for (k, line) in [('2', "tab 2"), ('4', "tab dags"), ('0', "tab Triage")] {
        let ((_, a), (_, b)) = key_and_line(k, line);
        assert_eq!(a.tab, b.tab, "{line}");
    }
    assert_eq!(
        parse("tab 2").unwrap().unwrap().command,
        Command::Tab(Tab::Partitions)
    );
    // The tabs' config names are : commands too.
    assert_eq!(
        parse("tab_dags").unwrap().unwrap().command,
        Command::Tab(Tab::Dags)
    );
    // f and :freeze say the same; :unfreeze resumes.
    let ((_, a), (_, b)) = key_and_line('f', "freeze");
    assert!(a.frozen && b.frozen);
    assert_eq!(a.status.unwrap().text, b.status.clone().unwrap().text);
    let mut b = b;
    command(&mut b, "unfreeze");
    assert!(!b.frozen);
    assert_eq!(b.status.unwrap().text, "auto-refresh resumed");
}

#[test]
fn every_keymap_command_and_alias_parses_to_a_command() {
    for s in crate::app::keymap::specs() {
        let inv = parse(&s.name).unwrap().unwrap();
        assert_eq!(inv.command, s.command, "{}", s.name);
    }
    for (alias, name, _) in ALIASES {
        assert_eq!(
            parse(alias).unwrap().unwrap().command,
            by_name(name).unwrap(),
            "{alias}"
        );
    }
    assert_eq!(parse("unfreeze").unwrap().unwrap().arg, Arg::Frozen(false));
    assert_eq!(parse("freeze").unwrap().unwrap().arg, Arg::Frozen(true));
    assert_eq!(parse("   ").unwrap(), None);
    assert_eq!(
        parse("schema a b,c").unwrap().unwrap().arg,
        Arg::Schemas(vec!["a".into(), "b".into(), "c".into()])
    );
    assert_eq!(
        parse("refresh 30s").unwrap().unwrap().arg,
        Arg::Every(std::time::Duration::from_secs(30))
    );
    assert_eq!(
        parse("w md").unwrap().unwrap().arg,
        Arg::Export(ExportChoice::Postmortem)
    );
}

#[test]
fn a_line_that_does_not_fit_its_command_is_refused_and_changes_nothing() {
    let mut s = loaded();
    let tab = s.tab;
    for (line, says) in [
        ("quit now", ":quit takes no argument"),
        ("refresh 30s 1m", ":refresh takes one argument"),
        (
            "tab",
            ":tab takes a tab's number or name (0 triage, 1 tables",
        ),
        ("tab 9", "no tab \"9\""),
        ("freeze maybe", ":freeze takes on or off"),
        ("export xml", "unknown export format \"xml\""),
    ] {
        let fx = command(&mut s, line);
        let st = s.status.clone().unwrap();
        assert_eq!(st.level, Level::Error, "{line}");
        assert!(st.text.contains(says), "{line}: {}", st.text);
        assert!(fx.is_empty() && !s.quit && s.tab == tab, "{line}: {fx:?}");
    }
}

#[test]
fn no_line_answers_a_confirmation_or_writes_in_a_read_only_profile() {
    // A `y` only answers the question drawn: :confirm is not a way around it.
    let mut s = loaded();
    let fx = command(&mut s, "confirm");
    assert!(fx.is_empty());
    assert!(
        s.status
            .clone()
            .unwrap()
            .text
            .contains(":confirm answers a confirmation on screen")
    );
    // Read-only: the mutation is not in the keymap, nor on the line.
    let mut s = loaded();
    s.keymap = s.keymap.clone().with_readonly(true);
    for line in [
        "optimize",
        "trigger_dag",
        "fix_connection",
        "expire_snapshots",
    ] {
        let fx = command(&mut s, line);
        assert!(
            fx.is_empty() && s.popup.is_none() && s.prompt.is_none(),
            "{line}"
        );
        let st = s.status.clone().unwrap();
        assert_eq!(st.level, Level::Error);
        assert!(
            st.text.contains("not in a read-only profile"),
            "{line}: {}",
            st.text
        );
    }
}
