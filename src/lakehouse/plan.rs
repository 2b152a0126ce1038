//! Maintenance plans: the exact statements floe will run, built without splicing anything
//! raw. Identity partition columns get typed equality predicates, temporal transforms
//! get ranges aligned to the partition's bounds (which Trino's Iceberg connector absorbs
//! into the scan), other transforms use the `"$partition"` path.

use std::fmt;

use serde::Serialize;

use super::model::{PartitionStats, TableRef};
use crate::fmt::human_bytes;
use crate::sql::quote_string;

#[cfg(test)]
mod captures;
mod delta_plan;
mod partitioning;
mod predicate;
mod procedure;
mod refusal;

pub use partitioning::{
    PartitionField, PartitioningError, TableLayout, Transform, delta_partitioning_from_show_create,
    live_specs_sql, parse_partition_entry, partition_path_sql, partitioning_from_show_create,
    spec_fields_from_path,
};
use predicate::path_is_ambiguous;
pub use predicate::{
    PredicateError, files_partition_predicate, partition_path, partition_predicate,
};
pub use procedure::{Procedure, trino_duration};
pub use refusal::{PartitionOf, PlanRefusal};

/// One statement of a plan, with what it is expected to rewrite.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Step {
    pub sql: String,
    /// The partition it targets (`district=north/filed_at_day=2026-03-02`), if any.
    pub partition: Option<String>,
    pub files: u64,
    pub small_files: u64,
    pub bytes: u64,
    /// The partitions the statement rewrites, each as the partition values it must match
    /// (all fields, or the subset a partial `--partition` spec names); after the statement
    /// these are re-read to count what is left. Empty for a table-wide statement.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<Vec<(String, Option<String>)>>,
    /// The partition spec the targets belong to, when the table's live files span several
    /// (the targets are then re-read among that spec's files only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec_id: Option<i32>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Plan {
    pub table: TableRef,
    pub procedure: Procedure,
    pub steps: Vec<Step>,
    /// Session properties the statements need (none by default).
    pub session: Vec<(String, String)>,
    /// What the operator must know before confirming (shown with the plan).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl Plan {
    pub fn files(&self) -> u64 {
        self.steps.iter().map(|s| s.small_files).sum()
    }

    pub fn bytes(&self) -> u64 {
        self.steps.iter().map(|s| s.bytes).sum()
    }

    /// One line that says what the plan does.
    pub fn summary(&self) -> String {
        match &self.procedure {
            Procedure::Optimize { threshold } => {
                let parts = self.steps.iter().filter(|s| s.partition.is_some()).count();
                let scope = if parts > 0 {
                    format!("{parts} partition{}", if parts == 1 { "" } else { "s" })
                } else {
                    "the whole table".to_string()
                };
                // A whole-table plan drafted without reading the table has no counts:
                // say so rather than "0 small files".
                let what = if parts == 0 && self.files() == 0 && self.bytes() == 0 {
                    "files not counted".to_string()
                } else {
                    format!(
                        "{} small files, {}",
                        self.files(),
                        human_bytes(self.bytes())
                    )
                };
                format!(
                    "optimize {} ({scope}, {} statement{}): rewrite files below {} — {what}",
                    self.table,
                    self.steps.len(),
                    if self.steps.len() == 1 { "" } else { "s" },
                    human_bytes(*threshold),
                )
            }
            Procedure::ExpireSnapshots { retention_secs } => {
                format!(
                    "expire snapshots of {} older than {}",
                    self.table,
                    trino_duration(*retention_secs)
                )
            }
            Procedure::RemoveOrphanFiles { retention_secs } => {
                format!(
                    "remove orphan files of {} older than {}",
                    self.table,
                    trino_duration(*retention_secs)
                )
            }
            Procedure::OptimizeManifests => format!("optimize the manifests of {}", self.table),
            Procedure::Vacuum { retention_secs } => format!(
                "vacuum {}: remove the files no version of the last {} references",
                self.table,
                trino_duration(*retention_secs)
            ),
        }
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.summary())?;
        for n in &self.notes {
            writeln!(f, "-- note: {n}")?;
        }
        for (k, v) in &self.session {
            writeln!(f, "-- session: {k}={v}")?;
        }
        for s in &self.steps {
            writeln!(f, "{};", s.sql)?;
        }
        Ok(())
    }
}

/// A table-wide procedure (no WHERE).
pub fn table_plan(table: &TableRef, procedure: Procedure) -> Plan {
    let sql = procedure.statement(table);
    Plan {
        table: table.clone(),
        procedure,
        steps: vec![Step {
            sql,
            partition: None,
            files: 0,
            small_files: 0,
            bytes: 0,
            targets: Vec::new(),
            spec_id: None,
        }],
        session: Vec::new(),
        notes: Vec::new(),
    }
}

