//! The domain: Iceberg tables as floe sees them through Trino.

use std::fmt;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::spelled::spelled;
use crate::sql::quote_ident;

/// `catalog.schema.table`, each part as Trino knows it (case preserved as reported).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct TableRef {
    pub catalog: String,
    pub schema: String,
    pub table: String,
}

impl TableRef {
    pub fn new(
        catalog: impl Into<String>,
        schema: impl Into<String>,
        table: impl Into<String>,
    ) -> Self {
        TableRef {
            catalog: catalog.into(),
            schema: schema.into(),
            table: table.into(),
        }
    }

    /// The quoted SQL name: `"iceberg"."zoning"."documents"`.
    pub fn sql(&self) -> String {
        format!(
            "{}.{}.{}",
            quote_ident(&self.catalog),
            quote_ident(&self.schema),
            quote_ident(&self.table)
        )
    }

    /// The quoted SQL name of a metadata table: `"iceberg"."zoning"."documents$files"`.
    pub fn meta(&self, suffix: &str) -> String {
        format!(
            "{}.{}.{}",
            quote_ident(&self.catalog),
            quote_ident(&self.schema),
            quote_ident(&format!("{}${suffix}", self.table))
        )
    }

    /// Parse `catalog.schema.table` (double quotes honoured), with defaults for the
    /// missing leading parts.
    pub fn parse(
        text: &str,
        default_catalog: &str,
        default_schema: Option<&str>,
    ) -> Result<TableRef, TableNameError> {
        let parts = crate::sql::split_table_name(text);
        if parts.iter().any(|p| p.is_empty()) {
            return Err(TableNameError::Empty(text.to_string()));
        }
        match parts.as_slice() {
            [c, s, t] => Ok(TableRef::new(c, s, t)),
            [s, t] => Ok(TableRef::new(default_catalog, s, t)),
            [t] => match default_schema {
                Some(s) => Ok(TableRef::new(default_catalog, s, t)),
                None => Err(TableNameError::NoSchema(text.to_string())),
            },
            _ => Err(TableNameError::TooManyParts(text.to_string())),
        }
    }
}

/// A table name that does not name one table (as written).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TableNameError {
    /// An empty part (`a..b`).
    #[error("invalid table name {0:?}")]
    Empty(String),
    #[error("table {0:?} needs a schema: write schema.table")]
    NoSchema(String),
    #[error("invalid table name {0:?}: expected [catalog.]schema.table")]
    TooManyParts(String),
}

impl fmt::Display for TableRef {
    /// `iceberg.zoning.documents`; parts that are not plain identifiers are quoted.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let part = |s: &str| {
            if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                s.to_string()
            } else {
                quote_ident(s)
            }
        };
        write!(
            f,
            "{}.{}.{}",
            part(&self.catalog),
            part(&self.schema),
            part(&self.table)
        )
    }
}

