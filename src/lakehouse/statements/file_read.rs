//! The statements of a table's file read (one table's, or a batch's over `$files`) and of
//! the dating of its small files, and how their rows become the table's file facts.

use super::parse::opt_time;
use super::*;

/// One table's file read in a batch: the table, how its files group, its target,
/// whether its summary counts delete files, and whether its totals prove every data file
/// small ([`every_file_small`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileReadItem {
    pub table: TableRef,
    pub layout: Layout,
    pub target: u64,
    pub deletes: bool,
    pub all_small: bool,
}

/// Whether what a survey read of a table (`s`: its snapshot summary's totals, at its
/// target) proves every one of its data files small: the summary counts no delete file
/// and the table's bytes all told stay under the small-file line, so no file of it
/// reaches the line, let alone the large-file one. A summary without totals proves
/// nothing (its counts read as zero).
pub fn every_file_small(s: &TableStats, h: &ScanParams) -> bool {
    s.files_unread
        && !s.deletes_unknown
        && s.delete_files == 0
        && s.data_files > 0
        && s.total_bytes > 0
        && s.total_bytes < h.small_line(s.target_file_size)
}

/// The file read of a table whose summary counts no delete files: one row per partition
/// (one for an unpartitioned table) with its data files, its small and large ones and
/// their bytes, from `$files` alone, one level of aggregation. The table's counts and its
/// partitions' are summed here ([`data_file_counts`]): on Trino 476 a second level of
/// aggregation on the server doubled the statement's planning (12.9 against 6.7 ms a
/// table, ten to a statement; the script's one-table `$files` count plans in 6.0 ms), and
/// a table has as many rows as partitions, what its files already cost to read.
///
/// A table whose totals prove every data file small (`all_small`) has the same rows from
/// `$partitions` (a partition's files are its small files, none large): Trino keeps those
/// counts per partition as it plans the table's files, and on Trino 476 a branch of them
/// cost the coordinator's process 21 ms of CPU a table, ten to a statement, against 37-42
/// ms for the `$files` aggregate (`benches/coord/branches.py`, the pyiceberg fleet). Not
/// where the partitions are told apart by the files' directories (a server whose `$files`
/// has no `partition`).
pub fn data_files_sql(
    t: &TableRef,
    h: &ScanParams,
    layout: Layout,
    target: u64,
    all_small: bool,
) -> String {
    if all_small && layout != Layout::Directory {
        return format!(
            "SELECT file_count AS files, file_count AS small_files, BIGINT '0' AS large_files, \
             total_size AS bytes FROM {}",
            t.meta("partitions")
        );
    }
    let target = target.max(1);
    let small = h.small_line(target);
    let large = (target as f64 * h.large_file_ratio).floor() as u64;
    let group = if layout == Layout::Unpartitioned {
        String::new()
    } else {
        format!(" GROUP BY {}", part_expr(layout, "f"))
    };
    format!(
        "SELECT count(*) AS files, count_if(f.file_size_in_bytes < {small}) AS small_files, \
         count_if(f.file_size_in_bytes > {large}) AS large_files, sum(f.file_size_in_bytes) AS bytes \
         FROM {files} f WHERE f.content = 0{group}",
        files = t.meta("files"),
    )
}

/// The data-file reads of several tables without delete files in one statement
/// ([`data_files_sql`] a branch), rows carrying the branch's index as `i`: a table has a
/// row per partition, and none when it has no data file.
pub fn data_files_batch_sql(items: &[FileReadItem], h: &ScanParams) -> String {
    items
        .iter()
        .enumerate()
        .map(|(i, it)| {
            format!(
                "SELECT {i} AS i, b.* FROM ({}) b",
                data_files_sql(&it.table, h, it.layout, it.target, it.all_small)
            )
        })
        .collect::<Vec<_>>()
        .join("\nUNION ALL\n")
}

/// The file reads of several tables whose summaries count delete files, in one statement,
/// one `UNION ALL` branch a table (each [`files_sql`] over `$files`, undated), rows carrying
/// the branch's index as `i`. What a statement costs the coordinator beyond its reads (its
/// scheduling, its tasks, the protocol) is then paid once for them: on Trino 476 five
/// file reads in one statement cost its process about a third less CPU than five
/// statements. `$files`, not `$entries`: a server that fails `$entries` for one table
/// (Trino 476 on files without a sort order id) would fail the whole batch; the small
/// files of the tables whose verdict needs their age are dated on their own
/// ([`small_dates_sql`]).
pub fn files_batch_sql(items: &[FileReadItem], h: &ScanParams) -> String {
    let files = MetaTables {
        entries: false,
        metadata_log: false,
        file_times: false,
    };
    items
        .iter()
        .enumerate()
        .map(|(i, it)| {
            format!(
                "SELECT {i} AS i, b.* FROM (\n{}\n) b",
                files_sql(&it.table, h, it.layout, files, it.target, Dating::Join)
            )
        })
        .collect::<Vec<_>>()
        .join("\nUNION ALL\n")
}

