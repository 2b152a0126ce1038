//! The confirm popup of a maintenance plan: the exact SQL and what it will rewrite; `y`
//! runs it, `Y` copies its SQL, anything else keeps things as they are.

use super::jobs::Job;
use crate::app::action::Effect;
use crate::app::keymap::Command;
use crate::app::state::{Level, Popup, State};
use crate::health::HealthConfig;
use crate::lakehouse::plan::{Plan, PlanRefusal};
use crate::mutation::draft::PlanDraft;
use crate::mutation::eta;

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
    /// The plan is the first part of the incremental plan (`i` toggles).
    pub incremental: bool,
    /// What it is expected to cost, and the incremental plan when it is long.
    pub cost: Vec<String>,
}

impl Confirm {
    pub fn new(
        draft: PlanDraft,
        health: &HealthConfig,
        epoch: u64,
    ) -> Result<Confirm, PlanRefusal> {
        let grouped = draft.grouped;
        let plan = draft.build(grouped)?;
        let mut c = Confirm {
            draft,
            grouped,
            plan,
            scroll: 0,
            shown: false,
            epoch,
            incremental: false,
            cost: Vec::new(),
        };
        c.cost = cost_lines(&c, health);
        Ok(c)
    }

    /// The incremental plan's two parts, when the whole plan is expected to take longer
    /// than `incremental_over` and has partitions to split. Only a rate in the plan's own
    /// measure expects: one of the bytes optimizes wrote gives an upper bound, which
    /// proposes nothing.
    fn parts(&self, h: &HealthConfig) -> Option<(PlanDraft, PlanDraft)> {
        let rate = self.draft.measured.as_ref()?.rate.as_ref()?;
        if !rate.in_plan_measure() {
            return None;
        }
        if self.draft.partitions.len() < 2 {
            return None;
        }
        let whole = self.draft.build(self.grouped).ok()?;
        if eta::seconds(whole.bytes(), rate) <= h.incremental_over.as_secs() {
            return None;
        }
        let (first, rest) = eta::split_incremental(&self.draft.partitions, h.incremental_share);
        (!rest.is_empty()).then(|| (self.draft.over(first), self.draft.over(rest)))
    }
}

/// `expected: ~2h40m at …`; over the threshold the incremental plan with the estimate of
/// each part; what could not be read for the estimate.
pub fn cost_lines(c: &Confirm, h: &HealthConfig) -> Vec<String> {
    let Some(m) = &c.draft.measured else {
        return Vec::new();
    };
    let rate = m.rate.as_ref();
    let mut out = vec![format!("expected: {}", eta::eta_text(c.plan.bytes(), rate))];
    if let Some((first, rest)) = c.parts(h) {
        let est = |d: &PlanDraft| {
            d.build(c.grouped)
                .map(|p| eta::eta_text(p.bytes(), rate))
                .unwrap_or_default()
        };
        let share = (h.incremental_share * 100.0).round();
        let over = humantime::format_duration(h.incremental_over);
        if c.incremental {
            out[0] = format!(
                "incremental, part 1 of 2 (the oldest small files, {share}% of them): {} — expected {}",
                eta::part_text(&first.partitions),
                est(&first)
            );
            out.push(format!(
                "part 2, for a later run: {} — expected {}; i: the whole plan",
                eta::part_text(&rest.partitions),
                est(&rest)
            ));
        } else {
            out.push(format!(
                "over {over}: the incremental plan runs the oldest small files first — part 1: {} ({}), part 2: {} ({}); i: part 1 only",
                eta::part_text(&first.partitions),
                est(&first),
                eta::part_text(&rest.partitions),
                est(&rest)
            ));
        }
    }
    out.extend(m.notes.iter().map(|n| format!("estimate: {n}")));
    out
}

