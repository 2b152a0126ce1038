//! The text of floe's per-table statements and how their rows become the domain model:
//! pure functions (no IO), so each statement can be read, tested and counted on its own.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};

use super::maintenance::{PartitionField, TableLayout, files_partition_predicate};
use super::model::{SnapshotInfo, TableRef, TableStats};
use super::queries::Layout;
use crate::health::HealthConfig;
use crate::trino::{Row, Value};

/// The shared head of the per-table statements: the table's target file size.
fn target_ctes(t: &TableRef, h: &HealthConfig) -> String {
    format!(
        "props AS (\n  SELECT max(CASE WHEN key = 'write.target-file-size-bytes' THEN value END) AS target_prop\n  FROM {props}\n),\n\
         cfg AS (\n  SELECT COALESCE(TRY_CAST(target_prop AS bigint), {default}) AS target,\n         TRY_CAST(target_prop AS bigint) IS NOT NULL AS target_from_property\n  FROM props\n)",
        props = t.meta("properties"),
        default = h.target_file_size,
    )
}

fn part_expr(layout: Layout) -> &'static str {
    match layout {
        Layout::PartitionColumn => "f.partition",
        Layout::Unpartitioned => "CAST(NULL AS varchar)",
        Layout::Directory => "regexp_replace(f.file_path, '/[^/]*$', '')",
    }
}

/// One statement with every health fact of a table (see [`TableStats`]).
pub fn stats_sql(t: &TableRef, h: &HealthConfig, layout: Layout) -> String {
    use crate::health::CRITICAL_AVG_DIVISOR;
    let ratio = h.small_file_ratio;
    let min = h.min_small_files;
    let part = part_expr(layout);
    let part_agg = if layout == Layout::Unpartitioned {
        "part_agg AS (\n  SELECT 0 AS partitions, 0 AS small_file_partitions, 0 AS critical_partitions\n)".to_string()
    } else {
        format!(
            "parts AS (\n  SELECT part, count(*) AS files, count_if(small) AS small, sum(size) AS bytes\n  FROM files WHERE content = 0 GROUP BY part\n),\n\
             part_agg AS (\n  SELECT count(*) AS partitions,\n         count_if(small >= {min}) AS small_file_partitions,\n         count_if(small >= {min} AND bytes < files * (cfg.target / {CRITICAL_AVG_DIVISOR})) AS critical_partitions\n  FROM parts CROSS JOIN cfg\n)"
        )
    };
    format!(
        "WITH\n{target},\n\
         files AS (\n  SELECT f.content, f.file_size_in_bytes AS size, f.record_count AS records, {part} AS part,\n         f.file_size_in_bytes < cfg.target * {ratio} AS small\n  FROM {files} f CROSS JOIN cfg\n),\n\
         file_agg AS (\n  SELECT count_if(content = 0) AS data_files,\n         count_if(content = 0 AND small) AS small_files,\n         COALESCE(sum(CASE WHEN content = 0 THEN size END), 0) AS total_bytes,\n         COALESCE(sum(CASE WHEN content = 0 THEN records END), 0) AS records,\n         count_if(content <> 0) AS delete_files,\n         COALESCE(sum(CASE WHEN content <> 0 THEN size END), 0) AS delete_bytes\n  FROM files\n),\n\
         {part_agg},\n\
         snaps AS (\n  SELECT committed_at, operation,\n         TRY_CAST(element_at(summary, 'total-data-files') AS bigint) AS total_files,\n         TRY_CAST(element_at(summary, 'deleted-data-files') AS bigint) AS deleted_files\n  FROM {snapshots}\n),\n\
         compaction AS (\n  SELECT max(committed_at) AS last_compaction\n  FROM snaps WHERE operation = 'replace' AND deleted_files > 0\n),\n\
         snap_agg AS (\n  SELECT count(*) AS snapshots, min(committed_at) AS oldest_snapshot, max(committed_at) AS newest_snapshot,\n         max(CASE WHEN operation <> 'replace' THEN committed_at END) AS last_write\n  FROM snaps\n),\n\
         since AS (\n  SELECT count_if(s.operation <> 'replace' AND s.committed_at > c.last_compaction) AS writes_since_compaction,\n         max(CASE WHEN s.committed_at = c.last_compaction THEN s.total_files END) AS files_after_compaction\n  FROM snaps s CROSS JOIN compaction c\n),\n\
         trend AS (\n  SELECT array_agg(to_unixtime(committed_at) ORDER BY committed_at) AS trend_at,\n         array_agg(total_files ORDER BY committed_at) AS trend_files\n  FROM snaps WHERE total_files IS NOT NULL\n)\n\
         SELECT cfg.target, cfg.target_from_property,\n       file_agg.data_files, file_agg.small_files, file_agg.total_bytes, file_agg.records,\n       file_agg.delete_files, file_agg.delete_bytes,\n       part_agg.partitions, part_agg.small_file_partitions, part_agg.critical_partitions,\n       snap_agg.snapshots, to_unixtime(snap_agg.oldest_snapshot) AS oldest_snapshot,\n       to_unixtime(snap_agg.newest_snapshot) AS newest_snapshot, to_unixtime(snap_agg.last_write) AS last_write,\n       to_unixtime(compaction.last_compaction) AS last_compaction,\n       since.writes_since_compaction, since.files_after_compaction,\n       trend.trend_at, trend.trend_files\n\
         FROM cfg CROSS JOIN file_agg CROSS JOIN part_agg CROSS JOIN snap_agg CROSS JOIN compaction CROSS JOIN since CROSS JOIN trend",
        target = target_ctes(t, h),
        files = t.meta("files"),
        snapshots = t.meta("snapshots"),
    )
}

