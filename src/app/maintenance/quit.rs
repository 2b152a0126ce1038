//! Leaving while jobs run: `q` and ctrl-c ask first (`y` cancels the jobs on Trino and
//! waits for the cancels, `n` or Esc stays); SIGTERM and SIGHUP interrupt them without
//! asking. The runtime waits, bounded, for the cancels before exiting.

use crate::app::keymap::Command;

use crate::app::action::Effect;
use crate::app::state::{Level, Popup, State};

/// How many jobs are running.
fn running(s: &State) -> usize {
    s.jobs.list.iter().filter(|j| j.running()).count()
}

/// `q`, ctrl-c, `:q`: leave, or ask when jobs run or an Airflow write is in flight here or
/// on another cluster of `floe --all`.
pub fn quit(s: &mut State) -> Vec<Effect> {
    match running(s) + s.airflow_writes.len() + s.elsewhere.len() {
        0 => leave(s, None),
        _ => {
            if !matches!(s.popup, Some(Popup::QuitJobs { .. })) {
                s.prompt = None;
                s.popup = Some(Popup::QuitJobs { shown: false });
            }
            Vec::new()
        }
    }
}

/// SIGTERM, SIGHUP: leave now, interrupting the running jobs on Trino.
pub fn terminate(s: &mut State) -> Vec<Effect> {
    leave(s, Some(true))
}

/// The operator chose to leave on another cluster, which asked about these jobs too:
/// leave, cancelling them.
pub fn leave_cancelling(s: &mut State) -> Vec<Effect> {
    leave(s, Some(false))
}

/// Leave; with jobs running, stop them first (`interrupted` or operator-cancelled).
fn leave(s: &mut State, interrupted: Option<bool>) -> Vec<Effect> {
    s.quit = true;
    let n = running(s);
    if n == 0 {
        return vec![Effect::Quit];
    }
    s.set_status(
        Level::Warn,
        format!("cancelling {n} job(s) on Trino before quitting…"),
    );
    vec![
        Effect::StopJobs {
            interrupted: interrupted.unwrap_or(false),
        },
        Effect::Quit,
    ]
}

/// A key while the quit question is open.
pub fn on_key(s: &mut State, shown: bool, cmd: Option<Command>) -> Vec<Effect> {
    if !s.popup_seen(shown, cmd == Some(Command::Confirm)) {
        return Vec::new();
    }
    match cmd {
        Some(Command::Confirm) => {
            s.popup = None;
            if running(s) == 0 {
                return leave(s, None);
            }
            leave(s, Some(false))
        }
        Some(Command::Decline) => {
            s.popup = None;
            s.set_status(Level::Info, "still running: not quitting");
            Vec::new()
        }
        _ => Vec::new(),
    }
}

/// The question's lines, for the popup.
pub fn question(s: &State) -> Vec<String> {
    let mut lines = Vec::new();
    if running(s) > 0 {
        lines.push(format!("{} maintenance job(s) running:", running(s)));
        for j in s.jobs.list.iter().filter(|j| j.running()) {
            lines.push(format!("  {}", j.line(s.now)));
        }
    }
    if !s.airflow_writes.is_empty() {
        lines.push(format!(
            "{} Airflow write(s) sent, not answered yet:",
            s.airflow_writes.len()
        ));
        for w in &s.airflow_writes {
            lines.push(format!("  {w}"));
        }
        lines.push("  quitting waits up to 10s for the answer; after that the audit log says only 'started'".into());
    }
    if !s.elsewhere.is_empty() {
        lines.push(format!("{} on other clusters:", s.elsewhere.len()));
        for w in &s.elsewhere {
            lines.push(format!("  {w}"));
        }
    }
    lines.push(String::new());
    lines.push(if running(s) + s.elsewhere.len() > 0 {
        "y  cancel them on Trino, then quit".into()
    } else {
        "y  quit".into()
    });
    lines.push("n  keep running (Esc too)".into());
    lines
}
