//! Effects that talk to Airflow: the DAG list and facts, connections, runs, tasks, logs,
//! failures, and the writes (audited in `mutation::audit`).

use std::future::Future;
use std::sync::Arc;

use tokio::sync::Semaphore;
use tokio::task::JoinHandle;

use super::Runtime;
use super::reply::spawn_reply;
use crate::airflow::{AirflowClient, AirflowError};
use crate::app::action::{Action, DagWrite};
use crate::app::dags::{DagMsg, FailureDetail};
use crate::app::snapshots::SnapshotsMsg;
use crate::lakehouse::model::TableRef;
use crate::mutation::audit::{WriteError, WriteFailure, write_failure};

/// Airflow, connected on first use (and again after a failure), with its own small pool.
#[derive(Clone)]
pub struct AirflowHandle {
    settings: Option<crate::config::AirflowSettings>,
    client: Arc<tokio::sync::Mutex<Option<AirflowClient>>>,
    pub pool: Arc<Semaphore>,
}

impl AirflowHandle {
    pub(super) fn new(settings: Option<crate::config::AirflowSettings>) -> AirflowHandle {
        AirflowHandle {
            settings,
            client: Arc::default(),
            pool: Arc::new(Semaphore::new(4)),
        }
    }

    /// The client, when Airflow is configured: `Ok(None)` when it is not.
    pub async fn configured(&self) -> Result<Option<AirflowClient>, AirflowError> {
        if self.settings.is_none() {
            return Ok(None);
        }
        self.get().await.map(Some)
    }

    pub async fn get(&self) -> Result<AirflowClient, AirflowError> {
        let Some(s) = &self.settings else {
            return Err(AirflowError::Config("Airflow is not configured".into()));
        };
        let mut guard = self.client.lock().await;
        if let Some(c) = guard.as_ref() {
            return Ok(c.clone());
        }
        let c = AirflowClient::connect(s).await?;
        *guard = Some(c.clone());
        Ok(c)
    }

    /// Call Airflow if it is (or can be) connected.
    pub async fn call<T, F, Fut>(&self, f: F) -> Result<T, AirflowError>
    where
        F: FnOnce(AirflowClient) -> Fut,
        Fut: Future<Output = Result<T, AirflowError>>,
    {
        f(self.get().await?).await
    }
}

impl Runtime {
    /// The DAG list (with its import errors and the server's health).
    pub(super) fn load_dags(&self, generation: u64) -> JoinHandle<()> {
        let af = self.airflow.clone();
        let work = async move {
            af.call(|c| async move { crate::airflow::scan::list(&c).await })
                .await
        };
        let reply = move |result| Action::Dags(DagMsg::Loaded { generation, result });
        spawn_reply(None, work, reply, self.sender())
    }

    /// One DAG's facts (its runs and the failing task's log), at its expected interval.
    pub(super) fn load_dag_facts(
        &self,
        generation: u64,
        dag: crate::airflow::Dag,
    ) -> JoinHandle<()> {
        let af = self.airflow.clone();
        let interval = self.dag_interval(&dag.dag_id);
        let configured = self
            .settings
            .maintenance
            .iter()
            .find(|m| m.dag_id == dag.dag_id)
            .and_then(|m| m.interval);
        let dag_id = dag.dag_id.clone();
        let pool = Some(af.pool.clone());
        let work = async move {
            let mut f = af
                .call(|c| async move { c.fetch_facts(&dag, interval).await })
                .await?;
            if let Some(i) = configured {
                f.expected_interval = i;
            }
            Ok(f)
        };
        let reply = move |result| {
            Action::Dags(DagMsg::Facts {
                generation,
                dag_id,
                result,
            })
        };
        spawn_reply(pool, work, reply, self.sender())
    }

