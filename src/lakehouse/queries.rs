//! What floe asks Trino, and how the answers become the domain model. Every per-table
//! health read is one statement that aggregates on the server: no file rows cross the wire.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use super::model::{PartitionStats, SnapshotInfo, TableRef, TableStats};
use super::plan::TableLayout;
use super::probe::{PARTITION_SUMMARIES_SINCE, Probe, parse_probe, probe_sql, split};
use crate::lakehouse::scan::ScanParams;
use crate::trino::{Client, Row, ServerInfo, TrinoError};

pub use super::statements::{
    Dating, MetaTables, describe_sql, discover_sql, files_sql, glob_match, parse_files,
    parse_stats, partition_value_text, partitions_sql, properties_sql, recount_in_spec_sql,
    recount_sql, show_create_sql, small_file_ages_sql, snapshots_sql, stats_sql,
};
use super::statements::{RowsError, parse_snapshot};
use super::summary::{
    FileMeta, FileRead, Props, SURVEY_BATCH, Snap, Survey, SurveyShape, apply_history, history_sql,
    parse_history, parse_survey, parse_survey_rows, survey_rows_sql, survey_sql,
};

pub use super::fallbacks::{ENTRIES_GIVE_UP, EntriesRecord};
mod files;
pub use files::FileItem;
mod catalogs;
pub use catalogs::{catalogs_sql, choose as choose_catalogs};
mod delta_reads;
mod layouts;
mod learned;
mod listing;
pub use listing::OnPart;
mod partitions;
mod query_list;
mod spec;

/// The first Trino release with `<catalog>.system.iceberg_tables`.
pub const ICEBERG_TABLES_SINCE: u32 = 475;
/// The first release whose `$files` has the `partition` column.
pub const FILES_PARTITION_SINCE: u32 = 465;
/// The first release with `$metadata_log_entries`.
pub const METADATA_LOG_SINCE: u32 = 444;
/// The first release with `$entries`.
pub const ENTRIES_SINCE: u32 = 469;

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
    /// The lines the reads count against (the health rules' thresholds, as a scan needs
    /// them).
    pub scan: ScanParams,
    /// `nodeVersion` as a number once known (0: unknown); decides which SQL the server
    /// understands. Shared by clones.
    server_version: Arc<AtomicU32>,
    layouts: Arc<Mutex<HashMap<TableRef, Layout>>>,
    /// Each table's declared layout (columns and partition spec), read once per table for
    /// the life of this connection and shared by the partitions view, plans and the CLI.
    specs: Arc<Mutex<HashMap<TableRef, CachedSpec>>>,
    /// What the reads of a fleet's files need beyond its survey, read ten tables a
    /// statement ahead of them (see [`Lakehouse::file_meta`]).
    pending: Arc<tokio::sync::Mutex<Pending>>,
    /// Held while a metadata read of [`Pending`] tables is on its way.
    meta_reading: Arc<tokio::sync::Mutex<()>>,
    /// Tables (and catalogs) whose `$entries` this server fails to read (Trino 476 fails
    /// the whole table with GENERIC_INTERNAL_ERROR when a data file has no
    /// `sort_order_id`, which the spec allows and pyiceberg writes): they are read through
    /// `$files`, without write times.
    entries_unreadable: Arc<Mutex<EntriesRecord>>,
    /// Where what this connection learns the server cannot read is kept for the next
    /// launch (see [`super::fallbacks`]), when set.
    fallbacks_file: Option<Arc<std::path::PathBuf>>,
    /// The catalog's table format, as its listing learned it (see `delta_reads`).
    format: Arc<std::sync::atomic::AtomicU8>,
    /// The other catalogs read beside this one (see `catalogs`).
    siblings: Arc<std::sync::RwLock<Vec<Lakehouse>>>,
    /// The catalogs asked for beside this one, found at connect (see `catalogs`).
    more_catalogs: Arc<Vec<String>>,
    /// Whether they were found (a listing sent before the connect ended finds them), held
    /// while they are looked for.
    catalogs_found: Arc<tokio::sync::Mutex<bool>>,
    /// No catalog was named: the cluster's are read as far as its catalog list can be
    /// read, and this one only when the cluster has it (see `catalogs`).
    catalogs_by_default: bool,
    /// Why the cluster's catalogs were not found, when they were read by default: this
    /// catalog is read alone (`floe doctor` says so).
    catalogs_unread: Arc<Mutex<Option<String>>>,
    /// This catalog is not the cluster's (read by default, where it has none of that
    /// name): its listing is empty, the others are read.
    absent: Arc<std::sync::atomic::AtomicBool>,
    /// The last listing that succeeded: its filters and its tables (see
    /// [`Lakehouse::listed_again`]).
    last_listing: Arc<Mutex<Option<LastListing>>>,
    /// The most snapshots [`Lakehouse::snapshots`] reads of one table (the newest):
    /// the page limit bounds one answer, not a query of a million rows.
    snapshot_limit: usize,
}

