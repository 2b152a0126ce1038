//! The columns of the Tables tab, defined once: what is drawn, sorted by and exported.

use std::cmp::Ordering;

use super::TableRow;
use crate::app::grid::{opt_cmp, opt_desc};
use crate::app::layout::Width;
use crate::lakehouse::model::TableStats;

/// The columns of the Tables tab: drawn (those of [`TableCol::SHOWN`] that fit) and sorted
/// by (in [`TABLE_SORTS`] order). An export writes the table's
/// [`TableRecord`](crate::report::record::TableRecord), the record `floe check` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableCol {
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
    /// How long the oldest live small data file has waited (servers with `$entries`).
    Waiting,
    Written,
    Deletes,
    Dag,
}

/// Sort columns of the Tables tab, in `s` cycling order.
pub const TABLE_SORTS: [TableCol; 13] = [
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
    TableCol::Waiting,
];

/// From this list width on the wide columns show.
pub const WIDE: u16 = 110;
/// From this list width on WAITING shows (narrower: the finding in `i` says it).
pub const WAITING_FROM: u16 = 130;

impl TableCol {
    /// Drawn columns, left to right.
    pub const SHOWN: [TableCol; 15] = [
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
        TableCol::Waiting,
        TableCol::Written,
        TableCol::Deletes,
        TableCol::Dag,
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
            TableCol::Waiting => "WAITING",
            TableCol::Written => "WRITTEN",
            TableCol::Deletes => "DELETES",
            TableCol::Dag => "MAINTENANCE DAG",
            TableCol::SmallPartitions => "",
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
            | TableCol::Waiting
            | TableCol::Deletes => 7,
            TableCol::Compacted if wide => 9,
            TableCol::Compacted => 10,
            TableCol::Dag => 24,
            TableCol::SmallPartitions => 0,
        })
    }

    /// Priority: the list width from which the column shows (narrower lists drop it);
    /// `None` for a sort key that is not drawn. Above 0 the column also yields to a table
    /// name that needs the room, the highest first (SCORE, then SIZE, then AVG give way
    /// at any width before a name is cut).
    pub fn shown_from(self) -> Option<u16> {
        match self {
            TableCol::Status
            | TableCol::Table
            | TableCol::Files
            | TableCol::Small
            | TableCol::Compacted => Some(0),
            TableCol::Score => Some(3),
            TableCol::Size => Some(2),
            TableCol::AvgSize => Some(1),
            TableCol::Records
            | TableCol::Partitions
            | TableCol::Snapshots
            | TableCol::Written
            | TableCol::Deletes => Some(WIDE),
            TableCol::Waiting => Some(WAITING_FROM),
            TableCol::Dag => Some(150),
            TableCol::SmallPartitions => None,
        }
    }

    /// The columns a list `width` wide shows (the DAG's only with Airflow) when the
    /// longest table name is `need` cells wide: the optional ones yield to the name.
    pub fn shown(width: u16, airflow: bool, need: u16) -> Vec<TableCol> {
        let wide = width >= WIDE;
        let admitted = TableCol::SHOWN
            .into_iter()
            .filter(|c| c.shown_from().is_some_and(|w| width >= w))
            .filter(|c| *c != TableCol::Dag || airflow)
            .collect();
        crate::app::layout::fit_columns(
            width,
            admitted,
            need,
            |c| c.width(wide),
            |c| c == TableCol::Table,
            |c| c.shown_from().unwrap_or(0),
        )
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
            TableCol::Waiting => "waiting",
            TableCol::Written => "written",
            TableCol::Deletes => "deletes",
            TableCol::SmallPartitions => "small partitions",
            TableCol::Dag => "dag",
        }
    }

    /// Order two rows by this column (ties: by table).
    pub fn cmp(self, a: &TableRow, b: &TableRow) -> Ordering {
        let s = |r: &TableRow, f: fn(&TableStats) -> u64| r.stats().map(f);
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
                a.stats().and_then(|x| x.avg_file_size()),
                b.stats().and_then(|x| x.avg_file_size()),
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
                    r.stats()
                        .as_ref()
                        .map(|x| x.last_compaction.map(|t| t.timestamp()).unwrap_or(i64::MIN))
                };
                opt_cmp(t(a), t(b))
            }
            // Longest waiting first; nothing waiting (or unknown) last.
            TableCol::Waiting => {
                let t = |r: &TableRow| {
                    r.stats()
                        .as_ref()
                        .and_then(|x| x.oldest_small_file_at.map(|t| t.timestamp()))
                };
                match (t(a), t(b)) {
                    (Some(x), Some(y)) => x.cmp(&y),
                    (Some(_), None) => Ordering::Less,
                    (None, Some(_)) => Ordering::Greater,
                    (None, None) => Ordering::Equal,
                }
            }
            TableCol::Written => {
                let t = |r: &TableRow| {
                    r.stats()
                        .as_ref()
                        .and_then(|x| x.last_write.map(|t| t.timestamp()))
                };
                opt_desc(t(a), t(b))
            }
            TableCol::Deletes => opt_desc(s(a, |x| x.delete_files), s(b, |x| x.delete_files)),
            TableCol::Table | TableCol::Dag => Ordering::Equal,
        };
        o.then_with(|| a.table.cmp(&b.table))
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
