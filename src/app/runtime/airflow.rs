//! Effects that talk to Airflow: the DAG list and facts, connections, runs, tasks, logs,
//! failures, and the writes (audited in `maintain::audit`).

use std::future::Future;
use std::sync::Arc;

use tokio::sync::Semaphore;
use tokio::task::JoinHandle;

use super::Runtime;
use crate::airflow::{AirflowClient, AirflowError};
use crate::app::action::{Action, DagWrite, Effect};
use crate::app::dags::{DagMsg, FailureDetail};
use crate::maintain::audit::{WriteFailure, write_failure};

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

    /// Call Airflow if it is (or can be) connected; every error as text.
    pub async fn call<T, F, Fut>(&self, f: F) -> Result<T, String>
    where
        F: FnOnce(AirflowClient) -> Fut,
        Fut: Future<Output = Result<T, AirflowError>>,
    {
        let c = self.get().await?;
        f(c).await.map_err(|e| e.to_string())
    }
}

impl Runtime {
    /// Start an Airflow effect; `None` for effects that are not Airflow's.
    pub(super) fn spawn_airflow(&mut self, e: Effect) -> Option<JoinHandle<()>> {
        let tx = self.tx.clone();
        let af = self.airflow.clone();
        let runs = self.settings.airflow.as_ref().map(|a| a.runs).unwrap_or(25);
        Some(match e {
            Effect::LoadDags { generation } => tokio::spawn(async move {
                let result = af
                    .call(|c| async move { crate::airflow::scan::list(&c).await })
                    .await;
                let _ = tx.send(Action::Dags(DagMsg::Loaded { generation, result }));
            }),
            Effect::LoadDagFacts { generation, dag } => {
                let interval = self.dag_interval(&dag.dag_id);
                let configured = self
                    .settings
                    .maintenance
                    .iter()
                    .find(|m| m.dag_id == dag.dag_id)
                    .and_then(|m| m.interval);
                let dag_id = dag.dag_id.clone();
                tokio::spawn(async move {
                    let _permit = af.pool.clone().acquire_owned().await;
                    let result = af
                        .call(|c| async move { c.fetch_facts(&dag, interval).await })
                        .await
                        .map(|mut f| {
                            if let Some(i) = configured {
                                f.expected_interval = i;
                            }
                            f
                        });
                    let _ = tx.send(Action::Dags(DagMsg::Facts {
                        generation,
                        dag_id,
                        result,
                    }));
                })
            }
            Effect::CheckConnections => {
                let trino = self.settings.trino.url.clone();
                let test = self
                    .settings
                    .airflow
                    .as_ref()
                    .is_some_and(|a| a.test_connections);
                tokio::spawn(async move {
                    if let Ok(c) = af.get().await {
                        let f = crate::airflow::scan::connection_findings(&c, &trino, test).await;
                        let _ = tx.send(Action::Dags(DagMsg::ConnectionFindings(f)));
                    }
                })
            }
            Effect::LoadRuns { dag_id } => tokio::spawn(async move {
                let d = dag_id.clone();
                let result = af.call(|c| async move { c.runs(&d, runs).await }).await;
                let _ = tx.send(Action::Dags(DagMsg::Runs { dag_id, result }));
            }),
            Effect::LoadTimelineRuns { dag_id } => tokio::spawn(async move {
                let d = dag_id.clone();
                let result = af.call(|c| async move { c.runs(&d, runs).await }).await;
                let _ = tx.send(Action::TimelineRuns { dag_id, result });
            }),
            Effect::LoadTasks { dag_id, run_id } => tokio::spawn(async move {
                let (d, r) = (dag_id.clone(), run_id.clone());
                let result = af
                    .call(|c| async move { c.task_instances(&d, &r).await })
                    .await;
                let _ = tx.send(Action::Dags(DagMsg::Tasks {
                    dag_id,
                    run_id,
                    result,
                }));
            }),
            Effect::LoadLog {
                dag_id,
                run_id,
                task_id,
                try_number,
            } => tokio::spawn(async move {
                let (d, r, t) = (dag_id.clone(), run_id.clone(), task_id.clone());
                let result = af
                    .call(|c| async move { c.task_log(&d, &r, &t, try_number).await })
                    .await;
                let _ = tx.send(Action::Dags(DagMsg::Log {
                    dag_id,
                    run_id,
                    task_id,
                    try_number,
                    result,
                }));
            }),
            Effect::LoadFailure { dag_id } => tokio::spawn(async move {
                let _permit = af.pool.clone().acquire_owned().await;
                let d = dag_id.clone();
                let result = af
                    .call(|c| async move { failure_detail(&c, &d, runs).await })
                    .await;
                let _ = tx.send(Action::Dags(DagMsg::Failure { dag_id, result }));
            }),
            Effect::PlanClear { dag_id, run_id } => {
                let send = self.confirm_sender();
                tokio::spawn(async move {
                    let (d, r) = (dag_id.clone(), run_id.clone());
                    let result = af
                        .call(|c| async move { c.clear_run(&d, &r, true, true).await })
                        .await;
                    send(Action::Dags(DagMsg::ClearPlanned {
                        dag_id,
                        run_id,
                        result,
                    }));
                })
            }
            Effect::WatchRun {
                dag_id,
                run_id,
                tables,
            } => self.spawn_watch(dag_id, run_id, tables),
            Effect::PlanConnection {
                connection_id,
                target,
            } => {
                let send = self.confirm_sender();
                tokio::spawn(async move {
                    let id = connection_id.clone();
                    let result = af
                        .call(|c| async move {
                            let api = c.api();
                            c.connection(&id).await.map(|conn| (conn, api))
                        })
                        .await;
                    send(Action::Dags(DagMsg::ConnectionPlanned {
                        connection_id,
                        target,
                        result,
                    }));
                })
            }
            Effect::WriteDag(action) => self.spawn_write(action),
            _ => return None,
        })
    }

