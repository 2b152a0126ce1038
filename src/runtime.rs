//! The runtime: terminal events, ticks and effect results become Actions; `update`
//! returns Effects, which run on tokio with a bounded pool, at most one per slot (a newer
//! request replaces and cancels an older one). Trino's effects are in `trino`, Airflow's
//! in `airflow`; what to do with a result is `update`'s business, not the runtime's.

mod airflow;
mod event_loop;
mod reply;
mod sgr;
mod terminal;
mod trino;

use std::collections::HashMap;
use std::io::IsTerminal;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use color_eyre::eyre::eyre;
use tokio::sync::{Semaphore, mpsc};
use tokio::task::AbortHandle;
use tokio::time::Instant;

use crate::app::action::{Action, Effect, ProfileView, Slot};
use crate::app::connection::{ConnectionMsg, SwitchError};
use crate::app::export::{ExportError, write_export};
use crate::app::keymap::Keymap;
use crate::app::state::{State, Tab};
use crate::config::{self, Settings};
use crate::lakehouse::model::TableRef;
use crate::lakehouse::queries::{Lakehouse, Layout};
use crate::mutation::run::Stop;
use crate::trino::{Client, TrinoError};
use tokio::task::JoinHandle;

pub use airflow::AirflowHandle;
use event_loop::event_loop;

/// The IO side: clients and the tasks running effects.
pub struct Runtime {
    settings: Settings,
    lake: Lakehouse,
    pool: Arc<Semaphore>,
    tx: mpsc::UnboundedSender<Action>,
    running: HashMap<Slot, AbortHandle>,
    overrides: config::Overrides,
    /// Running jobs: never in a slot, never aborted; stopped only through their `Stop`.
    jobs: HashMap<u64, (Stop, JoinHandle<()>)>,
    /// Airflow writes in flight: never aborted, waited for (bounded) before exiting.
    writes: Vec<JoinHandle<()>>,
    /// The refresh's reads in flight: each runs to its answer; a profile switch drops
    /// them with the refresh that awaited them.
    reads: Vec<JoinHandle<()>>,
    airflow: AirflowHandle,
    /// Bumped by each profile switch: a plan drafted for an older profile is dropped.
    profile_epoch: Arc<std::sync::Mutex<u64>>,
    /// Profiles being loaded off the event loop (a `password_command` may take seconds):
    /// the event loop hands each loaded one to [`Runtime::finish_switch`].
    loaded_tx: mpsc::UnboundedSender<LoadedProfile>,
    loaded_rx: Option<mpsc::UnboundedReceiver<LoadedProfile>>,
    /// Escape sequences for the terminal itself (OSC 52 clipboard writes), written by the
    /// event loop through the terminal's writer before the next frame.
    to_terminal: Vec<String>,
}

/// A profile's settings read off the event loop, or why they could not be.
pub struct LoadedProfile {
    name: String,
    settings: Result<Settings, config::ConfigError>,
    /// The profile's entries of the stats cache (read with its settings, off the loop).
    cached: Vec<crate::cache::Entry>,
}

/// How long quitting waits for running jobs to be cancelled on Trino.
pub const STOP_WAIT: Duration = Duration::from_secs(10);

impl Runtime {
    pub fn new(
        settings: Settings,
        overrides: config::Overrides,
        tx: mpsc::UnboundedSender<Action>,
    ) -> color_eyre::Result<Runtime> {
        let lake = lakehouse(&settings, &tx)?;
        remember_cached_layouts(&lake, &settings);
        let settings_airflow = settings.airflow.clone();
        let (loaded_tx, loaded_rx) = mpsc::unbounded_channel();
        Ok(Runtime {
            loaded_tx,
            loaded_rx: Some(loaded_rx),
            pool: Arc::new(Semaphore::new(settings.max_concurrent_queries)),
            settings,
            lake,
            tx,
            running: HashMap::new(),
            overrides,
            jobs: HashMap::new(),
            writes: Vec::new(),
            reads: Vec::new(),
            profile_epoch: Arc::default(),
            airflow: AirflowHandle::new(settings_airflow),
            to_terminal: Vec::new(),
        })
    }

