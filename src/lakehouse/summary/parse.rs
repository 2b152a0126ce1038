//! How the survey's rows become its facts: each table's snapshots (the current one and its
//! ancestors), its totals and the snapshot facts the verdicts use.

use super::sql::history_window;
use super::*;

/// The totals of a batch's rows, by index in the batch.
pub fn parse_totals(rows: &[Row], batch: usize) -> Result<Vec<Totals>, RowsError> {
    by_index(rows, batch, "totals", totals_of)
}

/// The totals columns of one row (of [`totals_sql`] or [`survey_sql`]).
pub(super) fn totals_of(r: &Row) -> Totals {
    let time = |n: &str| r.get(n).and_then(Value::as_datetime);
    Totals {
        snapshots: r.u64("snapshots").unwrap_or(0),
        snapshot_id: r.i64("snapshot_id"),
        committed_at: time("committed_at"),
        oldest_snapshot: time("oldest_snapshot"),
        last_replace: time("last_replace"),
        data_files: r.u64("data_files"),
        files_size: r.u64("files_size"),
        delete_files: r.u64("delete_files"),
        records: r.u64("records"),
        position_deletes: r.u64("position_deletes"),
        equality_deletes: r.u64("equality_deletes"),
    }
}

/// The [`FileMeta`] of a batch's rows, by index in the batch.
pub fn parse_file_meta(rows: &[Row], batch: usize) -> Result<Vec<FileMeta>, RowsError> {
    by_index(rows, batch, "table metadata", FileMeta::of)
}

/// A snapshot's summary, as `$snapshots` has it (text keys and values).
pub(super) type Summary = Vec<(Value, Value)>;

/// The history column of a survey row: its snapshots, newest first, each with its
/// summary.
pub(super) fn history_of(r: &Row) -> Vec<(Snap, Summary)> {
    let Some(Value::Array(items)) = r.get("history") else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|v| {
            let Value::Row(f) = v else { return None };
            let field = |k: usize| f.get(k).map(|(_, v)| v);
            let summary = match field(4) {
                Some(Value::Map(m)) => m.clone(),
                _ => Vec::new(),
            };
            let snap = snap_of(field(0), field(1), field(2), field(3), &summary)?;
            Some((snap, summary))
        })
        .collect()
}

/// `history` (newest first) as the table is now: its current snapshot and the snapshots
/// it was committed on, back as far as the history goes. After a rollback the newer
/// snapshots are not the table's any more; with branches, neither are the branches'
/// commits. A current snapshot the history does not hold (a long history cut at its
/// window) leaves the history as it is: `false`.
pub(super) fn current_line(
    history: Vec<(Snap, Summary)>,
    current: Option<i64>,
) -> (Vec<(Snap, Summary)>, bool) {
    let Some(current) = current else {
        return (history, true);
    };
    if history.first().is_some_and(|(s, _)| s.id == current) {
        // The newest is the current one: every older snapshot is on its line unless a
        // branch or an earlier rollback forked it; follow the parents to be sure.
        if history.windows(2).all(|w| w[0].0.parent == Some(w[1].0.id)) {
            return (history, true);
        }
    }
    let by_id: std::collections::HashMap<i64, usize> = history
        .iter()
        .enumerate()
        .map(|(i, (s, _))| (s.id, i))
        .collect();
    let Some(&start) = by_id.get(&current) else {
        return (history, false);
    };
    let mut line = Vec::new();
    let mut next = Some(start);
    let mut taken = vec![false; history.len()];
    while let Some(i) = next {
        if std::mem::replace(&mut taken[i], true) {
            break;
        }
        next = history[i].0.parent.and_then(|p| by_id.get(&p).copied());
        line.push(i);
    }
    let mut slots: Vec<Option<(Snap, Summary)>> = history.into_iter().map(Some).collect();
    (
        line.into_iter().filter_map(|i| slots[i].take()).collect(),
        true,
    )
}

/// One snapshot from its id, commit time, operation, parent and summary as `$snapshots`
/// has them (`None` without an id or a time).
pub(super) fn snap_of(
    id: Option<&Value>,
    at: Option<&Value>,
    operation: Option<&Value>,
    parent: Option<&Value>,
    summary: &[(Value, Value)],
) -> Option<Snap> {
    Some(Snap {
        id: id?.as_i64()?,
        at: at?.as_datetime()?,
        total: count_in(summary, "total-data-files"),
        replace: operation.and_then(Value::as_str) == Some("replace"),
        append: operation.and_then(Value::as_str) == Some("append"),
        added: count_in(summary, "added-data-files"),
        added_bytes: count_in(summary, "added-files-size"),
        deleted: count_in(summary, "deleted-data-files"),
        parent: parent.and_then(Value::as_i64),
        changed_partitions: count_in(summary, "changed-partition-count"),
    })
}

