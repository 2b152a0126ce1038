//! The columns of the Tables tab, defined once: what is drawn, sorted by and exported.

use std::cmp::Ordering;

use super::TableRow;
use crate::app::grid::{opt_cmp, opt_desc};
use crate::app::layout::Width;
use crate::lakehouse::model::TableStats;

/// The columns of the Tables tab: drawn (those of [`TableCol::SHOWN`] that fit), sorted
/// by (in [`TABLE_SORTS`] order) and exported (in [`TableCol::EXPORTED`] order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableCol {
    Catalog,
    Schema,
    Status,
    Score,
    Table,
    Files,
    Small,
    AvgSize,
    Size,
    Records,
    Partitions,
    SmallPartitions,
    Snapshots,
    Compacted,
    Written,
    Deletes,
    Dag,
    Findings,
}

/// Sort columns of the Tables tab, in `s` cycling order.
pub const TABLE_SORTS: [TableCol; 12] = [
    TableCol::Status,
    TableCol::Table,
    TableCol::Files,
    TableCol::Small,
    TableCol::AvgSize,
    TableCol::Size,
    TableCol::Records,
    TableCol::Partitions,
    TableCol::Snapshots,
    TableCol::Compacted,
    TableCol::Written,
    TableCol::Deletes,
];

/// From this list width on the wide columns show.
pub const WIDE: u16 = 110;

impl TableCol {
    /// Drawn columns, left to right.
    pub const SHOWN: [TableCol; 14] = [
        TableCol::Status,
        TableCol::Score,
        TableCol::Table,
        TableCol::Files,
        TableCol::Small,
        TableCol::AvgSize,
        TableCol::Size,
        TableCol::Records,
        TableCol::Partitions,
        TableCol::Snapshots,
        TableCol::Compacted,
        TableCol::Written,
        TableCol::Deletes,
        TableCol::Dag,
    ];

    /// Exported fields, in file order.
    pub const EXPORTED: [TableCol; 17] = [
        TableCol::Catalog,
        TableCol::Schema,
        TableCol::Table,
        TableCol::Status,
        TableCol::Score,
        TableCol::Files,
        TableCol::Small,
        TableCol::AvgSize,
        TableCol::Size,
        TableCol::Records,
        TableCol::Partitions,
        TableCol::SmallPartitions,
        TableCol::Snapshots,
        TableCol::Deletes,
        TableCol::Compacted,
        TableCol::Written,
        TableCol::Findings,
    ];