/// The default of [`Lakehouse::with_snapshot_limit`].
pub const SNAPSHOT_LIMIT: usize = 2000;

/// The tables whose files a fleet's surveys found worth reading, in the order the
/// surveys found them, until their [`FileMeta`] is read; the metadata read and the
/// survey's newest snapshots of each, until its file read takes them.
#[derive(Default)]
struct Pending {
    order: std::collections::VecDeque<TableRef>,
    /// Of those, the tables whose manifests must be read too ([`Survey::needs_manifests`]).
    manifests: HashSet<TableRef>,
    meta: HashMap<TableRef, FileMeta>,
    /// Of those, the tables whose `$properties` the survey read: not read again.
    props: HashMap<TableRef, Props>,
    times: HashMap<TableRef, Arc<Vec<Snap>>>,
}

/// Tables whose [`FileMeta`] one statement reads ([`file_meta_sql`]): the metadata-only
/// batch width of the survey.
pub const FILE_META_BATCH: usize = SURVEY_BATCH;

/// A listing's filters (schemas, globs) and the tables it found.
type LastListing = (Vec<String>, Vec<String>, Vec<TableRef>);

#[derive(Clone)]
struct CachedSpec {
    layout: Arc<TableLayout>,
    /// `$files` partition fields the spec, freshly read, did not know (fields of an older
    /// spec): they do not make the next load read the spec again.
    unknown: BTreeSet<String>,
}

/// The partitions of one table.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PartitionList {
    pub target_file_size: u64,
    pub layout_fields: Vec<String>,
    pub partitions: Vec<PartitionStats>,
}

impl Lakehouse {
    pub fn new(
        client: Client,
        catalog: impl Into<String>,
        scan: impl Into<ScanParams>,
    ) -> Lakehouse {
        Lakehouse {
            client,
            catalog: catalog.into(),
            scan: scan.into(),
            server_version: Arc::new(AtomicU32::new(0)),
            layouts: Arc::new(Mutex::new(HashMap::new())),
            specs: Arc::new(Mutex::new(HashMap::new())),
            entries_unreadable: Arc::new(Mutex::new(EntriesRecord::default())),
            fallbacks_file: None,
            format: Arc::new(std::sync::atomic::AtomicU8::new(
                delta_reads::FORMAT_UNKNOWN,
            )),
            siblings: Default::default(),
            more_catalogs: Default::default(),
            catalogs_found: Default::default(),
            catalogs_by_default: false,
            catalogs_unread: Default::default(),
            absent: Default::default(),
            pending: Default::default(),
            meta_reading: Default::default(),
            last_listing: Default::default(),
            snapshot_limit: SNAPSHOT_LIMIT,
        }
    }

    /// Read at most `n` snapshots of a table (its newest) in [`Lakehouse::snapshots`].
    pub fn with_snapshot_limit(mut self, n: usize) -> Lakehouse {
        self.snapshot_limit = n.max(1);
        self
    }

