//! The Partitions tab: the partitions of the focused table, worst first; space marks
//! rows for optimize.

use std::cmp::Ordering;
use std::collections::BTreeSet;

use super::action::Effect;
use super::detail::{self, Detail, TableDetail};
use super::grid::Grid;
use super::layout::Width;
use super::state::{Level, Load, State};
use crate::health::{Severity, partition_severity};
use crate::lakehouse::model::{PartitionKey, PartitionStats, TableRef};
use crate::lakehouse::plan::partition_path;
use crate::lakehouse::queries::PartitionList;
use crate::sql::quote_string;
use crate::trino::TrinoError;

#[derive(Clone, Debug, PartialEq)]
pub struct PartitionRow {
    pub stats: PartitionStats,
    pub label: String,
    pub search: String,
    pub severity: Severity,
    /// Rank of `label` among the table's partitions: sorts compare integers, not text.
    pub order: u32,
}

/// The columns of the Partitions tab: drawn, sorted by and exported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartitionCol {
    Table,
    Mark,
    Status,
    Partition,
    Files,
    Small,
    AvgSize,
    Size,
    Records,
    MinFile,
    MaxFile,
    Deletes,
    /// How long the partition's oldest live small file has waited (servers with `$entries`).
    Waiting,
}

/// Sort columns of the Partitions tab, in `s` cycling order.
pub const PARTITION_SORTS: [PartitionCol; 7] = [
    PartitionCol::Small,
    PartitionCol::Partition,
    PartitionCol::Files,
    PartitionCol::AvgSize,
    PartitionCol::Size,
    PartitionCol::Records,
    PartitionCol::Waiting,
];

impl PartitionCol {
    /// Drawn columns, left to right.
    pub const SHOWN: [PartitionCol; 12] = [
        PartitionCol::Mark,
        PartitionCol::Status,
        PartitionCol::Partition,
        PartitionCol::Files,
        PartitionCol::Small,
        PartitionCol::AvgSize,
        PartitionCol::Size,
        PartitionCol::Records,
        PartitionCol::MinFile,
        PartitionCol::MaxFile,
        PartitionCol::Deletes,
        PartitionCol::Waiting,
    ];

    /// Exported fields, in file order.
    pub const EXPORTED: [PartitionCol; 10] = [
        PartitionCol::Table,
        PartitionCol::Partition,
        PartitionCol::Status,
        PartitionCol::Files,
        PartitionCol::Small,
        PartitionCol::AvgSize,
        PartitionCol::Size,
        PartitionCol::Records,
        PartitionCol::Waiting,
        PartitionCol::Mark,
    ];

