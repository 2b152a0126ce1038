//! The runtime: terminal events, ticks and effect results become Actions; `update`
//! returns Effects, which run on tokio with a bounded pool, at most one per slot (a newer
//! request replaces and cancels an older one).

use std::collections::HashMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use color_eyre::eyre::{WrapErr, eyre};
use crossterm::event::{Event, EventStream, KeyCode, KeyEvent, KeyModifiers, MouseEventKind};
use futures::StreamExt;
use tokio::sync::{Semaphore, mpsc};
use tokio::task::AbortHandle;
use tokio::time::Instant;

use super::action::DagWrite;
use super::action::{Action, Effect, ExportData, ExportFormat, MaintenanceKind, ProfileView, Slot};
use super::dags::FailureDetail;
use super::jobs::PlanDraft;
use super::keymap::Keymap;
use super::state::State;
use super::update::update;
use crate::airflow::AirflowClient;
use crate::config::{self, Settings};
use crate::lakehouse::maintenance::Procedure;
use crate::lakehouse::model::{PartitionStats, TableRef};
use crate::lakehouse::queries::Lakehouse;
use crate::maintain::run::{StepEvent, run_plan};
use crate::trino::Client;
use tokio_util::sync::CancellationToken;

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
        let lake = lakehouse(&settings)?;
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
        let tx = self.tx.clone();
        let lake = self.lake.clone();
        let pool = self.pool.clone();
        let handle = match e {
            Effect::Quit => return,
            Effect::PlanMaintenance {
                table,
                kind,
                partitions,
            } => {
                let min_small = self.settings.health.min_small_files;
                tokio::spawn(async move {
                    let _permit = pool.acquire_owned().await;
                    let r = plan_draft(&lake, table, kind, partitions, min_small).await;
                    let _ = tx.send(Action::PlanReady(r));
                })
            }
            Effect::RunPlan { job, plan } => {
                let token = CancellationToken::new();
                self.job_tokens.insert(job, token.clone());
                let ctx = crate::maintain::context(&self.settings);
                tokio::spawn(async move {
                    let tx2 = tx.clone();
                    let on_event = move |event: StepEvent| {
                        let _ = tx2.send(Action::Job { job, event });
                    };
                    let r = run_plan(&lake, &plan, &ctx, token, &on_event).await;
                    let _ = tx.send(Action::JobDone {
                        job,
                        result: r.map(|_| ()),
                    });
                })
            }
            Effect::LoadDags { generation } => {
                let af = self.airflow.clone();
                tokio::spawn(async move {
                    let r = match af.get().await {
                        Ok(c) => crate::airflow::scan::list(&c)
                            .await
                            .map_err(|e| e.to_string()),
                        Err(e) => Err(e),
                    };
                    let _ = tx.send(Action::DagsLoaded {
                        generation,
                        result: r,
                    });
                })
            }
            Effect::LoadDagFacts { generation, dag } => {
                let af = self.airflow.clone();
                let interval = self.dag_interval(&dag.dag_id);
                let configured = self
                    .settings
                    .maintenance
                    .iter()
                    .find(|m| m.dag_id == dag.dag_id)
                    .and_then(|m| m.interval);
                tokio::spawn(async move {
                    let _permit = af.pool.clone().acquire_owned().await;
                    let r = match af.get().await {
                        Ok(c) => c
                            .fetch_facts(&dag, interval)
                            .await
                            .map_err(|e| e.to_string())
                            .map(|mut f| {
                                if let Some(i) = configured {
                                    f.expected_interval = i;
                                }
                                f
                            }),
                        Err(e) => Err(e),
                    };
                    let _ = tx.send(Action::DagFacts {
                        generation,
                        dag_id: dag.dag_id.clone(),
                        result: r,
                    });
                })
            }
            Effect::CheckConnections => {
                let af = self.airflow.clone();
                let trino = self.settings.trino.url.clone();
                let test = self
                    .settings
                    .airflow
                    .as_ref()
                    .is_some_and(|a| a.test_connections);
                tokio::spawn(async move {
                    if let Ok(c) = af.get().await {
                        let f = crate::airflow::scan::connection_findings(&c, &trino, test).await;
                        let _ = tx.send(Action::ConnectionFindings(f));
                    }
                })
            }
            Effect::LoadRuns { dag_id } => {
                let af = self.airflow.clone();
                let n = self.settings.airflow.as_ref().map(|a| a.runs).unwrap_or(25);
                tokio::spawn(async move {
                    let r = match af.get().await {
                        Ok(c) => c.runs(&dag_id, n).await.map_err(|e| e.to_string()),
                        Err(e) => Err(e),
                    };
                    let _ = tx.send(Action::Runs { dag_id, result: r });
                })
            }
            Effect::LoadTasks { dag_id, run_id } => {
                let af = self.airflow.clone();
                tokio::spawn(async move {
                    let r = match af.get().await {
                        Ok(c) => c
                            .task_instances(&dag_id, &run_id)
                            .await
                            .map_err(|e| e.to_string()),
                        Err(e) => Err(e),
                    };
                    let _ = tx.send(Action::Tasks {
                        dag_id,
                        run_id,
                        result: r,
                    });
                })
            }
            Effect::LoadLog {
                dag_id,
                run_id,
                task_id,
                try_number,
            } => {
                let af = self.airflow.clone();
                tokio::spawn(async move {
                    let r = match af.get().await {
                        Ok(c) => c
                            .task_log(&dag_id, &run_id, &task_id, try_number)
                            .await
                            .map_err(|e| e.to_string()),
                        Err(e) => Err(e),
                    };
                    let _ = tx.send(Action::Log {
                        dag_id,
                        run_id,
                        task_id,
                        try_number,
                        result: r,
                    });
                })
            }
            Effect::LoadFailure { dag_id } => {
                let af = self.airflow.clone();
                let n = self.settings.airflow.as_ref().map(|a| a.runs).unwrap_or(25);
                tokio::spawn(async move {
                    let _permit = af.pool.clone().acquire_owned().await;
                    let r = match af.get().await {
                        Ok(c) => failure_detail(&c, &dag_id, n)
                            .await
                            .map_err(|e| e.to_string()),
                        Err(e) => Err(e),
                    };
                    let _ = tx.send(Action::Failure { dag_id, result: r });
                })
            }
            Effect::PlanClear { dag_id, run_id } => {
                let af = self.airflow.clone();
                tokio::spawn(async move {
                    let r = match af.get().await {
                        Ok(c) => c
                            .clear_run(&dag_id, &run_id, true, true)
                            .await
                            .map_err(|e| e.to_string()),
                        Err(e) => Err(e),
                    };
                    let _ = tx.send(Action::ClearPlanned {
                        dag_id,
                        run_id,
                        result: r,
                    });
                })
            }
            Effect::WriteDag(action) => {
                let af = self.airflow.clone();
                let ctx = crate::maintain::context(&self.settings);
                let user = self
                    .settings
                    .airflow
                    .as_ref()
                    .and_then(|a| a.user.clone())
                    .unwrap_or_default();
                let target = self
                    .settings
                    .airflow
                    .as_ref()
                    .map(|a| a.url.to_string())
                    .unwrap_or_default();
                tokio::spawn(async move {
                    let r = write_dag(&af, &action, &ctx, &user, &target).await;
                    let _ = tx.send(Action::DagWritten { action, result: r });
                })
            }

            Effect::CancelJob(job) => {
                if let Some(t) = self.job_tokens.get(&job) {
                    t.cancel();
                }
                return;
            }
            Effect::FetchInfo => tokio::spawn(async move {
                let r = lake.connect().await.map_err(|e| e.to_string());
                let _ = tx.send(Action::Info(r));
            }),
            Effect::Discover {
                generation,
                schemas,
            } => {
                let globs = self.settings.trino.tables.clone();
                tokio::spawn(async move {
                    let _permit = pool.acquire_owned().await;
                    let result = lake
                        .discover(&schemas, &globs)
                        .await
                        .map_err(|e| e.to_string());
                    let _ = tx.send(Action::Discovered { generation, result });
                })
            }
            Effect::LoadStats { generation, table } => tokio::spawn(async move {
                let _permit = pool.acquire_owned().await;
                let result = lake.table_stats(&table).await.map_err(|e| e.to_string());
                let _ = tx.send(Action::Stats {
                    generation,
                    table,
                    result,
                });
            }),
            Effect::LoadPartitions { request, table } => tokio::spawn(async move {
                let _permit = pool.acquire_owned().await;
                let result = lake.partitions(&table).await.map_err(|e| e.to_string());
                let _ = tx.send(Action::Partitions {
                    request,
                    table,
                    result,
                });
            }),
            Effect::LoadSnapshots { request, table } => tokio::spawn(async move {
                let _permit = pool.acquire_owned().await;
                let result = lake.snapshots(&table).await.map_err(|e| e.to_string());
                let _ = tx.send(Action::Snapshots {
                    request,
                    table,
                    result,
                });
            }),
            Effect::Export { format, data } => {
                let dir = self.settings.export_dir.clone();
                tokio::spawn(async move {
                    let r = tokio::task::spawn_blocking(move || write_export(&dir, format, &data))
                        .await
                        .map_err(|e| e.to_string())
                        .and_then(|r| r);
                    let _ = tx.send(Action::Exported(r));
                })
            }
            Effect::SwitchProfile(name) => {
                let mut over = self.overrides.clone();
                over.profile = Some(name.clone());
                match config::load(&over) {
                    Ok(s) => match lakehouse(&s) {
                        Ok(l) => {
                            let view = profile_view(&s);
                            self.pool = Arc::new(Semaphore::new(s.max_concurrent_queries));
                            self.settings = s;
                            self.lake = l;
                            self.airflow = AirflowHandle::new(self.settings.airflow.clone());
                            for (_, h) in self.running.drain() {
                                h.abort();
                            }
                            let _ = tx.send(Action::ProfileSwitched(Ok(view)));
                        }
                        Err(e) => {
                            let _ = tx
                                .send(Action::ProfileSwitched(Err(format!("profile {name}: {e}"))));
                        }
                    },
                    Err(e) => {
                        let _ =
                            tx.send(Action::ProfileSwitched(Err(format!("profile {name}: {e}"))));
                    }
                }
                return;
            }
        };
        if let Some(slot) = slot {
            self.running.insert(slot, handle.abort_handle());
        }
    }
}

