//! Effects that talk to Trino: server info, discovery, change probes, stats, partitions,
//! snapshots, drafting and running maintenance plans; and the stats cache they fill.

use tokio::task::JoinHandle;

use super::Runtime;
use crate::app::action::{Action, Effect};
use crate::app::maintenance::MaintenanceMsg;
use crate::app::tables::TablesMsg;
use crate::lakehouse::maintenance::Plan;
use crate::maintain::run::{StepEvent, Stop, run_plan_until};

impl Runtime {
    /// Start a Trino effect; `None` for effects that are not Trino's.
    pub(super) fn spawn_trino(&mut self, e: Effect) -> Option<JoinHandle<()>> {
        let tx = self.tx.clone();
        let lake = self.lake.clone();
        let pool = self.pool.clone();
        Some(match e {
            Effect::FetchServerInfo => tokio::spawn(async move {
                let r = lake.connect().await.map_err(|e| e.to_string());
                let _ = tx.send(Action::ServerInfo(r));
            }),
            Effect::Discover {
                generation,
                schemas,
                relearn,
            } => {
                if relearn {
                    lake.forget_layouts();
                }
                let globs = self.settings.trino.tables.clone();
                tokio::spawn(async move {
                    let _permit = pool.acquire_owned().await;
                    let result = lake
                        .discover(&schemas, &globs)
                        .await
                        .map_err(|e| e.to_string());
                    let _ = tx.send(Action::Tables(TablesMsg::Discovered { generation, result }));
                })
            }
            Effect::LoadStats { generation, table } => tokio::spawn(async move {
                let _permit = pool.acquire_owned().await;
                let result = lake.table_stats(&table).await.map_err(|e| e.to_string());
                let _ = tx.send(Action::Tables(TablesMsg::Stats {
                    generation,
                    table,
                    result,
                }));
            }),
            Effect::Probe { generation, tables } => tokio::spawn(async move {
                let _permit = pool.acquire_owned().await;
                let results = lake
                    .probe(&tables)
                    .await
                    .into_iter()
                    .map(|(t, r)| (t, r.map_err(|e| e.to_string())))
                    .collect();
                let _ = tx.send(Action::Tables(TablesMsg::Probed {
                    generation,
                    results,
                }));
            }),
            Effect::Rank { generation, tables } => tokio::spawn(async move {
                let _permit = pool.acquire_owned().await;
                let results = lake
                    .rank(&tables)
                    .await
                    .into_iter()
                    .map(|(t, r)| (t, r.map_err(|e| e.to_string())))
                    .collect();
                let _ = tx.send(Action::Tables(TablesMsg::Ranked {
                    generation,
                    results,
                }));
            }),
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
            Effect::LoadPartitions { request, table } => tokio::spawn(async move {
                let _permit = pool.acquire_owned().await;
                let result = lake.partitions(&table).await.map_err(|e| e.to_string());
                let _ = tx.send(Action::Partitions {
                    request,
                    table,
                    result,
                });
            }),
            Effect::LoadQueries { table } => tokio::spawn(async move {
                let _permit = pool.acquire_owned().await;
                let result = lake.table_queries(&table).await.map_err(|e| e.to_string());
                let _ = tx.send(crate::app::queries::reply(table, result));
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
            Effect::PlanMaintenance {
                epoch,
                table,
                kind,
                partitions,
            } => {
                let min_small = self.settings.health.min_small_files;
                let send = self.confirm_sender();
                let audit_log = self.settings.audit_log.clone();
                tokio::spawn(async move {
                    let _permit = pool.acquire_owned().await;
                    let optimize = kind == crate::app::action::MaintenanceKind::Optimize;
                    let mut r =
                        crate::maintain::plan::draft(&lake, table, kind, partitions, min_small)
                            .await;
                    if optimize && let Ok(d) = &mut r {
                        let audit = tokio::task::spawn_blocking(move || {
                            crate::maintain::audit::AuditLog::new(audit_log).read()
                        })
                        .await
                        .unwrap_or_default();
                        d.measured = Some(crate::maintain::eta::measure(&lake, &audit).await);
                    }
                    send(Action::Maintenance(MaintenanceMsg::PlanReady(epoch, r)));
                })
            }
            _ => return None,
        })
    }

    /// Run a plan as job `job` on the current connection, which it keeps to its end (a
    /// profile switch does not touch it); it stops only through the returned `Stop`.
    pub(super) fn spawn_job(&mut self, job: u64, plan: Plan) -> (Stop, JoinHandle<()>) {
        let stop = Stop::new();
        let ctx = crate::maintain::context(&self.settings);
        let (tx, lake, stop2) = (self.tx.clone(), self.lake.clone(), stop.clone());
        let h = tokio::spawn(async move {
            let tx2 = tx.clone();
            let on_event = move |event: StepEvent| {
                let _ = tx2.send(Action::Maintenance(MaintenanceMsg::Step { job, event }));
            };
            let r = run_plan_until(&lake, &plan, &ctx, &stop2, &on_event).await;
            let _ = tx.send(Action::Maintenance(MaintenanceMsg::Done {
                job,
                result: r.map(|_| ()),
            }));
        });
        (stop, h)
    }
}
