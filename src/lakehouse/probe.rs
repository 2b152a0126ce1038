//! The change probe: per table the newest snapshot, its commit time and the number of
//! snapshots, read from `$snapshots` alone (metadata only, no manifest is opened), for
//! many tables in one `UNION ALL` statement. A table whose probe did not change since its
//! last full read keeps its stats; only the others get the health statement again.
//! Pure: the statement's text and how its rows are read.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::model::TableRef;
use crate::trino::Row;

/// What the probe sees of one table: enough to tell that it changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Probe {
    /// The id of the newest snapshot (none for a table without snapshots).
    pub snapshot_id: Option<i64>,
    /// When the newest snapshot was committed.
    pub committed_at: Option<DateTime<Utc>>,
    /// How many snapshots the table has (an expiry changes it, not the newest id).
    pub snapshots: u64,
}

/// Tables probed per statement by default (`probe_batch`).
pub const DEFAULT_PROBE_BATCH: usize = 50;

/// One statement probing `tables`: one branch per table, each reading its `$snapshots`
/// exactly once (no `WITH`: Trino would inline it into every reference). Rows carry the
/// branch's index in `tables` as `i`.
pub fn probe_sql(tables: &[TableRef]) -> String {
    tables
        .iter()
        .enumerate()
        .map(|(i, t)| {
            format!(
                "SELECT {i} AS i, count(*) AS snapshots, max_by(snapshot_id, committed_at) AS snapshot_id, \
                 to_unixtime(max(committed_at)) AS committed_at FROM {}",
                t.meta("snapshots")
            )
        })
        .collect::<Vec<_>>()
        .join("\nUNION ALL\n")
}

/// The probes of a batch's rows, by index in the batch; a table without a row is an
/// error of the statement (every branch is an aggregate: it always has one row).
pub fn parse_probe(rows: &[Row], batch: usize) -> Result<Vec<Probe>, String> {
    let mut out: Vec<Option<Probe>> = vec![None; batch];
    for r in rows {
        let i = r.i64("i").ok_or("a probe row has no index")?;
        let slot = usize::try_from(i)
            .ok()
            .and_then(|i| out.get_mut(i))
            .ok_or_else(|| format!("a probe row has index {i}, outside the batch of {batch}"))?;
        *slot = Some(Probe {
            snapshot_id: r.i64("snapshot_id"),
            committed_at: r
                .get("committed_at")
                .and_then(crate::trino::Value::as_datetime),
            snapshots: r.u64("snapshots").unwrap_or(0),
        });
    }
    out.into_iter()
        .enumerate()
        .map(|(i, p)| p.ok_or_else(|| format!("no probe row for table {i} of the batch")))
        .collect()
}

/// How a batch that failed is split: in halves, down to single tables, so one broken
/// table (dropped, permission denied) is found in a few statements and cannot blind the
/// others. `None` when the batch is a single table (its error is its own).
pub fn split(len: usize) -> Option<usize> {
    (len > 1).then_some(len / 2)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::trino::{Column, TrinoType, Value};

    fn rows(vals: &[(i64, Option<i64>, Option<f64>, i64)]) -> Vec<Row> {
        let col = |n: &str, t: &str| Column {
            name: n.into(),
            type_text: t.into(),
            ty: TrinoType::parse(t).unwrap(),
        };
        let cols = Arc::new(vec![
            col("i", "integer"),
            col("snapshots", "bigint"),
            col("snapshot_id", "bigint"),
            col("committed_at", "double"),
        ]);
        vals.iter()
            .map(|(i, id, at, n)| Row {
                columns: cols.clone(),
                values: vec![
                    Value::Int(*i),
                    Value::Int(*n),
                    id.map(Value::Int).unwrap_or(Value::Null),
                    at.map(Value::Double).unwrap_or(Value::Null),
                ],
            })
            .collect()
    }

    #[test]
    fn one_branch_per_table_each_reading_snapshots_once() {
        let ts = [
            TableRef::new("iceberg", "a", "x"),
            TableRef::new("iceberg", "b", "we\"ird"),
        ];
        let sql = probe_sql(&ts);
        assert_eq!(sql.matches("UNION ALL").count(), 1);
        assert_eq!(sql.matches("$snapshots").count(), 2);
        assert!(!sql.contains("WITH"));
        assert!(
            sql.contains(r#""iceberg"."b"."we""ird$snapshots""#),
            "{sql}"
        );
        assert!(sql.starts_with("SELECT 0 AS i"));
        assert!(sql.contains("SELECT 1 AS i"));
    }

    #[test]
    fn rows_come_back_by_index_in_any_order() {
        let r = rows(&[(1, Some(7), Some(1_700_000_000.0), 3), (0, None, None, 0)]);
        let p = parse_probe(&r, 2).unwrap();
        assert_eq!(p[0].snapshot_id, None);
        assert_eq!(p[0].snapshots, 0);
        assert_eq!(p[1].snapshot_id, Some(7));
        assert_eq!(p[1].snapshots, 3);
        assert_eq!(p[1].committed_at.unwrap().timestamp(), 1_700_000_000);
    }

    #[test]
    fn a_missing_or_stray_row_is_an_error() {
        assert!(parse_probe(&rows(&[(0, Some(1), None, 1)]), 2).is_err());
        assert!(parse_probe(&rows(&[(5, Some(1), None, 1)]), 2).is_err());
    }

    #[test]
    fn a_failed_batch_splits_down_to_one_table() {
        assert_eq!(split(50), Some(25));
        assert_eq!(split(3), Some(1));
        assert_eq!(split(2), Some(1));
        assert_eq!(split(1), None);
    }
}
