//! Effects that talk to Trino: server info, discovery, change probes, stats, partitions,
//! snapshots, drafting and running maintenance plans; and the stats cache they fill. Each
//! is its work and its one reply, run by [`spawn_reply`].

use tokio::task::JoinHandle;

use super::Runtime;
use super::reply::{deliberate, spawn_reply};
use crate::app::action::{Action, Effect};
use crate::app::connection::ConnectionMsg;
use crate::app::maintenance::MaintenanceMsg;
use crate::app::partitions::PartitionsMsg;
use crate::app::snapshots::SnapshotsMsg;
use crate::app::tables::TablesMsg;
use crate::lakehouse::model::TableRef;
use crate::lakehouse::plan::Plan;
use crate::mutation::contention::{self, Others};
use crate::mutation::draft::{self, Over};
use crate::mutation::run::{StepEvent, Stop, run_plan_watched};
use crate::trino::TrinoError;

impl Runtime {
    /// Start a Trino effect; `None` for effects that are not Trino's.
    pub(super) fn spawn_trino(&mut self, e: Effect) -> Option<JoinHandle<()>> {
        let lake = self.lake.clone();
        let pool = Some(self.pool.clone());
        let send = self.sender();
        let test_panic = deliberate(&e);
        Some(match e {
            Effect::FetchServerInfo => spawn_reply(
                None,
                async move { lake.connect().await },
                |r| Action::Connection(ConnectionMsg::ServerInfo(r)),
                send,
            ),
            Effect::Discover {
                generation,
                schemas,
                relearn,
            } => {
                if relearn {
                    lake.forget_layouts();
                }
                let globs = self.settings.trino.tables.clone();
                spawn_reply(
                    pool,
                    async move { lake.discover(&schemas, &globs).await },
                    move |result| Action::Tables(TablesMsg::Discovered { generation, result }),
                    send,
                )
            }
            Effect::LoadStats { generation, table } => {
                let t = table.clone();
                let work = async move {
                    if test_panic {
                        panic!("FLOE_TEST_PANIC=effect");
                    }
                    lake.table_stats(&t).await
                };
                let reply = move |result| {
                    Action::Tables(TablesMsg::Stats {
                        generation,
                        table,
                        result,
                    })
                };
                spawn_reply(pool, work, reply, send)
            }
            Effect::Probe { generation, tables } => {
                let t = tables.clone();
                let work = async move { Ok(lake.probe(&t).await) };
                let reply = move |r| {
                    let results = per_table(r, tables);
                    Action::Tables(TablesMsg::Probed {
                        generation,
                        results,
                    })
                };
                spawn_reply(pool, work, reply, send)
            }
            Effect::Survey { generation, tables } => {
                let t = tables.clone();
                let work = async move { Ok(lake.survey(&t).await) };
                let reply = move |r| {
                    let results = per_table(r, tables);
                    Action::Tables(TablesMsg::Surveyed {
                        generation,
                        results,
                    })
                };
                spawn_reply(pool, work, reply, send)
            }
            Effect::RecentWrites { generation, since } => spawn_reply(
                pool,
                async move { lake.recent_writes(since).await },
                move |result| Action::Tables(TablesMsg::Written { generation, result }),
                send,
            ),
            Effect::LoadFiles { generation, tables } => {
                let names: Vec<TableRef> = tables.iter().map(|(t, _)| t.clone()).collect();
                let work = async move {
                    if test_panic {
                        panic!("FLOE_TEST_PANIC=effect");
                    }
                    let items: Vec<(TableRef, crate::lakehouse::model::TableStats)> =
                        tables.into_iter().map(|(t, s)| (t, *s)).collect();
                    Ok(lake.files_batch(&items).await)
                };
                let reply = move |r| {
                    let results = per_table(r, names);
                    Action::Tables(TablesMsg::FilesRead {
                        generation,
                        results,
                    })
                };
                spawn_reply(pool, work, reply, send)
            }
            Effect::SaveCache {
                profile,
                url,
                entries,
            } => {
                let path = self.settings.stats_cache.clone();
                tokio::task::spawn_blocking(move || {
                    if let Err(e) = crate::cache::store(&path, &profile, &url, entries) {
                        tracing::warn!(path = %path.display(), "cannot write the stats cache: {e}");
                    }
                })
            }
            Effect::LoadPartitions { request, table } => {
                let t = table.clone();
                let reply = move |result| {
                    Action::Partitions(PartitionsMsg::Loaded {
                        request,
                        table,
                        result,
                    })
                };
                spawn_reply(pool, async move { lake.partitions(&t).await }, reply, send)
            }
            Effect::LoadQueries { table } => {
                let t = table.clone();
                let reply = move |result| crate::app::queries::reply(table, result);
                spawn_reply(
                    pool,
                    async move { lake.table_queries(&t).await },
                    reply,
                    send,
                )
            }
            Effect::LoadSnapshots { request, table } => {
                let t = table.clone();
                let reply = move |result| {
                    Action::Snapshots(SnapshotsMsg::Loaded {
                        request,
                        table,
                        result,
                    })
                };
                spawn_reply(pool, async move { lake.snapshots(&t).await }, reply, send)
            }
            Effect::PlanMaintenance {
                epoch,
                table,
                kind,
                partitions,
            } => self.spawn_plan(epoch, table, kind, partitions),
            Effect::CheckWriters { table } => self.spawn_check_writers(table),
            _ => return None,
        })
    }

