//! `update(&mut State, Action) -> Vec<Effect>`: all behaviour, no IO. This is the
//! dispatcher: results go to the feature that asked for them; keys go by layer (prompt,
//! then popup, then the keymap's command for the tab).

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::action::{Action, Effect, MaintenanceKind};
use super::command_line::Arg;
use super::connection::{self, ConnectionMsg};
use super::keymap::{Command, Scope};
use super::prompt::RetentionFor;
use super::state::{Level, Load, Popup, State, Tab};
use super::{
    command_line, copy, dags, export, health, help, maintenance, nav, partitions, prompt,
    query_history, snapshots, tables, triage,
};

pub fn update(s: &mut State, action: Action) -> Vec<Effect> {
    // Results change what the Triage tab derives from: it is derived again when it is on
    // screen and a key, a tick or a resize comes (at most once a second while results
    // stream in), not for each of a thousand tables' results.
    let data = matches!(
        action,
        Action::Tables(_)
            | Action::Dags(_)
            | Action::Maintenance(_)
            | Action::Connection(ConnectionMsg::ProfileSwitched(_))
    );
    let queries = matches!(action, Action::Queries { .. });
    // A frame drawn asks for nothing: the runtime runs no effect of `Drawn`.
    let drawn = matches!(action, Action::Drawn(_));
    let mut fx = dispatch(s, action);
    if data || queries {
        s.triage.dirty = true;
    } else if s.tab == Tab::Triage && s.triage.dirty {
        triage::rebuild(s);
    }
    auto_start(s);
    if !s.quit && !drawn {
        fx.extend(query_history::wanted(s));
    }
    fx
}

/// `start_tab = "auto"`: floe opens on Triage; once the first refresh has read every table
/// (and Airflow, when configured) and nothing needs attention, it moves to Tables.
fn auto_start(s: &mut State) {
    if !s.auto_start || s.tab != Tab::Triage {
        return;
    }
    let dags_in = !s.airflow_configured || !matches!(s.dags.load, Load::Idle | Load::Loading);
    let tables_in = s.tables.load == Load::Loaded && !s.tables.refresh.running();
    if !tables_in || s.last_refresh.is_none() || !dags_in {
        return;
    }
    if s.triage.dirty {
        triage::rebuild(s);
    }
    s.auto_start = false;
    if !s
        .triage
        .incidents
        .iter()
        .any(|i| i.severity >= crate::health::Severity::Warning)
    {
        s.tab = Tab::Tables;
    }
}

fn dispatch(s: &mut State, action: Action) -> Vec<Effect> {
    match action {
        Action::Start => refresh_all(s),
        Action::Key(ev, at) => {
            s.key_at = Some(at);
            on_key(s, ev)
        }
        Action::Cost(c) => {
            s.tables.refresh.record_cost(s.now, c);
            Vec::new()
        }
        Action::Tick(now) => {
            s.now = now;
            tables::reevaluate(s);
            // A prompt's hint stays while the operator types.
            if let Some(m) = &s.status
                && s.prompt.is_none()
                && m.level == Level::Info
                && (now - m.at).num_seconds() >= 8
            {
                s.status = None;
            }
            match s.next_refresh_in() {
                Some(0) if !s.refresh_in_flight() => refresh(s, false),
                _ => Vec::new(),
            }
        }
        Action::Resize(w, h) => {
            s.size = (w, h);
            let height = s.page_height();
            if let Some(g) = s.grid_mut() {
                g.ensure_visible(height);
            }
            Vec::new()
        }
        Action::Connection(msg) => connection::update(s, msg),
        Action::Exported(r) => {
            export::on_written(s, r);
            Vec::new()
        }
        Action::Terminate => maintenance::quit::terminate(s),
        Action::Leave => maintenance::quit::leave_cancelling(s),
        Action::Drawn(at) => {
            // A popup under an open prompt is not what the operator is looking at, nor
            // one a terminal too small to draw it hides.
            if s.prompt.is_none() && s.drawable() {
                let first = match &mut s.popup {
                    Some(Popup::Confirm(c)) => !std::mem::replace(&mut c.shown, true),
                    Some(Popup::ConfirmDag(c)) => !std::mem::replace(&mut c.shown, true),
                    Some(Popup::QuitJobs { shown }) => !std::mem::replace(shown, true),
                    _ => false,
                };
                if first {
                    // The dwell before it takes `y` counts from the frame that shows it.
                    s.popup_shown_at = Some(at);
                }
            }
            Vec::new()
        }
        Action::Tables(msg) => tables::update(s, msg),
        Action::Partitions(msg) => partitions::update(s, msg),
        Action::Snapshots(msg) => snapshots::update(s, msg),
        Action::Maintenance(msg) => maintenance::update(s, msg),
        Action::Queries { table, result } => {
            query_history::on_loaded(s, table, result);
            Vec::new()
        }
        Action::Dags(msg) => {
            let mut fx = dags::update(s, msg);
            // The DAG list maps tables to DAGs: the timeline on screen may now have one.
            fx.extend(snapshots::on_dags(s));
            fx
        }
    }
}