    /// A DAG's source (its code's findings), read unless `known` is its version already.
    pub(super) fn load_dag_code(
        &self,
        dag: crate::airflow::Dag,
        known: Option<crate::airflow::endpoints::sources::SourceKey>,
    ) -> JoinHandle<()> {
        let af = self.airflow.clone();
        let pool = Some(af.pool.clone());
        let dag_id = dag.dag_id.clone();
        let work = async move {
            af.call(|c| async move { crate::airflow::scan::read_code(&c, &dag, known).await })
                .await
        };
        let reply = move |result| Action::Dags(DagMsg::Code { dag_id, result });
        spawn_reply(pool, work, reply, self.sender())
    }

    /// The Trino connections Airflow holds, tested where the settings allow.
    pub(super) fn check_connections(&self) -> JoinHandle<()> {
        let af = self.airflow.clone();
        let trino = self.settings.trino.url.clone();
        let test = self
            .settings
            .airflow
            .as_ref()
            .is_some_and(|a| a.test_connections);
        let work = async move {
            let c = af.get().await?;
            let conns = crate::airflow::scan::trino_connections(&c, test).await;
            Ok(crate::health::airflow::connection_findings(&conns, &trino))
        };
        // Connection findings have no error to show: an Airflow not reached is the DAG
        // list's to say.
        let reply = |r: Result<_, AirflowError>| {
            r.ok().map(|f| Action::Dags(DagMsg::ConnectionFindings(f)))
        };
        spawn_reply(None, work, reply, self.sender())
    }

    /// The dry run of a clear (what would run again), shown before the real one.
    pub(super) fn plan_clear(&self, dag_id: String, run_id: String, epoch: u64) -> JoinHandle<()> {
        let af = self.airflow.clone();
        let (d, r) = (dag_id.clone(), run_id.clone());
        let work = async move {
            af.call(|c| async move { c.clear_run(&d, &r, true, true).await })
                .await
        };
        let reply = move |result| {
            Action::Dags(DagMsg::ClearPlanned {
                dag_id,
                run_id,
                result,
                epoch,
            })
        };
        spawn_reply(None, work, reply, self.confirm_sender())
    }

    /// An Airflow connection read to show the change to `target` as a diff before `y`.
    pub(super) fn plan_connection(
        &self,
        connection_id: String,
        target: String,
        epoch: u64,
    ) -> JoinHandle<()> {
        let af = self.airflow.clone();
        let id = connection_id.clone();
        let work = async move {
            af.call(|c| async move {
                let api = c.api();
                c.connection(&id).await.map(|conn| (conn, api))
            })
            .await
        };
        let reply = move |result| {
            Action::Dags(DagMsg::ConnectionPlanned {
                connection_id,
                target,
                epoch,
                result,
            })
        };
        spawn_reply(None, work, reply, self.confirm_sender())
    }

    fn runs_read(&self) -> usize {
        self.settings.airflow.as_ref().map(|a| a.runs).unwrap_or(25)
    }

    /// A DAG's runs (the DAGs tab's drill-down).
    pub(super) fn load_runs(&self, dag_id: String) -> JoinHandle<()> {
        let (af, runs, d) = (self.airflow.clone(), self.runs_read(), dag_id.clone());
        let work = async move { af.call(|c| async move { c.runs(&d, runs).await }).await };
        let reply = move |result| Action::Dags(DagMsg::Runs { dag_id, result });
        spawn_reply(None, work, reply, self.sender())
    }

    /// A DAG's runs for the Snapshots tab's timeline.
    pub(super) fn load_timeline_runs(&self, dag_id: String) -> JoinHandle<()> {
        let (af, runs, d) = (self.airflow.clone(), self.runs_read(), dag_id.clone());
        let work = async move { af.call(|c| async move { c.runs(&d, runs).await }).await };
        let reply = move |result| Action::Snapshots(SnapshotsMsg::Runs { dag_id, result });
        spawn_reply(None, work, reply, self.sender())
    }