/// Read what a plan needs (threshold, layout, small-file partitions) and return the draft.
async fn plan_draft(
    lake: &Lakehouse,
    table: TableRef,
    kind: MaintenanceKind,
    partitions: Option<Vec<PartitionStats>>,
    min_small: u64,
) -> Result<PlanDraft, String> {
    let procedure = match kind {
        MaintenanceKind::Optimize => Procedure::Optimize {
            threshold: crate::maintain::small_file_threshold(lake, &table)
                .await
                .map_err(|e| format!("reading the properties of {table}: {e}"))?,
        },
        MaintenanceKind::ExpireSnapshots { retention_secs } => {
            Procedure::ExpireSnapshots { retention_secs }
        }
        MaintenanceKind::RemoveOrphanFiles { retention_secs } => {
            Procedure::RemoveOrphanFiles { retention_secs }
        }
        MaintenanceKind::OptimizeManifests => Procedure::OptimizeManifests,
    };
    let mut draft = PlanDraft {
        table: table.clone(),
        procedure,
        layout: Default::default(),
        partitions: Vec::new(),
    };
    if kind != MaintenanceKind::Optimize {
        return Ok(draft);
    }
    let parts = match partitions {
        Some(p) => p,
        None => {
            // From the Tables tab: the table's small-file partitions, incrementally.
            let list = lake
                .partitions(&table)
                .await
                .map_err(|e| format!("reading the partitions of {table}: {e}"))?;
            if list.layout_fields.is_empty() {
                Vec::new()
            } else {
                let small: Vec<PartitionStats> = list
                    .partitions
                    .into_iter()
                    .filter(|p| p.small_files >= min_small)
                    .collect();
                if small.is_empty() {
                    return Err(format!(
                        "no partition of {table} holds {min_small} or more small files: nothing to optimize (mark partitions in the Partitions tab to choose)"
                    ));
                }
                small
            }
        }
    };
    if !parts.is_empty() {
        draft.layout = lake
            .table_layout(&table)
            .await
            .map_err(|e| format!("reading the layout of {table}: {e}"))?;
    }
    draft.partitions = parts;
    Ok(draft)
}