/// Partitions one grouped optimize statement covers at most: each statement stays
/// bounded in what it rewrites and in the length of its `IN` list.
pub const MAX_GROUP: usize = 64;

/// The partitions one writer of Trino's Iceberg connector holds open by default
/// (`iceberg.max-partitions-per-writer`, per session `<catalog>.max_partitions_per_writer`):
/// a statement whose rows fall into more partitions than one writer takes fails with
/// `ICEBERG_TOO_MANY_OPEN_PARTITIONS` once a writer gets past it (always, when the
/// coordinator writes with one writer a task).
pub const DEFAULT_WRITER_PARTITIONS: usize = 100;

/// Optimize the given partitions: one statement each (oldest first), or grouped
/// statements over `"$partition"` ([`MAX_GROUP`] partitions each). With no partitions, the whole table; an unpartitioned
/// layout (no partitioning) is always the whole table, one statement that carries the
/// counts of the rows given (what the confirmation shows it will rewrite).
pub fn optimize_plan(
    table: &TableRef,
    layout: &TableLayout,
    partitions: &[PartitionStats],
    threshold: u64,
    grouped: bool,
) -> Result<Plan, PlanRefusal> {
    optimize_plan_within(
        table,
        layout,
        partitions,
        threshold,
        grouped,
        DEFAULT_WRITER_PARTITIONS,
    )
}

/// [`optimize_plan`] on a coordinator whose writers hold at most `writer_partitions`
/// partitions open: a grouped statement covers at most that many (and [`MAX_GROUP`]).
pub fn optimize_plan_within(
    table: &TableRef,
    layout: &TableLayout,
    partitions: &[PartitionStats],
    threshold: u64,
    grouped: bool,
    writer_partitions: usize,
) -> Result<Plan, PlanRefusal> {
    let group = MAX_GROUP.min(writer_partitions).max(1);
    let procedure = Procedure::Optimize { threshold };
    current_spec_selects(table, layout, partitions)?;
    if partitions.is_empty() || layout.partitioning.is_empty() {
        let mut plan = table_plan(table, procedure);
        if let Some(step) = plan.steps.first_mut() {
            step.files = partitions.iter().map(|p| p.data_files).sum();
            step.small_files = partitions.iter().map(|p| p.small_files).sum();
            step.bytes = partitions.iter().map(|p| p.total_bytes).sum();
        }
        return Ok(plan);
    }
    let mut parts: Vec<&PartitionStats> = partitions.iter().collect();
    parts.sort_by_key(|p| temporal_key(layout, p));
    let head = procedure.statement(table);
    if layout.format == crate::lakehouse::delta::TableFormat::Delta {
        return Ok(delta_plan::plan(
            table, layout, procedure, &head, &parts, grouped, group,
        )?);
    }
    if layout.mixed_specs() {
        return mixed_spec_plan(table, layout, procedure, &head, &parts, grouped, group);
    }
    let mut steps = Vec::new();
    let mut notes = Vec::new();
    if grouped {
        // Partitions named by some of the fields only (a `--partition` over the others)
        // have no path to group them by: each keeps its own statement, by its predicate.
        let fields = layout.partitioning.len();
        let (partial, parts): (Vec<&PartitionStats>, Vec<&PartitionStats>) =
            parts.into_iter().partition(|p| p.values.len() < fields);
        // A partition whose path a NULL and the string 'null' share cannot be selected by
        // it: it gets a statement of its own, by its typed predicate (`IS NULL`).
        let (alone, parts): (Vec<&PartitionStats>, Vec<&PartitionStats>) = parts
            .into_iter()
            .partition(|p| path_is_ambiguous(layout, p));
        if !alone.is_empty() {
            notes.push(format!(
                "{} planned alone ({}): Iceberg writes NULL and the string 'null' alike in \
                 a partition path, so a grouped statement cannot select {}",
                if alone.len() == 1 {
                    "1 partition".to_string()
                } else {
                    format!("{} partitions", alone.len())
                },
                alone
                    .iter()
                    .take(3)
                    .map(|p| p.label())
                    .collect::<Vec<_>>()
                    .join(", "),
                if alone.len() == 1 { "it" } else { "them" }
            ));
        }
        // Bounded statements: at most `group` partitions each, oldest first.
        for chunk in parts.chunks(group) {
            let paths: Vec<String> = chunk
                .iter()
                .map(|p| partition_path(p))
                .collect::<Result<_, _>>()?;
            let list = paths
                .iter()
                .map(|p| quote_string(p))
                .collect::<Vec<_>>()
                .join(", ");
            steps.push(Step {
                sql: format!("{head} WHERE \"$partition\" IN ({list})"),
                partition: Some(format!("{} partitions", chunk.len())),
                files: chunk.iter().map(|p| p.data_files).sum(),
                small_files: chunk.iter().map(|p| p.small_files).sum(),
                bytes: chunk.iter().map(|p| p.total_bytes).sum(),
                targets: chunk.iter().map(|p| p.values.clone()).collect(),
                spec_id: None,
            });
        }
        for p in alone.into_iter().chain(partial) {
            steps.push(partition_step(&head, layout, p)?);
        }
    } else {
        for p in parts {
            steps.push(partition_step(&head, layout, p)?);
        }
    }
    Ok(Plan {
        table: table.clone(),
        procedure,
        steps,
        session: Vec::new(),
        notes,
    })
}

