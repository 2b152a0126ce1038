//! The event loop of `floe --all`: one [`Runtime`] per profile (its own Trino and Airflow
//! clients, pool, slots, jobs and stats cache), their results tagged with the cluster they
//! came from, and the one [`Fleet`] state the screen draws. A cluster's slow or failing
//! reads run on its own runtime and pool, so they never hold up another's.

use std::time::Duration;

use chrono::Utc;
use color_eyre::eyre::{WrapErr, eyre};
use crossterm::event::{Event, EventStream};
use futures::StreamExt;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::event_loop::{event_action, resumed};
use super::{Runtime, STOP_WAIT, terminal};
use crate::app::action::{Action, Effect};
use crate::app::fleet::{Fleet, FleetAction, update};
use crate::config::{self, Settings};

pub(super) async fn fleet_loop(
    terminal: &mut super::terminal::Term,
    mut fleet: Fleet,
    settings: Vec<Settings>,
    overrides: config::Overrides,
) -> color_eyre::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let (tx, mut rx) = mpsc::unbounded_channel::<(usize, Action)>();
    let mouse = settings.iter().any(|s| s.mouse);
    let mut rts = Vec::with_capacity(settings.len());
    for (c, s) in settings.into_iter().enumerate() {
        // Each runtime sends into a channel of its own; a forwarder tags its results.
        let (ctx, mut crx) = mpsc::unbounded_channel::<Action>();
        let tx = tx.clone();
        tokio::spawn(async move {
            while let Some(a) = crx.recv().await {
                if tx.send((c, a)).is_err() {
                    break;
                }
            }
        });
        let mut over = overrides.clone();
        over.profile = Some(s.profile.clone());
        let name = s.profile.clone();
        let rt = Runtime::new(s, over, ctx).wrap_err_with(|| format!("profile {name}"))?;
        rts.push(rt);
    }
    // `:profile` switches one cluster's runtime: its loaded profile comes back tagged.
    let (loaded_tx, mut loaded) = mpsc::unbounded_channel();
    for (c, rt) in rts.iter_mut().enumerate() {
        let mut rx = rt.take_loaded_profiles();
        let tx = loaded_tx.clone();
        tokio::spawn(async move {
            while let Some(p) = rx.recv().await {
                if tx.send((c, p)).is_err() {
                    break;
                }
            }
        });
    }
    let mut term_signals = terminal::Signals::install()?;
    let mut events = EventStream::new();
    let mut sigterm = signal(SignalKind::terminate()).wrap_err("installing the SIGTERM handler")?;
    let mut sighup = signal(SignalKind::hangup()).wrap_err("installing the SIGHUP handler")?;
    let size = terminal.size()?;
    let fx = update(
        &mut fleet,
        FleetAction::Input(Action::Resize(size.width, size.height)),
    );
    run(&mut rts, fx);
    let fx = update(&mut fleet, FleetAction::Input(Action::Start));
    run(&mut rts, fx);
    terminal.draw(|f| crate::ui::draw_fleet(f, &fleet))?;
    update(&mut fleet, FleetAction::Input(Action::Drawn));
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let frame = Duration::from_millis(16);
    let mut last_draw = Instant::now();
    let mut pending_draw = false;
    loop {
        let redraw_at = last_draw + frame;
        let action = tokio::select! {
            ev = events.next() => match ev {
                Some(Ok(Event::Key(k))) if terminal::is_suspend_key(&k) => {
                    terminal::suspend(terminal, mouse);
                    Some(FleetAction::Input(resumed(terminal, mouse)?))
                }
                Some(Ok(ev)) => event_action(ev).map(FleetAction::Input),
                Some(Err(e)) => return Err(eyre!("reading terminal events: {e}")),
                None => Some(FleetAction::Input(Action::Terminate)),
            },
            Some((c, a)) = rx.recv() => Some(FleetAction::Cluster(c, a)),
            Some((c, p)) = loaded.recv() => Some(FleetAction::Cluster(c, rts[c].finish_switch(p))),
            _ = tick.tick() => Some(FleetAction::Input(Action::Tick(Utc::now()))),
            _ = sigterm.recv() => Some(FleetAction::Input(Action::Terminate)),
            _ = sighup.recv() => Some(FleetAction::Input(Action::Terminate)),
            sig = term_signals.recv() => match sig {
                terminal::TermSignal::Interrupt => Some(FleetAction::Input(Action::Terminate)),
                terminal::TermSignal::Stop => {
                    terminal::suspend(terminal, mouse);
                    Some(FleetAction::Input(resumed(terminal, mouse)?))
                }
                terminal::TermSignal::Continue => Some(FleetAction::Input(resumed(terminal, mouse)?)),
            },
            _ = tokio::time::sleep_until(redraw_at), if pending_draw => None,
        };
        if let Some(a) = action {
            let tick = matches!(a, FleetAction::Input(Action::Tick(_)));
            let fx = update(&mut fleet, a);
            run(&mut rts, fx);
            if tick {
                let costs: Vec<_> = rts.iter().map(Runtime::refresh_cost).collect();
                for (c, cost) in costs.into_iter().enumerate() {
                    let fx = update(&mut fleet, FleetAction::Cluster(c, Action::Cost(cost)));
                    run(&mut rts, fx);
                }
            }
            while let Ok((c, a)) = rx.try_recv() {
                let fx = update(&mut fleet, FleetAction::Cluster(c, a));
                run(&mut rts, fx);
            }
            pending_draw = true;
        }
        if fleet.quit() {
            // Every cluster's jobs are stopped and audited, not only the front one's.
            let fx = update(&mut fleet, FleetAction::Input(Action::Terminate));
            run(&mut rts, fx);
            if rts
                .iter()
                .any(|rt| !rt.jobs.is_empty() || !rt.writes.is_empty())
            {
                terminal.draw(|f| crate::ui::draw_fleet(f, &fleet))?;
                for rt in &mut rts {
                    rt.shutdown(STOP_WAIT).await;
                }
            }
            return Ok(());
        }
        if pending_draw && Instant::now() >= last_draw + frame {
            let front = fleet.active;
            rts[front].write_to_terminal(terminal);
            terminal.draw(|f| crate::ui::draw_fleet(f, &fleet))?;
            update(&mut fleet, FleetAction::Input(Action::Drawn));
            last_draw = Instant::now();
            pending_draw = false;
        }
    }
}

/// Each effect on the runtime of the cluster it was asked on; the clipboard on the front's.
fn run(rts: &mut [Runtime], fx: Vec<(usize, Effect)>) {
    for rt in rts.iter_mut() {
        rt.run(Vec::new());
    }
    for (c, e) in fx {
        if let Some(rt) = rts.get_mut(c) {
            rt.run(vec![e]);
        }
    }
}
