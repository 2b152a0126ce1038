//! The confirm popup of a maintenance plan: the exact SQL and what it will rewrite; `y`
//! runs it, `Y` copies its SQL, anything else keeps things as they are.

use crossterm::event::{KeyCode, KeyEvent};

use super::jobs::Job;
use crate::app::action::Effect;
use crate::app::keymap::Command;
use crate::app::state::{Level, Popup, State};
use crate::lakehouse::maintenance::Plan;
use crate::maintain::plan::PlanDraft;

#[derive(Clone, Debug, PartialEq)]
pub struct Confirm {
    pub draft: PlanDraft,
    pub grouped: bool,
    pub plan: Plan,
    pub scroll: u16,
    /// Drawn on screen since it opened (only then does it take a `y`).
    pub shown: bool,
    /// The connection it was drafted on (`Conn::epoch`): a `y` runs it on that one only.
    pub epoch: u64,
}

/// A key while the confirm popup is open.
pub fn on_key(s: &mut State, mut c: Box<Confirm>, ev: KeyEvent) -> Vec<Effect> {
    if !s.popup_seen(c.shown) {
        // Typed before the popup was on screen: meant for something else.
        return Vec::new();
    }
    if s.keymap.lookup(&ev) == Some(Command::CopySql) {
        let fx = crate::app::copy::plan_sql(s, &c.plan);
        s.popup = Some(Popup::Confirm(c));
        return fx;
    }
    match ev.code {
        KeyCode::Char('y') => {
            s.popup = None;
            if s.readonly {
                s.set_status(Level::Error, "read-only: maintenance is disabled");
                return Vec::new();
            }
            if c.epoch != s.conn.epoch {
                s.set_status(
                    Level::Error,
                    "the plan was drafted on another profile: nothing was run",
                );
                return Vec::new();
            }
            if let Some(j) = s.jobs.running_on(&c.plan.table) {
                let name = j.plan.procedure.name();
                s.set_status(
                    Level::Error,
                    format!("{name} is already running on {}", c.plan.table),
                );
                return Vec::new();
            }
            s.jobs.next_id += 1;
            let id = s.jobs.next_id;
            let mut job = Job::new(id, c.plan.clone(), s.now);
            job.profile = s.conn.profile.clone();
            s.jobs.list.push(job);
            s.set_status(
                Level::Info,
                format!(
                    "{} started: c cancels, Q shows the queue",
                    c.plan.procedure.name()
                ),
            );
            return vec![Effect::RunPlan {
                job: id,
                plan: c.plan,
            }];
        }
        KeyCode::Char('g') if c.draft.partitions.len() > 1 => match c.draft.build(!c.grouped) {
            Ok(p) => {
                c.grouped = !c.grouped;
                c.plan = p;
                c.scroll = 0;
            }
            Err(e) => s.set_status(Level::Error, e),
        },
        KeyCode::Char('j') | KeyCode::Down => c.scroll = c.scroll.saturating_add(1),
        KeyCode::Char('k') | KeyCode::Up => c.scroll = c.scroll.saturating_sub(1),
        KeyCode::PageDown => c.scroll = c.scroll.saturating_add(10),
        KeyCode::PageUp => c.scroll = c.scroll.saturating_sub(10),
        // Anything else, Enter included, is no: nothing runs without an explicit y.
        _ => {
            s.popup = None;
            s.set_status(Level::Info, "cancelled: nothing was run");
            return Vec::new();
        }
    }
    s.popup = Some(Popup::Confirm(c));
    Vec::new()
}
