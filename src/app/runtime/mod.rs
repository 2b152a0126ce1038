//! The runtime: terminal events, ticks and effect results become Actions; `update`
//! returns Effects, which run on tokio with a bounded pool, at most one per slot (a newer
//! request replaces and cancels an older one). Trino's effects are in `trino`, Airflow's
//! in `airflow`; what to do with a result is `update`'s business, not the runtime's.

mod airflow;
mod trino;

use std::collections::HashMap;
use std::io::IsTerminal;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use color_eyre::eyre::{WrapErr, eyre};
use crossterm::event::{Event, EventStream, KeyCode, KeyEvent, KeyModifiers, MouseEventKind};
use futures::StreamExt;
use tokio::sync::{Semaphore, mpsc};
use tokio::task::AbortHandle;
use tokio::time::Instant;

use super::action::{Action, Effect, ProfileView, Slot};
use super::export::write_export;
use super::keymap::Keymap;
use super::state::State;
use super::update::update;
use crate::config::{self, Settings};
use crate::lakehouse::queries::Lakehouse;
use crate::trino::Client;
use tokio_util::sync::CancellationToken;

pub use airflow::AirflowHandle;

/// The IO side: clients and the tasks running effects.
pub struct Runtime {
    settings: Settings,
    lake: Lakehouse,
    pool: Arc<Semaphore>,
    tx: mpsc::UnboundedSender<Action>,
    running: HashMap<Slot, AbortHandle>,
    overrides: config::Overrides,
    job_tokens: HashMap<u64, CancellationToken>,
    airflow: AirflowHandle,
}

impl Runtime {
    pub fn new(
        settings: Settings,
        overrides: config::Overrides,
        tx: mpsc::UnboundedSender<Action>,
    ) -> color_eyre::Result<Runtime> {
        let lake = lakehouse(&settings, &tx)?;
        let settings_airflow = settings.airflow.clone();
        Ok(Runtime {
            pool: Arc::new(Semaphore::new(settings.max_concurrent_queries)),
            settings,
            lake,
            tx,
            running: HashMap::new(),
            overrides,
            job_tokens: HashMap::new(),
            airflow: AirflowHandle::new(settings_airflow),
        })
    }

    pub fn run(&mut self, effects: Vec<Effect>) {
        self.running.retain(|_, h| !h.is_finished());
        for e in effects {
            self.spawn(e);
        }
    }

    fn spawn(&mut self, e: Effect) {
        if let Some(slot) = e.slot()
            && let Some(old) = self.running.remove(&slot)
        {
            // Dropping the old future cancels its Trino query (DELETE nextUri).
            old.abort();
        }
        let slot = e.slot();
        let handle = match e {
            Effect::Quit => return,
            Effect::CancelJob(job) => {
                if let Some(t) = self.job_tokens.get(&job) {
                    t.cancel();
                }
                return;
            }
            Effect::SwitchProfile(name) => {
                let r = self.switch_profile(&name);
                let _ = self.tx.send(Action::ProfileSwitched(r));
                return;
            }
            Effect::Export { format, data } => {
                let dir = self.settings.export_dir.clone();
                let tx = self.tx.clone();
                tokio::spawn(async move {
                    let r = tokio::task::spawn_blocking(move || write_export(&dir, format, &data))
                        .await
                        .map_err(|e| e.to_string())
                        .and_then(|r| r);
                    let _ = tx.send(Action::Exported(r));
                })
            }
            e @ (Effect::LoadDags { .. }
            | Effect::LoadDagFacts { .. }
            | Effect::CheckConnections
            | Effect::LoadRuns { .. }
            | Effect::LoadTasks { .. }
            | Effect::LoadLog { .. }
            | Effect::LoadFailure { .. }
            | Effect::PlanClear { .. }
            | Effect::WriteDag(_)) => match self.spawn_airflow(e) {
                Some(h) => h,
                None => return,
            },
            e => match self.spawn_trino(e) {
                Some(h) => h,
                None => return,
            },
        };
        if let Some(slot) = slot {
            self.running.insert(slot, handle.abort_handle());
        }
    }

    /// Load another profile: new clients, every running effect cancelled.
    fn switch_profile(&mut self, name: &str) -> Result<ProfileView, String> {
        let mut over = self.overrides.clone();
        over.profile = Some(name.to_string());
        let s = config::load(&over).map_err(|e| format!("profile {name}: {e}"))?;
        let l = lakehouse(&s, &self.tx).map_err(|e| format!("profile {name}: {e}"))?;
        let view = profile_view(&s);
        self.pool = Arc::new(Semaphore::new(s.max_concurrent_queries));
        self.settings = s;
        self.lake = l;
        self.airflow = AirflowHandle::new(self.settings.airflow.clone());
        for (_, h) in self.running.drain() {
            h.abort();
        }
        Ok(view)
    }
}

fn lakehouse(s: &Settings, tx: &mpsc::UnboundedSender<Action>) -> color_eyre::Result<Lakehouse> {
    // An OAuth2 login's URL goes to the status line.
    let tx = tx.clone();
    let client = Client::from_settings(&s.trino, s.query_timeout)
        .map_err(|e| eyre!("{e}"))?
        .with_oauth2_prompt(std::sync::Arc::new(move |e: &crate::trino::LoginEvent| {
            let _ = tx.send(Action::TrinoLogin(e.clone()));
        }));
    Ok(Lakehouse::new(
        client,
        s.trino.catalog.clone(),
        s.health.clone(),
    ))
}

