//! What floe asks Trino, and how the answers become the domain model. Every per-table
//! health read is one statement that aggregates on the server: no file rows cross the wire.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};

use super::model::{PartitionStats, SnapshotInfo, TableRef, TableStats};
use super::sql::{quote_ident, quote_string};
use crate::health::HealthConfig;
use crate::trino::{Client, QueryOptions, Row, ServerInfo, TrinoError, Value};

/// The first Trino release with `<catalog>.system.iceberg_tables`.
pub const ICEBERG_TABLES_SINCE: u32 = 475;
/// The first release whose `$files` has the `partition` column.
pub const FILES_PARTITION_SINCE: u32 = 465;

/// How a table's files can be grouped into partitions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// `$files.partition` (a ROW of the partition fields).
    PartitionColumn,
    /// The table has no partition column (unpartitioned).
    Unpartitioned,
    /// Older servers: group by the file's directory.
    Directory,
}

/// Reads the lakehouse through one Trino client.
#[derive(Clone)]
pub struct Lakehouse {
    pub client: Client,
    pub catalog: String,
    pub health: HealthConfig,
    /// `nodeVersion` as a number once known (0: unknown); decides which SQL the server
    /// understands. Shared by clones.
    server_version: Arc<AtomicU32>,
    layouts: Arc<Mutex<HashMap<TableRef, Layout>>>,
}

/// The partitions of one table.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PartitionList {
    pub target_file_size: u64,
    pub layout_fields: Vec<String>,
    pub partitions: Vec<PartitionStats>,
}

