//! Drafting a maintenance plan, for the TUI's confirm popup and `floe maintain` alike:
//! what they read from the lakehouse before a plan can be built (threshold, layout,
//! partitions), the partitions a `--partition` spec names, and the measured rate an ETA
//! is computed from.

use crate::lakehouse::delta::TableFormat;
use crate::lakehouse::model::{PartitionStats, TableNameError, TableRef};
use crate::lakehouse::plan::{
    DEFAULT_WRITER_PARTITIONS, PartitioningError, Plan, PlanRefusal, Procedure, TableLayout,
    live_specs_sql, optimize_plan_within, partition_path_sql, spec_fields_from_path, table_plan,
};
use crate::lakehouse::queries::{Lakehouse, PartitionList};
use crate::mutation::audit::AuditLog;
use crate::mutation::contention::{self, Others};
use crate::mutation::eta::{self, Measured};
use crate::trino::TrinoError;
use crate::units::UnitError;

mod select;
use select::split_wide;
pub use select::{PartitionSpecError, parse_partition_spec, select_partitions};

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
    /// A Delta table's vacuum.
    Vacuum {
        retention_secs: u64,
    },
}

/// Everything needed to (re)build a plan purely, e.g. when the operator toggles grouping.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanDraft {
    pub table: TableRef,
    pub procedure: Procedure,
    pub layout: TableLayout,
    pub partitions: Vec<PartitionStats>,
    /// Why the plan covers what it covers, when that is not what was asked (shown with
    /// the confirmation).
    pub note: Option<String>,
    /// The plan opens grouped (bounded statements over many partitions).
    pub grouped: bool,
    /// An optimize's measured rate (earlier optimizes on this coordinator), when read.
    pub measured: Option<Measured>,
    /// The partitions one of the coordinator's writers holds open
    /// (`<catalog>.max_partitions_per_writer`): no statement covers more.
    pub writer_partitions: usize,
}

impl PlanDraft {
    /// The same draft over `partitions` only (a part of an incremental plan).
    pub fn over(&self, partitions: Vec<PartitionStats>) -> PlanDraft {
        PlanDraft {
            partitions,
            ..self.clone()
        }
    }

    pub fn build(&self, grouped: bool) -> Result<Plan, PlanRefusal> {
        match &self.procedure {
            Procedure::Optimize { threshold } => optimize_plan_within(
                &self.table,
                &self.layout,
                &self.partitions,
                *threshold,
                grouped,
                self.writer_partitions,
            ),
            other => {
                let mut plan = table_plan(&self.table, other.clone());
                plan.notes.extend(self.note.clone());
                Ok(plan)
            }
        }
    }
}

/// Why a plan could not be drafted: a read of what it needs failed on Trino (typed, with
/// what was being read), what was asked does not name a table, a size, a duration or
/// partitions of it, or the table cannot be planned as asked.
#[derive(Clone, Debug, thiserror::Error)]
pub enum PlanError {
    #[error("reading {what}: {source}")]
    Read {
        what: String,
        source: Box<TrinoError>,
    },
    #[error(transparent)]
    Refused(#[from] PlanRefusal),
    #[error(transparent)]
    Table(#[from] TableNameError),
    /// `flag`: the command-line option (`--threshold`, `--retention`).
    #[error("{flag}: {source}")]
    Argument {
        flag: &'static str,
        source: UnitError,
    },
    #[error(transparent)]
    Partition(#[from] PartitionSpecError),
    #[error(
        "reading the partition spec {spec_id} of {table}: its data file {file} has no live row to read its partition path from"
    )]
    NoPartitionPath {
        table: TableRef,
        spec_id: i32,
        file: String,
    },
    #[error("{table}: spec {spec_id}: {source}")]
    SpecPath {
        table: TableRef,
        spec_id: i32,
        source: Box<PartitioningError>,
    },
    /// Another write runs on the table (any client: its maintenance DAG, a colleague's
    /// floe, a cron): the plan is not drafted.
    #[error(transparent)]
    Contended(#[from] super::contention::Contended),
    /// Whether another write runs on the table could not be read.
    #[error(transparent)]
    Unsure(#[from] super::contention::Unknown),
    /// No partition holds two small files: nothing an optimize could merge.
    #[error(
        "no partition of {0} holds two or more small files: optimize cannot merge them (the table is over-partitioned: its partitioning, not a compaction, is the fix)"
    )]
    OverPartitioned(TableRef),
    /// A procedure of the other table format (an Iceberg procedure on a Delta table, a
    /// vacuum of an Iceberg table).
    #[error("{procedure} is not a procedure of {format} tables, and {table} is one: {instead}")]
    NotOfFormat {
        table: TableRef,
        procedure: &'static str,
        format: &'static str,
        instead: &'static str,
    },
    /// The coordinator's writers' limit is not a positive number.
    #[error(
        "the session property {property} is {value:?}: expected a positive number of partitions"
    )]
    WriterLimit { property: String, value: String },
}

