//! The reads of a table's files after its survey: its target and manifests, read ahead for
//! the tables waiting for theirs; the files themselves, several tables a statement for a
//! fleet and one for a single table; and the age of the small files where a verdict needs
//! it.

use std::collections::HashMap;

use super::{FILE_META_BATCH, Lakehouse, MetaTables};
use crate::lakehouse::dating::{appended_since, compacted_since};
use crate::lakehouse::model::{TableRef, TableStats};
use crate::lakehouse::probe::{by_index, rows_by_index};
use crate::lakehouse::statements::{
    Dating, FileReadItem, data_file_counts, data_files_batch_sql, date_by_ids, every_file_small,
    files_batch_sql, files_sql, parse_files, small_dates_sql, small_file_ages_sql,
};
use crate::lakehouse::summary::{FileMeta, Props, Snap, file_meta_sql, parse_file_meta};
use crate::trino::{QueryOptions, Row, TrinoError, Value};

/// A table whose files a batched read reads, with what its survey proved of them (the
/// facts the file read completes).
#[derive(Clone, Debug, PartialEq)]
pub struct FileItem {
    pub table: TableRef,
    pub survey: Box<TableStats>,
}

impl FileItem {
    pub fn of(table: TableRef, survey: TableStats) -> FileItem {
        FileItem {
            table,
            survey: Box::new(survey),
        }
    }
}

impl Lakehouse {
    /// `t`'s [`FileMeta`] for its file read: the one its survey read, or read now with
    /// the next tables waiting for theirs (up to [`FILE_META_BATCH`] a statement: what a
    /// statement costs the coordinator beyond its reads is paid once for them). Taken:
    /// the next file read of `t` reads it again (its manifests change with every commit).
    pub async fn file_meta(&self, t: &TableRef) -> Result<FileMeta, TrinoError> {
        self.file_meta_with(t, FILE_META_BATCH).await
    }

    /// [`Lakehouse::file_meta`] with at most `width` tables in its statement (1: the
    /// table alone, for a read the screen waits for).
    async fn file_meta_with(&self, t: &TableRef, width: usize) -> Result<FileMeta, TrinoError> {
        if let Some(m) = self.pending.lock().await.meta.remove(t) {
            return Ok(m);
        }
        // One metadata read at a time: a file read that starts while another's batch is
        // on its way waits for it (its table may be in it) instead of reading again.
        let _reading = self.meta_reading.lock().await;
        let (batch, manifests, props) = {
            let mut p = self.pending.lock().await;
            if let Some(m) = p.meta.remove(t) {
                return Ok(m);
            }
            p.order.retain(|x| x != t);
            let mut batch = vec![t.clone()];
            while batch.len() < width.max(1) {
                match p.order.pop_front() {
                    Some(x) => batch.push(x),
                    None => break,
                }
            }
            // The manifests where a finding or the layout needs them (a table not surveyed
            // in this refresh: its layout).
            let manifests: std::collections::HashSet<TableRef> = batch
                .iter()
                .filter(|x| p.manifests.remove(*x) || !self.layout_known(x))
                .cloned()
                .collect();
            let props: HashMap<TableRef, Props> = batch
                .iter()
                .filter_map(|x| p.props.remove(x).map(|v| (x.clone(), v)))
                .collect();
            (batch, manifests, props)
        };
        let summaries = self.summaries_column();
        let found = self
            .batched(
                &batch,
                "table metadata",
                |b| {
                    file_meta_sql(
                        b,
                        &self.scan,
                        summaries,
                        |x| manifests.contains(x),
                        |x| props.get(x).copied(),
                    )
                },
                parse_file_meta,
            )
            .await;
        let mut p = self.pending.lock().await;
        let mut mine = None;
        for (x, r) in found {
            if let Ok(m) = &r {
                self.learn_layout_of(&x, m);
            }
            if &x == t {
                mine = Some(r);
            } else if let Ok(m) = r {
                p.meta.insert(x, m);
            } else {
                // Its own read tells it its error.
                p.order.push_back(x);
            }
        }
        mine.unwrap_or_else(|| {
            Err(TrinoError::Malformed {
                url: self.client.url().to_string(),
                message: format!("the metadata read of {t} returned nothing"),
            })
        })
    }