    /// Ask the coordinator who it is, and remember its version (and what an earlier
    /// launch learned it cannot read).
    pub async fn connect(&self) -> Result<ServerInfo, TrinoError> {
        let info = self.client.info().await?;
        let version = info.version_number().unwrap_or(0);
        self.server_version.store(version, Ordering::Relaxed);
        if let Some(path) = self.fallbacks_file.as_deref()
            && version > 0
            && let Some(known) = super::fallbacks::load(path, self.client.url().as_str(), version)
            && let Ok(mut r) = self.entries_unreadable.lock()
        {
            // A catalog an earlier launch on this server found without
            // `system.iceberg_tables` is listed the way its connector reads at once.
            if let Some(f) = known.format(&self.catalog) {
                self.set_format(f);
            }
            r.absorb(known);
        }
        self.find_catalogs().await?;
        Ok(info)
    }

    pub fn server_version(&self) -> Option<u32> {
        Some(self.server_version.load(Ordering::Relaxed)).filter(|v| *v > 0)
    }

    fn supports(&self, since: u32) -> bool {
        self.server_version().is_none_or(|v| v >= since)
    }

    /// The optional metadata tables this server has, by its version (all when unknown).
    pub fn meta_tables(&self) -> MetaTables {
        MetaTables {
            entries: self.supports(ENTRIES_SINCE),
            metadata_log: self.supports(METADATA_LOG_SINCE),
            file_times: false,
        }
    }

    /// The health facts of one table: its survey (metadata only: its snapshots, target,
    /// manifests and metadata log in one statement), then its files when they can change
    /// its verdict ([`crate::lakehouse::summary::file_read`]).
    pub async fn table_stats(&self, t: &TableRef) -> Result<TableStats, TrinoError> {
        if let Some(l) = self.sibling(&t.catalog) {
            return Box::pin(l.table_stats(t)).await;
        }
        let one = std::slice::from_ref(t);
        // A Delta table's survey is complete: no file read follows it.
        let mut surveyed = if self.delta().await? {
            self.delta_survey(one).await
        } else {
            self.survey_with(one, self.meta_tables().metadata_log, true)
                .await
        };
        let (_, survey) = surveyed.pop().ok_or_else(|| TrinoError::Malformed {
            url: self.client.url().to_string(),
            message: format!("survey of {t} returned nothing"),
        })?;
        let survey = survey?;
        match survey.file_read(&self.scan) {
            FileRead::NotNeeded => Ok(survey.stats(&self.scan)),
            FileRead::Needed(_) => self.file_stats(t, &survey.stats(&self.scan)).await,
        }
    }

    pub(super) async fn survey_here(
        &self,
        tables: &[TableRef],
    ) -> Vec<(TableRef, Result<Survey, TrinoError>)> {
        if self.is_delta() {
            return self.delta_survey(tables).await;
        }
        self.survey_with(tables, false, false).await
    }