    /// A run's task instances.
    pub(super) fn load_tasks(&self, dag_id: String, run_id: String) -> JoinHandle<()> {
        let af = self.airflow.clone();
        let (d, r) = (dag_id.clone(), run_id.clone());
        let work = async move {
            af.call(|c| async move { c.task_instances(&d, &r).await })
                .await
        };
        let reply = move |result| {
            Action::Dags(DagMsg::Tasks {
                dag_id,
                run_id,
                result,
            })
        };
        spawn_reply(None, work, reply, self.sender())
    }

    /// A task's log, one try of it.
    pub(super) fn load_log(
        &self,
        dag_id: String,
        run_id: String,
        task_id: String,
        try_number: u32,
    ) -> JoinHandle<()> {
        let af = self.airflow.clone();
        let (d, r, t) = (dag_id.clone(), run_id.clone(), task_id.clone());
        let work = async move {
            af.call(|c| async move { c.task_log(&d, &r, &t, try_number).await })
                .await
        };
        let reply = move |result| {
            Action::Dags(DagMsg::Log {
                dag_id,
                run_id,
                task_id,
                try_number,
                result,
            })
        };
        spawn_reply(None, work, reply, self.sender())
    }

    /// The failing task of a DAG's newest failed run, and its log's error line.
    pub(super) fn load_failure(&self, dag_id: String) -> JoinHandle<()> {
        let (af, runs, d) = (self.airflow.clone(), self.runs_read(), dag_id.clone());
        let pool = Some(af.pool.clone());
        let work = async move {
            af.call(|c| async move { failure_detail(&c, &d, runs).await })
                .await
        };
        let reply = move |result| Action::Dags(DagMsg::Failure { dag_id, result });
        spawn_reply(pool, work, reply, self.sender())
    }

    /// Follow a DAG run to its end, a poll at a time (each poll's answer is sent as it
    /// comes); its reply is the last poll's, with its tables read again, or the error it
    /// gave up on ([`crate::app::dags::watch::gives_up`]).
    pub(super) fn spawn_watch(
        &self,
        dag_id: String,
        run_id: String,
        tables: Vec<TableRef>,
    ) -> JoinHandle<()> {
        let tx = self.tx.clone();
        let af = self.airflow.clone();
        let lake = self.lake.clone();
        let id = run_id.clone();
        let work = async move {
            let mut errors = 0;
            loop {
                let (d, r) = (dag_id.clone(), id.clone());
                let result = af
                    .call(|c| async move {
                        let run = c.run(&d, &r).await?;
                        let tasks = c.task_instances(&d, &r).await?;
                        Ok((run, tasks))
                    })
                    .await;
                match result {
                    Ok(poll) if poll.0.state.is_finished() => {
                        let mut reread = Vec::new();
                        for t in &tables {
                            reread.push((t.clone(), lake.table_stats(t).await));
                        }
                        return Ok::<_, AirflowError>((poll, reread));
                    }
                    Err(e) => {
                        errors += 1;
                        if crate::app::dags::watch::gives_up(errors, &e) {
                            return Err(e);
                        }
                        let _ = tx.send(Action::Dags(DagMsg::Watched {
                            run_id: id.clone(),
                            result: Err(e),
                            reread: None,
                        }));
                    }
                    result => {
                        errors = 0;
                        let _ = tx.send(Action::Dags(DagMsg::Watched {
                            run_id: id.clone(),
                            result,
                            reread: None,
                        }));
                    }
                }
                tokio::time::sleep(crate::app::dags::watch::POLL).await;
            }
        };
        let reply = move |r: Result<_, AirflowError>| {
            let (result, reread) = match r {
                Ok((poll, reread)) => (Ok(poll), Some(reread)),
                Err(e) => (Err(e), None),
            };
            Action::Dags(DagMsg::Watched {
                run_id,
                result,
                reread,
            })
        };
        spawn_reply(None, work, reply, self.sender())
    }

