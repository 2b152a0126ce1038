//! A Delta table's optimize: its partitions are its columns' values (identity fields
//! only) and it has no `"$partition"` path, so a grouped statement selects partitions by
//! their values, which Trino's Delta Lake connector takes only as a single column's `IN`
//! list (a disjunction over several columns is not a domain it can enforce: measured on
//! 476, "Unexpected FilterNode found in plan"). Over several columns, one statement a
//! partition, each by its typed predicate.

use super::predicate::{PredicateError, partition_predicate};
use super::{Plan, Procedure, Step, TableLayout, partition_step};
use crate::lakehouse::model::{PartitionStats, TableRef};
use crate::sql::{quote_ident, typed_literal};

/// The plan over `parts` (sorted), grouped when asked and the table has one partition
/// column, at most `group` partitions a statement.
pub(super) fn plan(
    table: &TableRef,
    layout: &TableLayout,
    procedure: Procedure,
    head: &str,
    parts: &[&PartitionStats],
    grouped: bool,
    group: usize,
) -> Result<Plan, PredicateError> {
    let mut steps = Vec::new();
    let single = match layout.partitioning.as_slice() {
        [field] if grouped => Some(field),
        _ => None,
    };
    let Some(field) = single else {
        for p in parts {
            steps.push(partition_step(head, layout, p)?);
        }
        return Ok(plan_of(table, procedure, steps));
    };
    // NULL (and partitions a `--partition` names by no field) keep their own statement
    let (alone, listed): (Vec<&PartitionStats>, Vec<&PartitionStats>) = parts
        .iter()
        .partition(|p| !matches!(p.values.as_slice(), [(name, Some(_))] if *name == field.name));
    let ty = layout
        .column_type(&field.source)
        .ok_or_else(|| PredicateError::NoSourceColumn(field.source.clone()))?
        .to_string();
    for chunk in listed.chunks(group) {
        let sql = if let [p] = chunk {
            format!("{head} WHERE {}", partition_predicate(layout, p)?)
        } else {
            let list = chunk
                .iter()
                .map(|p| typed_literal(&ty, p.values[0].1.as_deref().unwrap_or_default()))
                .collect::<Result<Vec<_>, _>>()?
                .join(", ");
            format!("{head} WHERE {} IN ({list})", quote_ident(&field.source))
        };
        steps.push(Step {
            sql,
            partition: Some(match chunk {
                [p] => p.label(),
                _ => format!("{} partitions", chunk.len()),
            }),
            files: chunk.iter().map(|p| p.data_files).sum(),
            small_files: chunk.iter().map(|p| p.small_files).sum(),
            bytes: chunk.iter().map(|p| p.total_bytes).sum(),
            targets: chunk.iter().map(|p| p.values.clone()).collect(),
            spec_id: None,
        });
    }
    for p in alone {
        steps.push(partition_step(head, layout, p)?);
    }
    Ok(plan_of(table, procedure, steps))
}

fn plan_of(table: &TableRef, procedure: Procedure, steps: Vec<Step>) -> Plan {
    Plan {
        table: table.clone(),
        procedure,
        steps,
        session: Vec::new(),
        notes: Vec::new(),
    }
}