    /// The surveys of `tables`, with the metadata log when `metadata_log` and with their
    /// [`FileMeta`] when `table_meta`. What a table's file read needs of its survey is kept
    /// for it: its metadata (and so its layout) when read here, else its place among the
    /// tables whose metadata is read ahead; and its newest snapshots, which date its files.
    async fn survey_with(
        &self,
        tables: &[TableRef],
        metadata_log: bool,
        table_meta: bool,
    ) -> Vec<(TableRef, Result<Survey, TrinoError>)> {
        let shape = SurveyShape {
            metadata_log,
            table_meta,
            summaries: self.summaries_column(),
        };
        let aggregate = |tables: Vec<TableRef>| async move {
            self.batched(
                &tables,
                "survey",
                |b| survey_sql(b, &self.scan, shape),
                |rows, n| parse_survey(rows, n, table_meta, &self.scan),
            )
            .await
        };
        let mut found = if metadata_log || table_meta {
            aggregate(tables.to_vec()).await
        } else {
            // A fleet's survey: the snapshots' rows, the facts derived here; a batch cut at
            // its limit (a table with a history longer than its window) again in the
            // aggregate form.
            let rows = self
                .batched(
                    tables,
                    "survey",
                    |b| survey_rows_sql(b, &self.scan),
                    |rows, n| {
                        Ok(match parse_survey_rows(rows, n, &self.scan)? {
                            Some(v) => v.into_iter().map(Some).collect(),
                            None => vec![None; n],
                        })
                    },
                )
                .await;
            let mut found = Vec::with_capacity(rows.len());
            let mut again = Vec::new();
            for (t, r) in rows {
                match r {
                    Ok(Some(s)) => found.push((t, Ok(s))),
                    Ok(None) => again.push(t),
                    Err(e) => found.push((t, Err(e))),
                }
            }
            if !again.is_empty() {
                found.extend(aggregate(again).await);
                let place: HashMap<&TableRef, usize> =
                    tables.iter().enumerate().map(|(i, t)| (t, i)).collect();
                found.sort_by_key(|(t, _)| place.get(t).copied().unwrap_or(usize::MAX));
            }
            found
        };
        self.read_long_histories(&mut found).await;
        let mut p = self.pending.lock().await;
        for (t, r) in &found {
            let Ok(s) = r else { continue };
            if let Some(m) = s.meta {
                self.learn_layout_of(t, &m);
            }
            // What it read of `$properties` is not read again ahead of its files (replaced
            // at each survey, taken by the file read).
            match s.props {
                Some(props) => p.props.insert(t.clone(), props),
                None => p.props.remove(t),
            };
            if matches!(s.file_read(&self.scan), FileRead::NotNeeded) {
                continue;
            }
            // The survey's snapshots date the files when they are all of them; a longer
            // history is dated by the file read's own join (an id beyond the window
            // would only give a bound).
            if s.history.len() as u64 >= s.totals.snapshots {
                p.times.insert(t.clone(), Arc::new(s.history.clone()));
            }
            match s.meta {
                Some(m) => {
                    p.meta.insert(t.clone(), m);
                }
                None => {
                    // A commit that wrote two partitions: the files carry a partition,
                    // whatever the manifests say; only a finding they could hold needs them.
                    if s.partitioned_by_history()
                        && self.supports(FILES_PARTITION_SINCE)
                        && !self.layout_known(t)
                    {
                        self.set_file_layout(t, Layout::PartitionColumn);
                    }
                    if s.needs_manifests(&self.scan) || !self.layout_known(t) {
                        p.manifests.insert(t.clone());
                        p.order.push_back(t.clone());
                    } else if let Some(props) = s.props {
                        // Its target read with its snapshots, its manifests not needed:
                        // nothing to read ahead of its files.
                        p.meta.insert(
                            t.clone(),
                            FileMeta {
                                target_property: props.target,
                                ..FileMeta::default()
                            },
                        );
                    } else {
                        p.order.push_back(t.clone());
                    }
                }
            }
        }
        found
    }

    /// The tables whose history goes on beyond their survey's window get their snapshot
    /// facts computed on the server ([`history_sql`]), ten a statement: rare (more than
    /// `trend_limit` snapshots), and what the window cannot tell (an older compaction,
    /// the older snapshots' trend). A failed read leaves the window's facts.
    async fn read_long_histories(&self, found: &mut [(TableRef, Result<Survey, TrinoError>)]) {
        let long: Vec<TableRef> = found
            .iter()
            .filter(|(_, r)| r.as_ref().is_ok_and(|s| s.long_history))
            .map(|(t, _)| t.clone())
            .collect();
        if long.is_empty() {
            return;
        }
        let read = self
            .batched(
                &long,
                "history",
                |b| history_sql(b, &self.scan),
                parse_history,
            )
            .await;
        for (t, r) in read {
            match r {
                Ok(row) => {
                    if let Some((_, Ok(s))) = found.iter_mut().find(|(x, _)| *x == t) {
                        apply_history(&row, s);
                    }
                }
                Err(e) => tracing::warn!(table = %t, "history not read: {e}"),
            }
        }
    }

    /// Whether `t`'s files are partitioned, from its manifests (`m`).
    fn learn_layout_of(&self, t: &TableRef, m: &FileMeta) {
        if !self.supports(FILES_PARTITION_SINCE) {
            return;
        }
        match m.partitioned {
            Some(true) => self.set_file_layout(t, Layout::PartitionColumn),
            Some(false) => self.set_file_layout(t, Layout::Unpartitioned),
            None => {}
        }
    }