    pub fn header(self) -> &'static str {
        match self {
            PartitionCol::Table => "",
            PartitionCol::Mark => "M",
            PartitionCol::Status => "STAT",
            PartitionCol::Partition => "PARTITION",
            PartitionCol::Files => "FILES",
            PartitionCol::Small => "SMALL",
            PartitionCol::AvgSize => "AVG",
            PartitionCol::Size => "SIZE",
            PartitionCol::Records => "RECORDS",
            PartitionCol::MinFile => "MIN FILE",
            PartitionCol::MaxFile => "MAX FILE",
            PartitionCol::Deletes => "DELETES",
            PartitionCol::Waiting => "WAITING",
        }
    }

    pub fn width(self) -> Width {
        Width::Fixed(match self {
            PartitionCol::Partition => return Width::Min(20),
            PartitionCol::Table => 0,
            PartitionCol::Mark => 1,
            PartitionCol::Status => 4,
            PartitionCol::Files | PartitionCol::Small => 6,
            PartitionCol::AvgSize
            | PartitionCol::Size
            | PartitionCol::Deletes
            | PartitionCol::Waiting => 7,
            PartitionCol::MinFile | PartitionCol::MaxFile => 8,
            PartitionCol::Records => 9,
        })
    }

    /// Priority: the list width from which the column shows; `None` when only exported.
    pub fn shown_from(self) -> Option<u16> {
        match self {
            PartitionCol::Table => None,
            PartitionCol::Records
            | PartitionCol::MinFile
            | PartitionCol::MaxFile
            | PartitionCol::Deletes => Some(100),
            PartitionCol::Waiting => Some(120),
            _ => Some(0),
        }
    }

    /// The columns a list `width` wide shows when the longest partition name is `need`
    /// cells wide: the optional ones yield to the name, the widest-only first.
    pub fn shown(width: u16, need: u16) -> Vec<PartitionCol> {
        let admitted = PartitionCol::SHOWN
            .into_iter()
            .filter(|c| c.shown_from().is_some_and(|w| width >= w))
            .collect();
        super::layout::fit_columns(
            width,
            admitted,
            need,
            PartitionCol::width,
            |c| c == PartitionCol::Partition,
            |c| c.shown_from().unwrap_or(0),
        )
    }

    pub fn sort_name(self) -> &'static str {
        match self {
            PartitionCol::Small => "small",
            PartitionCol::Partition => "partition",
            PartitionCol::Files => "files",
            PartitionCol::AvgSize => "avg size",
            PartitionCol::Size => "size",
            PartitionCol::Records => "records",
            PartitionCol::Table => "table",
            PartitionCol::Mark => "marked",
            PartitionCol::Status => "severity",
            PartitionCol::MinFile => "min file",
            PartitionCol::MaxFile => "max file",
            PartitionCol::Deletes => "deletes",
            PartitionCol::Waiting => "waiting",
        }
    }

    /// Order two rows by this column (ties: by partition).
    pub fn cmp(self, a: &PartitionRow, b: &PartitionRow) -> Ordering {
        let (x, y) = (&a.stats, &b.stats);
        let o = match self {
            PartitionCol::Small | PartitionCol::Status => y
                .small_files
                .cmp(&x.small_files)
                .then(a.severity.rank().cmp(&b.severity.rank()).reverse()),
            PartitionCol::Files => y.data_files.cmp(&x.data_files),
            PartitionCol::AvgSize => x.avg_file_size().cmp(&y.avg_file_size()),
            PartitionCol::Size => y.total_bytes.cmp(&x.total_bytes),
            PartitionCol::Records => y.records.cmp(&x.records),
            PartitionCol::MinFile => x.min_file.cmp(&y.min_file),
            PartitionCol::MaxFile => y.max_file.cmp(&x.max_file),
            PartitionCol::Deletes => y.delete_files.cmp(&x.delete_files),
            // Longest waiting first; nothing waiting last.
            PartitionCol::Waiting => match (x.oldest_small_file_at, y.oldest_small_file_at) {
                (Some(p), Some(q)) => p.cmp(&q),
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (None, None) => Ordering::Equal,
            },
            PartitionCol::Partition | PartitionCol::Table | PartitionCol::Mark => Ordering::Equal,
        };
        o.then_with(|| a.order.cmp(&b.order))
    }

    /// The field's name in an export.
    pub fn field(self) -> &'static str {
        match self {
            PartitionCol::Table => "table",
            PartitionCol::Mark => "marked",
            PartitionCol::Status => "severity",
            PartitionCol::Partition => "partition",
            PartitionCol::Files => "data_files",
            PartitionCol::Small => "small_files",
            PartitionCol::AvgSize => "avg_file_bytes",
            PartitionCol::Size => "total_bytes",
            PartitionCol::Records => "records",
            PartitionCol::MinFile => "min_file_bytes",
            PartitionCol::MaxFile => "max_file_bytes",
            PartitionCol::Deletes => "delete_files",
            PartitionCol::Waiting => "small_files_waiting_since",
        }
    }

    /// The field's value in an export of `v`.
    pub fn export(self, v: &PartitionsView, r: &PartitionRow) -> String {
        match self {
            PartitionCol::Table => v
                .detail
                .table
                .as_ref()
                .map(|t| t.to_string())
                .unwrap_or_default(),
            PartitionCol::Mark => v.is_marked(r).to_string(),
            PartitionCol::Status => r.severity.label().to_string(),
            PartitionCol::Partition => r.label.clone(),
            PartitionCol::Files => r.stats.data_files.to_string(),
            PartitionCol::Small => r.stats.small_files.to_string(),
            PartitionCol::AvgSize => r.stats.avg_file_size().to_string(),
            PartitionCol::Size => r.stats.total_bytes.to_string(),
            PartitionCol::Records => r.stats.records.to_string(),
            PartitionCol::MinFile => r.stats.min_file.to_string(),
            PartitionCol::MaxFile => r.stats.max_file.to_string(),
            PartitionCol::Deletes => r.stats.delete_files.to_string(),
            PartitionCol::Waiting => r
                .stats
                .oldest_small_file_at
                .map(|t| t.to_rfc3339())
                .unwrap_or_default(),
        }
    }
}