/// Airflow, connected on first use (and again after a failure), with its own small pool.
#[derive(Clone)]
pub struct AirflowHandle {
    settings: Option<crate::config::AirflowSettings>,
    client: Arc<tokio::sync::Mutex<Option<AirflowClient>>>,
    pub pool: Arc<Semaphore>,
}

impl AirflowHandle {
    fn new(settings: Option<crate::config::AirflowSettings>) -> AirflowHandle {
        AirflowHandle {
            settings,
            client: Arc::default(),
            pool: Arc::new(Semaphore::new(4)),
        }
    }

    pub async fn get(&self) -> Result<AirflowClient, String> {
        let Some(s) = &self.settings else {
            return Err("Airflow is not configured".into());
        };
        let mut guard = self.client.lock().await;
        if let Some(c) = guard.as_ref() {
            return Ok(c.clone());
        }
        let c = AirflowClient::connect(s).await.map_err(|e| e.to_string())?;
        *guard = Some(c.clone());
        Ok(c)
    }
}

/// The failing task of a DAG's newest failed run, with its log.
async fn failure_detail(
    c: &AirflowClient,
    dag_id: &str,
    runs: usize,
) -> Result<Option<FailureDetail>, crate::airflow::AirflowError> {
    let list = c.runs(dag_id, runs).await?;
    let Some(run) = crate::airflow::facts::latest_failed(&list) else {
        return Ok(None);
    };
    let Some(f) = c.failure(dag_id, &run.run_id).await? else {
        return Ok(None);
    };
    let log = if f.try_number > 0 {
        c.task_log(dag_id, &f.run_id, &f.task_id, f.try_number)
            .await?
    } else {
        Default::default()
    };
    Ok(Some(FailureDetail {
        run_id: f.run_id,
        task_id: f.task_id,
        try_number: f.try_number,
        log,
    }))
}