    /// The file facts of `t` over what its survey read (`survey`: the survey's stats), in
    /// one statement at the table's own target (its [`FileMeta`], read ahead): `$entries`
    /// where the server reads it, the small files dated by the survey's newest snapshots
    /// (or a join when it has none of them); a second statement dates its small files
    /// where `$entries` could not.
    pub async fn file_stats(
        &self,
        t: &TableRef,
        survey: &TableStats,
    ) -> Result<TableStats, TrinoError> {
        let meta = self.file_meta(t).await?;
        let mut base = survey.clone();
        meta.apply(&mut base, &self.scan);
        if !self.layout_known(t) {
            // Its manifests did not tell (an empty table has none): the file read learns
            // the layout from its own statement, without reading the metadata again.
            self.pending.lock().await.meta.insert(t.clone(), meta);
        }
        let history = self.pending.lock().await.times.remove(t);
        let dating = if history.is_some() {
            Dating::SnapshotIds
        } else {
            Dating::Join
        };
        let target = base.target_file_size;
        let (rows, layout) = self
            .with_layout(t, |l, m| files_sql(t, &self.scan, l, m, target, dating))
            .await?;
        let row = rows.first().ok_or_else(|| self.malformed(t, "no row"))?;
        let times = history.as_deref().map(|h| times_of(h));
        let mut stats =
            parse_files(row, layout, &base, times.as_deref()).map_err(|m| self.malformed(t, &m))?;
        self.date_small_files(t, &mut stats).await;
        Ok(stats)
    }

    /// The file facts of `tables` (each with its survey's stats), several tables a
    /// statement (`$files`, undated: [`data_files_batch_sql`] for the tables whose
    /// summaries count no delete file, [`files_batch_sql`] for the others), each at its own target read
    /// ahead; then the age of the small files of the tables whose verdict needs it
    /// ([`Lakehouse::date_fleet_files`]). A table the batch could not read is read on its
    /// own ([`Lakehouse::file_stats`]'s way), and says its own error.
    pub async fn files_batch(
        &self,
        tables: &[FileItem],
    ) -> Vec<(TableRef, Result<TableStats, TrinoError>)> {
        let mut out = Vec::with_capacity(tables.len());
        for (lake, group) in self.by_catalog(tables, |i| &i.table) {
            out.extend(lake.files_batch_here(&group).await);
        }
        out
    }

    async fn files_batch_here(
        &self,
        tables: &[FileItem],
    ) -> Vec<(TableRef, Result<TableStats, TrinoError>)> {
        let mut out = Vec::with_capacity(tables.len());
        let mut ready: HashMap<TableRef, (TableStats, FileReadItem)> = HashMap::new();
        let mut order = Vec::new();
        // A table read alone is one the screen waits for: its metadata alone too.
        let width = if tables.len() == 1 {
            1
        } else {
            FILE_META_BATCH
        };
        for FileItem { table: t, survey } in tables {
            match self.file_meta_with(t, width).await {
                Ok(meta) => {
                    let mut base = (**survey).clone();
                    meta.apply(&mut base, &self.scan);
                    let item = FileReadItem {
                        table: t.clone(),
                        layout: self.file_layout(t),
                        target: base.target_file_size,
                        // Delete files counted, or not counted at all: the read that
                        // counts them (missing is unknown, never zero).
                        deletes: base.delete_files > 0 || base.deletes_unknown,
                        all_small: every_file_small(&base, &self.scan),
                    };
                    ready.insert(t.clone(), (base, item));
                    order.push(t.clone());
                }
                Err(e) => out.push((t.clone(), Err(e))),
            }
        }
        // Tables without delete files and those with them in statements of their own:
        // their branches have different columns.
        let (plain, with_deletes): (Vec<TableRef>, Vec<TableRef>) =
            order.into_iter().partition(|t| !ready[t].1.deletes);
        let items = |b: &[TableRef]| -> Vec<FileReadItem> {
            b.iter().map(|t| ready[t].1.clone()).collect()
        };
        let (counted, summed) = futures::join!(
            self.batched(
                &plain,
                "file read",
                |b| data_files_batch_sql(&items(b), &self.scan),
                |rows, n| rows_by_index(rows, n, "file read"),
            ),
            self.batched(
                &with_deletes,
                "file read",
                |b| files_batch_sql(&items(b), &self.scan),
                |rows, n| by_index(rows, n, "file read", Row::clone),
            )
        );
        let read = counted
            .into_iter()
            .map(|(t, r)| (t, r.map(FileRows::PerPartition)))
            .chain(
                summed
                    .into_iter()
                    .map(|(t, r)| (t, r.map(FileRows::Summed))),
            );
        // Each table's end of its read at once: a retry alone where the batch failed it,
        // the age of its small files where its verdict needs it.
        let finish = read.into_iter().map(|(t, r)| {
            let (base, item) = &ready[&t];
            async move {
                let history = self.pending.lock().await.times.remove(&t);
                let result = match r {
                    Ok(FileRows::Summed(row)) => parse_files(&row, item.layout, base, None)
                        .map_err(|m| self.malformed(&t, &m)),
                    Ok(FileRows::PerPartition(rows)) => {
                        data_file_counts(&rows, item.layout, base, &self.scan)
                            .map_err(|m| self.malformed(&t, &m))
                    }
                    // A table the batch could not read (an unpartitioned table taken for a
                    // partitioned one, a table dropped since): read alone, with the
                    // retries of a single table's read.
                    Err(TrinoError::Query { .. }) => self.files_alone(&t, base).await,
                    Err(e) => Err(e),
                };
                let result = match result {
                    Ok(mut stats) => {
                        let h = history.as_deref().map(Vec::as_slice);
                        self.date_fleet_files(&t, &mut stats, h).await;
                        Ok(stats)
                    }
                    Err(e) => Err(e),
                };
                (t, result)
            }
        });
        out.extend(futures::future::join_all(finish).await);
        out
    }