/// One statement over `chunk`, partitions of spec `id` (spec, path, stats, label), each
/// selected by its path in its own spec (`"$partition"`).
fn path_step(head: &str, id: i32, chunk: &[(i32, String, &PartitionStats, String)]) -> Step {
    let list = chunk
        .iter()
        .map(|(_, path, _, _)| quote_string(path))
        .collect::<Vec<_>>();
    let (sql, partition) = if chunk.len() == 1 {
        (
            format!("{head} WHERE \"$partition\" = {}", list[0]),
            chunk[0].3.clone(),
        )
    } else {
        (
            format!("{head} WHERE \"$partition\" IN ({})", list.join(", ")),
            format!("{} partitions (spec {id})", chunk.len()),
        )
    };
    Step {
        sql,
        partition: Some(partition),
        files: chunk.iter().map(|(_, _, p, _)| p.data_files).sum(),
        small_files: chunk.iter().map(|(_, _, p, _)| p.small_files).sum(),
        bytes: chunk.iter().map(|(_, _, p, _)| p.total_bytes).sum(),
        targets: chunk.iter().map(|(_, _, p, _)| p.values.clone()).collect(),
        spec_id: Some(id),
    }
}

/// The plan for a table whose live files span several partition specs (see
/// [`TableLayout::mixed_specs`]): each partition selected by its `"$partition"` path in
/// its own spec, a spec's partitions never grouped with another's. A partial spec (some
/// fields only) keeps its predicate where every live spec partitions by those fields, and
/// is refused before the confirmation where one does not. A partition of an earlier spec
/// is rewritten under the current one: the plan says so.
fn mixed_spec_plan(
    table: &TableRef,
    layout: &TableLayout,
    procedure: Procedure,
    head: &str,
    parts: &[&PartitionStats],
    grouped: bool,
    group: usize,
) -> Result<Plan, PlanRefusal> {
    let describe = |fields: &[String]| {
        if fields.is_empty() {
            "unpartitioned".to_string()
        } else {
            fields.join(", ")
        }
    };
    let specs_text = layout
        .live_specs
        .iter()
        .map(|(id, f)| format!("spec {id}: {}", describe(f)))
        .collect::<Vec<_>>()
        .join("; ");
    let current: Vec<String> = layout.partitioning.iter().map(|f| f.name.clone()).collect();
    // (spec, path, partition) of every full partition; the partial specs' own steps.
    let mut by_path: Vec<(i32, String, &PartitionStats, String)> = Vec::new();
    let mut steps = Vec::new();
    let mut earlier: Vec<String> = Vec::new();
    for p in parts {
        let Some(id) = p.spec_id else {
            // A partial spec: a predicate over the named fields, which every live spec
            // must partition by for Trino to enforce it.
            if let Some((name, _)) = p.values.iter().find(|(n, _)| {
                layout
                    .live_specs
                    .iter()
                    .any(|(_, f)| !f.iter().any(|x| x == n))
            }) {
                return Err(PlanRefusal::NotInEverySpec {
                    at: PartitionOf::new(table, p.label()),
                    field: name.clone(),
                    specs: specs_text,
                });
            }
            steps.push(partition_step(head, layout, p)?);
            continue;
        };
        let fields = layout
            .spec_fields(id)
            .ok_or_else(|| PlanRefusal::SpecGone {
                at: PartitionOf::new(table, p.label()),
                spec_id: id,
                specs: specs_text.clone(),
            })?;
        // The partition as its own spec has it: that spec's fields, in its order; the
        // other fields of the union are NULL in `$files` for its files.
        let mut own = Vec::new();
        for name in fields {
            let v = p
                .values
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
                .ok_or_else(|| PlanRefusal::RowLacksField {
                    at: PartitionOf::new(table, p.label()),
                    spec_id: id,
                    field: name.clone(),
                })?;
            own.push((name.clone(), v));
        }
        if let Some((name, _)) = p
            .values
            .iter()
            .find(|(n, v)| v.is_some() && !fields.contains(n))
        {
            return Err(PlanRefusal::FieldNotInSpec {
                at: PartitionOf::new(table, p.label()),
                field: name.clone(),
                spec_id: id,
                specs: specs_text,
            });
        }
        let own_stats = PartitionStats {
            values: own,
            ..(*p).clone()
        };
        if path_is_ambiguous(layout, &own_stats) {
            return Err(PlanRefusal::AmbiguousPath {
                at: PartitionOf::new(table, p.label()),
                specs: specs_text,
            });
        }
        let label = own_stats.label();
        if *fields != current[..] {
            earlier.push(label.clone());
        }
        let path = partition_path(&own_stats)?;
        by_path.push((id, path, p, label));
    }
    if grouped {
        let mut seen = Vec::new();
        for id in by_path.iter().map(|e| e.0) {
            if seen.contains(&id) {
                continue;
            }
            seen.push(id);
            let of: Vec<_> = by_path.iter().filter(|e| e.0 == id).cloned().collect();
            for chunk in of.chunks(group) {
                steps.push(path_step(head, id, chunk));
            }
        }
    } else {
        for entry in &by_path {
            steps.push(path_step(head, entry.0, std::slice::from_ref(entry)));
        }
    }
    let mut notes = vec![format!(
        "the table's live files span several partition specs ({specs_text}): each partition is \
             selected by its path in its own spec (\"$partition\"), which Trino enforces for every \
             spec"
    )];
    if !earlier.is_empty() {
        notes.push(format!(
            "{} belong{} to an earlier partition spec: optimize rewrites {} rows under the \
                 current partitioning ({}), so they move into the current spec's partitions \
                 (new files there; the files already there are not rewritten)",
            earlier.join(", "),
            if earlier.len() == 1 { "s" } else { "" },
            if earlier.len() == 1 { "its" } else { "their" },
            describe(&current),
        ));
    }
    Ok(Plan {
        table: table.clone(),
        procedure,
        steps,
        session: Vec::new(),
        notes,
    })
}

