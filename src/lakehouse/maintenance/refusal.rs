//! Why a plan cannot be built as asked: each refusal names the table, the partition and
//! what the operator can do instead, before any confirmation is shown.

use super::predicate::PredicateError;
use crate::lakehouse::model::TableRef;

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlanRefusal {
    #[error(transparent)]
    Predicate(#[from] PredicateError),
    /// A partition of a table whose partitioning was removed.
    #[error(
        "{table} is no longer partitioned, but {partition} belongs to its earlier partitioning: no predicate can select it alone, and a plan without one would rewrite every file of the table; {}",
        whole_table(table)
    )]
    NoLongerPartitioned { table: TableRef, partition: String },
    /// A partition by a field the current spec no longer has (`current`: its fields).
    #[error(
        "partition {partition} of {table}: field {field:?} is not in the table's current partitioning ({}): it belongs to an earlier partition spec, which Trino cannot select; {}",
        current.join(", "),
        whole_table(table)
    )]
    EarlierSpec {
        table: TableRef,
        partition: String,
        field: String,
        current: Vec<String>,
    },
    /// The live files span several specs (`specs`, as `spec 0: a; spec 1: a, b`) and a
    /// partial partition names a field one of them lacks.
    #[error(
        "partition {partition} of {table}: the table's live files span several partition specs ({specs}), and field {field:?} is not in every one of them: Trino cannot select by it; {}",
        whole_partitions(table)
    )]
    NotInEverySpec {
        table: TableRef,
        partition: String,
        field: String,
        specs: String,
    },
    #[error(
        "partition {partition} of {table}: spec {spec_id} no longer holds live files ({specs}); read the partitions again"
    )]
    SpecGone {
        table: TableRef,
        partition: String,
        spec_id: i32,
        specs: String,
    },
    #[error(
        "partition {partition} of {table}: spec {spec_id} has field {field:?}, which its partition row lacks"
    )]
    RowLacksField {
        table: TableRef,
        partition: String,
        spec_id: i32,
        field: String,
    },
    #[error(
        "partition {partition} of {table}: field {field:?} has a value, but spec {spec_id} has no such field ({specs})"
    )]
    FieldNotInSpec {
        table: TableRef,
        partition: String,
        field: String,
        spec_id: i32,
        specs: String,
    },
    /// Only its path selects it in a table of several specs, and that path is another's.
    #[error(
        "partition {partition} of {table} cannot be selected: the table's live files span several partition specs ({specs}), so only its path (\"$partition\") selects it, and Iceberg writes NULL and the string 'null' alike there; {}",
        whole_partitions(table)
    )]
    AmbiguousPath {
        table: TableRef,
        partition: String,
        specs: String,
    },
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