    /// Draft a plan of `kind` on `table`, once nobody else writes it (any client): the
    /// confirmation's reply, or why nothing was drafted.
    fn spawn_plan(
        &self,
        epoch: u64,
        table: TableRef,
        kind: crate::app::action::MaintenanceKind,
        partitions: Option<Vec<crate::lakehouse::model::PartitionStats>>,
    ) -> JoinHandle<()> {
        let lake = self.lake.clone();
        let min_small = self.settings.health.min_small_files;
        let audit_log = self.settings.audit_log.clone();
        let (af, configured) = (self.airflow.clone(), self.settings.maintenance.clone());
        let work = async move {
            let optimize = kind == crate::app::action::MaintenanceKind::Optimize;
            let over = match partitions {
                Some(p) => Over::These(p),
                None => Over::SmallFiles { min_small },
            };
            // Nobody else writes the table now (any client): else nothing is drafted.
            let (others, mut unread) = others_of(&af, &configured, &table).await;
            unread.extend(draft::unwritten(&lake, &others, &table).await?);
            let mut d = draft::draft(&lake, table, kind, over, None).await?;
            if !unread.is_empty() {
                let mut note = d.note.take().map(|n| vec![n]).unwrap_or_default();
                note.extend(unread);
                d.note = Some(note.join("; "));
            }
            if optimize {
                d.measured = Some(draft::measured(&lake, audit_log).await);
            }
            Ok(d)
        };
        let reply = move |r| Action::Maintenance(MaintenanceMsg::PlanReady(epoch, r));
        spawn_reply(Some(self.pool.clone()), work, reply, self.confirm_sender())
    }

    /// Read who else writes `table` now, for Triage.
    fn spawn_check_writers(&self, table: TableRef) -> JoinHandle<()> {
        let lake = self.lake.clone();
        let (af, configured) = (self.airflow.clone(), self.settings.maintenance.clone());
        let t = table.clone();
        let work = async move {
            let (others, _) = others_of(&af, &configured, &t).await;
            Ok(contention::writers(&lake, &others, &t).await)
        };
        let reply = move |r: Result<_, TrinoError>| {
            let result = r
                .map_err(|e| contention::Unknown {
                    table: table.clone(),
                    source: Box::new(e),
                })
                .and_then(|w| w);
            Action::Maintenance(MaintenanceMsg::Writers { table, result })
        };
        spawn_reply(Some(self.pool.clone()), work, reply, self.sender())
    }

    /// Run a plan as job `job` on the current connection, which it keeps to its end (a
    /// profile switch does not touch it); it stops only through the returned `Stop`.
    pub(super) fn spawn_job(&mut self, job: u64, plan: Plan) -> (Stop, JoinHandle<()>) {
        let stop = Stop::new();
        let ctx = crate::mutation::context(&self.settings);
        let (tx, lake, stop2) = (self.tx.clone(), self.lake.clone(), stop.clone());
        let (af, configured) = (self.airflow.clone(), self.settings.maintenance.clone());
        let work = async move {
            let on_event = move |event: StepEvent| {
                let _ = tx.send(Action::Maintenance(MaintenanceMsg::Step { job, event }));
            };
            // Before each statement: nobody else writes the table (any client).
            let (others, _) = others_of(&af, &configured, &plan.table).await;
            run_plan_watched(&lake, &plan, &ctx, &others, &stop2, &on_event)
                .await
                .map(|_| ())
        };
        let reply = move |result| Action::Maintenance(MaintenanceMsg::Done { job, result });
        (stop, spawn_reply(None, work, reply, self.sender()))
    }
}

/// Who else may write `t`: Airflow, when configured, and the table's maintenance DAGs;
/// what could not be read to tell.
async fn others_of(
    af: &super::airflow::AirflowHandle,
    configured: &[crate::config::MaintenanceMapping],
    t: &TableRef,
) -> (Others, Vec<String>) {
    let mut unread = Vec::new();
    let client = match af.configured().await {
        Ok(c) => c,
        Err(e) => {
            unread.push(format!(
                "maintenance DAGs not checked for a running task: {e}"
            ));
            None
        }
    };
    let others = Others::of(client, configured, t, &mut unread).await;
    (others, unread)
}

/// A batched read's result for each of its tables.
type PerTable<T> = Vec<(TableRef, Result<T, TrinoError>)>;

/// A batched read's per-table results; a batch that failed as a whole (its work
/// panicked) fails each of its tables with that error.
fn per_table<T>(r: Result<PerTable<T>, TrinoError>, tables: Vec<TableRef>) -> PerTable<T> {
    match r {
        Ok(v) => v,
        Err(e) => tables.into_iter().map(|t| (t, Err(e.clone()))).collect(),
    }
}