/// `q`, ctrl-c, `:q`: leave (asking first while jobs run).
pub fn quit(s: &mut State) -> Vec<Effect> {
    maintenance::quit::quit(s)
}

/// The first load, and the one after a profile switch.
pub(super) fn refresh_all(s: &mut State) -> Vec<Effect> {
    let mut fx = refresh(s, false);
    fx.insert(0, Effect::FetchServerInfo);
    fx
}

/// Start a refresh of the tables (and the detail tab on screen), unless one is running.
pub fn refresh(s: &mut State, manual: bool) -> Vec<Effect> {
    let mut fx = tables::refresh(s, manual);
    fx.extend((s.tab.ops().refresh)(s, manual));
    fx.extend(dags::refresh(s, manual));
    fx
}

fn on_key(s: &mut State, ev: KeyEvent) -> Vec<Effect> {
    if ev.kind != KeyEventKind::Press && ev.kind != KeyEventKind::Repeat {
        return Vec::new();
    }
    // ctrl-c always leaves, whatever the keymap says (raw mode swallows SIGINT).
    if ev.code == KeyCode::Char('c') && ev.modifiers.contains(KeyModifiers::CONTROL) {
        return quit(s);
    }
    if let Some(p) = s.prompt.clone() {
        return prompt::on_key(s, p, ev);
    }
    // A confirmation's keys first while one is open, else the tab's; then the global ones.
    let layer = match &s.popup {
        Some(Popup::Confirm(_) | Popup::ConfirmDag(_) | Popup::QuitJobs { .. }) => Scope::Confirm,
        _ => s.tab.layer(),
    };
    let cmd = s.keymap.lookup(layer, &ev);
    match s.popup.clone() {
        Some(Popup::Confirm(c)) => maintenance::confirm::on_key(s, c, cmd),
        Some(Popup::ConfirmDag(c)) => dags::writes::on_confirm_key(s, *c, cmd),
        Some(Popup::QuitJobs { shown }) => maintenance::quit::on_key(s, shown, cmd),
        Some(Popup::Queue) if cmd == Some(Command::Queue) => {
            s.popup = None;
            Vec::new()
        }
        Some(_) if cmd == Some(Command::Copy) => copy::in_popup(s),
        Some(Popup::Help) if cmd.is_some_and(|c| help::scroll(s, c)) => Vec::new(),
        Some(_) => {
            if matches!(
                cmd,
                Some(
                    Command::Back
                        | Command::Help
                        | Command::Health
                        | Command::Quit
                        | Command::Enter
                )
            ) {
                s.popup = None;
            }
            Vec::new()
        }
        None => cmd
            .map(|c| on_command(s, c, &Arg::None))
            .unwrap_or_default(),
    }
}

