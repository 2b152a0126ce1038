//! The statements of the survey and of what is read ahead of a fleet's file reads: their
//! text only (how their rows are read is [`super::parse`]'s).

use super::*;

/// The newest snapshot's summary totals ([`KEYS`]) as columns of an aggregate over
/// `$snapshots`, each led by a comma.
pub(super) fn newest_totals() -> String {
    KEYS.iter()
        .map(|(k, col)| {
            format!(
                ", TRY_CAST(element_at(max_by(summary, committed_at), '{k}') AS bigint) AS {col}"
            )
        })
        .collect()
}

/// One statement reading the totals of `tables`: one branch per table, each reading its
/// `$snapshots` exactly once (no `WITH`: Trino would inline it into every reference),
/// rows carrying the branch's index in `tables` as `i`.
pub fn totals_sql(tables: &[TableRef]) -> String {
    let keys = newest_totals();
    tables
        .iter()
        .enumerate()
        .map(|(i, t)| {
            format!(
                "SELECT {i} AS i, count(*) AS snapshots, max_by(snapshot_id, committed_at) AS snapshot_id, \
                 to_unixtime(max(committed_at)) AS committed_at, to_unixtime(min(committed_at)) AS oldest_snapshot, \
                 to_unixtime(max(CASE WHEN operation = 'replace' THEN committed_at END)) AS last_replace{keys} \
                 FROM {}",
                t.meta("snapshots")
            )
        })
        .collect::<Vec<_>>()
        .join("\nUNION ALL\n")
}

/// `$manifests` (`m`) and `$properties` (`p`) of `t` as two cross-joined one-row
/// aggregates, each metadata table read once: what [`FILE_META_COLUMNS`] reads.
pub(super) fn file_meta_from(t: &TableRef, cfg: &ScanParams, summaries: &str) -> String {
    format!(
        "{} CROSS JOIN {}",
        manifests_from(t, cfg, summaries),
        props_from(t)
    )
}

/// `$manifests` (`m`) of `t` as a one-row aggregate: what [`FILE_META_COLUMNS`] reads.
fn manifests_from(t: &TableRef, cfg: &ScanParams, summaries: &str) -> String {
    format!(
        "(SELECT count(*) AS manifests, count_if(length < {small}) AS small_manifests, \
         COALESCE(sum(length), 0) AS manifest_bytes, max(cardinality({summaries})) AS partition_fields \
         FROM {manifests}) m",
        small = cfg.small_manifest_size,
        manifests = t.meta("manifests"),
    )
}

/// `$properties` (`p`) of `t` as a one-row aggregate: the table's target and its current
/// snapshot ([`PROPS_COLUMNS`]).
pub(super) fn props_from(t: &TableRef) -> String {
    format!(
        "(SELECT max(CASE WHEN key = 'write.target-file-size-bytes' THEN value END) AS target_prop, \
         max(CASE WHEN key = 'current-snapshot-id' THEN value END) AS current_prop \
         FROM {}) p",
        t.meta("properties")
    )
}

pub(super) const PROPS_COLUMNS: &str = "TRY_CAST(p.target_prop AS bigint) AS target_property, \
     TRY_CAST(p.current_prop AS bigint) AS current_snapshot";

pub(super) const FILE_META_COLUMNS: &str =
    "m.manifests, m.small_manifests, m.manifest_bytes, m.partition_fields";

/// The keys of `$properties` a fleet's survey reads: the table's target and its current
/// snapshot.
const SURVEY_PROPS: &str = "('current-snapshot-id', 'write.target-file-size-bytes')";

