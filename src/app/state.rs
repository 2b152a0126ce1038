//! Everything the screen shows, and nothing that does IO.

use std::cmp::Ordering;
use std::collections::BTreeSet;
use std::time::Duration;

use chrono::{DateTime, Utc};

use super::grid::Grid;
use super::keymap::Keymap;
use crate::health::{DagFacts, Health, HealthConfig, Severity};
use crate::lakehouse::model::{PartitionStats, SnapshotInfo, TableRef, TableStats};
use crate::trino::ServerInfo;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tab {
    Tables,
    Partitions,
    Snapshots,
    Dags,
}

impl Tab {
    pub const ALL: [Tab; 4] = [Tab::Tables, Tab::Partitions, Tab::Snapshots, Tab::Dags];

    pub fn title(self) -> &'static str {
        match self {
            Tab::Tables => "Tables",
            Tab::Partitions => "Partitions",
            Tab::Snapshots => "Snapshots",
            Tab::Dags => "DAGs",
        }
    }

    pub fn next(self) -> Tab {
        let i = Tab::ALL.iter().position(|t| *t == self).unwrap_or(0);
        Tab::ALL[(i + 1) % Tab::ALL.len()]
    }

    pub fn prev(self) -> Tab {
        let i = Tab::ALL.iter().position(|t| *t == self).unwrap_or(0);
        Tab::ALL[(i + Tab::ALL.len() - 1) % Tab::ALL.len()]
    }
}

/// Where a view's data stands.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Load {
    #[default]
    Idle,
    Loading,
    Loaded,
    /// The last attempt failed; rows already shown stay.
    Failed(String),
}

