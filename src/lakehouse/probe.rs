//! The change probe: per table when its newest metadata file was written, read from
//! `$metadata_log_entries` alone (the table's metadata file, no manifest is opened), for
//! many tables in one `UNION ALL` statement. Every commit writes a metadata file — a new
//! snapshot, an expiry, a property, schema or partition-spec change alike — so a table
//! whose newest metadata file is the one its stats were read at is unchanged and keeps
//! them; only the others get the health statement again. Servers before 444 have no
//! metadata log: there the probe reads the newest snapshot, its commit time and the number
//! of snapshots from `$snapshots`, which sees writes and expiries but not the rest.
//! Pure: the statement's text and how its rows are read.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::model::TableRef;
use super::statements::RowsError;
use crate::trino::Row;

/// What the probe sees of one table: enough to tell that it changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Probe {
    /// The id of the newest snapshot (none for a table without snapshots).
    pub snapshot_id: Option<i64>,
    /// When the newest snapshot was committed.
    pub committed_at: Option<DateTime<Utc>>,
    /// How many snapshots the table has (an expiry changes it, not the newest id); 0
    /// from the metadata-log probe, which does not count them.
    pub snapshots: u64,
    /// When the newest metadata file was written (the metadata-log probe): what decides
    /// whether the table changed, when known.
    #[serde(default)]
    pub metadata_at: Option<DateTime<Utc>>,
    /// Metadata files in the log, the current one included (the metadata-log probe): the
    /// survey leaves them to it.
    #[serde(default)]
    pub metadata_files: Option<u64>,
}

/// Tables probed per statement by default: the config's default (`probe_batch`).
pub use crate::config::DEFAULT_PROBE_BATCH;

/// One statement probing `tables`: one branch per table, each reading its
/// `$metadata_log_entries` (with `metadata_log`, Trino 444+) or else its `$snapshots`
/// exactly once (no `WITH`: Trino would inline it into every reference). Rows carry the
/// branch's index in `tables` as `i`.
pub fn probe_sql(tables: &[TableRef], metadata_log: bool) -> String {
    tables
        .iter()
        .enumerate()
        .map(|(i, t)| {
            if metadata_log {
                format!(
                    "SELECT {i} AS i, max_by(latest_snapshot_id, \"timestamp\") AS snapshot_id, \
                     to_unixtime(max(\"timestamp\")) AS metadata_at, count(*) AS metadata_files FROM {}",
                    t.meta("metadata_log_entries")
                )
            } else {
                format!(
                    "SELECT {i} AS i, count(*) AS snapshots, max_by(snapshot_id, committed_at) AS snapshot_id, \
                     to_unixtime(max(committed_at)) AS committed_at FROM {}",
                    t.meta("snapshots")
                )
            }
        })
        .collect::<Vec<_>>()
        .join("\nUNION ALL\n")
}

/// The probes of a batch's rows, by index in the batch; a table without a row is an
/// error of the statement (every branch is an aggregate: it always has one row).
pub fn parse_probe(rows: &[Row], batch: usize) -> Result<Vec<Probe>, RowsError> {
    by_index(rows, batch, "probe", |r| Probe {
        snapshot_id: r.i64("snapshot_id"),
        committed_at: r
            .get("committed_at")
            .and_then(crate::trino::Value::as_datetime),
        snapshots: r.u64("snapshots").unwrap_or(0),
        metadata_at: r
            .get("metadata_at")
            .and_then(crate::trino::Value::as_datetime),
        metadata_files: r.u64("metadata_files"),
    })
}

/// Tables ranked per statement on a cold start (see [`rank_sql`]): as few as
/// [`LAYOUT_BATCH`], for the same reason: the file reads wait for the surveys.
pub const RANK_BATCH: usize = LAYOUT_BATCH;