/// One statement reading the [`FileMeta`] of each of `tables`, one `UNION ALL` branch a
/// table (metadata only): `$manifests` for those `manifests` says, `$properties` for those
/// whose target the survey did not already read (`props`; its target travels as a
/// literal). The read a fleet's survey leaves to the tables whose files are read, ten a
/// statement. Every branch has the same columns; rows carry the branch's index as `i`.
pub fn file_meta_sql(
    tables: &[TableRef],
    cfg: &ScanParams,
    summaries: &str,
    manifests: impl Fn(&TableRef) -> bool,
    props: impl Fn(&TableRef) -> Option<Props>,
) -> String {
    const NO_MANIFESTS: &str = "CAST(NULL AS bigint) AS manifests, CAST(NULL AS bigint) AS small_manifests, \
         CAST(NULL AS bigint) AS manifest_bytes, CAST(NULL AS bigint) AS partition_fields";
    const TARGET: &str =
        "TRY_CAST(max(CASE WHEN key = 'write.target-file-size-bytes' THEN value END) AS bigint)";
    tables
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let known = props(t).map(|p| match p.target {
                Some(v) => format!("BIGINT '{v}' AS target_property"),
                None => "CAST(NULL AS bigint) AS target_property".to_string(),
            });
            match (manifests(t), known) {
                (true, Some(target)) => format!(
                    "SELECT {i} AS i, {FILE_META_COLUMNS}, {target} FROM {}",
                    manifests_from(t, cfg, summaries)
                ),
                (true, None) => format!(
                    "SELECT {i} AS i, {FILE_META_COLUMNS}, TRY_CAST(p.target_prop AS bigint) AS target_property FROM {}",
                    file_meta_from(t, cfg, summaries)
                ),
                (false, Some(target)) => format!("SELECT {i} AS i, {NO_MANIFESTS}, {target}"),
                (false, None) => format!(
                    "SELECT {i} AS i, {NO_MANIFESTS}, {TARGET} AS target_property FROM {}",
                    t.meta("properties")
                ),
            }
        })
        .collect::<Vec<_>>()
        .join("\nUNION ALL\n")
}

/// The newest snapshots a survey returns one by one: `trend_limit`, and one more that
/// tells whether a longer history goes on beyond them.
pub(super) fn history_window(cfg: &ScanParams) -> u64 {
    cfg.trend_limit.max(1) + 1
}

/// One statement surveying `tables`, one branch per table reading its `$snapshots` (and,
/// per `shape`, its `$manifests`, `$properties` and `$metadata_log_entries`) once each —
/// every one of them from the table's metadata file or its manifest list, no manifest
/// opened — with no window and no `WITH` (Trino would inline a `WITH` into every
/// reference). What a table's snapshots tell travels as little SQL as can carry it: the
/// count, the oldest, and the newest snapshots as one array of rows, newest first (id,
/// commit time, operation, parent, summary), from which every snapshot fact and the
/// newest totals are derived here
/// ([`snapshot_facts`]). Each expression a statement carries costs the coordinator CPU
/// beyond its planning (the code it generates and runs): on Trino 476 this form cost its
/// process 35-40 ms of CPU a table ten to a statement, the same facts as aggregates,
/// arrays and lambdas 80-90 ms. A table whose history goes on beyond the window is read
/// again by [`history_sql`]. Rows carry the branch's index in `tables` as `i`.
pub fn survey_sql(tables: &[TableRef], cfg: &ScanParams, shape: SurveyShape) -> String {
    let window = history_window(cfg);
    let history = "array_agg(ROW(snapshot_id, committed_at, operation, parent_id, summary) \
                   ORDER BY committed_at DESC, snapshot_id DESC)";
    tables
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let (log, log_cols) = if shape.metadata_log {
                (
                    format!(
                        " CROSS JOIN (SELECT count(*) AS metadata_files, to_unixtime(max(\"timestamp\")) AS metadata_at FROM {}) l",
                        t.meta("metadata_log_entries")
                    ),
                    "l.metadata_files, l.metadata_at",
                )
            } else {
                (
                    String::new(),
                    "CAST(NULL AS bigint) AS metadata_files, CAST(NULL AS double) AS metadata_at",
                )
            };
            // The table's target and current snapshot always; its manifests with them
            // when the table's own read asks for them.
            let (meta, meta_cols) = if shape.table_meta {
                (
                    format!(" CROSS JOIN {}", file_meta_from(t, cfg, shape.summaries)),
                    FILE_META_COLUMNS,
                )
            } else {
                (
                    format!(" CROSS JOIN {}", props_from(t)),
                    "CAST(NULL AS bigint) AS manifests, CAST(NULL AS bigint) AS small_manifests, \
                     CAST(NULL AS bigint) AS manifest_bytes, CAST(NULL AS bigint) AS partition_fields",
                )
            };
            format!(
                "SELECT {i} AS i, s.snapshots, to_unixtime(s.oldest) AS oldest_snapshot, \
                 slice(s.history, 1, {window}) AS history, {meta_cols}, {PROPS_COLUMNS}, {log_cols} \
                 FROM (SELECT count(*) AS snapshots, min(committed_at) AS oldest, \
                 {history} AS history FROM {snapshots}) s{meta}{log}",
                snapshots = t.meta("snapshots"),
            )
        })
        .collect::<Vec<_>>()
        .join("\nUNION ALL\n")
}

/// The rows a fleet's survey statement may return at most ([`survey_rows_sql`]): every
/// table's window and its two properties, and one more. A statement that returns that many
/// was cut: one table of it at least has more snapshots than its window.
pub fn survey_rows_limit(tables: usize, cfg: &ScanParams) -> u64 {
    tables as u64 * (history_window(cfg) + 2) + 1
}