    /// Follow a DAG run to its end, a poll at a time; when it ends, read its tables again.
    fn spawn_watch(
        &self,
        dag_id: String,
        run_id: String,
        tables: Vec<crate::lakehouse::model::TableRef>,
    ) -> JoinHandle<()> {
        let tx = self.tx.clone();
        let af = self.airflow.clone();
        let lake = self.lake.clone();
        tokio::spawn(async move {
            loop {
                let (d, r) = (dag_id.clone(), run_id.clone());
                let result = af
                    .call(|c| async move {
                        let run = c.run(&d, &r).await?;
                        let tasks = c.task_instances(&d, &r).await?;
                        Ok((run, tasks))
                    })
                    .await;
                let done = result
                    .as_ref()
                    .is_ok_and(|(run, _)| run.state.is_finished());
                let reread = if done {
                    let mut v = Vec::new();
                    for t in &tables {
                        v.push((
                            t.clone(),
                            lake.table_stats(t).await.map_err(|e| e.to_string()),
                        ));
                    }
                    Some(v)
                } else {
                    None
                };
                let _ = tx.send(Action::Dags(DagMsg::Watched {
                    run_id: run_id.clone(),
                    result,
                    reread,
                }));
                if done {
                    return;
                }
                tokio::time::sleep(crate::app::dags::watch::POLL).await;
            }
        })
    }

    /// A DAG write (trigger, clear, pause, connection update), audited; a trigger's run is
    /// then watched.
    fn spawn_write(&self, action: DagWrite) -> JoinHandle<()> {
        let tx = self.tx.clone();
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
            let triggered = std::sync::Mutex::new(None);
            let result = crate::maintain::audit::audited(
                &ctx,
                &user,
                &target,
                action.name(),
                &statement(&action),
                write_dag(&af, &action, &triggered),
            )
            .await;
            let run_id = triggered.lock().ok().and_then(|mut g| g.take());
            let dag_id = action.dag_id().to_string();
            let _ = tx.send(Action::Dags(DagMsg::Written { action, result }));
            if let Some(run_id) = run_id {
                let _ = tx.send(Action::Dags(DagMsg::Triggered { dag_id, run_id }));
            }
        })
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
        } => crate::maintain::connection::statement(
            connection_id,
            &crate::maintain::connection::Target {
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
    let c = af.get().await.map_err(WriteFailure::Failed)?;
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
        DagWrite::SetConnection {
            connection_id,
            host,
            port,
        } => {
            let t = crate::maintain::connection::Target {
                host: host.clone(),
                port: *port,
                ignored: Vec::new(),
            };
            let f = crate::maintain::connection::fix(&c, connection_id, &t)
                .await
                .map_err(write_failure)?;
            Ok(f.line())
        }
        DagWrite::SetPaused { dag_id, paused } => {
            c.set_paused(dag_id, *paused).await.map_err(write_failure)?;
            Ok(format!(
                "{} {dag_id}",
                if *paused { "paused" } else { "unpaused" }
            ))
        }
    }
}