/// The stats of a table from its rows of [`data_files_sql`] (a row a partition) over what
/// its survey read (`survey`, at the target the files were counted at): the counts the
/// file read of a table with delete files computes on the server ([`files_sql`]), summed
/// here with the same lines: a partition counts with `min_small_files` small files, and is
/// critical with `critical_partition_small_files` small files more than its bytes need.
/// The records are the summary's; no age (a table whose verdict needs it is dated on its
/// own).
pub fn data_file_counts(
    rows: &[Row],
    layout: Layout,
    survey: &TableStats,
    h: &ScanParams,
) -> Result<TableStats, NoColumn> {
    let min = h.min_small_files;
    let crit = h.critical_partition_small_files.max(min);
    let target = u128::from(survey.target_file_size.max(1));
    let (mut files, mut small, mut large, mut bytes) = (0u64, 0u64, 0u64, 0u64);
    let (mut partitions, mut small_parts, mut critical) = (0u64, 0u64, 0u64);
    let mut most_small: Option<u64> = None;
    for r in rows {
        let u = |name: &str| -> Result<u64, NoColumn> { Ok(r.req(name)?.as_u64().unwrap_or(0)) };
        let (f, s, l, b) = (
            u("files")?,
            u("small_files")?,
            u("large_files")?,
            u("bytes")?,
        );
        // An aggregate without groups (an unpartitioned table) answers one row even
        // for no file at all.
        if f == 0 {
            continue;
        }
        files += f;
        small += s;
        large += l;
        bytes += b;
        partitions += 1;
        small_parts += u64::from(s >= min);
        critical +=
            u64::from(s >= crit && u128::from(b) <= u128::from(f.saturating_sub(crit)) * target);
        most_small = Some(most_small.map_or(s, |m| m.max(s)));
    }
    let unpartitioned = layout == Layout::Unpartitioned;
    Ok(TableStats {
        data_files: files,
        small_files: small,
        large_files: large,
        total_bytes: bytes,
        records: survey.records,
        partitioned: partitioned(layout, partitions),
        partitions: if unpartitioned { 0 } else { partitions },
        small_file_partitions: if unpartitioned { 0 } else { small_parts },
        critical_partitions: if unpartitioned { 0 } else { critical },
        max_partition_small_files: most_small,
        delete_files: 0,
        delete_bytes: 0,
        position_delete_files: 0,
        position_deletes: 0,
        equality_delete_files: 0,
        equality_deletes: 0,
        oldest_small_file_at: None,
        oldest_small_is_lower_bound: false,
        files_unread: false,
        deletes_unknown: false,
        ..survey.clone()
    })
}

/// When the small files (below `target`'s line) of `t` were added: the ids of the
/// snapshots that added them (`small_sids`, which a survey's complete list dates), or with
/// `Dating::Join` the oldest's commit time from `$snapshots` (`oldest_small_file_at`, and
/// `oldest_small_lower` when a snapshot expired). One `$entries` read, for a table whose
/// verdict depends on the age ([`crate::lakehouse::model::TableStats::waits_on_age`]).
pub fn small_dates_sql(t: &TableRef, h: &ScanParams, target: u64, dating: Dating) -> String {
    let small = h.small_line(target);
    let is_small = format!(
        "e.status <> 2 AND e.data_file.content = 0 AND e.data_file.file_size_in_bytes < {small}"
    );
    match dating {
        Dating::SnapshotIds => format!(
            "SELECT array_agg(DISTINCT e.snapshot_id) AS small_sids FROM {} e WHERE {is_small}",
            t.meta("entries")
        ),
        Dating::Join => format!(
            "SELECT to_unixtime(min(s.committed_at)) AS oldest_small_file_at, \
             COALESCE(bool_or(s.committed_at IS NULL), false) AS oldest_small_lower \
             FROM {} e LEFT JOIN {} s ON s.snapshot_id = e.snapshot_id WHERE {is_small}",
            t.meta("entries"),
            t.meta("snapshots")
        ),
    }
}