impl PlanError {
    fn read(what: impl Into<String>) -> impl FnOnce(TrinoError) -> PlanError {
        let what = what.into();
        move |source| PlanError::Read {
            what,
            source: Box::new(source),
        }
    }
}

/// What to run instead, when `procedure` is not one of `format`'s tables.
fn other_formats(procedure: &Procedure, format: TableFormat) -> Option<&'static str> {
    match (procedure, format) {
        (Procedure::Optimize { .. }, _) | (Procedure::Vacuum { .. }, TableFormat::Delta) => None,
        (Procedure::Vacuum { .. }, TableFormat::Iceberg) => Some(
            "expire_snapshots and remove_orphan_files free an Iceberg table's unreferenced files",
        ),
        (_, TableFormat::Iceberg) => None,
        (_, TableFormat::Delta) => {
            Some("vacuum removes the files a Delta table's versions no longer reference")
        }
    }
}

/// The small-file threshold of a table.
pub async fn threshold_of(lake: &Lakehouse, t: &TableRef) -> Result<u64, PlanError> {
    small_file_threshold(lake, t)
        .await
        .map_err(PlanError::read(format!("the properties of {t}")))
}

/// The partition layout of a table.
pub async fn layout_of(lake: &Lakehouse, t: &TableRef) -> Result<TableLayout, PlanError> {
    lake.table_layout(t)
        .await
        .map_err(PlanError::read(format!("the layout of {t}")))
}

/// The layout of a table with the partition specs of its live data files (see
/// [`TableLayout::live_specs`]): one read of `$files`, then the `"$partition"` path of one
/// file of each spec (one split, one row), so a plan knows which spec each partition
/// belongs to and which fields that spec has.
pub async fn layout_with_specs(lake: &Lakehouse, t: &TableRef) -> Result<TableLayout, PlanError> {
    let mut layout = layout_of(lake, t).await?;
    // (a Delta table has one layout: its partition columns)
    if layout.partitioning.is_empty() || layout.format == TableFormat::Delta {
        return Ok(layout);
    }
    let what = format!("the partition specs of the live files of {t}");
    let out = lake
        .client
        .query(&live_specs_sql(t))
        .await
        .map_err(PlanError::read(what.clone()))?;
    for r in &out.rows {
        let Some(id) = r
            .get("spec")
            .and_then(crate::trino::Value::as_i64)
            .and_then(|n| i32::try_from(n).ok())
        else {
            continue;
        };
        let Some(file) = r.str("file") else { continue };
        let paths = lake
            .client
            .query(&partition_path_sql(t, file))
            .await
            .map_err(PlanError::read(what.clone()))?;
        let Some(path) = paths.rows.first().and_then(|r| r.str("path")) else {
            return Err(PlanError::NoPartitionPath {
                table: t.clone(),
                spec_id: id,
                file: file.to_string(),
            });
        };
        let fields = spec_fields_from_path(path).map_err(|source| PlanError::SpecPath {
            table: t.clone(),
            spec_id: id,
            source: Box::new(source),
        })?;
        layout.live_specs.push((id, fields));
    }
    Ok(layout)
}

/// The partitions one writer of the table's catalog holds open, as this session has it
/// (`SHOW SESSION`: the catalog's `max-partitions-per-writer`, or what the session set);
/// a connector without the property (not Iceberg nor Delta Lake) has Trino's default.
pub async fn writer_partitions(lake: &Lakehouse, t: &TableRef) -> Result<usize, PlanError> {
    let name = format!("{}.max_partitions_per_writer", t.catalog);
    let out = lake
        .client
        .query("SHOW SESSION LIKE '%max_partitions_per_writer'")
        .await
        .map_err(PlanError::read(format!("the session property {name}")))?;
    let Some(row) = out
        .rows
        .iter()
        .find(|r| r.str("Name") == Some(name.as_str()))
    else {
        return Ok(DEFAULT_WRITER_PARTITIONS);
    };
    let value = row.str("Value").unwrap_or_default();
    value
        .trim()
        .parse::<usize>()
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| PlanError::WriterLimit {
            property: name,
            value: value.to_string(),
        })
}

