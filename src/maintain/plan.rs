//! Drafting a maintenance plan: what the TUI's confirm popup and `floe maintain` read
//! from the lakehouse before a plan can be built (threshold, layout, partitions).

use crate::lakehouse::maintenance::{Plan, Procedure, TableLayout, optimize_plan, table_plan};
use crate::lakehouse::model::{PartitionStats, TableRef};
use crate::lakehouse::queries::{Lakehouse, PartitionList};

/// The maintenance an operator asks for, before the lakehouse is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MaintenanceKind {
    /// `partitions: None` means the table's small-file partitions (or the whole table
    /// when it is unpartitioned).
    Optimize,
    ExpireSnapshots {
        retention_secs: u64,
    },
    RemoveOrphanFiles {
        retention_secs: u64,
    },
    OptimizeManifests,
}

/// Everything needed to (re)build a plan purely, e.g. when the operator toggles grouping.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanDraft {
    pub table: TableRef,
    pub procedure: Procedure,
    pub layout: TableLayout,
    pub partitions: Vec<PartitionStats>,
    /// An optimize's measured rate (earlier optimizes on this coordinator), when read.
    pub measured: Option<super::eta::Measured>,
}

impl PlanDraft {
    /// The same draft over `partitions` only (a part of an incremental plan).
    pub fn over(&self, partitions: Vec<PartitionStats>) -> PlanDraft {
        PlanDraft {
            partitions,
            ..self.clone()
        }
    }

    pub fn build(&self, grouped: bool) -> Result<Plan, String> {
        match &self.procedure {
            Procedure::Optimize { threshold } => optimize_plan(
                &self.table,
                &self.layout,
                &self.partitions,
                *threshold,
                grouped,
            ),
            other => Ok(table_plan(&self.table, other.clone())),
        }
    }
}

/// The small-file threshold of a table, as an operator-facing error.
pub async fn threshold_of(lake: &Lakehouse, t: &TableRef) -> Result<u64, String> {
    super::small_file_threshold(lake, t)
        .await
        .map_err(|e| format!("reading the properties of {t}: {e}"))
}

/// The partition layout of a table, as an operator-facing error.
pub async fn layout_of(lake: &Lakehouse, t: &TableRef) -> Result<TableLayout, String> {
    lake.table_layout(t)
        .await
        .map_err(|e| format!("reading the layout of {t}: {e}"))
}

/// The partitions of a table, as an operator-facing error.
pub async fn partitions_of(lake: &Lakehouse, t: &TableRef) -> Result<PartitionList, String> {
    lake.partitions(t)
        .await
        .map_err(|e| format!("reading the partitions of {t}: {e}"))
}

/// Read what a plan needs (threshold, layout, small-file partitions) and return the draft.
pub async fn draft(
    lake: &Lakehouse,
    table: TableRef,
    kind: MaintenanceKind,
    partitions: Option<Vec<PartitionStats>>,
    min_small: u64,
) -> Result<PlanDraft, String> {
    let procedure = match kind {
        MaintenanceKind::Optimize => Procedure::Optimize {
            threshold: threshold_of(lake, &table).await?,
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
        measured: None,
    };
    if kind != MaintenanceKind::Optimize {
        return Ok(draft);
    }
    let parts = match partitions {
        Some(p) => p,
        None => {
            // From the Tables tab: the table's small-file partitions, incrementally.
            let list = partitions_of(lake, &table).await?;
            if list.layout_fields.is_empty() {
                // Unpartitioned: the whole table, its one row giving the counts.
                draft.partitions = list.partitions;
                return Ok(draft);
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
        draft.layout = layout_of(lake, &table).await?;
    }
    draft.partitions = parts;
    Ok(draft)
}