pub fn cmp_partitions(a: &PartitionRow, b: &PartitionRow, col: usize) -> Ordering {
    PARTITION_SORTS
        .get(col)
        .copied()
        .unwrap_or(PartitionCol::Records)
        .cmp(a, b)
}

#[derive(Clone, Debug, Default)]
pub struct PartitionsView {
    /// The table, its load, the newest request.
    pub detail: Detail,
    pub rows: Vec<PartitionRow>,
    pub grid: Grid,
    pub target_file_size: u64,
    pub fields: Vec<String>,
    /// Marked partitions of the table, by their typed values (labels may collide: NULL
    /// and `'null'`, values holding `/` or `=`).
    pub marks: BTreeSet<PartitionKey>,
}

impl PartitionsView {
    pub fn reindex(&mut self, keep: Option<PartitionKey>) {
        match keep {
            Some(key) => {
                let f = move |r: &PartitionRow| r.stats.key() == key;
                self.grid
                    .rebuild(&self.rows, |r| r.search.as_str(), cmp_partitions, Some(&f));
            }
            None => self
                .grid
                .rebuild(&self.rows, |r| r.search.as_str(), cmp_partitions, None),
        }
    }

    pub fn selected(&self) -> Option<&PartitionRow> {
        self.grid.selected_row().and_then(|i| self.rows.get(i))
    }

    pub fn is_marked(&self, r: &PartitionRow) -> bool {
        self.marks.contains(&r.stats.key())
    }

    /// The stats of the marked partitions.
    pub fn marked(&self) -> Vec<PartitionStats> {
        self.rows
            .iter()
            .filter(|r| self.is_marked(r))
            .map(|r| r.stats.clone())
            .collect()
    }
}

/// The partitions an optimize from the Partitions tab takes: the marked ones, else the
/// selected one; none for a row without partition values (the drafter picks).
pub fn optimize_targets(s: &State) -> Option<Vec<PartitionStats>> {
    let marked = s.partitions.marked();
    if !marked.is_empty() {
        return Some(marked);
    }
    match s.partitions.selected() {
        Some(r) if !r.stats.values.is_empty() => Some(vec![r.stats.clone()]),
        _ => None,
    }
}

/// `y`: the `"$partition"` predicate of the selected partition (the table's name when
/// it is unpartitioned: that is what a statement would name).
pub fn copy(s: &mut State) -> Vec<Effect> {
    use super::copy::emit;
    let p = s.partitions.selected().map(|r| partition_path(&r.stats));
    match p {
        Some(Ok(path)) => {
            let pred = format!("\"$partition\" = {}", quote_string(&path));
            emit(s, "partition predicate", &pred)
        }
        Some(Err(_)) => match s.partitions.detail.table.as_ref().map(|t| t.sql()) {
            Some(name) => emit(s, "table name", &name),
            None => emit(s, "partition selected", ""),
        },
        None => emit(s, "partition selected", ""),
    }
}

/// `e`: the partitions as listed (filter and sort applied), the exported columns.
pub fn export_view(s: &State) -> Option<super::export::ExportData> {
    let v = &s.partitions;
    v.detail.table.as_ref()?;
    Some(super::export::table(
        "partitions",
        &v.grid,
        &PartitionCol::EXPORTED.map(PartitionCol::field),
        |i| {
            PartitionCol::EXPORTED
                .map(|c| c.export(v, &v.rows[i]))
                .to_vec()
        },
    ))
}