/// The note of a plan split to stay within the writers' limit.
fn split_note(table: &TableRef, partitions: usize, limit: usize) -> String {
    let per = crate::lakehouse::plan::MAX_GROUP.min(limit).max(1);
    format!(
        "{} partitions of {table} hold files to rewrite, more than a writer of this coordinator \
         holds open ({limit}, {}.max_partitions_per_writer): one statement over them could fail \
         with ICEBERG_TOO_MANY_OPEN_PARTITIONS, so the plan optimizes them in statements of at \
         most {per} partitions, oldest first",
        crate::fmt::thousands(partitions as u64),
        table.catalog,
    )
}

/// The partitions of a table.
pub async fn partitions_of(lake: &Lakehouse, t: &TableRef) -> Result<PartitionList, PlanError> {
    lake.partitions(t)
        .await
        .map_err(PlanError::read(format!("the partitions of {t}")))
}

/// What an optimize covers.
#[derive(Clone, Debug, PartialEq)]
pub enum Over {
    /// `o` on a table: its partitions holding `min_small` small files or more (else
    /// those holding two, grouped), or the whole table when it is unpartitioned.
    SmallFiles { min_small: u64 },
    /// These partitions (marked on the Partitions tab).
    These(Vec<PartitionStats>),
    /// The partitions the `--partition` specs name (see [`select_partitions`]).
    Named(Vec<String>),
    /// The whole table (`floe maintain optimize TABLE`; every other procedure).
    Whole,
}

/// Read what a plan needs (threshold unless given, layout, the partitions it covers) and
/// return the draft: the one drafter of the TUI and `floe maintain`.
pub async fn draft(
    lake: &Lakehouse,
    table: TableRef,
    kind: MaintenanceKind,
    over: Over,
    threshold: Option<u64>,
) -> Result<PlanDraft, PlanError> {
    let procedure = match kind {
        MaintenanceKind::Optimize => Procedure::Optimize {
            threshold: match threshold {
                Some(t) => t,
                None => threshold_of(lake, &table).await?,
            },
        },
        MaintenanceKind::ExpireSnapshots { retention_secs } => {
            Procedure::ExpireSnapshots { retention_secs }
        }
        MaintenanceKind::RemoveOrphanFiles { retention_secs } => {
            Procedure::RemoveOrphanFiles { retention_secs }
        }
        MaintenanceKind::OptimizeManifests => Procedure::OptimizeManifests,
        MaintenanceKind::Vacuum { retention_secs } => Procedure::Vacuum { retention_secs },
    };
    // Each format has its own procedures: one of the other's is refused before a plan.
    let format = lake
        .format_of(&table)
        .await
        .map_err(PlanError::read(format!(
            "the connector of catalog {}",
            table.catalog
        )))?;
    if let Some(instead) = other_formats(&procedure, format) {
        return Err(PlanError::NotOfFormat {
            table,
            procedure: procedure.name(),
            format: format.title(),
            instead,
        });
    }
    let mut draft = PlanDraft {
        table: table.clone(),
        procedure,
        layout: Default::default(),
        partitions: Vec::new(),
        note: None,
        grouped: false,
        measured: None,
        writer_partitions: DEFAULT_WRITER_PARTITIONS,
    };
    if let MaintenanceKind::Vacuum { retention_secs } = kind {
        // What it deletes, from the log, beside the plan (a log that cannot be read
        // leaves the vacuum as asked, and says so).
        draft.note = Some(match lake.delta_log(&table, retention_secs).await {
            Ok(facts) => facts.vacuum_note(retention_secs),
            Err(e) => {
                format!("what this vacuum deletes could not be read from the log of {table}: {e}")
            }
        });
    }
    if kind != MaintenanceKind::Optimize {
        return Ok(draft);
    }
    draft.writer_partitions = writer_partitions(lake, &table).await?;
    let limit = draft.writer_partitions;
    let parts = match over {
        Over::Whole => {
            // One statement, unless the table's partitions are more than a writer holds.
            let list = partitions_of(lake, &table).await?;
            let with_files: Vec<PartitionStats> = list
                .partitions
                .into_iter()
                .filter(|p| p.data_files > 0)
                .collect();
            if list.layout_fields.is_empty() || with_files.len() <= limit {
                return Ok(draft);
            }
            draft.grouped = true;
            draft.note = Some(split_note(&table, with_files.len(), limit));
            with_files
        }
        Over::These(p) => p,
        Over::Named(specs) => {
            let all = partitions_of(lake, &table).await?.partitions;
            let named = select_partitions(&all, &specs)?;
            let (parts, split) = split_wide(&all, named, limit);
            if split > 0 {
                draft.grouped = true;
                draft.note = Some(split_note(&table, split, limit));
            }
            parts
        }
        Over::SmallFiles { min_small } => {
            // From the Tables tab: the table's small-file partitions, incrementally.
            let mut list = partitions_of(lake, &table).await?;
            if list.layout_fields.is_empty() {
                // Read as unpartitioned, maybe from a layout cached before the table was
                // partitioned: its declared layout decides, read again, before a plan of
                // the whole table.
                let now = lake
                    .relearn_layout(&table)
                    .await
                    .map_err(PlanError::read(format!("the layout of {table}")))?;
                if !now.partitioning.is_empty() {
                    list = partitions_of(lake, &table).await?;
                }
            }
            if list.layout_fields.is_empty() {
                // Unpartitioned: the whole table, its one row giving the counts.
                draft.partitions = list.partitions;
                return Ok(draft);
            } else {
                let t = optimize_targets(&table, list.partitions, min_small)?;
                draft.note = t.note;
                draft.grouped = t.grouped;
                t.partitions
            }
        }
    };
    if !parts.is_empty() {
        draft.layout = layout_with_specs(lake, &table).await?;
    }
    draft.partitions = parts;
    Ok(draft)
}