impl Load {
    pub fn is_loading(&self) -> bool {
        matches!(self, Load::Loading)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct TableRow {
    pub table: TableRef,
    pub name: String,
    /// Lower-cased searchable text.
    pub search: String,
    pub stats: Option<TableStats>,
    pub health: Option<Health>,
    pub error: Option<String>,
    /// A reload is in flight; the values shown are from the previous refresh.
    pub stale: bool,
    pub loading: bool,
    pub dag: Option<DagFacts>,
}

impl TableRow {
    pub fn new(table: TableRef) -> TableRow {
        let name = format!("{}.{}", table.schema, table.table);
        TableRow {
            search: name.to_lowercase(),
            name,
            table,
            stats: None,
            health: None,
            error: None,
            stale: false,
            loading: false,
            dag: None,
        }
    }

    pub fn status(&self) -> Option<Severity> {
        if self.error.is_some() && self.health.is_none() {
            return Some(Severity::Unknown);
        }
        self.health.as_ref().map(|h| h.status)
    }
}

/// Sort columns of the Tables tab, in `s` cycling order.
pub const TABLE_SORTS: [&str; 12] = [
    "health",
    "table",
    "files",
    "small",
    "avg size",
    "size",
    "records",
    "partitions",
    "snapshots",
    "compacted",
    "written",
    "deletes",
];

fn opt_cmp<T: PartialOrd>(a: Option<T>, b: Option<T>) -> Ordering {
    // Unknown values last.
    match (a, b) {
        (Some(x), Some(y)) => x.partial_cmp(&y).unwrap_or(Ordering::Equal),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    }
}

/// Largest first, unknown values last.
fn opt_desc<T: PartialOrd>(a: Option<T>, b: Option<T>) -> Ordering {
    match (a, b) {
        (Some(x), Some(y)) => y.partial_cmp(&x).unwrap_or(Ordering::Equal),
        (a, b) => opt_cmp(a, b),
    }
}

pub fn cmp_tables(a: &TableRow, b: &TableRow, col: usize) -> Ordering {
    let s = |r: &TableRow, f: fn(&TableStats) -> u64| r.stats.as_ref().map(f);
    let o = match col {
        0 => {
            let rank = |r: &TableRow| r.status().map(|s| s.rank());
            opt_desc(rank(a), rank(b))
                .then(opt_cmp(
                    a.health.as_ref().map(|h| h.score),
                    b.health.as_ref().map(|h| h.score),
                ))
                .then(opt_desc(s(a, |x| x.small_files), s(b, |x| x.small_files)))
        }
        1 => Ordering::Equal,
        2 => opt_desc(s(a, |x| x.data_files), s(b, |x| x.data_files)),
        3 => opt_desc(s(a, |x| x.small_files), s(b, |x| x.small_files)),
        4 => opt_cmp(
            a.stats.as_ref().and_then(|x| x.avg_file_size()),
            b.stats.as_ref().and_then(|x| x.avg_file_size()),
        ),
        5 => opt_desc(s(a, |x| x.total_bytes), s(b, |x| x.total_bytes)),
        6 => opt_desc(s(a, |x| x.records), s(b, |x| x.records)),
        7 => opt_desc(s(a, |x| x.partitions), s(b, |x| x.partitions)),
        8 => opt_desc(s(a, |x| x.snapshots), s(b, |x| x.snapshots)),
        // Oldest compaction first (never compacted first of all).
        9 => {
            let t = |r: &TableRow| {
                r.stats
                    .as_ref()
                    .map(|x| x.last_compaction.map(|t| t.timestamp()).unwrap_or(i64::MIN))
            };
            opt_cmp(t(a), t(b))
        }
        10 => {
            let t = |r: &TableRow| {
                r.stats
                    .as_ref()
                    .and_then(|x| x.last_write.map(|t| t.timestamp()))
            };
            opt_desc(t(a), t(b))
        }
        _ => opt_desc(s(a, |x| x.delete_files), s(b, |x| x.delete_files)),
    };
    o.then_with(|| a.table.cmp(&b.table))
}

#[derive(Clone, Debug, Default)]
pub struct TablesView {
    pub rows: Vec<TableRow>,
    pub grid: Grid,
    pub load: Load,
    /// Refresh generation; results of older generations are dropped.
    pub generation: u64,
    /// Stats queries of the current generation still in flight.
    pub pending: usize,
}

impl TablesView {
    pub fn reindex(&mut self) {
        self.grid
            .rebuild(&self.rows, |r| r.search.as_str(), cmp_tables, None);
    }

    pub fn selected(&self) -> Option<&TableRow> {
        self.grid.selected_row().and_then(|i| self.rows.get(i))
    }

    pub fn row_mut(&mut self, t: &TableRef) -> Option<&mut TableRow> {
        self.rows.iter_mut().find(|r| &r.table == t)
    }

    pub fn row(&self, t: &TableRef) -> Option<&TableRow> {
        self.rows.iter().find(|r| &r.table == t)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct PartitionRow {
    pub stats: PartitionStats,
    pub label: String,
    pub search: String,
    pub severity: Severity,
    /// Rank of `label` among the table's partitions: sorts compare integers, not text.
    pub order: u32,
}

pub const PARTITION_SORTS: [&str; 6] =
    ["small", "partition", "files", "avg size", "size", "records"];

pub fn cmp_partitions(a: &PartitionRow, b: &PartitionRow, col: usize) -> Ordering {
    let (x, y) = (&a.stats, &b.stats);
    let o = match col {
        0 => y
            .small_files
            .cmp(&x.small_files)
            .then(a.severity.rank().cmp(&b.severity.rank()).reverse()),
        1 => Ordering::Equal,
        2 => y.data_files.cmp(&x.data_files),
        3 => x.avg_file_size().cmp(&y.avg_file_size()),
        4 => y.total_bytes.cmp(&x.total_bytes),
        _ => y.records.cmp(&x.records),
    };
    o.then_with(|| a.order.cmp(&b.order))
}

/// Severity of one partition by the rules: a small-file partition holds at least
/// `min_small_files` small files; critical when its average file is under target/8.
pub fn partition_severity(p: &PartitionStats, target: u64, cfg: &HealthConfig) -> Severity {
    if p.small_files < cfg.min_small_files {
        Severity::Ok
    } else if p.avg_file_size() < target / 8 {
        Severity::Critical
    } else {
        Severity::Warning
    }
}

#[derive(Clone, Debug, Default)]
pub struct PartitionsView {
    pub table: Option<TableRef>,
    pub rows: Vec<PartitionRow>,
    pub grid: Grid,
    pub load: Load,
    pub target_file_size: u64,
    pub fields: Vec<String>,
    /// Marked partitions (by label) of `table`.
    pub marks: BTreeSet<String>,
    pub request: u64,
}

impl PartitionsView {
    pub fn reindex(&mut self, keep: Option<String>) {
        match keep {
            Some(label) => {
                let f = move |r: &PartitionRow| r.label == label;
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
}

#[derive(Clone, Debug, PartialEq)]
pub struct SnapshotRow {
    pub info: SnapshotInfo,
    pub search: String,
}

pub const SNAPSHOT_SORTS: [&str; 4] = ["committed", "operation", "added", "total files"];

pub fn cmp_snapshots(a: &SnapshotRow, b: &SnapshotRow, col: usize) -> Ordering {
    let (x, y) = (&a.info, &b.info);
    let o = match col {
        0 => Ordering::Equal,
        1 => x.operation.cmp(&y.operation),
        2 => opt_cmp(y.added_data_files, x.added_data_files),
        _ => opt_cmp(y.total_data_files, x.total_data_files),
    };
    // Newest first within ties.
    o.then_with(|| y.committed_at.cmp(&x.committed_at))
        .then_with(|| y.snapshot_id.cmp(&x.snapshot_id))
}

#[derive(Clone, Debug, Default)]
pub struct SnapshotsView {
    pub table: Option<TableRef>,
    pub rows: Vec<SnapshotRow>,
    pub grid: Grid,
    pub load: Load,
    pub request: u64,
}

impl SnapshotsView {
    pub fn reindex(&mut self) {
        self.grid
            .rebuild(&self.rows, |r| r.search.as_str(), cmp_snapshots, None);
    }
}

/// A text prompt at the bottom line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Prompt {
    Filter(String),
    Command(String),
    /// The retention of expire_snapshots / remove_orphan_files, edited before planning.
    Retention(RetentionFor, String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetentionFor {
    ExpireSnapshots,
    RemoveOrphanFiles,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Popup {
    Help,
    /// The health breakdown of a table.
    Info(TableRef),
    /// A maintenance plan awaiting `y`.
    Confirm(Box<super::jobs::Confirm>),
    /// Maintenance jobs and the outcome of each statement.
    Queue,
    /// A write to Airflow awaiting `y`.
    ConfirmDag(Box<super::dags::DagConfirm>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Info,
    Warn,
    Error,
}

#[derive(Clone, Debug, PartialEq)]
pub struct StatusMsg {
    pub level: Level,
    pub text: String,
    pub at: DateTime<Utc>,
}

/// What the header shows about the connection.
#[derive(Clone, Debug, Default)]
pub struct Conn {
    pub profile: String,
    pub trino_url: String,
    pub info: Option<ServerInfo>,
    pub info_at: Option<DateTime<Utc>>,
    pub info_error: Option<String>,
    pub airflow_url: Option<String>,
    pub airflow_version: Option<String>,
}

pub struct State {
    pub now: DateTime<Utc>,
    pub tab: Tab,
    pub conn: Conn,
    pub readonly: bool,
    pub keymap: Keymap,
    pub health: HealthConfig,
    pub schemas: Vec<String>,
    pub tables: TablesView,
    pub partitions: PartitionsView,
    pub snapshots: SnapshotsView,
    pub popup: Option<Popup>,
    pub prompt: Option<Prompt>,
    pub status: Option<StatusMsg>,
    pub frozen: bool,
    pub refresh_every: Duration,
    pub last_refresh: Option<DateTime<Utc>>,
    /// Terminal size (columns, rows).
    pub size: (u16, u16),
    pub no_color: bool,
    pub quit: bool,
    pub profiles: Vec<String>,
    pub airflow_configured: bool,
    pub jobs: super::jobs::Jobs,
    pub dags: super::dags::DagsView,
    /// `[[maintenance]]` mappings of the profile.
    pub maintenance: Vec<crate::config::MaintenanceMapping>,
}

impl State {
    pub fn new(now: DateTime<Utc>) -> State {
        State {
            now,
            tab: Tab::Tables,
            conn: Conn::default(),
            readonly: false,
            keymap: Keymap::default(),
            health: HealthConfig::default(),
            schemas: Vec::new(),
            tables: TablesView::default(),
            partitions: PartitionsView::default(),
            snapshots: SnapshotsView::default(),
            popup: None,
            prompt: None,
            status: None,
            frozen: false,
            refresh_every: Duration::from_secs(60),
            last_refresh: None,
            size: (80, 24),
            no_color: false,
            quit: false,
            profiles: Vec::new(),
            airflow_configured: false,
            jobs: super::jobs::Jobs::default(),
            dags: super::dags::DagsView::default(),
            maintenance: Vec::new(),
        }
    }

    /// Rows of the body's list (terminal height minus header, tabs, column header,
    /// status and footer lines).
    pub fn page_height(&self) -> usize {
        let job = usize::from(self.jobs.visible(self.now).is_some());
        (self.size.1 as usize)
            .saturating_sub(crate::ui::CHROME_ROWS + self.extra_rows() + job)
            .max(1)
    }

    /// Rows the current tab spends above its list (the Snapshots chart).
    pub fn extra_rows(&self) -> usize {
        match self.tab {
            Tab::Snapshots => crate::ui::snapshots::chart_height(self.size.1),
            _ => 0,
        }
    }

    pub fn grid_mut(&mut self) -> Option<&mut Grid> {
        match self.tab {
            Tab::Tables => Some(&mut self.tables.grid),
            Tab::Partitions => Some(&mut self.partitions.grid),
            Tab::Snapshots => Some(&mut self.snapshots.grid),
            Tab::Dags => self.dags.grid_mut(),
        }
    }

    pub fn grid(&self) -> Option<&Grid> {
        match self.tab {
            Tab::Tables => Some(&self.tables.grid),
            Tab::Partitions => Some(&self.partitions.grid),
            Tab::Snapshots => Some(&self.snapshots.grid),
            Tab::Dags => self.dags.grid(),
        }
    }

    /// The table the Partitions and Snapshots tabs are about.
    pub fn focus_table(&self) -> Option<&TableRef> {
        self.partitions
            .table
            .as_ref()
            .or(self.snapshots.table.as_ref())
    }

    pub fn refresh_in_flight(&self) -> bool {
        self.tables.load.is_loading() || self.tables.pending > 0
    }

    /// Seconds until the next automatic refresh (None when frozen).
    pub fn next_refresh_in(&self) -> Option<i64> {
        if self.frozen {
            return None;
        }
        let last = self.last_refresh?;
        Some(
            (last + chrono::Duration::from_std(self.refresh_every).unwrap_or_default() - self.now)
                .num_seconds()
                .max(0),
        )
    }

    pub fn set_status(&mut self, level: Level, text: impl Into<String>) {
        self.status = Some(StatusMsg {
            level,
            text: text.into(),
            at: self.now,
        });
    }
}