/// Run one Airflow write, refused in read-only mode, audited either way.
async fn write_dag(
    af: &AirflowHandle,
    action: &DagWrite,
    ctx: &crate::maintain::run::RunContext,
    user: &str,
    target: &str,
) -> Result<String, String> {
    let statement = match action {
        DagWrite::Trigger { dag_id } => format!("trigger {dag_id}"),
        DagWrite::Clear {
            dag_id,
            run_id,
            only_failed,
        } => {
            format!(
                "clear {dag_id} {run_id}{}",
                if *only_failed { " (only failed)" } else { "" }
            )
        }
        DagWrite::SetPaused { dag_id, paused } => format!("set {dag_id} is_paused={paused}"),
    };
    let mut rec =
        crate::maintain::audit::Record::now(&ctx.profile, user, target, action.name(), &statement);
    if ctx.readonly {
        rec.outcome = "refused".into();
        rec.error = Some("read-only".into());
        let _ = ctx.audit.append(&rec);
        return Err("read-only: Airflow writes are disabled".into());
    }
    let started = std::time::Instant::now();
    let r: Result<String, String> = async {
        let c = af.get().await?;
        match action {
            DagWrite::Trigger { dag_id } => {
                let run = c.trigger(dag_id).await.map_err(|e| e.to_string())?;
                Ok(format!(
                    "triggered {dag_id}: run {} is {}",
                    run.run_id,
                    run.state.as_str()
                ))
            }
            DagWrite::Clear {
                dag_id,
                run_id,
                only_failed,
            } => {
                let o = c
                    .clear_run(dag_id, run_id, false, *only_failed)
                    .await
                    .map_err(|e| e.to_string())?;
                Ok(format!(
                    "cleared run {run_id} of {dag_id}{}",
                    o.run
                        .map(|r| format!(": now {}", r.state.as_str()))
                        .unwrap_or_default()
                ))
            }
            DagWrite::SetPaused { dag_id, paused } => {
                c.set_paused(dag_id, *paused)
                    .await
                    .map_err(|e| e.to_string())?;
                Ok(format!(
                    "{} {dag_id}",
                    if *paused { "paused" } else { "unpaused" }
                ))
            }
        }
    }
    .await;
    rec.duration_ms = started.elapsed().as_millis() as u64;
    match &r {
        Ok(_) => rec.outcome = "success".into(),
        Err(e) => {
            rec.outcome = "failed".into();
            rec.error = Some(e.clone());
        }
    }
    if let Err(e) = ctx.audit.append(&rec) {
        tracing::error!(error = %e, "cannot write the audit log");
    }
    r
}