    pub fn run(&mut self, effects: Vec<Effect>) {
        self.running.retain(|_, h| !h.is_finished());
        self.jobs.retain(|_, (_, h)| !h.is_finished());
        self.writes.retain(|h| !h.is_finished());
        self.reads.retain(|h| !h.is_finished());
        for e in effects {
            self.spawn(e);
        }
    }

    /// Run one effect. Every effect has its arm here: one the runtime did not know how to
    /// run would not compile. Work kept in a slot replaces (and cancels) the slot's older
    /// work; the refresh's reads, jobs and Airflow writes have no slot.
    fn spawn(&mut self, e: Effect) {
        let slot = e.slot();
        if let Some(slot) = &slot
            && let Some(old) = self.running.remove(slot)
        {
            // Dropping the old future cancels its Trino query (DELETE nextUri).
            old.abort();
        }
        let handle = match e {
            Effect::Quit => return,
            Effect::Copy(text) => {
                let tmux = std::env::var_os("TMUX").is_some_and(|v| !v.is_empty());
                self.to_terminal.push(crate::app::copy::osc52(&text, tmux));
                return;
            }
            Effect::CancelJob(job) => {
                if let Some((stop, _)) = self.jobs.get(&job) {
                    stop.cancel();
                }
                return;
            }
            Effect::StopJobs { interrupted } => {
                for (stop, _) in self.jobs.values() {
                    if interrupted {
                        stop.interrupt();
                    } else {
                        stop.cancel();
                    }
                }
                return;
            }
            Effect::RunPlan { job, plan } => {
                let (stop, h) = self.spawn_job(job, plan);
                self.jobs.insert(job, (stop, h));
                return;
            }
            Effect::WriteDag(w) => {
                let h = self.spawn_write(w);
                self.writes.push(h);
                return;
            }
            Effect::Read { id, read } => {
                let h = self.read(id, read);
                self.reads.push(h);
                return;
            }
            Effect::SwitchProfile(name) => {
                self.load_profile(name);
                return;
            }
            Effect::Export { format, data } => self.export(format, data),
            Effect::FetchServerInfo => self.server_info(),
            Effect::SaveCache {
                profile,
                url,
                entries,
            } => self.save_cache(profile, url, entries),
            Effect::LoadPartitions { request, table } => self.load_partitions(request, table),
            Effect::LoadSnapshots { request, table } => self.load_snapshots(request, table),
            Effect::LoadQueries { table } => self.load_queries(table),
            Effect::PlanMaintenance {
                epoch,
                table,
                kind,
                partitions,
            } => self.plan_maintenance(epoch, table, kind, partitions),
            Effect::LoadDags { generation } => self.load_dags(generation),
            Effect::LoadDagFacts { generation, dag } => self.load_dag_facts(generation, *dag),
            Effect::LoadDagCode { dag, known } => self.load_dag_code(*dag, known),
            Effect::CheckConnections => self.check_connections(),
            Effect::LoadRuns { dag_id } => self.load_runs(dag_id),
            Effect::LoadTasks { dag_id, run_id } => self.load_tasks(dag_id, run_id),
            Effect::LoadLog {
                dag_id,
                run_id,
                task_id,
                try_number,
            } => self.load_log(dag_id, run_id, task_id, try_number),
            Effect::LoadFailure { dag_id } => self.load_failure(dag_id),
            Effect::LoadTimelineRuns { dag_id } => self.load_timeline_runs(dag_id),
            Effect::LoadDeltaLog {
                table,
                retention_secs,
            } => self.load_delta_log(table, retention_secs),
            Effect::WatchRun {
                dag_id,
                run_id,
                tables,
            } => self.spawn_watch(dag_id, run_id, tables),
            Effect::PlanConnection {
                connection_id,
                target,
                epoch,
            } => self.plan_connection(connection_id, target, epoch),
            Effect::PlanClear {
                dag_id,
                run_id,
                epoch,
            } => self.plan_clear(dag_id, run_id, epoch),
            Effect::CheckWriters { table } => self.check_writers(table),
        };
        if let Some(slot) = slot {
            self.running.insert(slot, handle.abort_handle());
        }
    }