/// Refuse partitions the table's current partitioning cannot select: a table whose
/// partitioning was removed still lists the partitions its files were written in, and a
/// spec change leaves partitions of fields the current spec no longer has. Optimizing
/// one of those would either rewrite the whole table (no predicate left to select it) or
/// be refused by Trino after the confirmation; say so before.
fn current_spec_selects(
    table: &TableRef,
    layout: &TableLayout,
    partitions: &[PartitionStats],
) -> Result<(), PlanRefusal> {
    for p in partitions.iter().filter(|p| !p.values.is_empty()) {
        if layout.partitioning.is_empty() {
            return Err(PlanRefusal::NoLongerPartitioned {
                at: PartitionOf::new(table, p.label()),
            });
        }
        if let Some((name, _)) = p.values.iter().find(|(n, _)| layout.field(n).is_none()) {
            return Err(PlanRefusal::EarlierSpec {
                at: PartitionOf::new(table, p.label()),
                field: name.clone(),
                current: layout.partitioning.iter().map(|f| f.name.clone()).collect(),
            });
        }
    }
    Ok(())
}

/// Sort key: the partition's temporal values first (oldest first), then its label.
fn temporal_key(layout: &TableLayout, p: &PartitionStats) -> (Vec<String>, String) {
    let mut t = Vec::new();
    for (name, v) in &p.values {
        if layout.field(name).is_some_and(|f| {
            matches!(
                f.transform,
                Transform::Year | Transform::Month | Transform::Day | Transform::Hour
            )
        }) {
            t.push(v.clone().unwrap_or_default());
        }
    }
    (t, p.label())
}

/// The optimize of one partition, selected by its values under the current spec.
fn partition_step(
    head: &str,
    layout: &TableLayout,
    p: &PartitionStats,
) -> Result<Step, PredicateError> {
    let predicate = partition_predicate(layout, p)?;
    Ok(Step {
        sql: format!("{head} WHERE {predicate}"),
        partition: Some(p.label()),
        files: p.data_files,
        small_files: p.small_files,
        bytes: p.total_bytes,
        targets: vec![p.values.clone()],
        spec_id: None,
    })
}

#[cfg(test)]
pub(crate) mod tests;
