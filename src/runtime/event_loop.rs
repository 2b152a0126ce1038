//! The event loop: terminal events, signals, ticks and effect results become Actions,
//! `update` applies them, the runtime runs their Effects, and the screen is drawn at most
//! once a frame (input already waiting goes first).

use std::time::Duration;

use chrono::Utc;
use color_eyre::eyre::{WrapErr, eyre};
use crossterm::event::{Event, EventStream, KeyCode, KeyEvent, KeyModifiers, MouseEventKind};
use futures::StreamExt;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::{Runtime, STOP_WAIT, terminal};
use crate::app::action::Action;
use crate::app::state::State;
use crate::app::update::update;
use crate::config::{self, Settings};

pub(super) async fn event_loop(
    terminal: &mut super::terminal::Term,
    mut state: State,
    settings: Settings,
    overrides: config::Overrides,
) -> color_eyre::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let (tx, mut rx) = mpsc::unbounded_channel::<Action>();
    let mouse = settings.mouse;
    let mut rt = Runtime::new(settings, overrides, tx)?;
    let mut loaded_profiles = rt.take_loaded_profiles();
    let mut term_signals = terminal::Signals::install()?;
    let mut events = EventStream::new();
    let mut sigterm = signal(SignalKind::terminate()).wrap_err("installing the SIGTERM handler")?;
    let mut sighup = signal(SignalKind::hangup()).wrap_err("installing the SIGHUP handler")?;
    let size = terminal.size()?;
    state.size = (size.width, size.height);
    let fx = update(&mut state, Action::Start);
    rt.run(fx);
    terminal.draw(|f| crate::ui::draw(f, &state))?;
    if terminal::test_panic() == Some("frame") {
        panic!("FLOE_TEST_PANIC=frame: a deliberate panic after the first frame");
    }
    update(&mut state, Action::Drawn);
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
                    Some(resumed(terminal, mouse)?)
                }
                Some(Ok(ev)) => event_action(ev),
                Some(Err(e)) => return Err(eyre!("reading terminal events: {e}")),
                None => Some(Action::Terminate),
            },
            Some(a) = rx.recv() => Some(a),
            Some(p) = loaded_profiles.recv() => Some(rt.finish_switch(p)),
            _ = tick.tick() => Some(Action::Tick(Utc::now())),
            _ = sigterm.recv() => Some(Action::Terminate),
            _ = sighup.recv() => Some(Action::Terminate),
            sig = term_signals.recv() => match sig {
                terminal::TermSignal::Interrupt => Some(Action::Terminate),
                terminal::TermSignal::Stop => {
                    terminal::suspend(terminal, mouse);
                    Some(resumed(terminal, mouse)?)
                }
                terminal::TermSignal::Continue => Some(resumed(terminal, mouse)?),
            },
            _ = tokio::time::sleep_until(redraw_at), if pending_draw => None,
        };
        if let Some(a) = action {
            let tick = matches!(a, Action::Tick(_));
            let fx = update(&mut state, a);
            if tick {
                update(&mut state, Action::Cost(rt.refresh_cost()));
            }
            rt.run(fx);
            // Coalesce: apply every result already waiting before drawing.
            while let Ok(a) = rx.try_recv() {
                let fx = update(&mut state, a);
                rt.run(fx);
            }
            pending_draw = true;
        }
        if state.quit {
            if !rt.jobs.is_empty() || !rt.writes.is_empty() {
                // Show "cancelling…" while the cancels are sent and answered.
                terminal.draw(|f| crate::ui::draw(f, &state))?;
                rt.shutdown(STOP_WAIT).await;
            }
            return Ok(());
        }
        if pending_draw && Instant::now() >= last_draw + frame {
            // Input typed before this frame is on screen goes first, so a confirm popup
            // in the frame takes only keys pressed once it was visible.
            apply_waiting_input(&mut state, &mut rt, &mut events, terminal, mouse).await?;
            if state.quit {
                continue;
            }
            rt.write_to_terminal(terminal);
            terminal.draw(|f| crate::ui::draw(f, &state))?;
            update(&mut state, Action::Drawn);
            last_draw = Instant::now();
            pending_draw = false;
        }
    }
}

/// After a stop: the terminal taken again and cleared, and the size it has now (it may
/// have changed meanwhile) as the action that makes the next frame a full one.
pub(super) fn resumed(
    terminal: &mut super::terminal::Term,
    mouse: bool,
) -> color_eyre::Result<Action> {
    terminal::resume(terminal, mouse)?;
    let size = terminal.size()?;
    Ok(Action::Resize(size.width, size.height))
}

/// A terminal event as an Action (mouse wheel as arrow keys).
pub(super) fn event_action(ev: Event) -> Option<Action> {
    match ev {
        Event::Key(k) => Some(Action::Key(k)),
        Event::Resize(w, h) => Some(Action::Resize(w, h)),
        Event::Mouse(m) => match m.kind {
            MouseEventKind::ScrollDown => Some(Action::Key(KeyEvent::new(
                KeyCode::Down,
                KeyModifiers::NONE,
            ))),
            MouseEventKind::ScrollUp => {
                Some(Action::Key(KeyEvent::new(KeyCode::Up, KeyModifiers::NONE)))
            }
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
    state: &mut State,
    rt: &mut Runtime,
    events: &mut EventStream,
    terminal: &mut super::terminal::Term,
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
        let action = match ev {
            Event::Key(k) if terminal::is_suspend_key(&k) => {
                terminal::suspend(terminal, mouse);
                Some(resumed(terminal, mouse)?)
            }
            ev => event_action(ev),
        };
        if let Some(a) = action {
            let fx = update(state, a);
            rt.run(fx);
        }
    }
    Ok(())
}