/// Per-partition counts of one table.
pub fn partitions_sql(t: &TableRef, h: &HealthConfig, layout: Layout) -> String {
    let part = part_expr(layout);
    format!(
        "WITH\n{target}\n\
         SELECT {part} AS part, cfg.target,\n       count_if(f.content = 0) AS files,\n       count_if(f.content = 0 AND f.file_size_in_bytes < cfg.target * {ratio}) AS small_files,\n       COALESCE(sum(CASE WHEN f.content = 0 THEN f.file_size_in_bytes END), 0) AS bytes,\n       COALESCE(sum(CASE WHEN f.content = 0 THEN f.record_count END), 0) AS records,\n       min(CASE WHEN f.content = 0 THEN f.file_size_in_bytes END) AS min_size,\n       max(CASE WHEN f.content = 0 THEN f.file_size_in_bytes END) AS max_size,\n       count_if(f.content <> 0) AS delete_files\n\
         FROM {files} f CROSS JOIN cfg\n\
         GROUP BY {part}, cfg.target",
        target = target_ctes(t, h),
        ratio = h.small_file_ratio,
        files = t.meta("files"),
    )
}

fn opt_time(r: &Row, name: &str) -> Option<DateTime<Utc>> {
    r.get(name).and_then(Value::as_datetime)
}

/// Decode the row of [`stats_sql`].
pub fn parse_stats(r: &Row, layout: Layout) -> Result<TableStats, String> {
    let u = |name: &str| -> Result<u64, String> { Ok(r.req(name)?.as_u64().unwrap_or(0)) };
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
    let partitions = u("partitions")?;
    Ok(TableStats {
        target_file_size: u("target")?,
        target_from_property: r.req("target_from_property")?.as_bool().unwrap_or(false),
        data_files: u("data_files")?,
        small_files: u("small_files")?,
        total_bytes: u("total_bytes")?,
        records: u("records")?,
        partitioned: match layout {
            Layout::PartitionColumn => true,
            Layout::Unpartitioned => false,
            Layout::Directory => partitions > 1,
        },
        partitions,
        small_file_partitions: u("small_file_partitions")?,
        critical_partitions: u("critical_partitions")?,
        delete_files: u("delete_files")?,
        delete_bytes: u("delete_bytes")?,
        snapshots: u("snapshots")?,
        oldest_snapshot: opt_time(r, "oldest_snapshot"),
        newest_snapshot: opt_time(r, "newest_snapshot"),
        last_compaction: opt_time(r, "last_compaction"),
        last_write: opt_time(r, "last_write"),
        writes_since_compaction: u("writes_since_compaction")?,
        files_after_compaction: r.u64("files_after_compaction"),
        trend,
    })
}