/// The check before a plan is drafted: nobody else writes `t` now (the coordinator's
/// running statements, `others`' maintenance DAGs). What could not be read to tell is
/// returned, to be said beside the plan.
pub async fn unwritten(
    lake: &Lakehouse,
    others: &Others,
    t: &TableRef,
) -> Result<Vec<String>, PlanError> {
    let w = contention::writers(lake, others, t).await?;
    if w.none() {
        Ok(w.unread)
    } else {
        Err(contention::Contended(Box::new(w)).into())
    }
}

/// The measured rate of earlier optimizes (the audit log's and the coordinator's), which
/// the TUI's confirmation and `floe maintain`'s plan estimate from.
pub async fn measured(lake: &Lakehouse, audit_log: std::path::PathBuf) -> Measured {
    let audit = tokio::task::spawn_blocking(move || AuditLog::new(audit_log).read())
        .await
        .unwrap_or_default();
    eta::measure(lake, &audit).await
}

/// The small-file threshold floe uses for a table: `small_file_ratio` × its target
/// (the table property `write.target-file-size-bytes`, else the config's default).
pub async fn small_file_threshold(lake: &Lakehouse, t: &TableRef) -> Result<u64, TrinoError> {
    let props = lake.properties(t).await?;
    let target = props
        .iter()
        .find(|(k, _)| k == "write.target-file-size-bytes")
        .and_then(|(_, v)| v.trim().parse::<u64>().ok())
        .unwrap_or(lake.scan.target_file_size);
    Ok(lake.scan.small_threshold(target))
}

/// What `o` on a table optimizes, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Targets {
    pub partitions: Vec<PartitionStats>,
    pub note: Option<String>,
    pub grouped: bool,
}

/// The partitions to optimize for a table as a whole: those holding `min_small` or more
/// small files; when none does (small files spread thin over many partitions), every
/// partition holding two or more of them, grouped into bounded statements, and a note
/// saying why. Nothing to merge (no partition holds two small files) is an error that
/// says so.
pub fn optimize_targets(
    table: &TableRef,
    partitions: Vec<PartitionStats>,
    min_small: u64,
) -> Result<Targets, PlanError> {
    let (enough, rest): (Vec<PartitionStats>, Vec<PartitionStats>) = partitions
        .into_iter()
        .partition(|p| p.small_files >= min_small);
    if !enough.is_empty() {
        return Ok(Targets {
            partitions: enough,
            note: None,
            grouped: false,
        });
    }
    let spread: Vec<PartitionStats> = rest.into_iter().filter(|p| p.small_files >= 2).collect();
    if spread.is_empty() {
        return Err(PlanError::OverPartitioned(table.clone()));
    }
    let small: u64 = spread.iter().map(|p| p.small_files).sum();
    Ok(Targets {
        note: Some(format!(
            "no partition of {table} holds {min_small} or more small files: its {} small files are spread over {} partitions, so the plan optimizes every one of them, oldest first, grouped {} partitions a statement (g: one statement each)",
            crate::fmt::thousands(small),
            crate::fmt::thousands(spread.len() as u64),
            crate::lakehouse::plan::MAX_GROUP
        )),
        partitions: spread,
        grouped: true,
    })
}

#[cfg(test)]
mod tests;
