//! How long a table's small files have waited, from its snapshot history alone where that
//! history proves it: the read that dates them file by file (`$entries`, or the files'
//! modification times where the server cannot read it, a split per data file) is sent
//! only for a verdict the history cannot decide. Pure.
//!
//! What a history proves: a snapshot whose added files average under the small-file line
//! added at least one small file; after the newest compaction, a history of appends alone
//! removed no file, so every file the compaction and the appends since added is live; and
//! a compaction that rewrote every live file (its `total-data-files` is its
//! `added-data-files`) left no older file behind.

use chrono::{DateTime, Utc};

use super::model::TableStats;
use super::scan::ScanParams;
use super::summary::Snap;

/// When the oldest file of a table written by appends alone was added, from its whole
/// history (newest first): no file ever left it (its `total-data-files` never fell, no
/// compaction), so its oldest live file is its first one, added by the oldest snapshot
/// that holds any; all its files are small, so that one is small. A bound (at least that
/// old) when the oldest snapshot kept already held files and has a parent: the snapshots
/// before it expired. `None` for any other table.
pub fn appended_since(history: &[Snap], stats: &TableStats) -> Option<(DateTime<Utc>, bool)> {
    if stats.data_files == 0
        || stats.small_files != stats.data_files
        || stats.delete_files > 0
        || history.iter().any(|s| s.replace)
    {
        return None;
    }
    // Oldest first: every total at least the one before.
    let totals: Option<Vec<u64>> = history.iter().rev().map(|s| s.total).collect();
    let totals = totals?;
    if totals.windows(2).any(|w| w[1] < w[0]) {
        return None;
    }
    let first = history
        .iter()
        .rev()
        .position(|s| s.total.unwrap_or(0) > 0)?;
    let at = history[history.len() - 1 - first].at;
    let expired_before = first == 0 && history.last().is_some_and(|s| s.parent.is_some());
    Some((at, expired_before))
}

/// When the oldest live small file of a compacted table was added, from its history
/// (newest first, the current snapshot's line) where that settles its verdict, as
/// `(at, at_least)`:
///
/// - exactly, when its newest compaction rewrote every live file and the first of it and
///   the appends since to add files added a small one (their sizes average under the
///   line): nothing older is left, and that one still is;
/// - at least the time of the oldest of those that added a small file, when that is
///   already `stale_critical` old at `now`: whatever older file may wait beside it, no
///   exact date can make the verdict less than critical;
///
/// `None` otherwise (a write since that could remove files, a summary without the counts,
/// an older file the compaction left whose size is unknown): the files' own read dates it.
pub fn compacted_since(
    history: &[Snap],
    stats: &TableStats,
    scan: &ScanParams,
    now: DateTime<Utc>,
) -> Option<(DateTime<Utc>, bool)> {
    let newest = history.iter().position(Snap::compaction)?;
    let compaction = &history[newest];
    if !history[..newest].iter().all(|s| s.append) {
        return None;
    }
    let line = scan.small_threshold(stats.target_file_size);
    // The compaction and the appends since, oldest first, with the files they added.
    let mut first_any = None;
    let mut first_small = None;
    for s in history[..=newest].iter().rev() {
        let (n, bytes) = (s.added?, s.added_bytes?);
        if n == 0 {
            continue;
        }
        first_any.get_or_insert(s);
        // n files all at or over the line hold at least n × line bytes.
        if u128::from(bytes) < u128::from(n) * u128::from(line) {
            first_small = Some(s);
            break;
        }
    }
    let small = first_small?;
    let whole = compaction.added.is_some() && compaction.total == compaction.added;
    if whole && first_any.is_some_and(|a| a.id == small.id) {
        return Some((small.at, false));
    }
    let critical = chrono::Duration::from_std(scan.stale_critical).ok()?;
    (now.signed_duration_since(small.at) >= critical).then_some((small.at, true))
}

#[cfg(test)]
pub(crate) mod testing {
    use super::*;
    use chrono::TimeZone;

    pub fn at(d: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, d, 0, 0, 0).unwrap()
    }

    /// A snapshot committed on the one before it (`id - 1`), the first (`id` 1) on none.
    pub fn snap(id: i64, d: u32, total: u64, replace: bool) -> Snap {
        Snap {
            id,
            at: at(d),
            total: Some(total),
            replace,
            append: !replace,
            parent: (id > 1).then_some(id - 1),
            ..Default::default()
        }
    }

    pub fn all_small(files: u64) -> TableStats {
        TableStats {
            data_files: files,
            small_files: files,
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests;