/// One statement telling, for each of `tables`, what [`layout_sql`] tells (how many
/// partition fields its current manifests have) and how many files they hold
/// (`added_data_files_count + existing_data_files_count` over the current manifests), from
/// `$manifests` alone (the manifest lists: no manifest is opened). The layout statement a
/// cold start sends anyway, counting files too: what orders its first health reads, the
/// tables with the most live files first, where small files pile up.
pub fn rank_sql(tables: &[TableRef], summaries: &str) -> String {
    manifests_sql(
        tables,
        &format!(
            "max(cardinality({summaries})) AS partition_fields, \
             COALESCE(sum(added_data_files_count + existing_data_files_count), 0) AS live_files"
        ),
    )
}

/// One branch per table, `SELECT <i> AS i, <aggregates> FROM <its $manifests>`, joined by
/// `UNION ALL`: each table's manifest list read once (the layout and rank statements).
fn manifests_sql(tables: &[TableRef], aggregates: &str) -> String {
    tables
        .iter()
        .enumerate()
        .map(|(i, t)| format!("SELECT {i} AS i, {aggregates} FROM {}", t.meta("manifests")))
        .collect::<Vec<_>>()
        .join("\nUNION ALL\n")
}

/// Per table of a batch of [`rank_sql`], by index in the batch: its layout as
/// [`parse_layouts`] reads it, and the files its current manifests hold.
pub fn parse_rank(rows: &[Row], batch: usize) -> Result<Vec<(Option<bool>, u64)>, RowsError> {
    by_index(rows, batch, "rank", |r| {
        (
            r.i64("partition_fields").map(|n| n > 0),
            r.u64("live_files").unwrap_or(0),
        )
    })
}

/// One value per table of a batched statement whose branches return one row each,
/// carrying the table's index in the batch as `i`.
pub(crate) fn by_index<T: Clone>(
    rows: &[Row],
    batch: usize,
    what: &'static str,
    read: impl Fn(&Row) -> T,
) -> Result<Vec<T>, RowsError> {
    let mut out: Vec<Option<T>> = vec![None; batch];
    for r in rows {
        out[index_of(r, batch, what)?] = Some(read(r));
    }
    out.into_iter()
        .enumerate()
        .map(|(index, p)| p.ok_or(RowsError::NoRow { what, index }))
        .collect()
}

/// The rows of a batch statement, grouped by the index (`i`) they carry: a table may have
/// any number of rows, none included (see [`by_index`] for one row a table).
pub(crate) fn rows_by_index(
    rows: &[Row],
    batch: usize,
    what: &'static str,
) -> Result<Vec<Vec<Row>>, RowsError> {
    let mut out: Vec<Vec<Row>> = vec![Vec::new(); batch];
    for r in rows {
        out[index_of(r, batch, what)?].push(r.clone());
    }
    Ok(out)
}

/// The index in its batch (`i`) a row of a batched statement carries.
fn index_of(r: &Row, batch: usize, what: &'static str) -> Result<usize, RowsError> {
    let i = r.i64("i").ok_or(RowsError::NoIndex { what })?;
    usize::try_from(i)
        .ok()
        .filter(|&i| i < batch)
        .ok_or(RowsError::OutsideBatch {
            what,
            index: i,
            batch,
        })
}

/// The first release whose `$manifests` column is `partition_summaries` (`partitions`
/// before).
pub const PARTITION_SUMMARIES_SINCE: u32 = 468;

/// One statement telling, for each of `tables`, how many partition fields its current
/// manifests have, from `$manifests` alone (the manifest lists, no manifest is opened):
/// one branch per table, each reading its `$manifests` once. `summaries` is the column's
/// name on this server (`partition_summaries`, `partitions` before 468).
pub fn layout_sql(tables: &[TableRef], summaries: &str) -> String {
    manifests_sql(
        tables,
        &format!("max(cardinality({summaries})) AS partition_fields"),
    )
}