/// A fleet's survey: each table's `$snapshots` rows as they are (id, commit time,
/// operation, parent, summary), one `UNION ALL` branch a table, no aggregate and no sort,
/// the statement cut at [`survey_rows_limit`]. The snapshot facts are derived here as
/// from [`survey_sql`]'s arrays. On Trino 476 this plans in 2.0 ms a table ten to a
/// statement, the aggregate form in 3.9-4.1 ms, the script's one-table `$snapshots`
/// read in 4.5-5.0 ms: the aggregate, its sort and a limit per branch are what the
/// planner pays for. A statement cut at its limit is read again in the aggregate form,
/// which cuts each table's history on the server ([`parse_survey_rows`]).
pub fn survey_rows_sql(tables: &[TableRef], cfg: &ScanParams) -> String {
    let branches = tables
        .iter()
        .enumerate()
        .map(|(i, t)| {
            format!(
                "SELECT {i} AS i, snapshot_id, committed_at, operation, parent_id, summary, \
                 CAST(NULL AS varchar) AS prop, CAST(NULL AS varchar) AS value FROM {snapshots}\n\
                 UNION ALL\n\
                 SELECT {i}, NULL, NULL, NULL, NULL, NULL, key, value FROM {properties} \
                 WHERE key IN {SURVEY_PROPS}",
                snapshots = t.meta("snapshots"),
                properties = t.meta("properties"),
            )
        })
        .collect::<Vec<_>>()
        .join("\nUNION ALL\n");
    format!("{branches}\nLIMIT {}", survey_rows_limit(tables.len(), cfg))
}

/// The snapshot facts of tables whose history goes on beyond a survey's window, computed
/// on the server (one branch a table reading its `$snapshots` once; the trend, the newest
/// snapshots' ids and times and the writes since the newest compaction travel as arrays
/// cut with lambdas, the older snapshots' trend as one summary): what [`snapshot_facts`]
/// derives from a whole history, for a history of any length.
pub fn history_sql(tables: &[TableRef], cfg: &ScanParams) -> String {
    let limit = cfg.trend_limit.max(1);
    let total = "TRY_CAST(element_at(summary, 'total-data-files') AS bigint)";
    let compaction = "operation = 'replace' AND TRY_CAST(element_at(summary, 'deleted-data-files') AS bigint) > 0";
    let newest_first = "ORDER BY committed_at DESC, snapshot_id DESC";
    tables
        .iter()
        .enumerate()
        .map(|(i, t)| {
            format!(
                "SELECT {i} AS i, to_unixtime(s.last_write) AS last_write, \
                 to_unixtime(s.lc) AS last_compaction, to_unixtime(s.last_replace) AS last_replace, \
                 s.files_after_compaction, \
                 IF(s.lc IS NULL, 0, COALESCE(cardinality(filter(s.writes, w -> w > s.lc)), 0)) AS writes_since_compaction, \
                 slice(s.ta, 1, {limit}) AS trend_at, slice(s.tf, 1, {limit}) AS trend_files, \
                 greatest(COALESCE(cardinality(s.ta), 0) - {limit}, 0) AS tail_snapshots, \
                 element_at(s.ta, {next}) AS tail_newest, element_at(s.tf, {next}) AS tail_last_files, \
                 IF(COALESCE(cardinality(s.tf), 0) >= {after}, reduce(sequence({after}, cardinality(s.tf)), BIGINT '0', \
                 (acc, r) -> acc + greatest(s.tf[r] - s.tf[r - 1], 0), acc -> acc), 0) AS tail_drops \
                 FROM (SELECT max(CASE WHEN operation <> 'replace' THEN committed_at END) AS last_write, \
                 max(CASE WHEN {compaction} THEN committed_at END) AS lc, \
                 max(CASE WHEN operation = 'replace' THEN committed_at END) AS last_replace, \
                 max_by({total}, CASE WHEN {compaction} THEN committed_at END) AS files_after_compaction, \
                 array_agg(committed_at) FILTER (WHERE operation <> 'replace') AS writes, \
                 array_agg(to_unixtime(committed_at) {newest_first}) FILTER (WHERE {total} IS NOT NULL) AS ta, \
                 array_agg({total} {newest_first}) FILTER (WHERE {total} IS NOT NULL) AS tf \
                 FROM {snapshots}) s",
                next = limit + 1,
                after = limit + 2,
                snapshots = t.meta("snapshots"),
            )
        })
        .collect::<Vec<_>>()
        .join("\nUNION ALL\n")
}
