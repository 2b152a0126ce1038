//! The bottom-line prompts: the `/` filter (live), the `:` command line, and the
//! retention asked before expire_snapshots / remove_orphan_files.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::action::Effect;
use super::export::ExportFormat;
use super::nav::{in_log, reindex_current};
use super::state::{Level, Load, Popup, State};
use crate::fmt::human_duration;

pub use crate::config::MAX_REFRESH;

/// A text prompt at the bottom line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Prompt {
    Filter(String),
    Command(String),
    /// The retention of expire_snapshots / remove_orphan_files, edited before planning.
    Retention(RetentionFor, String),
    /// Where an Airflow connection should point (`host:port` or a `trino://` URI).
    Connection {
        id: String,
        text: String,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetentionFor {
    ExpireSnapshots,
    RemoveOrphanFiles,
}

/// `/`: open the filter prompt on what is filtered now.
pub fn open_filter(s: &mut State) {
    if s.grid().is_some() || in_log(s) {
        s.prompt = Some(Prompt::Filter(current_filter(s)));
    }
}

/// A key while a prompt is open.
pub fn on_key(s: &mut State, p: Prompt, ev: KeyEvent) -> Vec<Effect> {
    let retention = match &p {
        Prompt::Retention(r, _) => Some(*r),
        _ => None,
    };
    let connection = match &p {
        Prompt::Connection { id, .. } => Some(id.clone()),
        _ => None,
    };
    let (mut text, is_filter) = match p {
        Prompt::Filter(t) => (t, true),
        Prompt::Command(t) | Prompt::Retention(_, t) | Prompt::Connection { text: t, .. } => {
            (t, false)
        }
    };
    match ev.code {
        KeyCode::Esc => {
            s.prompt = None;
            if is_filter {
                set_filter(s, "");
            }
            return Vec::new();
        }
        KeyCode::Enter => {
            s.prompt = None;
            if let Some(r) = retention {
                return super::maintenance::plan_with_retention(s, r, &text);
            }
            if let Some(id) = connection {
                return super::dags::connection::plan(s, id, &text);
            }
            return if is_filter {
                Vec::new()
            } else {
                run_command_line(s, text.trim())
            };
        }
        KeyCode::Backspace => {
            text.pop();
        }
        KeyCode::Char('u') if ev.modifiers.contains(KeyModifiers::CONTROL) => text.clear(),
        KeyCode::Char('w') if ev.modifiers.contains(KeyModifiers::CONTROL) => {
            let t = text.trim_end().to_string();
            text = match t.rfind(' ') {
                Some(i) => t[..=i].to_string(),
                None => String::new(),
            };
        }
        KeyCode::Char(c) if !ev.modifiers.contains(KeyModifiers::CONTROL) => text.push(c),
        _ => {}
    }
    if is_filter {
        set_filter(s, &text);
        s.prompt = Some(Prompt::Filter(text));
    } else if let Some(r) = retention {
        s.prompt = Some(Prompt::Retention(r, text));
    } else if let Some(id) = connection {
        s.prompt = Some(Prompt::Connection { id, text });
    } else {
        s.prompt = Some(Prompt::Command(text));
    }
    Vec::new()
}

/// Filter the current list (or search the log) by `text`.
pub fn set_filter(s: &mut State, text: &str) {
    if in_log(s) {
        super::dags::search_log(s, text);
        return;
    }
    let lower = text.to_lowercase();
    if let Some(g) = s.grid_mut() {
        if g.filter == lower {
            return;
        }
        g.filter = lower;
    }
    reindex_current(s);
}

pub fn current_filter(s: &State) -> String {
    if in_log(s) {
        return s
            .dags
            .log
            .as_ref()
            .map(|l| l.search.clone())
            .unwrap_or_default();
    }
    s.grid().map(|g| g.filter.clone()).unwrap_or_default()
}

fn profiles_text(s: &State) -> String {
    if s.profiles.is_empty() {
        "none defined".to_string()
    } else {
        s.profiles.join(", ")
    }
}

fn run_command_line(s: &mut State, line: &str) -> Vec<Effect> {
    let mut parts = line.split_whitespace();
    let cmd = parts.next().unwrap_or("");
    let arg: Vec<&str> = parts.collect();
    match cmd {
        "" => Vec::new(),
        "q" | "quit" | "q!" => super::update::quit(s),
        "help" | "h" => {
            s.popup = Some(Popup::Help);
            Vec::new()
        }
        "profile" | "ctx" => match arg.first() {
            None => {
                let list = profiles_text(s);
                s.set_status(
                    Level::Info,
                    format!("profile {} (profiles: {list})", s.conn.profile),
                );
                Vec::new()
            }
            Some(name) if s.profiles.iter().any(|p| p == name) => {
                vec![Effect::SwitchProfile(name.to_string())]
            }
            Some(name) => {
                let list = profiles_text(s);
                s.set_status(
                    Level::Error,
                    format!("no profile {name:?} (profiles: {list})"),
                );
                Vec::new()
            }
        },
        "schema" | "schemas" => {
            s.schemas = arg
                .iter()
                .flat_map(|a| a.split(','))
                .filter(|x| !x.is_empty())
                .map(str::to_string)
                .collect();
            s.set_status(
                Level::Info,
                if s.schemas.is_empty() {
                    "watching all schemas".to_string()
                } else {
                    format!("watching schemas {}", s.schemas.join(", "))
                },
            );
            // A new scope: start over even if a refresh is running.
            s.tables.pending = 0;
            s.tables.load = Load::Idle;
            s.tables.rows.clear();
            s.tables.reindex();
            super::update::refresh(s, true)
        }
        "refresh" | "r" => match arg.first() {
            None => super::update::refresh(s, true),
            Some(d) => {
                match crate::config::Dur::parse(d) {
                    Ok(d) if (crate::config::MIN_REFRESH..=MAX_REFRESH).contains(&d.0) => {
                        s.refresh_every = d.0;
                        s.set_status(
                            Level::Info,
                            format!(
                                "auto-refresh every {}",
                                human_duration(d.0.as_secs() as i64)
                            ),
                        );
                    }
                    Ok(_) => s.set_status(
                        Level::Error,
                        format!(
                            "refresh interval must be at least 5s and at most {} (got {d})",
                            human_duration(MAX_REFRESH.as_secs() as i64)
                        ),
                    ),
                    Err(e) => s.set_status(Level::Error, e),
                }
                Vec::new()
            }
        },
        "freeze" | "unfreeze" => {
            s.frozen = cmd == "freeze";
            s.set_status(
                Level::Info,
                if s.frozen {
                    "auto-refresh frozen"
                } else {
                    "auto-refresh resumed"
                },
            );
            Vec::new()
        }
        "export" | "w" => {
            let format = match arg.first().copied() {
                None | Some("csv") => ExportFormat::Csv,
                Some("json") => ExportFormat::Json,
                Some("md" | "markdown") => return super::export::export_postmortem(s),
                Some(other) => {
                    s.set_status(
                        Level::Error,
                        format!("unknown export format {other:?} (csv, json, or md: the table's postmortem)"),
                    );
                    return Vec::new();
                }
            };
            super::export::export(s, format)
        }
        other => {
            s.set_status(
                Level::Error,
                format!("unknown command :{other} (try :q, :profile NAME, :schema NAME, :refresh 30s, :export [csv|json|md], :freeze)"),
            );
            Vec::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::action::Action;
    use crate::app::state::Level;
    use crate::app::testing::{code, key, loaded, t0};
    use crate::app::update::update;

    fn command(s: &mut State, line: &str) {
        update(s, key(':'));
        for c in line.chars() {
            update(s, key(c));
        }
        update(s, code(KeyCode::Enter));
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

    mod keys {
        use super::*;
        use crate::app::action::Effect;
        use crate::app::export::ExportFormat;
        use crate::app::prompt::Prompt;
        use crate::app::state::State;
        use crate::app::testing::*;
        use crate::app::update::update;
        use crossterm::event::KeyCode;

        #[test]
        fn filter_live_and_escape_clears() {
            let mut s = loaded();
            update(&mut s, key('/'));
            assert!(matches!(s.prompt, Some(Prompt::Filter(_))));
            for c in "PARC".chars() {
                update(&mut s, key(c));
            }
            assert_eq!(s.tables.grid.len(), 1, "case-insensitive substring");
            assert_eq!(selected_name(&s), "zoning.parcels");
            update(&mut s, code(KeyCode::Enter));
            assert!(s.prompt.is_none());
            assert_eq!(s.tables.grid.len(), 1, "enter keeps the filter");
            update(&mut s, code(KeyCode::Esc));
            assert_eq!(s.tables.grid.len(), 3, "esc clears it");
            update(&mut s, key('/'));
            update(&mut s, key('z'));
            update(&mut s, code(KeyCode::Esc));
            assert!(s.prompt.is_none());
            assert_eq!(s.tables.grid.len(), 3);
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
                |e| matches!(e, Effect::Discover { schemas, .. } if schemas == &vec!["zoning".to_string()])
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
    }
}