/// Tables whose layouts one statement learns (each branch reads one manifest list).
/// Small: the first reads wait for it, and on a real coordinator a `UNION ALL`'s planning
/// grows faster than its width (Trino 476: 10 `$manifests` branches in about 1 s, 50 in
/// 8-11 s on two cores, where the lab's server took 30 ms).
pub const LAYOUT_BATCH: usize = 10;

/// Which tables' layouts to learn when the table at `at` of `listed` is about to be read,
/// `unknown` telling which are still to learn: the table itself with the next ones still
/// unknown (then those listed before it), up to `batch`; when it is known, the same
/// from the first unknown table within half a batch after it (read ahead, so that the
/// reads that follow find their layouts known); nothing when there is none.
pub fn layout_batch(
    listed: &[TableRef],
    at: usize,
    unknown: impl Fn(&TableRef) -> bool,
    batch: usize,
) -> Vec<TableRef> {
    let Some(t) = listed.get(at) else {
        return Vec::new();
    };
    let from = if unknown(t) {
        at
    } else {
        let ahead = (at + 1)..(at + 1 + batch / 2).min(listed.len());
        match ahead.into_iter().find(|&i| unknown(&listed[i])) {
            Some(i) => i,
            None => return Vec::new(),
        }
    };
    let (earlier, later) = listed.split_at(from);
    later
        .iter()
        .chain(earlier)
        .filter(|x| unknown(x))
        .take(batch)
        .cloned()
        .collect()
}