/// A count of a snapshot summary (text in the map), as the writer recorded it.
pub(super) fn count_in(summary: &[(Value, Value)], key: &str) -> Option<u64> {
    summary.iter().find_map(|(k, v)| match (k, v) {
        (Value::Text(k), Value::Text(v)) if k == key => v.trim().parse().ok(),
        _ => None,
    })
}

/// The surveys of a batch's rows, by index in the batch; `table_meta`: the statement read
/// each table's [`FileMeta`] ([`SurveyShape::table_meta`]).
pub fn parse_survey(
    rows: &[Row],
    batch: usize,
    table_meta: bool,
    cfg: &ScanParams,
) -> Result<Vec<Survey>, RowsError> {
    let time = |r: &Row, n: &str| r.get(n).and_then(Value::as_datetime);
    by_index(rows, batch, "survey", |r| {
        Read {
            snapshots: r.u64("snapshots").unwrap_or(0),
            oldest: time(r, "oldest_snapshot"),
            history: history_of(r),
            props: Some(Props {
                target: r.u64("target_property").filter(|&t| t > 0),
                current: r.i64("current_snapshot"),
            }),
            meta: table_meta.then(|| FileMeta::of(r)),
            metadata_files: r.u64("metadata_files"),
            metadata_at: time(r, "metadata_at"),
        }
        .survey(cfg)
    })
}

/// What one survey statement read of a table, before the facts are derived.
pub(super) struct Read {
    snapshots: u64,
    oldest: Option<DateTime<Utc>>,
    /// The newest snapshots, newest first (at most the window), each with its summary.
    history: Vec<(Snap, Summary)>,
    /// What `$properties` says (`None`: not read).
    props: Option<Props>,
    meta: Option<FileMeta>,
    metadata_files: Option<u64>,
    metadata_at: Option<DateTime<Utc>>,
}

impl Read {
    fn survey(self, cfg: &ScanParams) -> Survey {
        let Read {
            snapshots,
            oldest,
            history,
            props,
            meta,
            metadata_files,
            metadata_at,
        } = self;
        // The table as it is now: its current snapshot's totals and line of history.
        let cut = (history.len() as u64) < snapshots;
        let (history, found) = current_line(history, props.and_then(|p| p.current));
        if !found {
            tracing::debug!("the current snapshot is beyond the survey's window: its newest taken");
        }
        let newest: Summary = history.first().map(|(_, m)| m.clone()).unwrap_or_default();
        let line: Vec<Snap> = history.into_iter().map(|(s, _)| s).collect();
        let [
            data_files,
            files_size,
            delete_files,
            records,
            position_deletes,
            equality_deletes,
        ] = KEYS.map(|(key, _)| count_in(&newest, key));
        let totals = Totals {
            snapshots,
            snapshot_id: line.first().map(|s| s.id),
            committed_at: line.first().map(|s| s.at),
            oldest_snapshot: oldest,
            last_replace: line.iter().find(|s| s.replace).map(|s| s.at),
            data_files,
            files_size,
            delete_files,
            records,
            position_deletes,
            equality_deletes,
        };
        let mut stats = TableStats {
            snapshots,
            snapshot_id: totals.snapshot_id,
            oldest_snapshot: totals.oldest_snapshot,
            newest_snapshot: totals.committed_at,
            manifests: meta.and_then(|m| m.manifests),
            small_manifests: meta.and_then(|m| m.small_manifests),
            manifest_bytes: meta.and_then(|m| m.manifest_bytes),
            metadata_files,
            metadata_at,
            ..Default::default()
        };
        let long_history = cut;
        // The files the newest snapshot removed (its own manifests may list them).
        let removed_by_newest = if snapshots == 0 {
            Some(0)
        } else {
            Some(
                count_in(&newest, "deleted-data-files").unwrap_or(0)
                    + count_in(&newest, "removed-delete-files").unwrap_or(0),
            )
        };
        // The facts from every snapshot of the line read (a plain survey reads them all);
        // the newest of them kept to date files by.
        snapshot_facts(&line, cfg.trend_limit as usize, &mut stats);
        let history: Vec<Snap> = line
            .into_iter()
            .take(history_window(cfg) as usize)
            .collect();
        Survey {
            totals,
            stats,
            meta,
            props,
            history,
            long_history,
            removed_by_newest,
            complete: false,
        }
    }
}

