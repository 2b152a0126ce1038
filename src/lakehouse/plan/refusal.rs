//! Why a plan cannot be built as asked: each refusal names the table, the partition and
//! what the operator can do instead, before any confirmation is shown.

use std::fmt;

use super::predicate::PredicateError;
use crate::lakehouse::model::TableRef;

/// The partition a refusal is about: `partition district=north of iceberg.zoning.permits`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionOf {
    pub table: TableRef,
    /// Its label, as the Partitions tab shows it.
    pub partition: String,
}

impl PartitionOf {
    pub fn new(table: &TableRef, partition: String) -> Box<PartitionOf> {
        Box::new(PartitionOf {
            table: table.clone(),
            partition,
        })
    }
}

impl fmt::Display for PartitionOf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "partition {} of {}", self.partition, self.table)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlanRefusal {
    #[error(transparent)]
    Predicate(#[from] PredicateError),
    /// A partition of a table whose partitioning was removed.
    #[error(
        "{} is no longer partitioned, but {} belongs to its earlier partitioning: no predicate can select it alone, and a plan without one would rewrite every file of the table; {}",
        at.table,
        at.partition,
        whole_table(&at.table)
    )]
    NoLongerPartitioned { at: Box<PartitionOf> },
    /// A partition by a field the current spec no longer has (`current`: its fields).
    #[error(
        "{at}: field {field:?} is not in the table's current partitioning ({}): it belongs to an earlier partition spec, which Trino cannot select; {}",
        current.join(", "),
        whole_table(&at.table)
    )]
    EarlierSpec {
        at: Box<PartitionOf>,
        field: String,
        current: Vec<String>,
    },
    /// The live files span several specs (`specs`, as `spec 0: a; spec 1: a, b`) and a
    /// partial partition names a field one of them lacks.
    #[error(
        "{at}: the table's live files span several partition specs ({specs}), and field {field:?} is not in every one of them: Trino cannot select by it; {}",
        whole_partitions(&at.table)
    )]
    NotInEverySpec {
        at: Box<PartitionOf>,
        field: String,
        specs: String,
    },
    #[error("{at}: spec {spec_id} no longer holds live files ({specs}); read the partitions again")]
    SpecGone {
        at: Box<PartitionOf>,
        spec_id: i32,
        specs: String,
    },
    #[error("{at}: spec {spec_id} has field {field:?}, which its partition row lacks")]
    RowLacksField {
        at: Box<PartitionOf>,
        spec_id: i32,
        field: String,
    },
    #[error("{at}: field {field:?} has a value, but spec {spec_id} has no such field ({specs})")]
    FieldNotInSpec {
        at: Box<PartitionOf>,
        field: String,
        spec_id: i32,
        specs: String,
    },
    /// Only its path selects it in a table of several specs, and that path is another's.
    #[error(
        "{at} cannot be selected: the table's live files span several partition specs ({specs}), so only its path (\"$partition\") selects it, and Iceberg writes NULL and the string 'null' alike there; {}",
        whole_partitions(&at.table)
    )]
    AmbiguousPath { at: Box<PartitionOf>, specs: String },
}

fn whole_table(t: &TableRef) -> String {
    format!("optimize the whole table instead (`floe maintain optimize {t}` without --partition)")
}

fn whole_partitions(t: &TableRef) -> String {
    format!(
        "name whole partitions (as the Partitions tab lists them, with their spec), or optimize \
         the whole table (`floe maintain optimize {t}` without --partition)"
    )
}