    /// Read a profile's settings off the event loop (a `password_command` may take
    /// seconds, a vault up to its timeout): the event loop keeps drawing and taking keys,
    /// and hands the loaded profile to [`Runtime::finish_switch`].
    fn load_profile(&self, name: String) {
        let mut over = self.overrides.clone();
        over.profile = Some(name.clone());
        let loaded = self.loaded_tx.clone();
        tokio::task::spawn_blocking(move || {
            let settings = config::load(&over);
            let cached = settings.as_ref().map_or_else(
                |_| Vec::new(),
                |s| crate::cache::load(&s.stats_cache, &s.profile, s.trino.url.as_str()),
            );
            let _ = loaded.send(LoadedProfile {
                name,
                settings,
                cached,
            });
        });
    }

    /// Write an export file (CSV, JSON, the postmortem) off the event loop.
    fn export(
        &self,
        format: crate::app::export::ExportFormat,
        data: crate::app::export::ExportData,
    ) -> tokio::task::JoinHandle<()> {
        let dir = self.settings.export_dir.clone();
        let audit = self.settings.audit_log.clone();
        let work = async move {
            tokio::task::spawn_blocking(move || write_export(&dir, &audit, format, &data))
                .await
                .map_err(|e| ExportError::Internal(e.to_string()))
                .and_then(|r| r)
        };
        reply::spawn_reply(None, work, Action::Exported, self.sender())
    }

    /// What the reads of this runtime's connection have cost the coordinator so far (its
    /// client's meter; a maintenance job counts on a meter of its own).
    pub fn refresh_cost(&self) -> crate::trino::Cost {
        self.lake.client.cost()
    }

    /// Write the pending escape sequences (clipboard writes) through the terminal's own
    /// writer, between frames.
    fn write_to_terminal(&mut self, terminal: &mut terminal::Term) {
        use std::io::Write;
        if self.to_terminal.is_empty() {
            return;
        }
        let out = terminal.backend_mut();
        for seq in self.to_terminal.drain(..) {
            if let Err(e) = out.write_all(seq.as_bytes()) {
                tracing::warn!("writing a clipboard sequence to the terminal: {e}");
            }
        }
        let _ = out.flush();
    }

    /// A sender of effects' replies to the event loop.
    pub(super) fn sender(&self) -> impl Fn(Action) + Send + Sync + 'static {
        let tx = self.tx.clone();
        move |a| {
            let _ = tx.send(a);
        }
    }

    /// A sender for a result that opens a confirm popup (a drafted plan, a clear's dry
    /// run): it sends only while the profile it was asked on is still the current one, so
    /// a popup never shows the old profile's plan after a switch.
    pub(super) fn confirm_sender(&self) -> impl Fn(Action) + Send + Sync + 'static {
        let epoch = self.profile_epoch.clone();
        let mine = *epoch.lock().unwrap_or_else(|e| e.into_inner());
        let tx = self.tx.clone();
        move |a| {
            let now = epoch.lock().unwrap_or_else(|e| e.into_inner());
            if *now == mine {
                let _ = tx.send(a);
            }
        }
    }

    /// Stop every job still running (interrupted: floe is leaving; a job already asked to
    /// stop keeps its reason) and wait, at most `within`, for each to end: its statement
    /// cancelled on Trino (DELETE nextUri sent and answered) and its outcome audited.
    /// Airflow writes in flight are waited for too. Returns how many did not end in time.
    pub async fn shutdown(&mut self, within: Duration) -> usize {
        let mut handles = Vec::new();
        for (_, (stop, h)) in self.jobs.drain() {
            if !stop.is_stopped() {
                stop.interrupt();
            }
            handles.push(h);
        }
        handles.append(&mut self.writes);
        let deadline = Instant::now() + within;
        let mut late = 0;
        for h in handles {
            if tokio::time::timeout_at(deadline, h).await.is_err() {
                late += 1;
            }
        }
        if late > 0 {
            tracing::warn!(late, "quitting before every job was cancelled on Trino");
        }
        late
    }

    /// Load another profile: new clients, every running read cancelled. Jobs and Airflow
    /// writes are not in a slot: they run on to their end on the clients they started
    /// with, and audit under the profile they started on.
    /// The event loop takes the receiver of loaded profiles (once).
    pub fn take_loaded_profiles(&mut self) -> mpsc::UnboundedReceiver<LoadedProfile> {
        self.loaded_rx
            .take()
            .expect("taken once, by the event loop")
    }

    /// Switch to a loaded profile: new clients, the old slots' loads aborted (jobs and
    /// Airflow writes keep running on the connection they started on).
    pub fn finish_switch(&mut self, loaded: LoadedProfile) -> Action {
        let LoadedProfile {
            name,
            settings,
            cached,
        } = loaded;
        // Under the lock, so no plan of the old profile is sent after the switch.
        let epoch = self.profile_epoch.clone();
        let mut epoch = epoch.lock().unwrap_or_else(|e| e.into_inner());
        let r = settings
            .map_err(|source| SwitchError::Config {
                profile: name.clone(),
                source: Box::new(source),
            })
            .and_then(|s| self.switch_to(&name, s, cached));
        if r.is_ok() {
            *epoch += 1;
        }
        Action::Connection(ConnectionMsg::ProfileSwitched(r))
    }

    fn switch_to(
        &mut self,
        name: &str,
        s: Settings,
        cached: Vec<crate::cache::Entry>,
    ) -> Result<ProfileView, SwitchError> {
        let l = lakehouse(&s, &self.tx).map_err(|source| SwitchError::Client {
            profile: name.to_string(),
            source: Box::new(source),
        })?;
        l.remember_layouts(cached_layouts(&cached));
        let view = ProfileView {
            cached,
            ..profile_view(&s)
        };
        self.pool = Arc::new(Semaphore::new(s.max_concurrent_queries));
        self.settings = s;
        self.lake = l;
        self.airflow = AirflowHandle::new(self.settings.airflow.clone());
        for (_, h) in self.running.drain() {
            h.abort();
        }
        for h in self.reads.drain(..) {
            h.abort();
        }
        Ok(view)
    }
}