/// How a file read dates the small files it finds (with `$entries`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dating {
    /// By a join of `$snapshots` on the id of the snapshot that added each file: a second
    /// metadata table in the statement, for a read with no survey of the table at hand.
    Join,
    /// By the ids alone (`small_sids`), which the survey's newest snapshots date
    /// ([`date_by_ids`]): one metadata table a statement.
    SnapshotIds,
}

/// The oldest commit among `ids` (the snapshots that added a table's small files), dated
/// by `times` (a survey's newest snapshots, newest first), and whether it is a bound: an
/// id the list does not hold is of a snapshot older than every one it holds (expired, or
/// past the list's length), so the small files have waited since the oldest listed
/// commit at least. `None` without ids.
pub fn date_by_ids(
    ids: &[i64],
    times: &[(i64, DateTime<Utc>)],
    oldest_known: Option<DateTime<Utc>>,
) -> Option<(DateTime<Utc>, bool)> {
    if ids.is_empty() {
        return None;
    }
    let at: std::collections::HashMap<i64, DateTime<Utc>> = times.iter().copied().collect();
    let mut oldest: Option<DateTime<Utc>> = None;
    let mut unlisted = false;
    for id in ids {
        match at.get(id) {
            Some(&t) => oldest = Some(oldest.map_or(t, |o| o.min(t))),
            None => unlisted = true,
        }
    }
    if unlisted {
        let bound = times.last().map(|(_, t)| *t).or(oldest_known)?;
        let bound = oldest.map_or(bound, |o| o.min(bound));
        return Some((bound, true));
    }
    oldest.map(|o| (o, false))
}

/// The stats of a table from the row of [`files_sql`] over what its survey read: the
/// file facts from the files, the rest from the survey (`survey` is the survey's
/// [`TableStats`], its snapshots' facts and the target the files were counted at). An
/// undated small file is as old as the oldest snapshot left, at least.
pub fn parse_files(
    r: &Row,
    layout: Layout,
    survey: &TableStats,
    times: Option<&[(i64, DateTime<Utc>)]>,
) -> Result<TableStats, NoColumn> {
    let u = |name: &str| -> Result<u64, NoColumn> { Ok(r.req(name)?.as_u64().unwrap_or(0)) };
    let partitions = u("partitions")?;
    let mut lower = r
        .get("oldest_small_lower")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let small_files = u("small_files")?;
    let mut dated = opt_time(r, "oldest_small_file_at");
    // Read by snapshot ids ([`Dating::SnapshotIds`]): the survey's list dates them, and
    // says itself when the date is a bound.
    let mut by_ids = false;
    if let (Some(times), Some(Value::Array(ids))) = (times, r.get("small_sids")) {
        let ids: Vec<i64> = ids.iter().filter_map(Value::as_i64).collect();
        if let Some((at, bound)) = date_by_ids(&ids, times, survey.oldest_snapshot) {
            (dated, lower, by_ids) = (Some(at), bound, true);
        }
    }
    let oldest_small_file_at = match (dated, lower.then_some(survey.oldest_snapshot).flatten()) {
        (Some(a), _) if by_ids => Some(a),
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let position_delete_files = u("position_delete_files")?;
    let equality_delete_files = u("equality_delete_files")?;
    Ok(TableStats {
        data_files: u("data_files")?,
        small_files,
        total_bytes: u("total_bytes")?,
        // A read of a table without delete files counts no records: its summary's.
        records: match r.req("records")? {
            Value::Null => survey.records,
            v => v.as_u64().unwrap_or(0),
        },
        partitioned: partitioned(layout, partitions),
        partitions,
        small_file_partitions: u("small_file_partitions")?,
        critical_partitions: u("critical_partitions")?,
        max_partition_small_files: r.u64("max_partition_small_files"),
        delete_files: position_delete_files + equality_delete_files,
        delete_bytes: u("delete_bytes")?,
        position_delete_files,
        position_deletes: u("position_deletes")?,
        equality_delete_files,
        equality_deletes: u("equality_deletes")?,
        large_files: u("large_files")?,
        oldest_small_file_at: if small_files > 0 {
            oldest_small_file_at
        } else {
            None
        },
        oldest_small_is_lower_bound: lower && small_files > 0,
        files_unread: false,
        deletes_unknown: false,
        ..survey.clone()
    })
}

/// Whether a table read with `layout` is partitioned: by its partition column, or with
/// files grouped by directory, by finding more than one.
pub(super) fn partitioned(layout: Layout, partitions: u64) -> bool {
    match layout {
        Layout::PartitionColumn => true,
        Layout::Unpartitioned => false,
        Layout::Directory => partitions > 1,
    }
}
