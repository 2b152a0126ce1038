//! The event loop, one for one profile and for `floe --all`: terminal events, signals,
//! ticks and every cluster's effect results are producers into one loop; `update` applies
//! them to the [`Fleet`] (a single profile is a fleet of one), each cluster's runtime runs
//! its effects, and the screen is drawn at most once a frame, input already waiting
//! applied first. A cluster's slow or failing reads run on its own runtime and pool, so
//! they never hold up another's.

use std::time::Duration;

use chrono::Utc;
use color_eyre::eyre::{WrapErr, eyre};
use crossterm::event::{Event, EventStream, KeyCode, KeyEvent, KeyModifiers, MouseEventKind};
use futures::StreamExt;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::{LoadedProfile, Runtime, STOP_WAIT, terminal};
use crate::app::action::{Action, Effect};
use crate::app::fleet::{Fleet, FleetAction, update};
use crate::config::{self, Settings};

/// The runtimes of a fleet's clusters and the channels their results and loaded
/// profiles come back on, tagged with the cluster.
struct Runtimes {
    rts: Vec<Runtime>,
    results: mpsc::UnboundedReceiver<(usize, Action)>,
    loaded: mpsc::UnboundedReceiver<(usize, LoadedProfile)>,
}

impl Runtimes {
    /// One runtime per profile, each sending into a channel of its own that a forwarder
    /// tags with its cluster.
    fn start(
        settings: Vec<Settings>,
        overrides: &config::Overrides,
    ) -> color_eyre::Result<Runtimes> {
        let (tx, results) = mpsc::unbounded_channel::<(usize, Action)>();
        let (loaded_tx, loaded) = mpsc::unbounded_channel();
        let mut rts = Vec::with_capacity(settings.len());
        for (c, s) in settings.into_iter().enumerate() {
            let (ctx, crx) = mpsc::unbounded_channel::<Action>();
            forward(crx, tx.clone(), c);
            let mut over = overrides.clone();
            over.profile = Some(s.profile.clone());
            let name = s.profile.clone();
            let mut rt = Runtime::new(s, over, ctx).wrap_err_with(|| format!("profile {name}"))?;
            // `:profile` switches one cluster's runtime: its loaded profile comes back
            // tagged.
            forward(rt.take_loaded_profiles(), loaded_tx.clone(), c);
            rts.push(rt);
        }
        Ok(Runtimes {
            rts,
            results,
            loaded,
        })
    }

    /// Each effect on the runtime of the cluster it was asked on.
    fn run(&mut self, fx: Vec<(usize, Effect)>) {
        for rt in &mut self.rts {
            rt.run(Vec::new());
        }
        for (c, e) in fx {
            if let Some(rt) = self.rts.get_mut(c) {
                rt.run(vec![e]);
            }
        }
    }

    fn busy(&self) -> bool {
        self.rts
            .iter()
            .any(|rt| !rt.jobs.is_empty() || !rt.writes.is_empty())
    }
}

/// Tag what `rx` receives with cluster `c` and send it on.
fn forward<T: Send + 'static>(
    mut rx: mpsc::UnboundedReceiver<T>,
    tx: mpsc::UnboundedSender<(usize, T)>,
    c: usize,
) {
    tokio::spawn(async move {
        while let Some(a) = rx.recv().await {
            if tx.send((c, a)).is_err() {
                break;
            }
        }
    });
}

pub(super) async fn event_loop(
    terminal: &mut terminal::Term,
    mut fleet: Fleet,
    settings: Vec<Settings>,
    overrides: config::Overrides,
) -> color_eyre::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mouse = settings.iter().any(|s| s.mouse);
    let mut rt = Runtimes::start(settings, &overrides)?;
    let mut term_signals = terminal::Signals::install()?;
    let mut events = EventStream::new();
    let mut sigterm = signal(SignalKind::terminate()).wrap_err("installing the SIGTERM handler")?;
    let mut sighup = signal(SignalKind::hangup()).wrap_err("installing the SIGHUP handler")?;
    let size = terminal.size()?;
    let fx = update(
        &mut fleet,
        FleetAction::Input(Action::Resize(size.width, size.height)),
    );
    rt.run(fx);
    let fx = update(&mut fleet, FleetAction::Input(Action::Start));
    rt.run(fx);
    draw(terminal, &mut fleet, &mut rt)?;
    if terminal::test_panic() == Some("frame") {
        panic!("FLOE_TEST_PANIC=frame: a deliberate panic after the first frame");
    }
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let frame = Duration::from_millis(16);
    let mut last_draw = Instant::now();
    let mut pending_draw = false;
    loop {
        let redraw_at = last_draw + frame;
        let action = tokio::select! {
            ev = events.next() => match ev {
                Some(Ok(ev)) => input(ev, terminal, mouse)?,
                Some(Err(e)) => return Err(eyre!("reading terminal events: {e}")),
                None => Some(FleetAction::Input(Action::Terminate)),
            },
            Some((c, a)) = rt.results.recv() => Some(FleetAction::Cluster(c, a)),
            Some((c, p)) = rt.loaded.recv() => {
                let a = rt.rts[c].finish_switch(p);
                Some(FleetAction::Cluster(c, a))
            }
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
            rt.run(fx);
            if tick {
                let costs: Vec<_> = rt.rts.iter().map(Runtime::refresh_cost).collect();
                for (c, cost) in costs.into_iter().enumerate() {
                    let fx = update(&mut fleet, FleetAction::Cluster(c, Action::Cost(cost)));
                    rt.run(fx);
                }
            }
            // Coalesce: apply every result already waiting before drawing.
            while let Ok((c, a)) = rt.results.try_recv() {
                let fx = update(&mut fleet, FleetAction::Cluster(c, a));
                rt.run(fx);
            }
            pending_draw = true;
        }
        if fleet.quit() {
            return leave(terminal, &mut fleet, &mut rt).await;
        }
        if pending_draw && Instant::now() >= last_draw + frame {
            // Input typed before this frame is on screen goes first, so a confirm popup
            // in the frame takes only keys pressed once it was visible.
            apply_waiting_input(&mut fleet, &mut rt, &mut events, terminal, mouse).await?;
            if fleet.quit() {
                continue;
            }
            draw(terminal, &mut fleet, &mut rt)?;
            last_draw = Instant::now();
            pending_draw = false;
        }
    }
}

