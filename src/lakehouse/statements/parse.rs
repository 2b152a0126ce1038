//! How the rows of the one-table statements become the domain model: a table's stats, a
//! snapshot, a partition's values.

use super::file_read::partitioned;
use super::*;

pub(super) fn opt_time(r: &Row, name: &str) -> Option<DateTime<Utc>> {
    r.get(name).and_then(Value::as_datetime)
}

/// Decode the row of [`stats_sql`].
pub fn parse_stats(r: &Row, layout: Layout) -> Result<TableStats, NoColumn> {
    let u = |name: &str| -> Result<u64, NoColumn> { Ok(r.req(name)?.as_u64().unwrap_or(0)) };
    let mut trend = Vec::new();
    if let (Some(Value::Array(at)), Some(Value::Array(files))) =
        (r.get("trend_at"), r.get("trend_files"))
    {
        for (a, f) in at.iter().zip(files) {
            if let (Some(t), Some(n)) = (a.as_datetime(), f.as_u64()) {
                trend.push((t, n));
            }
        }
    }
    let trend_tail = crate::lakehouse::summary::trend_tail(r, opt_time(r, "tail_newest"));
    let partitions = u("partitions")?;
    Ok(TableStats {
        format: Default::default(),
        deletion_vector_removals: None,
        snapshot_id: None,
        target_file_size: u("target")?,
        target_from_property: r.req("target_from_property")?.as_bool().unwrap_or(false),
        data_files: u("data_files")?,
        small_files: u("small_files")?,
        total_bytes: u("total_bytes")?,
        records: u("records")?,
        partitioned: partitioned(layout, partitions),
        partitions,
        small_file_partitions: u("small_file_partitions")?,
        critical_partitions: u("critical_partitions")?,
        max_partition_small_files: r.u64("max_partition_small_files"),
        delete_files: u("delete_files")?,
        delete_bytes: u("delete_bytes")?,
        position_delete_files: u("position_delete_files")?,
        position_deletes: u("position_deletes")?,
        equality_delete_files: u("equality_delete_files")?,
        equality_deletes: u("equality_deletes")?,
        large_files: u("large_files")?,
        oldest_small_file_at: opt_time(r, "oldest_small_file_at"),
        oldest_small_is_lower_bound: r
            .get("oldest_small_lower")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        manifests: r.u64("manifests"),
        small_manifests: r.u64("small_manifests"),
        manifest_bytes: r.u64("manifest_bytes"),
        metadata_files: r.u64("metadata_files"),
        metadata_at: opt_time(r, "metadata_at"),
        snapshots: u("snapshots")?,
        oldest_snapshot: opt_time(r, "oldest_snapshot"),
        newest_snapshot: opt_time(r, "newest_snapshot"),
        last_compaction: opt_time(r, "last_compaction"),
        last_write: opt_time(r, "last_write"),
        writes_since_compaction: u("writes_since_compaction")?,
        files_after_compaction: r.u64("files_after_compaction"),
        trend,
        trend_tail,
        files_unread: false,
        deletes_unknown: false,
    })
}

pub(crate) fn parse_snapshot(r: &Row) -> Result<SnapshotInfo, RowsError> {
    let summary = r.req("summary")?;
    let num = |k: &str| summary.map_get(k).and_then(Value::as_u64);
    let text = |k: &str| {
        summary
            .map_get(k)
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    Ok(SnapshotInfo {
        committed_at: r
            .req("committed_at")?
            .as_datetime()
            .ok_or(RowsError::NotA {
                column: "committed_at",
                expected: "timestamp",
            })?,
        snapshot_id: r.req("snapshot_id")?.as_i64().ok_or(RowsError::NotA {
            column: "snapshot_id",
            expected: "bigint",
        })?,
        parent_id: r.i64("parent_id"),
        operation: SnapshotOperation::parse(r.str("operation").unwrap_or("")),
        added_data_files: num("added-data-files"),
        deleted_data_files: num("deleted-data-files"),
        total_data_files: num("total-data-files"),
        added_records: num("added-records"),
        total_records: num("total-records"),
        total_delete_files: num("total-delete-files"),
        added_files_size: num("added-files-size"),
        removed_files_size: num("removed-files-size"),
        trino_user: text("trino_user"),
        trino_query_id: text("trino_query_id"),
    })
}

/// The names of the partition fields in rows of [`partitions_sql`].
pub(crate) fn partition_field_names(rows: &[Row]) -> BTreeSet<String> {
    rows.iter()
        .filter_map(|r| match r.get("part") {
            Some(Value::Row(fields)) => Some(fields),
            _ => None,
        })
        .flatten()
        .filter_map(|(n, _)| n.clone())
        .collect()
}

/// A partition value as the operator reads it, by the field's transform in the table's
/// spec (see [`crate::lakehouse::plan::Transform::render`]). A field the spec does
/// not know is shown as its value: the field's name says nothing about its meaning.
pub fn partition_value_text(field: Option<&PartitionField>, v: &Value) -> String {
    match field {
        Some(f) => f.transform.render(v),
        None => v.display(),
    }
}