impl Runtime {
    /// The interval a DAG is expected to succeed in: its mapping's, else the config's.
    fn dag_interval(&self, dag_id: &str) -> std::time::Duration {
        self.settings
            .maintenance
            .iter()
            .find(|m| m.dag_id == dag_id)
            .and_then(|m| m.interval)
            .unwrap_or(self.settings.health.dag_interval)
    }
}

fn lakehouse(s: &Settings) -> color_eyre::Result<Lakehouse> {
    let client = Client::from_settings(&s.trino, s.query_timeout).map_err(|e| eyre!("{e}"))?;
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
    st.keymap = Keymap::from_config(&s.keys)
        .map_err(|e| eyre!("{e}"))?
        .with_readonly(s.readonly);
    st.health = s.health.clone();
    st.schemas = s.trino.schemas.clone();
    st.refresh_every = s.refresh;
    st.no_color = no_color;
    st.profiles = s.profiles.clone();
    st.airflow_configured = s.airflow.is_some();
    st.maintenance = s.maintenance.clone();
    Ok(st)
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Write an export file and return its path.
pub fn write_export(
    dir: &Path,
    format: ExportFormat,
    data: &ExportData,
) -> Result<PathBuf, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let stamp = Utc::now().format("%Y%m%d-%H%M%S");
    let (ext, text) = match format {
        ExportFormat::Csv => {
            let mut out = data
                .columns
                .iter()
                .map(|c| csv_field(c))
                .collect::<Vec<_>>()
                .join(",");
            out.push('\n');
            for r in &data.rows {
                out.push_str(&r.iter().map(|c| csv_field(c)).collect::<Vec<_>>().join(","));
                out.push('\n');
            }
            ("csv", out)
        }
        ExportFormat::Json => {
            let rows: Vec<serde_json::Map<String, serde_json::Value>> = data
                .rows
                .iter()
                .map(|r| {
                    data.columns
                        .iter()
                        .cloned()
                        .zip(r.iter().map(|v| serde_json::Value::String(v.clone())))
                        .collect()
                })
                .collect();
            (
                "json",
                serde_json::to_string_pretty(&rows).map_err(|e| e.to_string())? + "\n",
            )
        }
    };
    let path = dir.join(format!("floe-{}-{stamp}.{ext}", data.view));
    std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(path)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quotes_what_needs_it() {
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        let dir = std::env::temp_dir().join(format!("floe-export-{}", std::process::id()));
        let data = ExportData {
            view: "tables",
            columns: vec!["table".into(), "note".into()],
            rows: vec![vec!["ledger \"q3\"".into(), "x, y".into()]],
        };
        let p = write_export(&dir, ExportFormat::Csv, &data).unwrap();
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "table,note\n\"ledger \"\"q3\"\"\",\"x, y\"\n"
        );
        let p = write_export(&dir, ExportFormat::Json, &data).unwrap();
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        assert_eq!(v[0]["table"], "ledger \"q3\"");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