/// The one executor of commands: a key's (no arguments) and a `:` line's
/// (`command_line::parse` says which commands take arguments, and how many).
pub(super) fn on_command(s: &mut State, cmd: Command, arg: &Arg) -> Vec<Effect> {
    let h = s.page_height() as isize;
    let half = (h / 2).max(1);
    match cmd {
        Command::Quit => return quit(s),
        Command::Help => help::open(s),
        Command::Refresh => match arg {
            Arg::Every(every) => command_line::refresh_every(s, *every),
            _ => return refresh(s, true),
        },
        Command::Freeze => command_line::freeze(
            s,
            match arg {
                Arg::Frozen(f) => Some(*f),
                _ => None,
            },
        ),
        Command::Profile => {
            let name = match arg {
                Arg::Profile(n) => Some(n.as_str()),
                _ => None,
            };
            return command_line::profile(s, name);
        }
        Command::Schema => {
            let schemas = match arg {
                Arg::Schemas(v) => v.as_slice(),
                _ => &[],
            };
            return command_line::schema(s, schemas);
        }
        Command::Filter => prompt::open_filter(s),
        Command::CommandLine => s.prompt = Some(prompt::Prompt::Command(String::new())),
        Command::SortNext => nav::sort(s, true),
        Command::SortReverse => nav::sort(s, false),
        Command::NextTab => return nav::switch_tab(s, s.tab.next()),
        Command::PrevTab => return nav::switch_tab(s, s.tab.prev()),
        Command::Tab(tab) => return nav::switch_tab(s, tab),
        Command::Down => nav::move_by(s, 1),
        Command::Up => nav::move_by(s, -1),
        Command::PageDown => nav::move_by(s, h),
        Command::PageUp => nav::move_by(s, -h),
        Command::HalfDown => nav::move_by(s, half),
        Command::HalfUp => nav::move_by(s, -half),
        Command::Top => nav::top(s),
        Command::Bottom => nav::bottom(s),
        Command::Enter => return nav::enter(s),
        Command::Back => {
            if !triage::back(s) {
                nav::back(s)
            }
        }
        Command::Mark if s.tab == Tab::Partitions => partitions::toggle_mark(s),
        Command::Mark => {}
        Command::ClearMarks => partitions::clear_marks(s),
        Command::Health => health::open(s),
        Command::Export => {
            let choice = match arg {
                Arg::Export(c) => Some(*c),
                _ => None,
            };
            return command_line::export(s, choice);
        }
        Command::Optimize => return maintenance::plan(s, MaintenanceKind::Optimize),
        Command::OptimizeManifests => {
            return maintenance::plan(s, MaintenanceKind::OptimizeManifests);
        }
        Command::ExpireSnapshots => maintenance::ask_retention(s, RetentionFor::ExpireSnapshots),
        Command::RemoveOrphans => maintenance::ask_retention(s, RetentionFor::RemoveOrphanFiles),
        Command::Vacuum => maintenance::ask_retention(s, RetentionFor::Vacuum),
        Command::TriggerDag | Command::ClearRun | Command::PauseDag => {
            return dags::command(s, cmd);
        }
        Command::FixConnection => return dags::connection::open(s),
        Command::Cancel => return maintenance::cancel(s),
        Command::Queue => s.popup = Some(Popup::Queue),
        Command::Copy => return copy::selection(s),
        // A confirmation's own: looked up only while one is open.
        Command::CopySql
        | Command::Confirm
        | Command::Decline
        | Command::ToggleGrouped
        | Command::ToggleIncremental => {}
        Command::ScrollLeft => dags::scroll_log_sideways(s, -8),
        Command::ScrollRight => dags::scroll_log_sideways(s, 8),
        Command::Wrap => dags::toggle_log_wrap(s),
        Command::Frames => dags::toggle_log_frames(s),
        Command::ViewSource if s.tab == Tab::Dags => return dags::source_view::open(s, None),
        Command::ViewSource => {}
    }
    Vec::new()
}

#[cfg(test)]
mod tests;