/// Results for the Partitions tab.
#[derive(Clone, Debug)]
pub enum PartitionsMsg {
    /// The partitions of `table`, for the load numbered `request`.
    Loaded {
        request: u64,
        table: TableRef,
        result: Result<PartitionList, TrinoError>,
    },
}

/// The Partitions tab's messages.
pub fn update(s: &mut State, msg: PartitionsMsg) -> Vec<Effect> {
    match msg {
        PartitionsMsg::Loaded {
            request,
            table,
            result,
        } => on_partitions(s, request, &table, result),
    }
    Vec::new()
}

fn on_partitions(
    s: &mut State,
    request: u64,
    table: &TableRef,
    result: Result<PartitionList, TrinoError>,
) {
    if !s.partitions.detail.awaits(request, table) {
        return;
    }
    match result {
        Ok(list) => {
            let keep = s.partitions.selected().map(|r| r.stats.key());
            let target = list.target_file_size;
            let cfg = s.health.clone();
            s.partitions.rows = list
                .partitions
                .into_iter()
                .map(|p| {
                    let label = p.label();
                    PartitionRow {
                        search: label.to_lowercase(),
                        severity: partition_severity(&p, target, &cfg),
                        label,
                        stats: p,
                        order: 0,
                    }
                })
                .collect();
            // Rank labels once per load (the tie-break of every sort).
            let mut by_label: Vec<usize> = (0..s.partitions.rows.len()).collect();
            by_label.sort_unstable_by(|&a, &b| {
                s.partitions.rows[a].label.cmp(&s.partitions.rows[b].label)
            });
            for (rank, i) in by_label.into_iter().enumerate() {
                s.partitions.rows[i].order = rank as u32;
            }
            s.partitions.target_file_size = target;
            s.partitions.fields = list.layout_fields;
            let keys: BTreeSet<PartitionKey> =
                s.partitions.rows.iter().map(|r| r.stats.key()).collect();
            let before = s.partitions.marks.len();
            s.partitions.marks.retain(|m| keys.contains(m));
            if s.partitions.marks.len() < before {
                s.set_status(
                    Level::Info,
                    "marks on partitions that no longer exist were dropped",
                );
            }
            s.partitions.detail.load = Load::Loaded;
            s.partitions.reindex(keep);
        }
        Err(e) => {
            s.set_status(Level::Error, format!("partitions of {table}: {e}"));
            s.partitions.detail.load = Load::Failed(e.into());
        }
    }
}

impl TableDetail for PartitionsView {
    fn detail(&mut self) -> &mut Detail {
        &mut self.detail
    }
    fn effect(request: u64, table: TableRef) -> Effect {
        Effect::LoadPartitions { request, table }
    }
}

/// Point the Partitions tab at the opened table (else the selected one) and load it (when needed or forced).
pub fn load(s: &mut State, force: bool) -> Vec<Effect> {
    let selected = s.tables.focus();
    detail::load(&mut s.partitions, selected, force)
}

/// Load the partitions of `table` again (it is the focused one).
pub fn reload(s: &mut State, table: TableRef) -> Vec<Effect> {
    detail::reload(&mut s.partitions, table)
}

/// Space: mark or unmark the selected partition and move on.
pub fn toggle_mark(s: &mut State) {
    let h = s.page_height();
    if let Some(key) = s.partitions.selected().map(|r| r.stats.key()) {
        if !s.partitions.marks.remove(&key) {
            s.partitions.marks.insert(key);
        }
        s.partitions.grid.move_by(1, h);
    }
}

pub fn clear_marks(s: &mut State) {
    if !s.partitions.marks.is_empty() {
        let n = s.partitions.marks.len();
        s.partitions.marks.clear();
        s.set_status(Level::Info, format!("cleared {n} marks"));
    }
}

#[cfg(test)]
mod tests;
