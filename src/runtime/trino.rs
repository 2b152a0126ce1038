//! Effects that talk to Trino: server info, the refresh's reads, partitions, snapshots,
//! the recent queries of a table, drafting and running maintenance plans; and the stats
//! cache the refresh fills. Each is its work and its one reply, run by [`spawn_reply`].

use tokio::task::JoinHandle;

use super::Runtime;
use super::reply::{deliberate, spawn_reply};
use crate::app::action::Action;
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
use crate::refresh::read::execute;
use crate::refresh::{Answer, Read, RequestId};
use crate::trino::TrinoError;

impl Runtime {
    /// The coordinator's info (version, uptime, starting).
    pub(super) fn server_info(&self) -> JoinHandle<()> {
        let lake = self.lake.clone();
        spawn_reply(
            None,
            async move { lake.connect().await },
            |r| Action::Connection(ConnectionMsg::ServerInfo(r)),
            self.sender(),
        )
    }

    /// One of the refresh's reads, run to its answer: never in a slot, so never aborted
    /// but by a profile switch (when the refresh that awaits it is gone too).
    pub(super) fn read(&self, id: RequestId, read: Read) -> JoinHandle<()> {
        let lake = self.lake.clone();
        let globs = self.settings.trino.tables.clone();
        let test_panic = deliberate(&read);
        let (kind, tables) = (read.kind(), read.tables());
        let send = self.sender();
        // A part of a listing goes on the channel its whole answer takes after it.
        let on_part = move |tables| {
            send(Action::Tables(TablesMsg::Answer {
                id,
                answer: Answer::ListedPart(tables),
            }))
        };
        let work = async move {
            if test_panic {
                panic!("FLOE_TEST_PANIC=effect");
            }
            Ok::<_, TrinoError>(execute(&lake, &globs, read, &on_part).await)
        };
        let reply = move |r: Result<Answer, TrinoError>| {
            let answer = r.unwrap_or_else(|e| Answer::failed(kind, tables, e));
            Action::Tables(TablesMsg::Answer { id, answer })
        };
        spawn_reply(Some(self.pool.clone()), work, reply, self.sender())
    }

    /// Keep the last stats of a profile's tables for the next start.
    pub(super) fn save_cache(
        &self,
        profile: String,
        url: String,
        entries: Vec<crate::cache::Entry>,
    ) -> JoinHandle<()> {
        let path = self.settings.stats_cache.clone();
        tokio::task::spawn_blocking(move || {
            if let Err(e) = crate::cache::store(&path, &profile, &url, entries) {
                tracing::warn!(path = %path.display(), "cannot write the stats cache: {e}");
            }
        })
    }

    pub(super) fn load_partitions(&self, request: u64, table: TableRef) -> JoinHandle<()> {
        let lake = self.lake.clone();
        let t = table.clone();
        let reply = move |result| {
            Action::Partitions(PartitionsMsg::Loaded {
                request,
                table,
                result,
            })
        };
        let work = async move { lake.partitions(&t).await };
        spawn_reply(Some(self.pool.clone()), work, reply, self.sender())
    }

    pub(super) fn load_queries(&self, table: TableRef) -> JoinHandle<()> {
        let lake = self.lake.clone();
        let t = table.clone();
        let reply = move |result| crate::app::query_history::reply(table, result);
        let work = async move { lake.table_queries(&t).await };
        spawn_reply(Some(self.pool.clone()), work, reply, self.sender())
    }

    pub(super) fn load_snapshots(&self, request: u64, table: TableRef) -> JoinHandle<()> {
        let lake = self.lake.clone();
        let t = table.clone();
        let reply = move |result| {
            Action::Snapshots(SnapshotsMsg::Loaded {
                request,
                table,
                result,
            })
        };
        let work = async move { lake.snapshots(&t).await };
        spawn_reply(Some(self.pool.clone()), work, reply, self.sender())
    }

    /// The log of the Snapshots tab's Delta table (see [`crate::lakehouse::queries::Lakehouse::delta_log`]).
    pub(super) fn load_delta_log(&self, table: TableRef, retention_secs: u64) -> JoinHandle<()> {
        let lake = self.lake.clone();
        let t = table.clone();
        let reply = move |result| Action::Snapshots(SnapshotsMsg::Log { table, result });
        let work = async move { lake.delta_log(&t, retention_secs).await };
        spawn_reply(Some(self.pool.clone()), work, reply, self.sender())
    }

    /// Draft a maintenance plan (its reads, and for an optimize what the audit log
    /// measured of earlier runs); sent only while the profile it was asked on is current.
    pub(super) fn plan_maintenance(
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

    /// Run a plan as job `job` on the current connection, which it keeps to its end (a
    /// profile switch does not touch it); it stops only through the returned `Stop`.
    pub(super) fn spawn_job(&mut self, job: u64, plan: Plan) -> (Stop, JoinHandle<()>) {
        let stop = Stop::new();
        let ctx = crate::mutation::context(&self.settings);
        // Its statements are not the refresh's: counted apart from its budget.
        let (tx, lake, stop2) = (self.tx.clone(), self.lake.with_own_meter(), stop.clone());
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

    /// Read who else writes `table` now, for Triage.
    pub(super) fn check_writers(&self, table: TableRef) -> JoinHandle<()> {
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