    /// A DAG write (trigger, clear, pause, connection update), audited; a trigger's run is
    /// then watched.
    pub(super) fn spawn_write(&self, action: DagWrite) -> JoinHandle<()> {
        let af = self.airflow.clone();
        let ctx = crate::mutation::context(&self.settings);
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
        let a = action.clone();
        // The profile it is sent on: its answer may come after a switch.
        let epoch = *self.profile_epoch.lock().unwrap_or_else(|e| e.into_inner());
        let work = async move {
            if let DagWrite::SetConnection {
                connection_id,
                host,
                port,
            } = &a
            {
                let t = crate::mutation::connection::Target {
                    host: host.clone(),
                    port: *port,
                    ignored: Vec::new(),
                };
                let req = crate::mutation::connection::FixRequest {
                    ctx: &ctx,
                    user: &user,
                    airflow: &target,
                    id: connection_id,
                    target: &t,
                };
                let result = match af.get().await {
                    Ok(c) => crate::mutation::connection::fix_audited(
                        &c,
                        &req,
                        std::pin::pin!(std::future::pending::<String>()),
                    )
                    .await
                    .map(|f| f.line()),
                    Err(e) => Err(WriteError::NoClient(e)),
                };
                return Ok::<_, WriteError>((result, None));
            }
            let triggered = std::sync::Mutex::new(None);
            let result = crate::mutation::audit::audited(
                &ctx,
                &user,
                &target,
                a.action(),
                &statement(&a),
                write_dag(&af, &a, &triggered),
            )
            .await;
            let run_id = triggered.lock().ok().and_then(|mut g| g.take());
            Ok::<_, WriteError>((result, run_id))
        };
        let reply = move |r: Result<_, WriteError>| {
            let dag_id = action.dag_id().to_string();
            let (result, run_id) = r.unwrap_or_else(|e| (Err(e), None));
            let mut out = vec![Action::Dags(DagMsg::Written {
                action,
                result,
                epoch,
            })];
            if let Some(run_id) = run_id {
                out.push(Action::Dags(DagMsg::Triggered {
                    dag_id,
                    run_id,
                    epoch,
                }));
            }
            out
        };
        spawn_reply(None, work, reply, self.sender())
    }

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

/// The failing task of a DAG's newest failed run, with its log.
async fn failure_detail(
    c: &AirflowClient,
    dag_id: &str,
    runs: usize,
) -> Result<Option<FailureDetail>, AirflowError> {
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

/// How a write reads in the audit log.
fn statement(action: &DagWrite) -> String {
    match action {
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
        DagWrite::SetConnection {
            connection_id,
            host,
            port,
        } => crate::mutation::connection::statement(
            connection_id,
            &crate::mutation::connection::Target {
                host: host.clone(),
                port: *port,
                ignored: Vec::new(),
            },
        ),
    }
}

/// Send one write to Airflow; the message for the status line.
async fn write_dag(
    af: &AirflowHandle,
    action: &DagWrite,
    triggered: &std::sync::Mutex<Option<String>>,
) -> Result<String, WriteFailure> {
    let c = af.get().await.map_err(write_failure)?;
    match action {
        DagWrite::Trigger { dag_id } => {
            let run = c.trigger(dag_id).await.map_err(write_failure)?;
            if let Ok(mut g) = triggered.lock() {
                *g = Some(run.run_id.clone());
            }
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
                .map_err(write_failure)?;
            Ok(format!(
                "cleared run {run_id} of {dag_id}{}",
                o.run
                    .map(|r| format!(": now {}", r.state.as_str()))
                    .unwrap_or_default()
            ))
        }
        // Written by `fix_audited`, which audits each of its steps itself.
        DagWrite::SetConnection { connection_id, .. } => Err(WriteFailure::Misrouted(format!(
            "connection {connection_id}"
        ))),
        DagWrite::SetPaused { dag_id, paused } => {
            c.set_paused(dag_id, *paused).await.map_err(write_failure)?;
            Ok(format!(
                "{} {dag_id}",
                if *paused { "paused" } else { "unpaused" }
            ))
        }
    }
}