pub fn profile_view(s: &Settings) -> ProfileView {
    ProfileView {
        profile: s.profile.clone(),
        trino_url: s.trino.url.to_string(),
        readonly: s.readonly,
        refresh: s.refresh,
        schemas: s.trino.schemas.clone(),
        health: s.health.clone(),
        airflow_url: s.airflow.as_ref().map(|a| a.url.to_string()),
        maintenance: s.maintenance.clone(),
    }
}

/// The screen's first state for these settings.
pub fn initial_state(s: &Settings, no_color: bool) -> color_eyre::Result<State> {
    let mut st = State::new(Utc::now());
    let view = profile_view(s);
    st.conn.profile = view.profile;
    st.conn.trino_url = view.trino_url;
    st.conn.airflow_url = view.airflow_url;
    st.readonly = s.readonly;
    st.keymap = Keymap::new(s.keys.clone()).with_readonly(s.readonly);
    st.health = s.health.clone();
    st.schemas = s.trino.schemas.clone();
    st.refresh_every = s.refresh;
    st.no_color = no_color;
    st.profiles = s.profiles.clone();
    st.airflow_configured = s.airflow.is_some();
    st.maintenance = s.maintenance.clone();
    Ok(st)
}

/// Open the TUI. The terminal is restored on every exit path: normal, error, panic
/// (ratatui's hook after color-eyre's), SIGTERM and SIGHUP.
pub fn run(settings: Settings) -> color_eyre::Result<()> {
    run_with(settings, config::Overrides::default())
}

pub fn run_with(settings: Settings, overrides: config::Overrides) -> color_eyre::Result<()> {
    color_eyre::install()?;
    if !std::io::stdout().is_terminal() {
        return Err(eyre!(
            "floe's TUI needs a terminal; for scripts and cron use `floe check`"
        ));
    }
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let state = initial_state(&settings, no_color)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let mouse = settings.mouse;
        let mut terminal = ratatui::init();
        if mouse {
            let _ = crossterm::execute!(std::io::stdout(), crossterm::event::EnableMouseCapture);
        }
        let result = event_loop(&mut terminal, state, settings, overrides).await;
        if mouse {
            let _ = crossterm::execute!(std::io::stdout(), crossterm::event::DisableMouseCapture);
        }
        ratatui::restore();
        result
    })
}

async fn event_loop(
    terminal: &mut ratatui::DefaultTerminal,
    mut state: State,
    settings: Settings,
    overrides: config::Overrides,
) -> color_eyre::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let (tx, mut rx) = mpsc::unbounded_channel::<Action>();
    let mut rt = Runtime::new(settings, overrides, tx)?;
    let mut events = EventStream::new();
    let mut sigterm = signal(SignalKind::terminate()).wrap_err("installing the SIGTERM handler")?;
    let mut sighup = signal(SignalKind::hangup()).wrap_err("installing the SIGHUP handler")?;
    let size = terminal.size()?;
    state.size = (size.width, size.height);
    let fx = update(&mut state, Action::Start);
    rt.run(fx);
    terminal.draw(|f| crate::ui::draw(f, &state))?;
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let frame = Duration::from_millis(16);
    let mut last_draw = Instant::now();
    let mut pending_draw = false;
    loop {
        let redraw_at = last_draw + frame;
        let action = tokio::select! {
            ev = events.next() => match ev {
                Some(Ok(Event::Key(k))) => Some(Action::Key(k)),
                Some(Ok(Event::Resize(w, h))) => Some(Action::Resize(w, h)),
                Some(Ok(Event::Mouse(m))) => match m.kind {
                    MouseEventKind::ScrollDown => Some(Action::Key(KeyEvent::new(KeyCode::Down, KeyModifiers::NONE))),
                    MouseEventKind::ScrollUp => Some(Action::Key(KeyEvent::new(KeyCode::Up, KeyModifiers::NONE))),
                    _ => None,
                },
                Some(Ok(_)) => None,
                Some(Err(e)) => return Err(eyre!("reading terminal events: {e}")),
                None => Some(Action::Terminate),
            },
            Some(a) = rx.recv() => Some(a),
            _ = tick.tick() => Some(Action::Tick(Utc::now())),
            _ = sigterm.recv() => Some(Action::Terminate),
            _ = sighup.recv() => Some(Action::Terminate),
            _ = tokio::time::sleep_until(redraw_at), if pending_draw => None,
        };
        if let Some(a) = action {
            let fx = update(&mut state, a);
            rt.run(fx);
            // Coalesce: apply every result already waiting before drawing.
            while let Ok(a) = rx.try_recv() {
                let fx = update(&mut state, a);
                rt.run(fx);
            }
            pending_draw = true;
        }
        if state.quit {
            return Ok(());
        }
        if pending_draw && Instant::now() >= last_draw + frame {
            terminal.draw(|f| crate::ui::draw(f, &state))?;
            last_draw = Instant::now();
            pending_draw = false;
        }
    }
}