/// Everything floe learns about one table in one refresh (one aggregate query).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TableStats {
    /// The table's format: which rules speak of its maintenance (a Delta table has
    /// versions and vacuum, not snapshots to expire).
    pub format: crate::lakehouse::delta::TableFormat,
    /// A Delta table with deletion vectors on: its DELETE, MERGE and UPDATE commits since
    /// its newest OPTIMIZE (whose removed rows readers filter until one rewrites the files).
    /// `None`: deletion vectors off, or not a Delta table.
    pub deletion_vector_removals: Option<u64>,
    /// The target file size used for this table's verdicts (bytes).
    pub target_file_size: u64,
    /// True when the target came from the table property `write.target-file-size-bytes`.
    pub target_from_property: bool,
    pub data_files: u64,
    pub small_files: u64,
    pub total_bytes: u64,
    pub records: u64,
    pub partitioned: bool,
    pub partitions: u64,
    /// Partitions holding at least `min_small_files` small files.
    pub small_file_partitions: u64,
    /// Partitions holding `critical_partition_small_files` small files more than their
    /// bytes need: a reader of one of them alone pays for its small files.
    pub critical_partitions: u64,
    /// The most small files one partition holds (the table's own when unpartitioned):
    /// under two, optimize has nothing to merge in any partition.
    #[serde(default)]
    pub max_partition_small_files: Option<u64>,
    /// Delete files of both kinds (`position_delete_files + equality_delete_files`).
    pub delete_files: u64,
    pub delete_bytes: u64,
    /// Position delete files (`content` 1) and the rows they delete.
    pub position_delete_files: u64,
    pub position_deletes: u64,
    /// Equality delete files (`content` 2) and their delete keys: every read compares each
    /// row of the files they cover with them, so they cost the most.
    pub equality_delete_files: u64,
    pub equality_deletes: u64,
    /// Data files larger than `large_file_ratio` × target.
    pub large_files: u64,
    /// The commit time of the oldest live small data file: how long compaction has left
    /// small files waiting. Known with `$entries` (Trino 469+).
    pub oldest_small_file_at: Option<DateTime<Utc>>,
    /// `oldest_small_file_at` is a lower bound: the file has waited at least that long
    /// (maybe longer). The snapshot that added it has expired (it is the oldest snapshot
    /// left), or the history dated a small file without reading them all, where no exact
    /// date could lower the verdict (`crate::lakehouse::dating::compacted_since`).
    pub oldest_small_is_lower_bound: bool,
    /// Manifests of the current snapshot, those below `small_manifest_size`, their bytes.
    pub manifests: Option<u64>,
    pub small_manifests: Option<u64>,
    pub manifest_bytes: Option<u64>,
    /// Metadata files in the metadata log, the current one included
    /// (`$metadata_log_entries`, Trino 444+).
    pub metadata_files: Option<u64>,
    /// When the newest metadata file was written (`$metadata_log_entries`): every commit
    /// writes one, a snapshot, an expiry or a property, schema or partition-spec change
    /// alike, so the change probe compares it with its own.
    pub metadata_at: Option<DateTime<Utc>>,
    /// The id of the newest snapshot, when the read saw it (the survey does): what tells
    /// the metadata-log probe that stats read without the log are of its snapshot.
    pub snapshot_id: Option<i64>,
    pub snapshots: u64,
    pub oldest_snapshot: Option<DateTime<Utc>>,
    pub newest_snapshot: Option<DateTime<Utc>>,
    /// The newest `replace` snapshot that rewrote data files (Trino's optimize).
    pub last_compaction: Option<DateTime<Utc>>,
    /// The newest snapshot that added or removed data (append, overwrite, delete).
    pub last_write: Option<DateTime<Utc>>,
    /// Writes committed after the last compaction.
    pub writes_since_compaction: u64,
    /// `total-data-files` right after the last compaction, when the summary has it.
    pub files_after_compaction: Option<u64>,
    /// `(committed_at, total-data-files)` of the newest snapshots that record the total
    /// (at most the scan's `trend_limit`), oldest first.
    pub trend: Vec<(DateTime<Utc>, u64)>,
    /// The snapshots older than `trend`, summarised; `None` when `trend` holds them all.
    pub trend_tail: Option<TrendTail>,
    /// The file facts are the newest snapshot's totals, not a read of the files: fewer
    /// data files than any small-file verdict needs (the refresh reads no more of such a
    /// table), or the per-file read is still to come. `small_files` is then a proved
    /// lower bound (`files − ⌊bytes / small-file line⌋`) and `total_bytes` counts delete
    /// files too.
    #[serde(default)]
    pub files_unread: bool,
    /// The summary the totals come from counts no delete files (a writer that records
    /// none): whether the table has any is unknown until its files are read.
    #[serde(default)]
    pub deletes_unknown: bool,
}

/// The snapshots (with a `total-data-files`) older than those of `TableStats::trend`, as
/// one summary: enough to weigh them once all of them are past the retention.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TrendTail {
    /// How many.
    pub snapshots: u64,
    /// The newest of them.
    pub newest: DateTime<Utc>,
    /// Its `total-data-files`.
    pub last_files: u64,
    /// The drops of `total-data-files` from each of them to the next (within the tail).
    pub drops: u64,
}

impl TableStats {
    pub fn avg_file_size(&self) -> Option<u64> {
        (self.data_files > 0).then(|| self.total_bytes / self.data_files)
    }

    pub fn is_empty_table(&self) -> bool {
        self.snapshots == 0
    }
}

/// A partition's identity: its spec (when the table's live files span several) and each
/// field's name and value (`None` is SQL NULL).
pub type PartitionKey = (Option<i32>, Vec<(String, Option<String>)>);

/// One partition of one table (from `$files` grouped by `partition`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PartitionStats {
    /// Field name and value as text (`district` → `north`, `filed_at_day` → `2026-03-02`);
    /// `None` values are SQL NULL.
    pub values: Vec<(String, Option<String>)>,
    pub data_files: u64,
    pub small_files: u64,
    pub total_bytes: u64,
    pub records: u64,
    pub min_file: u64,
    pub max_file: u64,
    pub delete_files: u64,
    /// The commit time of the partition's oldest live small data file (with `$entries`).
    pub oldest_small_file_at: Option<DateTime<Utc>>,
    /// The partition spec its files were written under (`$files.spec_id`), when the
    /// table's live files span more than one spec: the same values may then name a
    /// partition of each, and only the spec tells them apart.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec_id: Option<i32>,
}

impl PartitionStats {
    /// `district=north/filed_at_day=2026-03-02`; `(unpartitioned)` for none. A NULL value
    /// reads `region IS NULL`, never `region=null` (which is the string `'null'`): the
    /// spelling `floe maintain optimize --partition` takes.
    pub fn label(&self) -> String {
        if self.values.is_empty() {
            return "(unpartitioned)".into();
        }
        let text = self
            .values
            .iter()
            .map(|(k, v)| match v {
                Some(v) => format!("{k}={v}"),
                None => format!("{k} IS NULL"),
            })
            .collect::<Vec<_>>()
            .join("/");
        match self.spec_id {
            Some(id) => format!("{text} (spec {id})"),
            None => text,
        }
    }

