//! The bottom-line prompts: the `/` filter (live), the `:` command line (run by
//! `command_line`), and the retention asked before expire_snapshots /
//! remove_orphan_files.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::action::Effect;
use super::nav::{in_log, in_source, reindex_current};
use super::state::State;

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
    Vacuum,
}

impl RetentionFor {
    /// What the prompt asks.
    pub fn question(self) -> &'static str {
        match self {
            RetentionFor::ExpireSnapshots => {
                "expire snapshots older than (min 7d unless the server allows less): "
            }
            RetentionFor::RemoveOrphanFiles => {
                "remove orphan files older than (min 7d unless the server allows less): "
            }
            RetentionFor::Vacuum => {
                "vacuum the files no version of this long references (min 7d unless the catalog allows less): "
            }
        }
    }
}

/// `/`: open the filter prompt on what is filtered now.
pub fn open_filter(s: &mut State) {
    if s.grid().is_some() || in_log(s) || in_source(s) {
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
                super::command_line::run(s, text.trim())
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
    if in_source(s) {
        super::dags::source_view::search(s, text);
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
    if in_source(s) {
        return s
            .dags
            .source
            .as_ref()
            .map(|v| v.search.clone())
            .unwrap_or_default();
    }
    s.grid().map(|g| g.filter.clone()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use crate::app::prompt::Prompt;
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
}