/// Draw a frame (the front cluster's clipboard writes first, through the terminal's own
/// writer) and tell the fleet when it was drawn.
fn draw(
    terminal: &mut terminal::Term,
    fleet: &mut Fleet,
    rt: &mut Runtimes,
) -> color_eyre::Result<()> {
    rt.rts[fleet.active].write_to_terminal(terminal);
    terminal.draw(|f| crate::ui::draw_fleet(f, fleet))?;
    let fx = update(
        fleet,
        FleetAction::Input(Action::Drawn(std::time::Instant::now())),
    );
    rt.run(fx);
    Ok(())
}

/// Leave: every cluster still running is told to stop (its jobs interrupted on Trino and
/// audited; the front's `q` already cancelled what it asked about), and the runtimes wait,
/// bounded, for the cancels and the Airflow writes in flight ("cancelling…" on screen).
async fn leave(
    terminal: &mut terminal::Term,
    fleet: &mut Fleet,
    rt: &mut Runtimes,
) -> color_eyre::Result<()> {
    for c in 0..fleet.clusters.len() {
        if !fleet.clusters[c].quit {
            let fx = update(fleet, FleetAction::Cluster(c, Action::Terminate));
            rt.run(fx);
        }
    }
    if rt.busy() {
        terminal.draw(|f| crate::ui::draw_fleet(f, fleet))?;
        for r in &mut rt.rts {
            r.shutdown(STOP_WAIT).await;
        }
    }
    Ok(())
}

/// A terminal event as the fleet's input: a key with the instant it was read, the
/// suspend key suspending floe (and the resize on its return).
fn input(
    ev: Event,
    terminal: &mut terminal::Term,
    mouse: bool,
) -> color_eyre::Result<Option<FleetAction>> {
    Ok(match ev {
        Event::Key(k) if terminal::is_suspend_key(&k) => {
            terminal::suspend(terminal, mouse);
            Some(FleetAction::Input(resumed(terminal, mouse)?))
        }
        ev => event_action(ev, std::time::Instant::now()).map(FleetAction::Input),
    })
}

/// After a stop: the terminal taken again and cleared, and the size it has now (it may
/// have changed meanwhile) as the action that makes the next frame a full one.
fn resumed(terminal: &mut terminal::Term, mouse: bool) -> color_eyre::Result<Action> {
    terminal::resume(terminal, mouse)?;
    let size = terminal.size()?;
    Ok(Action::Resize(size.width, size.height))
}

/// A terminal event as an Action (mouse wheel as arrow keys), read at `at`.
fn event_action(ev: Event, at: std::time::Instant) -> Option<Action> {
    match ev {
        Event::Key(k) => Some(Action::Key(k, at)),
        Event::Resize(w, h) => Some(Action::Resize(w, h)),
        Event::Mouse(m) => match m.kind {
            MouseEventKind::ScrollDown => Some(Action::Key(
                KeyEvent::new(KeyCode::Down, KeyModifiers::NONE),
                at,
            )),
            MouseEventKind::ScrollUp => Some(Action::Key(
                KeyEvent::new(KeyCode::Up, KeyModifiers::NONE),
                at,
            )),
            _ => None,
        },
        _ => None,
    }
}

/// Apply the terminal input already waiting, without blocking (ctrl-z among it suspends
/// as it does from the event stream). Read from the one event stream the loop waits on:
/// crossterm does not allow mixing `EventStream` with `poll`/`read`. Its stream polls the
/// terminal without waiting before it parks, so what is there is taken now; it is polled
/// with this task's own waker (never a no-op one: the stream keeps the waker of the poll
/// that parked it, and a no-op one would leave later keys unseen until the next tick).
async fn apply_waiting_input(
    fleet: &mut Fleet,
    rt: &mut Runtimes,
    events: &mut EventStream,
    terminal: &mut terminal::Term,
    mouse: bool,
) -> color_eyre::Result<()> {
    loop {
        let waiting = tokio::select! {
            biased;
            ev = events.next() => ev,
            () = std::future::ready(()) => None,
        };
        let Some(Ok(ev)) = waiting else {
            break;
        };
        if let Some(a) = input(ev, terminal, mouse)? {
            let fx = update(fleet, a);
            rt.run(fx);
        }
    }
    Ok(())
}