/// Per table of the batch: `Some(true)` when its current manifests are partitioned
/// (`$files` has a `partition` column), `Some(false)` when they are not (the
/// unpartitioned statements fit it: every live file is in one partition), `None` when it
/// has no manifest to tell.
pub fn parse_layouts(rows: &[Row], batch: usize) -> Result<Vec<Option<bool>>, RowsError> {
    by_index(rows, batch, "layout", |r| {
        r.i64("partition_fields").map(|n| n > 0)
    })
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
        let sql = probe_sql(&ts, false);
        assert_eq!(sql.matches("UNION ALL").count(), 1);
        assert_eq!(sql.matches("$snapshots").count(), 2);
        assert!(!sql.contains("WITH"));
        assert!(
            sql.contains(r#""iceberg"."b"."we""ird$snapshots""#),
            "{sql}"
        );
        assert!(sql.starts_with("SELECT 0 AS i"));
        assert!(sql.contains("SELECT 1 AS i"));
        // With the metadata log: that table alone, once per table.
        let sql = probe_sql(&ts, true);
        assert_eq!(sql.matches("$metadata_log_entries").count(), 2);
        assert!(!sql.contains("$snapshots"), "{sql}");
        assert!(sql.contains("AS metadata_at"), "{sql}");
        assert!(sql.starts_with("SELECT 0 AS i"));
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
        let missing = parse_probe(&rows(&[(0, Some(1), None, 1)]), 2).unwrap_err();
        assert_eq!(
            missing,
            RowsError::NoRow {
                what: "probe",
                index: 1
            }
        );
        assert_eq!(missing.to_string(), "no probe row for table 1 of the batch");
        let stray = parse_probe(&rows(&[(5, Some(1), None, 1)]), 2).unwrap_err();
        assert_eq!(
            stray.to_string(),
            "a probe row has index 5, outside the batch of 2"
        );
    }

    #[test]
    fn the_layout_batch_reads_each_tables_manifest_list_once() {
        let ts = [
            TableRef::new("iceberg", "a", "x"),
            TableRef::new("iceberg", "b", "y"),
        ];
        let sql = layout_sql(&ts, "partition_summaries");
        assert_eq!(sql.matches("$manifests").count(), 2);
        assert_eq!(sql.matches("UNION ALL").count(), 1);
        assert!(sql.contains("cardinality(partition_summaries)"), "{sql}");
        assert!(layout_sql(&ts, "partitions").contains("cardinality(partitions)"));
        let col = |n: &str| Column {
            name: n.into(),
            type_text: "bigint".into(),
            ty: TrinoType::parse("bigint").unwrap(),
        };
        let cols = Arc::new(vec![col("i"), col("partition_fields")]);
        let row = |i: i64, n: Option<i64>| Row {
            columns: cols.clone(),
            values: vec![Value::Int(i), n.map(Value::Int).unwrap_or(Value::Null)],
        };
        let got = parse_layouts(&[row(2, None), row(0, Some(2)), row(1, Some(0))], 3).unwrap();
        assert_eq!(got, vec![Some(true), Some(false), None]);
        assert!(parse_layouts(&[row(0, Some(1))], 2).is_err());
    }

    #[test]
    fn layouts_are_learned_from_the_table_read_and_half_a_batch_ahead() {
        let listed: Vec<TableRef> = (0..10)
            .map(|i| TableRef::new("c", "s", format!("t{i}")))
            .collect();
        let names = |b: Vec<TableRef>| b.into_iter().map(|t| t.table).collect::<Vec<_>>();
        // Nothing known: the table read and the next ones.
        assert_eq!(
            names(layout_batch(&listed, 2, |_| true, 4)),
            ["t2", "t3", "t4", "t5"]
        );
        // Near the end: then those listed before it.
        assert_eq!(
            names(layout_batch(&listed, 8, |_| true, 4)),
            ["t8", "t9", "t0", "t1"]
        );
        // Known up to t5: reading t4 learns from t6 on (within half a batch ahead).
        let known_to_5 = |t: &TableRef| t.table.as_str() > "t5";
        assert_eq!(
            names(layout_batch(&listed, 4, known_to_5, 4)),
            ["t6", "t7", "t8", "t9"]
        );
        // Reading t2, t6 is more than half a batch ahead: nothing yet.
        assert!(layout_batch(&listed, 2, known_to_5, 4).is_empty());
        // Everything known, or a position outside the list: nothing.
        assert!(layout_batch(&listed, 3, |_| false, 4).is_empty());
        assert!(layout_batch(&listed, 10, |_| true, 4).is_empty());
    }

    #[test]
    fn the_rank_reads_each_tables_manifest_list_once() {
        let ts = [
            TableRef::new("iceberg", "a", "x"),
            TableRef::new("iceberg", "b", "y"),
        ];
        let sql = rank_sql(&ts, "partition_summaries");
        assert_eq!(sql.matches("$manifests").count(), 2);
        assert_eq!(sql.matches("UNION ALL").count(), 1);
        assert!(sql.starts_with("SELECT 0 AS i"), "{sql}");
        assert!(sql.contains("cardinality(partition_summaries)"), "{sql}");
        assert!(rank_sql(&ts, "partitions").contains("cardinality(partitions)"));
        let col = |n: &str| Column {
            name: n.into(),
            type_text: "bigint".into(),
            ty: TrinoType::parse("bigint").unwrap(),
        };
        let cols = Arc::new(vec![col("i"), col("partition_fields"), col("live_files")]);
        let row = |i: i64, p: Option<i64>, n: i64| Row {
            columns: cols.clone(),
            values: vec![
                Value::Int(i),
                p.map(Value::Int).unwrap_or(Value::Null),
                Value::Int(n),
            ],
        };
        assert_eq!(
            parse_rank(&[row(1, Some(0), 40), row(0, Some(2), 3)], 2).unwrap(),
            vec![(Some(true), 3), (Some(false), 40)]
        );
        assert_eq!(parse_rank(&[row(0, None, 0)], 1).unwrap(), vec![(None, 0)]);
        assert!(parse_rank(&[row(0, Some(1), 3)], 2).is_err());
    }

    #[test]
    fn a_failed_batch_splits_down_to_one_table() {
        assert_eq!(split(50), Some(25));
        assert_eq!(split(3), Some(1));
        assert_eq!(split(2), Some(1));
        assert_eq!(split(1), None);
    }
}