fn lakehouse(s: &Settings, tx: &mpsc::UnboundedSender<Action>) -> Result<Lakehouse, TrinoError> {
    // An OAuth2 login's URL goes to the status line.
    let tx = tx.clone();
    let client = Client::from_settings(&s.trino, s.query_timeout)?.with_oauth2_prompt(
        std::sync::Arc::new(move |e: &crate::trino::LoginEvent| {
            let _ = tx.send(Action::Connection(ConnectionMsg::Login(e.clone())));
        }),
    );
    Ok(
        Lakehouse::new(client, s.trino.catalog.clone(), s.health.clone())
            .with_catalogs_of(&s.trino)
            .with_fallbacks_beside(&s.stats_cache),
    )
}

/// Whether each table was partitioned, as the stats cache remembers it, handed to the
/// connection off the event loop: a table known to be unpartitioned is not first asked
/// for a `partition` column it does not have (one failed statement per table per launch).
/// Until the file is read, a table's first statement finds out as it always did.
fn remember_cached_layouts(lake: &Lakehouse, s: &Settings) {
    let lake = lake.clone();
    let path = s.stats_cache.clone();
    let profile = s.profile.clone();
    let url = s.trino.url.to_string();
    std::thread::spawn(move || {
        lake.remember_layouts(cached_layouts(&crate::cache::load(&path, &profile, &url)));
    });
}

/// Whether each cached table was partitioned, as the layout its statements take.
fn cached_layouts(entries: &[crate::cache::Entry]) -> Vec<(TableRef, Layout)> {
    entries
        .iter()
        // Stats its files were not read for (its totals decided it) do not know whether
        // the table is partitioned.
        .filter(|e| !e.stats.files_unread)
        .map(|e| {
            let layout = if e.stats.partitioned {
                Layout::PartitionColumn
            } else {
                Layout::Unpartitioned
            };
            (e.table.clone(), layout)
        })
        .collect()
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
        warnings: s.warnings(),
        cached: Vec::new(),
    }
}