/// A key while the confirm popup is open.
pub fn on_key(s: &mut State, mut c: Box<Confirm>, cmd: Option<Command>) -> Vec<Effect> {
    if !s.popup_seen(c.shown, cmd == Some(Command::Confirm)) {
        // Typed before the popup was on screen: meant for something else.
        return Vec::new();
    }
    match cmd {
        Some(Command::CopySql) => {
            let fx = crate::app::copy::plan_sql(s, &c.plan);
            s.popup = Some(Popup::Confirm(c));
            return fx;
        }
        Some(Command::Confirm) => {
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
        Some(Command::ToggleGrouped) if c.draft.partitions.len() > 1 => {
            let draft = if c.incremental {
                c.parts(&s.health).map(|(first, _)| first)
            } else {
                Some(c.draft.clone())
            };
            match draft.map(|d| d.build(!c.grouped)) {
                Some(Ok(p)) => {
                    c.grouped = !c.grouped;
                    c.plan = p;
                    c.scroll = 0;
                    c.cost = cost_lines(&c, &s.health);
                    // Another plan: it takes a `y` only once it has been drawn.
                    c.shown = false;
                }
                Some(Err(e)) => s.set_status(Level::Error, e.to_string()),
                None => {}
            }
        }
        Some(Command::ToggleIncremental) if c.incremental || c.parts(&s.health).is_some() => {
            let draft = if c.incremental {
                Some(c.draft.clone())
            } else {
                c.parts(&s.health).map(|(first, _)| first)
            };
            match draft.map(|d| d.build(c.grouped)) {
                Some(Ok(p)) => {
                    c.incremental = !c.incremental;
                    c.plan = p;
                    c.scroll = 0;
                    c.cost = cost_lines(&c, &s.health);
                    c.shown = false;
                }
                Some(Err(e)) => s.set_status(Level::Error, e.to_string()),
                None => {}
            }
        }
        Some(Command::Down) => c.scroll = c.scroll.saturating_add(1),
        Some(Command::Up) => c.scroll = c.scroll.saturating_sub(1),
        Some(Command::PageDown) => c.scroll = c.scroll.saturating_add(10),
        Some(Command::PageUp) => c.scroll = c.scroll.saturating_sub(10),
        // Anything else, Enter and `decline` included, is no: nothing runs without an
        // explicit `confirm`.
        _ => {
            s.popup = None;
            s.set_status(Level::Info, "cancelled: nothing was run");
            return Vec::new();
        }
    }
    s.popup = Some(Popup::Confirm(c));
    Vec::new()
}

#[cfg(test)]
mod tests {
    use crate::app::action::Action;
    use crate::app::maintenance::MaintenanceMsg;
    use crate::app::state::Popup;
    use crate::app::testing::key;
    use crate::app::testing::plans::{draft, on_partitions};
    use crate::app::update::update;
    use crate::mutation::eta::{Measured, Rate};

    /// A slow rate measured only in the bytes the coordinator's optimizes wrote (fewer
    /// than a plan's partitions hold): the estimate is an upper bound, and it does not
    /// propose the incremental plan; the same rate in a plan's own measure does.
    #[test]
    fn only_a_rate_in_the_plans_own_measure_proposes_the_incremental_plan() {
        let cost = |from_audit: usize| {
            let mut s = on_partitions();
            for _ in 0..6 {
                update(&mut s, key(' '));
            }
            let mut d = draft(&s);
            d.measured = Some(Measured {
                rate: Some(Rate {
                    bytes_per_sec: 10.0,
                    samples: 5,
                    from_audit,
                    from_coordinator: 5 - from_audit,
                }),
                notes: Vec::new(),
            });
            let epoch = s.conn.epoch;
            update(
                &mut s,
                Action::Maintenance(MaintenanceMsg::PlanReady(epoch, Ok(d))),
            );
            match &s.popup {
                Some(Popup::Confirm(c)) => c.cost.clone(),
                other => panic!("{other:?}"),
            }
        };
        let written = cost(0);
        assert_eq!(written.len(), 1, "{written:?}");
        assert!(written[0].starts_with("expected: at most "), "{written:?}");
        let planned = cost(5);
        assert!(planned[0].starts_with("expected: ~"), "{planned:?}");
        assert!(planned[1].contains("the incremental plan"), "{planned:?}");
    }
}