    /// One table's files over `$files` (undated), with the layout retries of a single read.
    async fn files_alone(&self, t: &TableRef, base: &TableStats) -> Result<TableStats, TrinoError> {
        let target = base.target_file_size;
        let undated = |_: MetaTables| MetaTables {
            entries: false,
            metadata_log: false,
            file_times: false,
        };
        let (rows, layout) = self
            .with_layout(t, |l, m| {
                files_sql(t, &self.scan, l, undated(m), target, Dating::Join)
            })
            .await?;
        let row = rows.first().ok_or_else(|| self.malformed(t, "no row"))?;
        parse_files(row, layout, base, None).map_err(|m| self.malformed(t, &m))
    }

    /// The age of the small files of a table read in a batch, where its verdict needs
    /// it: a table compacted before, with small files enough to matter and two in a
    /// partition (its staleness is the age of the oldest), from `$entries` (the snapshots
    /// that added them) or, where the server fails that, their modification times. A table
    /// never compacted, written by appends alone and all of whose files are small is dated
    /// by its history, no read: its oldest file is its first one; so is a compacted one
    /// whose history settles its verdict ([`compacted_since`]). Any other table is left
    /// undated (its verdict does not use the age; the screen says so).
    pub(super) async fn date_fleet_files(
        &self,
        t: &TableRef,
        stats: &mut TableStats,
        history: Option<&[Snap]>,
    ) {
        let enough = stats.small_files >= self.scan.min_small_files
            && stats.max_partition_small_files.is_none_or(|m| m >= 2);
        if !enough {
            return;
        }
        if stats.last_compaction.is_none() {
            if let Some(h) = history
                && let Some((at, bound)) = appended_since(h, stats)
            {
                stats.oldest_small_file_at = Some(at);
                stats.oldest_small_is_lower_bound = bound;
            }
            return;
        }
        // A compacted table whose history settles its verdict: no read of its files.
        if let Some(h) = history
            && let Some((at, bound)) = compacted_since(h, stats, &self.scan, chrono::Utc::now())
        {
            stats.oldest_small_file_at = Some(at);
            stats.oldest_small_is_lower_bound = bound;
            return;
        }
        tracing::debug!(
            table = %t,
            history = history.is_some(),
            "small files dated by a read of the table's files: its history cannot settle the verdict"
        );
        let meta = self.meta_tables_for(t);
        if meta.entries {
            let dating = if history.is_some() {
                Dating::SnapshotIds
            } else {
                Dating::Join
            };
            let sql = small_dates_sql(t, &self.scan, stats.target_file_size, dating);
            match self.client.execute(&sql, QueryOptions::default()).await {
                Ok(out) => {
                    self.learn_entries(|r| r.read(t));
                    if let Some(r) = out.rows.first() {
                        date_from_row(r, stats, history);
                    }
                    return;
                }
                Err(TrinoError::Query {
                    ref error_name,
                    ref message,
                    ..
                }) if error_name == "GENERIC_INTERNAL_ERROR" => {
                    // The server cannot read this table's `$entries`: its files' times.
                    self.learn_entries(|r| r.failed(t, &format!("{error_name}: {message}")));
                }
                Err(e) => {
                    tracing::warn!(table = %t, "small files not dated: {e}");
                    return;
                }
            }
        }
        self.date_small_files(t, stats).await;
    }