    pub fn header(self) -> &'static str {
        match self {
            TableCol::Status => "STAT",
            TableCol::Score => "SCORE",
            TableCol::Table => "TABLE",
            TableCol::Files => "FILES",
            TableCol::Small => "SMALL",
            TableCol::AvgSize => "AVG",
            TableCol::Size => "SIZE",
            TableCol::Records => "RECORDS",
            TableCol::Partitions => "PARTS",
            TableCol::Snapshots => "SNAPS",
            TableCol::Compacted => "COMPACTED",
            TableCol::Written => "WRITTEN",
            TableCol::Deletes => "DELETES",
            TableCol::Dag => "MAINTENANCE DAG",
            TableCol::Catalog
            | TableCol::Schema
            | TableCol::SmallPartitions
            | TableCol::Findings => "",
        }
    }

    /// The width drawn; `wide` when the wide columns show (narrow, COMPACTED also holds
    /// the maintenance DAG's mark).
    pub fn width(self, wide: bool) -> Width {
        Width::Fixed(match self {
            TableCol::Table => return Width::Min(20),
            TableCol::Status | TableCol::Score | TableCol::Snapshots => 5,
            TableCol::Files | TableCol::Small | TableCol::Partitions => 6,
            TableCol::AvgSize
            | TableCol::Size
            | TableCol::Records
            | TableCol::Written
            | TableCol::Deletes => 7,
            TableCol::Compacted if wide => 9,
            TableCol::Compacted => 10,
            TableCol::Dag => 24,
            TableCol::Catalog
            | TableCol::Schema
            | TableCol::SmallPartitions
            | TableCol::Findings => 0,
        })
    }

    /// Priority: the list width from which the column shows (narrower lists drop it);
    /// `None` for fields that are only exported.
    pub fn shown_from(self) -> Option<u16> {
        match self {
            TableCol::Status
            | TableCol::Score
            | TableCol::Table
            | TableCol::Files
            | TableCol::Small
            | TableCol::AvgSize
            | TableCol::Size
            | TableCol::Compacted => Some(0),
            TableCol::Records
            | TableCol::Partitions
            | TableCol::Snapshots
            | TableCol::Written
            | TableCol::Deletes => Some(WIDE),
            TableCol::Dag => Some(150),
            TableCol::Catalog
            | TableCol::Schema
            | TableCol::SmallPartitions
            | TableCol::Findings => None,
        }
    }

    /// The columns a list `width` wide shows (the DAG's only with Airflow).
    pub fn shown(width: u16, airflow: bool) -> Vec<TableCol> {
        TableCol::SHOWN
            .into_iter()
            .filter(|c| c.shown_from().is_some_and(|w| width >= w))
            .filter(|c| *c != TableCol::Dag || airflow)
            .collect()
    }

    /// The name `s` shows when sorting by this column.
    pub fn sort_name(self) -> &'static str {
        match self {
            TableCol::Status | TableCol::Score => "health",
            TableCol::Table => "table",
            TableCol::Files => "files",
            TableCol::Small => "small",
            TableCol::AvgSize => "avg size",
            TableCol::Size => "size",
            TableCol::Records => "records",
            TableCol::Partitions => "partitions",
            TableCol::Snapshots => "snapshots",
            TableCol::Compacted => "compacted",
            TableCol::Written => "written",
            TableCol::Deletes => "deletes",
            TableCol::Catalog => "catalog",
            TableCol::Schema => "schema",
            TableCol::SmallPartitions => "small partitions",
            TableCol::Dag => "dag",
            TableCol::Findings => "findings",
        }
    }

    /// Order two rows by this column (ties: by table).
    pub fn cmp(self, a: &TableRow, b: &TableRow) -> Ordering {
        let s = |r: &TableRow, f: fn(&TableStats) -> u64| r.stats.as_ref().map(f);
        let o = match self {
            TableCol::Status | TableCol::Score => {
                let rank = |r: &TableRow| r.status().map(|s| s.rank());
                opt_desc(rank(a), rank(b))
                    .then(opt_cmp(
                        a.health.as_ref().map(|h| h.score),
                        b.health.as_ref().map(|h| h.score),
                    ))
                    .then(opt_desc(s(a, |x| x.small_files), s(b, |x| x.small_files)))
            }
            TableCol::Files => opt_desc(s(a, |x| x.data_files), s(b, |x| x.data_files)),
            TableCol::Small => opt_desc(s(a, |x| x.small_files), s(b, |x| x.small_files)),
            TableCol::AvgSize => opt_cmp(
                a.stats.as_ref().and_then(|x| x.avg_file_size()),
                b.stats.as_ref().and_then(|x| x.avg_file_size()),
            ),
            TableCol::Size => opt_desc(s(a, |x| x.total_bytes), s(b, |x| x.total_bytes)),
            TableCol::Records => opt_desc(s(a, |x| x.records), s(b, |x| x.records)),
            TableCol::Partitions => opt_desc(s(a, |x| x.partitions), s(b, |x| x.partitions)),
            TableCol::SmallPartitions => opt_desc(
                s(a, |x| x.small_file_partitions),
                s(b, |x| x.small_file_partitions),
            ),
            TableCol::Snapshots => opt_desc(s(a, |x| x.snapshots), s(b, |x| x.snapshots)),
            // Oldest compaction first (never compacted first of all).
            TableCol::Compacted => {
                let t = |r: &TableRow| {
                    r.stats
                        .as_ref()
                        .map(|x| x.last_compaction.map(|t| t.timestamp()).unwrap_or(i64::MIN))
                };
                opt_cmp(t(a), t(b))
            }
            TableCol::Written => {
                let t = |r: &TableRow| {
                    r.stats
                        .as_ref()
                        .and_then(|x| x.last_write.map(|t| t.timestamp()))
                };
                opt_desc(t(a), t(b))
            }
            TableCol::Deletes => opt_desc(s(a, |x| x.delete_files), s(b, |x| x.delete_files)),
            TableCol::Table
            | TableCol::Catalog
            | TableCol::Schema
            | TableCol::Dag
            | TableCol::Findings => Ordering::Equal,
        };
        o.then_with(|| a.table.cmp(&b.table))
    }

    /// The field's name in an export.
    pub fn field(self) -> &'static str {
        match self {
            TableCol::Catalog => "catalog",
            TableCol::Schema => "schema",
            TableCol::Table => "table",
            TableCol::Status => "status",
            TableCol::Score => "score",
            TableCol::Files => "data_files",
            TableCol::Small => "small_files",
            TableCol::AvgSize => "avg_file_bytes",
            TableCol::Size => "total_bytes",
            TableCol::Records => "records",
            TableCol::Partitions => "partitions",
            TableCol::SmallPartitions => "small_file_partitions",
            TableCol::Snapshots => "snapshots",
            TableCol::Deletes => "delete_files",
            TableCol::Compacted => "last_compaction",
            TableCol::Written => "last_write",
            TableCol::Dag => "maintenance_dag",
            TableCol::Findings => "findings",
        }
    }

    /// The field's value in an export.
    pub fn export(self, r: &TableRow) -> String {
        let st = r.stats.as_ref();
        let n = |f: fn(&TableStats) -> u64| opt(st.map(f));
        let ts = |t: Option<chrono::DateTime<chrono::Utc>>| {
            t.map(|t| t.to_rfc3339()).unwrap_or_default()
        };
        match self {
            TableCol::Catalog => r.table.catalog.clone(),
            TableCol::Schema => r.table.schema.clone(),
            TableCol::Table => r.table.table.clone(),
            TableCol::Status => r
                .status()
                .map(|x| x.label().to_string())
                .unwrap_or_default(),
            TableCol::Score => opt(r.health.as_ref().map(|h| h.score)),
            TableCol::Files => n(|x| x.data_files),
            TableCol::Small => n(|x| x.small_files),
            TableCol::AvgSize => opt(st.and_then(|x| x.avg_file_size())),
            TableCol::Size => n(|x| x.total_bytes),
            TableCol::Records => n(|x| x.records),
            TableCol::Partitions => n(|x| x.partitions),
            TableCol::SmallPartitions => n(|x| x.small_file_partitions),
            TableCol::Snapshots => n(|x| x.snapshots),
            TableCol::Deletes => n(|x| x.delete_files),
            TableCol::Compacted => ts(st.and_then(|x| x.last_compaction)),
            TableCol::Written => ts(st.and_then(|x| x.last_write)),
            TableCol::Dag => r.dag.as_ref().map(|d| d.dag_id.clone()).unwrap_or_default(),
            TableCol::Findings => r
                .health
                .as_ref()
                .map(|h| {
                    h.findings
                        .iter()
                        .map(|f| format!("[{}] {}", f.severity.label(), f.message))
                        .collect::<Vec<_>>()
                        .join("; ")
                })
                .or_else(|| r.error.clone())
                .unwrap_or_default(),
        }
    }
}

/// An optional value as exported (empty when unknown).
pub fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|x| x.to_string()).unwrap_or_default()
}

pub fn cmp_tables(a: &TableRow, b: &TableRow, col: usize) -> Ordering {
    TABLE_SORTS
        .get(col)
        .copied()
        .unwrap_or(TableCol::Deletes)
        .cmp(a, b)
}
