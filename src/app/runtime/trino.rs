//! Effects that talk to Trino: server info, discovery, stats, partitions, snapshots,
//! drafting and running maintenance plans.

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::Runtime;
use crate::app::action::{Action, Effect};
use crate::app::maintenance::MaintenanceMsg;
use crate::app::tables::TablesMsg;
use crate::maintain::run::{StepEvent, run_plan};

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
            } => {
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
            Effect::PlanMaintenance {
                table,
                kind,
                partitions,
            } => {
                let min_small = self.settings.health.min_small_files;
                tokio::spawn(async move {
                    let _permit = pool.acquire_owned().await;
                    let r = crate::maintain::plan::draft(&lake, table, kind, partitions, min_small)
                        .await;
                    let _ = tx.send(Action::Maintenance(MaintenanceMsg::PlanReady(r)));
                })
            }
            Effect::RunPlan { job, plan } => {
                let token = CancellationToken::new();
                self.job_tokens.insert(job, token.clone());
                let ctx = crate::maintain::context(&self.settings);
                tokio::spawn(async move {
                    let tx2 = tx.clone();
                    let on_event = move |event: StepEvent| {
                        let _ = tx2.send(Action::Maintenance(MaintenanceMsg::Step { job, event }));
                    };
                    let r = run_plan(&lake, &plan, &ctx, token, &on_event).await;
                    let _ = tx.send(Action::Maintenance(MaintenanceMsg::Done {
                        job,
                        result: r.map(|_| ()),
                    }));
                })
            }
            _ => return None,
        })
    }
}