    /// Where the server has `$entries` but failed it for `t`, the age of its oldest small
    /// file from the files' modification times, read only when it can change the verdict:
    /// enough small files to matter, and a compaction that may have left some (without
    /// it the newest compaction would date them, and a partial one would hide every
    /// partition it did not rewrite). A failed read leaves the age unknown. Its cost on
    /// Trino 476 (2 cores, 2,004 files of ~4 KB): a split per data file, 1.3-1.7 s CPU and
    /// 0.2-1.1 s planning, against 0.24-0.35 s CPU for the table statement itself.
    pub(super) async fn date_small_files(&self, t: &TableRef, stats: &mut TableStats) {
        if !self.dated(self.meta_tables_for(t)).file_times
            || stats.small_files < self.scan.min_small_files
            || stats.last_compaction.is_none()
        {
            return;
        }
        let sql = small_file_ages_sql(t, &self.scan);
        match self.client.execute(&sql, QueryOptions::default()).await {
            Ok(out) => {
                stats.oldest_small_file_at = out
                    .rows
                    .first()
                    .and_then(|r| r.get("oldest_small"))
                    .and_then(Value::as_datetime);
                stats.oldest_small_is_lower_bound = false;
            }
            Err(e) => tracing::warn!(table = %t, "small files not dated: {e}"),
        }
    }

    fn malformed(&self, t: &TableRef, what: impl std::fmt::Display) -> TrinoError {
        TrinoError::Malformed {
            url: self.client.url().to_string(),
            message: format!("file read of {t}: {what}"),
        }
    }
}

/// A history's ids and commit times.
fn times_of(h: &[Snap]) -> Vec<(i64, chrono::DateTime<chrono::Utc>)> {
    h.iter().map(|s| (s.id, s.at)).collect()
}

/// The row of [`small_dates_sql`] into `stats`: by ids (with the history) or the join's.
fn date_from_row(r: &Row, stats: &mut TableStats, history: Option<&[Snap]>) {
    match (history, r.get("small_sids")) {
        (Some(h), Some(Value::Array(ids))) => {
            let ids: Vec<i64> = ids.iter().filter_map(Value::as_i64).collect();
            if let Some((at, bound)) = date_by_ids(&ids, &times_of(h), stats.oldest_snapshot) {
                stats.oldest_small_file_at = Some(at);
                stats.oldest_small_is_lower_bound = bound;
            }
        }
        _ => {
            let lower = r
                .get("oldest_small_lower")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            let dated = r.get("oldest_small_file_at").and_then(Value::as_datetime);
            let at = match (dated, lower.then_some(stats.oldest_snapshot).flatten()) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            stats.oldest_small_file_at = at;
            stats.oldest_small_is_lower_bound = lower;
        }
    }
}

/// What a batched file read returned for one table.
enum FileRows {
    /// [`data_files_batch_sql`]: a row per partition.
    PerPartition(Vec<Row>),
    /// [`files_batch_sql`]: the table's one row.
    Summed(Row),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lakehouse::dating::testing::{all_small, at, snap};
    use crate::trino::{Column, TrinoType};

    /// A row of `(column, type, value)`.
    fn row(cells: Vec<(&str, &str, Value)>) -> Row {
        let columns = cells
            .iter()
            .map(|(n, t, _)| Column {
                name: (*n).into(),
                type_text: (*t).into(),
                ty: TrinoType::parse(t).unwrap(),
            })
            .collect();
        Row {
            columns: std::sync::Arc::new(columns),
            values: cells.into_iter().map(|(_, _, v)| v).collect(),
        }
    }

    #[test]
    fn a_fleet_read_dates_by_ids_with_a_history_and_by_the_join_without() {
        let h = [snap(9, 20, 40, false), snap(8, 10, 20, false)];
        let mut st = all_small(40);
        st.oldest_snapshot = Some(at(10));
        let ids = row(vec![(
            "small_sids",
            "array(bigint)",
            Value::Array(vec![Value::Int(8), Value::Int(9)]),
        )]);
        date_from_row(&ids, &mut st, Some(&h));
        assert_eq!(
            (st.oldest_small_file_at, st.oldest_small_is_lower_bound),
            (Some(at(10)), false)
        );
        let joined = row(vec![
            (
                "oldest_small_file_at",
                "double",
                Value::Double(at(12).timestamp() as f64),
            ),
            ("oldest_small_lower", "boolean", Value::Bool(true)),
        ]);
        let mut st = all_small(40);
        st.oldest_snapshot = Some(at(10));
        date_from_row(&joined, &mut st, None);
        assert_eq!(
            (st.oldest_small_file_at, st.oldest_small_is_lower_bound),
            (Some(at(10)), true)
        );
    }
}