impl Lakehouse {
    pub fn new(client: Client, catalog: impl Into<String>, health: HealthConfig) -> Lakehouse {
        Lakehouse {
            client,
            catalog: catalog.into(),
            health,
            server_version: Arc::new(AtomicU32::new(0)),
            layouts: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// Ask the coordinator who it is, and remember its version.
    pub async fn connect(&self) -> Result<ServerInfo, TrinoError> {
        let info = self.client.info().await?;
        self.server_version
            .store(info.version_number().unwrap_or(0), Ordering::Relaxed);
        Ok(info)
    }

    pub fn server_version(&self) -> Option<u32> {
        Some(self.server_version.load(Ordering::Relaxed)).filter(|v| *v > 0)
    }

    fn supports(&self, since: u32) -> bool {
        self.server_version().is_none_or(|v| v >= since)
    }

    /// Every Iceberg table of the catalog in the given schemas (all when empty), filtered
    /// by globs over `schema.table`, sorted.
    pub async fn discover(
        &self,
        schemas: &[String],
        globs: &[String],
    ) -> Result<Vec<TableRef>, TrinoError> {
        let cat = quote_ident(&self.catalog);
        let filter = if schemas.is_empty() {
            String::new()
        } else {
            format!(
                " WHERE table_schema IN ({})",
                schemas
                    .iter()
                    .map(|s| quote_string(s))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        let mut rows = None;
        if self.supports(ICEBERG_TABLES_SINCE) {
            let sql =
                format!("SELECT table_schema, table_name FROM {cat}.system.iceberg_tables{filter}");
            match self.client.query(&sql).await {
                Ok(out) => rows = Some(out.rows),
                Err(TrinoError::Query { ref error_name, .. })
                    if matches!(error_name.as_str(), "TABLE_NOT_FOUND" | "SCHEMA_NOT_FOUND") => {}
                Err(e) => return Err(e),
            }
        }
        let rows = match rows {
            Some(r) => r,
            None => {
                let where_ = if filter.is_empty() {
                    " WHERE table_type = 'BASE TABLE' AND table_schema <> 'information_schema'"
                        .to_string()
                } else {
                    format!("{filter} AND table_type = 'BASE TABLE'")
                };
                let sql = format!(
                    "SELECT table_schema, table_name FROM {cat}.information_schema.tables{where_}"
                );
                self.client.query(&sql).await?.rows
            }
        };
        let mut tables: Vec<TableRef> = rows
            .iter()
            .filter_map(|r| {
                Some(TableRef::new(
                    &self.catalog,
                    r.str("table_schema")?,
                    r.str("table_name")?,
                ))
            })
            .filter(|t| {
                globs.is_empty()
                    || globs.iter().any(|g| {
                        glob_match(g, &format!("{}.{}", t.schema, t.table))
                            || glob_match(g, &t.table)
                    })
            })
            .collect();
        tables.sort();
        tables.dedup();
        Ok(tables)
    }

    fn file_layout(&self, t: &TableRef) -> Layout {
        if !self.supports(FILES_PARTITION_SINCE) {
            return Layout::Directory;
        }
        self.layouts
            .lock()
            .ok()
            .and_then(|m| m.get(t).copied())
            .unwrap_or(Layout::PartitionColumn)
    }

    fn set_file_layout(&self, t: &TableRef, l: Layout) {
        if let Ok(mut m) = self.layouts.lock() {
            m.insert(t.clone(), l);
        }
    }

    /// Run a per-table statement; when `$files` has no `partition` column the table is
    /// unpartitioned: remember that and run the unpartitioned form.
    async fn with_layout<F>(&self, t: &TableRef, build: F) -> Result<(Vec<Row>, Layout), TrinoError>
    where
        F: Fn(Layout) -> String,
    {
        let layout = self.file_layout(t);
        match self
            .client
            .execute(&build(layout), QueryOptions::default())
            .await
        {
            Ok(out) => Ok((out.rows, layout)),
            Err(TrinoError::Query {
                ref error_name,
                ref message,
                ..
            }) if layout == Layout::PartitionColumn
                && error_name == "COLUMN_NOT_FOUND"
                && message.contains("partition") =>
            {
                self.set_file_layout(t, Layout::Unpartitioned);
                let out = self
                    .client
                    .execute(&build(Layout::Unpartitioned), QueryOptions::default())
                    .await?;
                Ok((out.rows, Layout::Unpartitioned))
            }
            Err(e) => Err(e),
        }
    }

    /// The health facts of one table, in one statement.
    pub async fn table_stats(&self, t: &TableRef) -> Result<TableStats, TrinoError> {
        let (rows, layout) = self
            .with_layout(t, |l| stats_sql(t, &self.health, l))
            .await?;
        let row = rows.first().ok_or_else(|| TrinoError::Malformed {
            url: self.client.url().to_string(),
            message: format!("health query of {t} returned no row"),
        })?;
        parse_stats(row, layout).map_err(|m| TrinoError::Malformed {
            url: self.client.url().to_string(),
            message: format!("health query of {t}: {m}"),
        })
    }

    /// Per-partition file counts and sizes of one table.
    pub async fn partitions(&self, t: &TableRef) -> Result<PartitionList, TrinoError> {
        let (rows, layout) = self
            .with_layout(t, |l| partitions_sql(t, &self.health, l))
            .await?;
        let mut list = PartitionList::default();
        for r in &rows {
            list.target_file_size = r.u64("target").unwrap_or(self.health.target_file_size);
            let values = match (layout, r.get("part")) {
                (Layout::PartitionColumn, Some(Value::Row(fields))) => fields
                    .iter()
                    .enumerate()
                    .map(|(i, (name, v))| {
                        let name = name.clone().unwrap_or_else(|| format!("field{i}"));
                        let text = (!v.is_null()).then(|| partition_value_text(&name, v));
                        (name, text)
                    })
                    .collect(),
                (Layout::Directory, Some(v)) => {
                    vec![(
                        "path".to_string(),
                        v.as_str()
                            .map(|p| p.rsplit('/').next().unwrap_or(p).to_string()),
                    )]
                }
                _ => Vec::new(),
            };
            if list.layout_fields.is_empty() {
                list.layout_fields = values.iter().map(|(k, _)| k.clone()).collect();
            }
            list.partitions.push(PartitionStats {
                values,
                data_files: r.u64("files").unwrap_or(0),
                small_files: r.u64("small_files").unwrap_or(0),
                total_bytes: r.u64("bytes").unwrap_or(0),
                records: r.u64("records").unwrap_or(0),
                min_file: r.u64("min_size").unwrap_or(0),
                max_file: r.u64("max_size").unwrap_or(0),
                delete_files: r.u64("delete_files").unwrap_or(0),
            });
        }
        if list.target_file_size == 0 {
            list.target_file_size = self.health.target_file_size;
        }
        Ok(list)
    }

    /// Every snapshot of one table, oldest first.
    pub async fn snapshots(&self, t: &TableRef) -> Result<Vec<SnapshotInfo>, TrinoError> {
        let sql = format!(
            "SELECT committed_at, snapshot_id, parent_id, operation, summary FROM {} ORDER BY committed_at",
            t.meta("snapshots")
        );
        let out = self.client.query(&sql).await?;
        out.rows
            .iter()
            .map(|r| {
                parse_snapshot(r).map_err(|m| TrinoError::Malformed {
                    url: self.client.url().to_string(),
                    message: format!("snapshots of {t}: {m}"),
                })
            })
            .collect()
    }

    /// Columns and partitioning of a table (`DESCRIBE` and `SHOW CREATE TABLE`), what a
    /// maintenance plan needs to type its predicates.
    pub async fn table_layout(
        &self,
        t: &TableRef,
    ) -> Result<super::maintenance::TableLayout, TrinoError> {
        let cols = self.client.query(&format!("DESCRIBE {}", t.sql())).await?;
        let columns = cols
            .rows
            .iter()
            .filter_map(|r| Some((r.str("Column")?.to_string(), r.str("Type")?.to_string())))
            .collect();
        let create = self
            .client
            .query(&format!("SHOW CREATE TABLE {}", t.sql()))
            .await?;
        let text = create
            .rows
            .first()
            .and_then(|r| r.values.first())
            .and_then(Value::as_str)
            .unwrap_or("");
        let partitioning =
            super::maintenance::partitioning_from_show_create(text).map_err(|m| {
                TrinoError::Malformed {
                    url: self.client.url().to_string(),
                    message: format!("partitioning of {t}: {m}"),
                }
            })?;
        Ok(super::maintenance::TableLayout {
            columns,
            partitioning,
        })
    }

    /// `key → value` of `$properties`.
    pub async fn properties(&self, t: &TableRef) -> Result<Vec<(String, String)>, TrinoError> {
        let out = self
            .client
            .query(&format!("SELECT key, value FROM {}", t.meta("properties")))
            .await?;
        Ok(out
            .rows
            .iter()
            .filter_map(|r| {
                Some((
                    r.str("key")?.to_string(),
                    r.str("value").unwrap_or("").to_string(),
                ))
            })
            .collect())
    }
}

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

fn parse_snapshot(r: &Row) -> Result<SnapshotInfo, String> {
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

/// A partition value as the operator reads it: month/hour/year transforms (integers since
/// 1970 in `$files`) shown as Iceberg writes them in paths (`2026-03`, `2026-03-02-14`).
pub fn partition_value_text(field: &str, v: &Value) -> String {
    if let Some(n) = v.as_i64()
        && matches!(v, Value::Int(_))
    {
        if field.ends_with("_month") {
            let y = 1970 + n.div_euclid(12);
            let m = n.rem_euclid(12) + 1;
            return format!("{y:04}-{m:02}");
        }
        if field.ends_with("_year") {
            return format!("{:04}", 1970 + n);
        }
        if field.ends_with("_hour")
            && let Some(t) = DateTime::from_timestamp(n * 3600, 0)
        {
            return t.format("%Y-%m-%d-%H").to_string();
        }
    }
    v.display()
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

    #[test]
    fn transform_values() {
        assert_eq!(
            partition_value_text("ts_month", &Value::Int(674)),
            "2026-03"
        );
        assert_eq!(partition_value_text("ts_year", &Value::Int(56)), "2026");
        assert_eq!(
            partition_value_text("ts_hour", &Value::Int(494_000)),
            "2026-05-10-08"
        );
        assert_eq!(partition_value_text("id_bucket", &Value::Int(7)), "7");
        assert_eq!(
            partition_value_text("district", &Value::Text("north".into())),
            "north"
        );
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