    /// What identifies the partition: its spec (when the table has several) and its typed
    /// values, field by field (a NULL apart from the string `'null'`, a value holding `/`
    /// or `=` apart from two fields).
    pub fn key(&self) -> PartitionKey {
        (self.spec_id, self.values.clone())
    }

    /// The values alone, for a column too narrow for [`label`](Self::label):
    /// `east · 2026-11-17` (NULL as `NULL`, apart from the string `'null'`).
    pub fn values_label(&self) -> String {
        if self.values.is_empty() {
            return self.label();
        }
        self.values
            .iter()
            .map(|(_, v)| v.as_deref().unwrap_or("NULL"))
            .collect::<Vec<_>>()
            .join(" · ")
    }

    pub fn avg_file_size(&self) -> u64 {
        self.total_bytes.checked_div(self.data_files).unwrap_or(0)
    }
}

spelled! {
    /// What a snapshot did, as Iceberg names it: `append` (files added), `replace` (files
    /// rewritten, the data unchanged: a compaction, or manifests rewritten),
    /// `overwrite` (files replaced and data changed), `delete` (files removed).
    SnapshotOperation else Other {
        Append = "append",
        Replace = "replace",
        Overwrite = "overwrite",
        Delete = "delete",
    }
}

/// One snapshot (from `$snapshots`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SnapshotInfo {
    pub committed_at: DateTime<Utc>,
    pub snapshot_id: i64,
    pub parent_id: Option<i64>,
    pub operation: SnapshotOperation,
    pub added_data_files: Option<u64>,
    pub deleted_data_files: Option<u64>,
    pub total_data_files: Option<u64>,
    pub added_records: Option<u64>,
    pub total_records: Option<u64>,
    pub total_delete_files: Option<u64>,
    pub added_files_size: Option<u64>,
    pub removed_files_size: Option<u64>,
    pub trino_user: Option<String>,
    pub trino_query_id: Option<String>,
}

impl SnapshotInfo {
    /// A `replace` that rewrote data files: a compaction (optimize). `optimize_manifests`
    /// also commits `replace`, but rewrites manifests only.
    pub fn is_compaction(&self) -> bool {
        self.operation == SnapshotOperation::Replace && self.deleted_data_files.unwrap_or(0) > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_ref_parsing_and_quoting() {
        let t = TableRef::parse("zoning.documents", "iceberg", None).unwrap();
        assert_eq!(t, TableRef::new("iceberg", "zoning", "documents"));
        assert_eq!(t.sql(), r#""iceberg"."zoning"."documents""#);
        assert_eq!(t.meta("files"), r#""iceberg"."zoning"."documents$files""#);
        assert_eq!(t.to_string(), "iceberg.zoning.documents");
        let odd =
            TableRef::parse(r#"iceberg.finance."ledger ""q3"" it's-odd""#, "x", None).unwrap();
        assert_eq!(odd.table, r#"ledger "q3" it's-odd"#);
        assert_eq!(odd.sql(), r#""iceberg"."finance"."ledger ""q3"" it's-odd""#);
        assert_eq!(
            odd.to_string(),
            r#"iceberg.finance."ledger ""q3"" it's-odd""#
        );
        assert!(TableRef::parse("documents", "iceberg", None).is_err());
        assert_eq!(
            TableRef::parse("documents", "iceberg", Some("zoning"))
                .unwrap()
                .schema,
            "zoning"
        );
        assert!(TableRef::parse("a..b", "iceberg", None).is_err());
    }

    #[test]
    fn a_snapshot_operation_reads_once_and_shows_as_spelled() {
        for (text, op) in [
            ("append", SnapshotOperation::Append),
            ("replace", SnapshotOperation::Replace),
            ("overwrite", SnapshotOperation::Overwrite),
            ("delete", SnapshotOperation::Delete),
        ] {
            assert_eq!(SnapshotOperation::parse(text), op);
            assert_eq!(op.to_string(), text);
            assert_eq!(serde_json::to_string(&op).unwrap(), format!("\"{text}\""));
        }
        // An operation this version does not know, or none, is kept as the server wrote it.
        let odd = SnapshotOperation::parse("Replace\u{1b}[2J");
        assert_eq!(odd, SnapshotOperation::Other("Replace\u{1b}[2J".into()));
        assert_eq!(odd.as_str(), "Replace\u{1b}[2J");
        assert_eq!(SnapshotOperation::parse("").to_string(), "");
        // Only Iceberg's own spelling is a replace: a compaction is never read from another.
        assert_ne!(
            SnapshotOperation::parse("REPLACE"),
            SnapshotOperation::Replace
        );
    }

    #[test]
    fn partition_label() {
        let p = PartitionStats {
            values: vec![
                ("district".into(), Some("north".into())),
                ("filed_at_day".into(), None),
            ],
            data_files: 4,
            small_files: 4,
            total_bytes: 400,
            records: 10,
            min_file: 50,
            max_file: 150,
            delete_files: 0,
            oldest_small_file_at: None,
            spec_id: None,
        };
        assert_eq!(p.label(), "district=north/filed_at_day IS NULL");
        assert_eq!(p.avg_file_size(), 100);
    }
}