/// The surveys of a batch's rows of [`survey_rows_sql`], by index in the batch; `None`
/// when the statement was cut at its limit (which tables it cut, the rows cannot tell:
/// the batch is read again in the aggregate form). A table with no row has no snapshot.
pub fn parse_survey_rows(
    rows: &[Row],
    batch: usize,
    cfg: &ScanParams,
) -> Result<Option<Vec<Survey>>, RowsError> {
    if rows.len() as u64 >= survey_rows_limit(batch, cfg) {
        return Ok(None);
    }
    let mut out = Vec::with_capacity(batch);
    for table in rows_by_index(rows, batch, "survey")? {
        let mut props = Props::default();
        let mut snaps: Vec<(Snap, Summary)> = Vec::with_capacity(table.len());
        for r in &table {
            if let Some(key) = r.str("prop") {
                let value = r.str("value").unwrap_or("").trim();
                match key {
                    "current-snapshot-id" => props.current = value.parse().ok(),
                    "write.target-file-size-bytes" => {
                        props.target = value.parse().ok().filter(|&t: &u64| t > 0)
                    }
                    _ => {}
                }
                continue;
            }
            let summary = match r.get("summary") {
                Some(Value::Map(m)) => m.clone(),
                _ => Vec::new(),
            };
            if let Some(snap) = snap_of(
                r.get("snapshot_id"),
                r.get("committed_at"),
                r.get("operation"),
                r.get("parent_id"),
                &summary,
            ) {
                snaps.push((snap, summary));
            }
        }
        // Newest first, as the aggregate form orders them.
        snaps.sort_by(|(a, _), (b, _)| b.at.cmp(&a.at).then(b.id.cmp(&a.id)));
        out.push(
            Read {
                snapshots: snaps.len() as u64,
                oldest: snaps.iter().map(|(s, _)| s.at).min(),
                history: snaps,
                props: Some(props),
                meta: None,
                metadata_files: None,
                metadata_at: None,
            }
            .survey(cfg),
        );
    }
    Ok(Some(out))
}

/// A row of [`history_sql`] over a survey of the same table: its snapshot facts replace
/// those the survey derived from its window.
pub fn apply_history(r: &Row, survey: &mut Survey) {
    let time = |n: &str| r.get(n).and_then(Value::as_datetime);
    let st = &mut survey.stats;
    st.last_write = time("last_write");
    st.last_compaction = time("last_compaction");
    st.files_after_compaction = r.u64("files_after_compaction");
    st.writes_since_compaction = r.u64("writes_since_compaction").unwrap_or(0);
    survey.totals.last_replace = time("last_replace");
    let mut trend = Vec::new();
    if let (Some(Value::Array(at)), Some(Value::Array(files))) =
        (r.get("trend_at"), r.get("trend_files"))
    {
        // Newest first on the wire: the trend runs oldest first.
        for (a, f) in at.iter().zip(files).rev() {
            if let (Some(t), Some(n)) = (a.as_datetime(), f.as_u64()) {
                trend.push((t, n));
            }
        }
    }
    st.trend = trend;
    st.trend_tail = trend_tail(r, time("tail_newest"));
    survey.long_history = false;
}

/// The rows of [`history_sql`], by index in the batch.
pub fn parse_history(rows: &[Row], batch: usize) -> Result<Vec<Row>, RowsError> {
    by_index(rows, batch, "history", Row::clone)
}

/// The trend's older snapshots as one summary (`tail_snapshots`, `tail_newest` given as
/// `newest`, `tail_last_files`, `tail_drops`), when the history goes on beyond the window.
pub fn trend_tail(r: &Row, newest: Option<DateTime<Utc>>) -> Option<TrendTail> {
    let snapshots = r.u64("tail_snapshots").unwrap_or(0);
    match (newest, r.u64("tail_last_files")) {
        (Some(newest), Some(last_files)) if snapshots > 0 => Some(TrendTail {
            snapshots,
            newest,
            last_files,
            drops: r.u64("tail_drops").unwrap_or(0),
        }),
        _ => None,
    }
}