    /// The health facts of one table in the single statement floe read them with before
    /// the survey (every metadata table of the table in one plan): kept for comparison.
    pub async fn table_stats_in_one(&self, t: &TableRef) -> Result<TableStats, TrinoError> {
        if let Some(l) = self.sibling(&t.catalog) {
            return Box::pin(l.table_stats_in_one(t)).await;
        }
        let (rows, layout) = self
            .with_layout(t, |l, m| stats_sql(t, &self.scan, l, m))
            .await?;
        let row = rows.first().ok_or_else(|| TrinoError::Malformed {
            url: self.client.url().to_string(),
            message: format!("health query of {t} returned no row"),
        })?;
        let mut stats = parse_stats(row, layout).map_err(|m| TrinoError::Malformed {
            url: self.client.url().to_string(),
            message: format!("health query of {t}: {m}"),
        })?;
        self.date_small_files(t, &mut stats).await;
        Ok(stats)
    }

    pub(super) async fn probe_here(
        &self,
        tables: &[TableRef],
    ) -> Vec<(TableRef, Result<Probe, TrinoError>)> {
        if self.is_delta() {
            return self.delta_probe(tables).await;
        }
        let metadata_log = self.meta_tables().metadata_log;
        self.batched(
            tables,
            "change probe",
            |b| probe_sql(b, metadata_log),
            parse_probe,
        )
        .await
    }

    /// `$manifests`' partition summaries column on this server.
    pub(super) fn summaries_column(&self) -> &'static str {
        if self.supports(PARTITION_SUMMARIES_SINCE) {
            "partition_summaries"
        } else {
            "partitions"
        }
    }

    /// One statement over `tables` whose rows carry each table's index, read by `parse`.
    /// A statement that fails is split in halves, down to single tables, so a broken
    /// table (dropped, permission denied) carries its own error and the others still get
    /// theirs. Errors that are not the statement's (transport, auth) are every table's:
    /// splitting would only repeat them.
    async fn batched<T>(
        &self,
        tables: &[TableRef],
        what: &str,
        sql: impl Fn(&[TableRef]) -> String,
        parse: impl Fn(&[Row], usize) -> Result<Vec<T>, RowsError>,
    ) -> Vec<(TableRef, Result<T, TrinoError>)> {
        let mut out = Vec::with_capacity(tables.len());
        let mut todo: Vec<&[TableRef]> = vec![tables];
        while let Some(batch) = todo.pop() {
            if batch.is_empty() {
                continue;
            }
            let result = self.client.query(&sql(batch)).await.and_then(|o| {
                parse(&o.rows, batch.len()).map_err(|m| TrinoError::Malformed {
                    url: self.client.url().to_string(),
                    message: format!("{what}: {m}"),
                })
            });
            match result {
                Ok(found) => out.extend(batch.iter().cloned().zip(found.into_iter().map(Ok))),
                Err(e @ TrinoError::Query { .. }) => match split(batch.len()) {
                    Some(mid) => {
                        // The second half is popped last: tables come back in order.
                        todo.push(&batch[mid..]);
                        todo.push(&batch[..mid]);
                    }
                    None => out.push((batch[0].clone(), Err(e))),
                },
                Err(e) => out.extend(batch.iter().map(|t| (t.clone(), Err(e.clone())))),
            }
        }
        out
    }

    /// The newest snapshots of one table (at most the snapshot limit), oldest first. The
    /// read is bounded by a LIMIT: a table with a million snapshots is not read whole (its
    /// verdict comes from the health statement's aggregates, which count them all).
    pub async fn snapshots(&self, t: &TableRef) -> Result<Vec<SnapshotInfo>, TrinoError> {
        if let Some(l) = self.sibling(&t.catalog) {
            return Box::pin(l.snapshots(t)).await;
        }
        if self.delta().await? {
            return self.delta_snapshots(t).await;
        }
        let out = self
            .client
            .query(&snapshots_sql(t, self.snapshot_limit))
            .await?;
        let mut list = out
            .rows
            .iter()
            .map(|r| {
                parse_snapshot(r).map_err(|m| TrinoError::Malformed {
                    url: self.client.url().to_string(),
                    message: format!("snapshots of {t}: {m}"),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        list.reverse();
        Ok(list)
    }

    /// `key → value` of `$properties`.
    pub async fn properties(&self, t: &TableRef) -> Result<Vec<(String, String)>, TrinoError> {
        let out = self.client.query(&properties_sql(t)).await?;
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