/// The screen's first state for these settings.
pub fn initial_state(s: &Settings, no_color: bool) -> color_eyre::Result<State> {
    let mut st = State::new(Utc::now());
    let view = profile_view(s);
    st.conn.profile = view.profile;
    st.conn.trino_url = view.trino_url;
    st.conn.airflow_url = view.airflow_url;
    if !view.warnings.is_empty() {
        st.set_status(crate::app::state::Level::Warn, view.warnings.join("; "));
    }
    st.conn.warnings = view.warnings;
    st.readonly = s.readonly;
    st.keymap = Keymap::new(s.keys.clone()).with_readonly(s.readonly);
    st.health = s.health.clone();
    st.schemas = s.trino.schemas.clone();
    st.refresh_every = s.refresh;
    st.confirm_dwell = s.confirm_dwell;
    st.no_color = no_color;
    st.profiles = s.profiles.clone();
    st.airflow_configured = s.airflow.is_some();
    st.maintenance = s.maintenance.clone();
    use crate::config::StartTab;
    (st.tab, st.auto_start) = match s.start_tab {
        StartTab::Auto => (Tab::Triage, true),
        StartTab::Triage => (Tab::Triage, false),
        StartTab::Tables => (Tab::Tables, false),
        StartTab::Dags => (Tab::Dags, false),
    };
    st.tables.refresh.policy = crate::refresh::RefreshPolicy::of(s);
    Ok(st)
}

/// Open the TUI. The terminal is restored on every exit path: normal, error, panic
/// (ratatui's hook after color-eyre's, mouse capture included), SIGTERM, SIGHUP, SIGINT
/// and SIGQUIT; it is given back while floe is suspended (ctrl-z) and taken again on
/// SIGCONT. See `terminal`.
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
    let caps = crate::ui::caps::Caps::from_env(settings.ascii);
    let mut state = initial_state(&settings, caps.colours == crate::ui::caps::Colours::None)?;
    state.ascii = caps.ascii;
    // The last known state of every table, painted in the first frame.
    let cached = crate::cache::load(
        &settings.stats_cache,
        &settings.profile,
        settings.trino.url.as_str(),
    );
    crate::app::tables::warm_start(&mut state, cached);
    let fleet = crate::app::fleet::Fleet::single(state);
    serve_screen(fleet, vec![settings], overrides, caps.colours)
}

/// The one event loop over `fleet` (one profile, or every one of `floe --all`), on tokio's
/// named worker threads (the panic hook tells their panics, an effect's error, from the
/// event loop's, the end of floe, by the name), the terminal taken and always given back.
fn serve_screen(
    fleet: crate::app::fleet::Fleet,
    settings: Vec<Settings>,
    overrides: config::Overrides,
    colours: crate::ui::caps::Colours,
) -> color_eyre::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .thread_name(terminal::WORKER_THREAD)
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let mouse = settings.iter().any(|s| s.mouse);
        let mut terminal = terminal::enter(mouse, colours);
        let result = event_loop(&mut terminal, fleet, settings, overrides).await;
        terminal::leave(mouse);
        result
    })
}

/// Open the TUI over every profile of `fleet` at once (`floe --all`): one State and one
/// runtime per profile, the merged Triage in front (see `app::fleet`).
pub fn run_fleet(settings: Vec<Settings>, overrides: config::Overrides) -> color_eyre::Result<()> {
    color_eyre::install()?;
    if !std::io::stdout().is_terminal() {
        return Err(eyre!(
            "floe's TUI needs a terminal; for scripts and cron use `floe check --all`"
        ));
    }
    let caps = crate::ui::caps::Caps::from_env(settings.first().and_then(|s| s.ascii));
    let no_color = caps.colours == crate::ui::caps::Colours::None;
    let mut states = Vec::with_capacity(settings.len());
    for s in &settings {
        let mut st = initial_state(s, no_color)?;
        st.ascii = caps.ascii;
        // The merged Triage is the fleet's first screen, whatever one cluster holds.
        st.tab = Tab::Triage;
        st.auto_start = false;
        st.fleet_member = true;
        let cached = crate::cache::load(&s.stats_cache, &s.profile, s.trino.url.as_str());
        crate::app::tables::warm_start(&mut st, cached);
        states.push(st);
    }
    let fleet = crate::app::fleet::Fleet::new(states);
    serve_screen(fleet, settings, overrides, caps.colours)
}

#[cfg(test)]
mod tests;