pub(super) fn parse_snapshot(r: &Row) -> Result<SnapshotInfo, String> {
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
            .ok_or("committed_at is not a timestamp")?,
        snapshot_id: r
            .req("snapshot_id")?
            .as_i64()
            .ok_or("snapshot_id is not a bigint")?,
        parent_id: r.i64("parent_id"),
        operation: r.str("operation").unwrap_or("").to_string(),
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
pub(super) fn partition_field_names(rows: &[Row]) -> BTreeSet<String> {
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
/// spec (see [`crate::lakehouse::maintenance::Transform::render`]). A field the spec does
/// not know is shown as its value: the field's name says nothing about its meaning.
pub fn partition_value_text(field: Option<&PartitionField>, v: &Value) -> String {
    match field {
        Some(f) => f.transform.render(v),
        None => v.display(),
    }
}

/// The re-read after an optimize step: files and small files left in its partitions.
pub fn recount_sql(
    t: &TableRef,
    spec: &TableLayout,
    targets: &[Vec<(String, Option<String>)>],
    threshold: u64,
) -> Result<String, String> {
    if targets.is_empty() {
        return Err("no partition to re-read".into());
    }
    let preds = targets
        .iter()
        .map(|values| files_partition_predicate(spec, values).map(|p| format!("({p})")))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(format!(
        "SELECT count_if(f.content = 0) AS files,\n       count_if(f.content = 0 AND f.file_size_in_bytes < {threshold}) AS small_files\nFROM {files} f\nWHERE {preds}",
        files = t.meta("files"),
        preds = preds.join("\n   OR "),
    ))
}

/// `*` and `?` globs (no character classes), case-sensitive as Trino names are.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti, mut star, mut mark) = (0usize, 0usize, None::<usize>, 0usize);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_match("zoning.*", "zoning.documents"));
        assert!(glob_match("*.doc*", "zoning.documents"));
        assert!(glob_match("documents", "documents"));
        assert!(glob_match("d?cuments", "documents"));
        assert!(!glob_match("zoning.*", "finance.ledger"));
        assert!(glob_match("*", ""));
        assert!(!glob_match("a*b", "acd"));
    }

    fn field(entry: &str) -> PartitionField {
        crate::lakehouse::maintenance::parse_partition_entry(entry).unwrap()
    }

    #[test]
    fn transform_values() {
        assert_eq!(
            partition_value_text(Some(&field("month(ts)")), &Value::Int(674)),
            "2026-03"
        );
        assert_eq!(
            partition_value_text(Some(&field("year(ts)")), &Value::Int(56)),
            "2026"
        );
        assert_eq!(
            partition_value_text(Some(&field("hour(ts)")), &Value::Int(494_000)),
            "2026-05-10-08"
        );
        assert_eq!(
            partition_value_text(Some(&field("bucket(id, 16)")), &Value::Int(7)),
            "7"
        );
        assert_eq!(
            partition_value_text(Some(&field("district")), &Value::Text("north".into())),
            "north"
        );
    }

    #[test]
    fn identity_columns_named_like_transforms_keep_their_values() {
        // `fiscal_year` is an identity column: 2026 is the year 2026, not 1970 + 2026.
        for (entry, v, want) in [
            ("fiscal_year", Value::Int(2026), "2026"),
            ("report_month", Value::Int(3), "3"),
            ("shift_hour", Value::Int(14), "14"),
            ("created_day", Value::Int(5), "5"),
        ] {
            let f = field(entry);
            assert_eq!(f.name, entry);
            assert_eq!(partition_value_text(Some(&f), &v), want, "{entry}");
        }
        // A field the spec does not know is its value, whatever its name.
        assert_eq!(partition_value_text(None, &Value::Int(2026)), "2026");
    }

    #[test]
    fn recount_reads_only_the_steps_partitions_typed_by_their_transforms() {
        let t = TableRef::new("iceberg", "finance", "budget");
        let spec = TableLayout {
            columns: vec![
                ("fiscal_year".into(), "integer".into()),
                ("region".into(), "varchar".into()),
                ("ts".into(), "timestamp(6)".into()),
            ],
            partitioning: ["fiscal_year", "region", "month(ts)"]
                .iter()
                .map(|e| field(e))
                .collect(),
        };
        let sql = recount_sql(
            &t,
            &spec,
            &[
                vec![
                    ("fiscal_year".into(), Some("2026".into())),
                    ("region".into(), Some("it's".into())),
                    ("ts_month".into(), Some("2026-03".into())),
                ],
                vec![("region".into(), None)],
            ],
            1000,
        )
        .unwrap();
        assert!(
            sql.contains(r#"(f.partition."fiscal_year" = 2026 AND f.partition."region" = 'it''s' AND f.partition."ts_month" = 674)"#),
            "{sql}"
        );
        assert!(
            sql.contains(r#"OR (f.partition."region" IS NULL)"#),
            "{sql}"
        );
        assert_eq!(sql.matches("$files").count(), 1);
        assert!(!sql.contains("$properties"));
        assert!(recount_sql(&t, &spec, &[vec![("nope".into(), Some("1".into()))]], 1).is_err());
        assert!(recount_sql(&t, &spec, &[], 1).is_err());
    }

    #[test]
    fn stats_sql_reads_every_table_once_and_quotes_names() {
        let t = TableRef::new("iceberg", "finance", r#"ledger "q3" it's-odd"#);
        let sql = stats_sql(&t, &HealthConfig::default(), Layout::PartitionColumn);
        assert!(
            sql.contains(r#""iceberg"."finance"."ledger ""q3"" it's-odd$files""#),
            "{sql}"
        );
        assert_eq!(sql.matches("$files").count(), 1);
        assert_eq!(sql.matches("$snapshots").count(), 1);
        assert_eq!(sql.matches("$properties").count(), 1);
        assert!(sql.contains("element_at(summary, 'total-data-files')"));
        assert!(
            !sql.contains("summary["),
            "missing keys must not fail the query"
        );
        let unpart = stats_sql(&t, &HealthConfig::default(), Layout::Unpartitioned);
        assert!(!unpart.contains("f.partition"));
    }
}
