//! The statements measured: floe's own (built by floe's code, as it sends them), each
//! metadata table alone, and the reads a cheaper refresh could use; and the sets of tables
//! they are measured on.

use floe::lakehouse::model::TableRef;
use floe::lakehouse::probe::{parse_rank, probe_sql, rank_sql};
use floe::lakehouse::queries::Layout;
use floe::lakehouse::query_history::candidates_sql;
use floe::lakehouse::scan::ScanParams;
use floe::lakehouse::statements::{
    Dating, MetaTables, describe_sql, discover_sql, files_sql, partitions_sql, properties_sql,
    show_create_sql, snapshots_sql, stats_sql,
};
use floe::lakehouse::summary::{SurveyShape, file_meta_sql, survey_sql, totals_sql};
use floe::trino::Client;

/// A table measured, with its live files and layout (from its `$manifests`).
#[derive(Clone, Debug)]
pub(crate) struct Table {
    pub(crate) table: TableRef,
    pub(crate) files: u64,
    pub(crate) partitioned: Option<bool>,
}

impl Table {
    fn layout(&self) -> Layout {
        if self.partitioned == Some(true) {
            Layout::PartitionColumn
        } else {
            Layout::Unpartitioned
        }
    }
}

/// Up to ten tables of one size.
pub(crate) struct Set {
    pub(crate) name: String,
    pub(crate) tables: Vec<Table>,
}

const WIDTH: usize = 10;

pub(crate) fn listing(catalog: &str) -> String {
    discover_sql(catalog, &schemas(), true)
}

fn schemas() -> Vec<String> {
    std::env::var("COORD_SCHEMAS")
        .map(|s| s.split(',').map(|x| x.trim().to_string()).collect())
        .unwrap_or_default()
}

/// The sets measured: `COORD_SETS`, or the catalog's tables by live files.
pub(crate) async fn sets(client: &Client, catalog: &str) -> Vec<Set> {
    let listed: Vec<TableRef> = client
        .query(&listing(catalog))
        .await
        .expect("the listing")
        .rows
        .iter()
        .map(|r| {
            TableRef::new(
                catalog,
                r.str("table_schema").unwrap_or_default(),
                r.str("table_name").unwrap_or_default(),
            )
        })
        .collect();
    let mut known = Vec::new();
    for b in listed.chunks(WIDTH) {
        let rows = client
            .query(&rank_sql(b, "partition_summaries"))
            .await
            .expect("the rank of the listed tables")
            .rows;
        for (t, (partitioned, files)) in b.iter().zip(parse_rank(&rows, b.len()).unwrap()) {
            known.push(Table {
                table: t.clone(),
                files,
                partitioned,
            });
        }
    }
    if let Ok(spec) = std::env::var("COORD_SETS") {
        return spec
            .split(';')
            .filter_map(|s| s.split_once('='))
            .map(|(name, list)| Set {
                name: name.trim().to_string(),
                tables: list
                    .split(',')
                    .map(|n| {
                        let (s, t) = n.trim().split_once('.').expect("schema.table");
                        known
                            .iter()
                            .find(|k| k.table.schema == s && k.table.table == t)
                            .unwrap_or_else(|| panic!("{n}: not listed"))
                            .clone()
                    })
                    .collect(),
            })
            .collect();
    }
    let bucket = |name: &str, lo: u64, hi: u64| {
        let mut ts: Vec<Table> = known
            .iter()
            .filter(|t| t.files >= lo && t.files < hi)
            .cloned()
            .collect();
        // The largest of the size first: it is also the one measured alone.
        ts.sort_by_key(|t| std::cmp::Reverse(t.files));
        ts.truncate(WIDTH);
        Set {
            name: name.into(),
            tables: ts,
        }
    };
    [
        bucket("small", 1, 100),
        bucket("thousands", 1_000, 10_000),
        bucket("10k+", 10_000, u64::MAX),
    ]
    .into_iter()
    .filter(|s| !s.tables.is_empty())
    .collect()
}

/// Branches of one statement, one per table, each carrying its index as `i`.
fn union(tables: &[Table], branch: impl Fn(usize, &Table) -> String) -> String {
    tables
        .iter()
        .enumerate()
        .map(|(i, t)| branch(i, t))
        .collect::<Vec<_>>()
        .join("\nUNION ALL\n")
}

/// A per-table statement: as floe sends it for one table, wrapped as a branch for more.
fn per_table(tables: &[Table], build: impl Fn(&Table) -> String) -> String {
    if let [t] = tables {
        return build(t);
    }
    union(tables, |i, t| {
        format!("SELECT {i} AS i, x.* FROM (\n{}\n) x", build(t))
    })
}

const METADATA_TABLES: [&str; 7] = [
    "properties",
    "snapshots",
    "metadata_log_entries",
    "manifests",
    "files",
    "entries",
    "partitions",
];

/// Every statement measured over `tables` (one table: also the shapes that are only ever
/// sent for one).
pub(crate) fn statements(tables: &[Table]) -> Vec<(String, String)> {
    let h = ScanParams::default();
    let refs: Vec<TableRef> = tables.iter().map(|t| t.table.clone()).collect();
    let files_only = MetaTables {
        entries: false,
        metadata_log: true,
        file_times: false,
    };
    let mut out: Vec<(String, String)> = Vec::new();
    let mut add = |name: &str, sql: String| out.push((name.to_string(), sql));
    // Each metadata table alone.
    for m in METADATA_TABLES {
        add(
            &format!("${m} alone"),
            union(tables, |i, t| {
                format!("SELECT {i} AS i, count(*) AS n FROM {}", t.table.meta(m))
            }),
        );
    }
    add(
        "newest snapshot's summary",
        union(tables, |i, t| {
            format!(
                "(SELECT {i} AS i, element_at(summary, 'total-data-files') AS data_files, \
                 element_at(summary, 'total-files-size') AS bytes, \
                 element_at(summary, 'total-delete-files') AS delete_files \
                 FROM {} ORDER BY committed_at DESC LIMIT 1)",
                t.table.meta("snapshots")
            )
        }),
    );
    add("first pass: totals ($snapshots)", totals_sql(&refs));
    let shape = |metadata_log, table_meta| SurveyShape {
        metadata_log,
        table_meta,
        summaries: "partition_summaries",
    };
    let survey = survey_sql(&refs, &h, shape(false, false));
    add("survey (a fleet's: $snapshots alone)", survey.clone());
    add(
        "survey with $manifests and $properties",
        survey_sql(&refs, &h, shape(false, true)),
    );
    add(
        "survey with the metadata log (one table's read)",
        survey_sql(&refs, &h, shape(true, true)),
    );
    add(
        "table metadata ahead of the file reads ($properties, $manifests)",
        file_meta_sql(&refs, &h, "partition_summaries", |_| true, |_| None),
    );
    add("survey without lambdas", strip_lambdas(&survey));
    add(
        "first pass: $snapshots + $properties + $manifests",
        union(tables, first_pass),
    );
    // The sequential script's two statements a table (benches/fleet_script.py).
    add(
        "script: $files aggregate",
        per_table(tables, |t| {
            format!(
                "SELECT count(*) AS files, sum(file_size_in_bytes) AS bytes, \
                 count_if(file_size_in_bytes < {small}) AS small FROM {} WHERE content = 0",
                t.table.meta("files"),
                small = h.small_threshold(h.target_file_size),
            )
        }),
    );
    add(
        "script: last replace ($snapshots)",
        per_table(tables, |t| {
            format!(
                "SELECT max(committed_at) AS last_replace FROM {} WHERE operation = 'replace'",
                t.table.meta("snapshots")
            )
        }),
    );
    add(
        "lean per-file read: $entries alone, by partition",
        per_table(tables, |t| lean_file_read(t, &h)),
    );
    add(
        "file read: $entries joined to $snapshots, target literal",
        per_table(tables, |t| joined_file_read(t, &h)),
    );
    add(
        "per-partition read: $files alone, by partition",
        per_table(tables, |t| partition_file_read(t, &h)),
    );
    // floe's statements.
    add(
        "change probe ($metadata_log_entries)",
        probe_sql(&refs, true),
    );
    add("change probe ($snapshots)", probe_sql(&refs, false));
    add(
        "rank / layout batch ($manifests)",
        rank_sql(&refs, "partition_summaries"),
    );
    add(
        "health over $entries",
        per_table(tables, |t| {
            stats_sql(&t.table, &h, t.layout(), MetaTables::ALL)
        }),
    );
    add(
        "health over $files",
        per_table(tables, |t| stats_sql(&t.table, &h, t.layout(), files_only)),
    );
    add(
        "file read over $entries, dated by a join (after the survey)",
        per_table(tables, |t| {
            files_sql(
                &t.table,
                &h,
                t.layout(),
                MetaTables::ALL,
                h.target_file_size,
                Dating::Join,
            )
        }),
    );
    add(
        "file read over $entries, dated by snapshot ids (after the survey)",
        per_table(tables, |t| {
            files_sql(
                &t.table,
                &h,
                t.layout(),
                MetaTables::ALL,
                h.target_file_size,
                Dating::SnapshotIds,
            )
        }),
    );
    add(
        "snapshots (newest 50)",
        per_table(tables, |t| snapshots_sql(&t.table, 50)),
    );
    add(
        "properties",
        per_table(tables, |t| properties_sql(&t.table)),
    );
    if let [t] = tables {
        add(
            "partitions over $entries",
            partitions_sql(&t.table, &h, t.layout(), MetaTables::ALL),
        );
        add(
            "partitions over $files",
            partitions_sql(&t.table, &h, t.layout(), files_only),
        );
        add("DESCRIBE", describe_sql(&t.table));
        add("SHOW CREATE TABLE", show_create_sql(&t.table));
        add(
            "history candidates (system.runtime.queries)",
            candidates_sql(&t.table),
        );
    }
    // `COORD_SHAPES=a,b`: only the shapes whose names contain one of these.
    if let Ok(only) = std::env::var("COORD_SHAPES") {
        let only: Vec<&str> = only.split(',').map(str::trim).collect();
        out.retain(|(name, _)| only.iter().any(|o| name.contains(o)));
    }
    out
}

/// The survey's two lambda expressions replaced by constants: what they cost to plan.
fn strip_lambdas(sql: &str) -> String {
    let mut out = String::new();
    for line in sql.split("IF(s.lc IS NULL") {
        if out.is_empty() {
            out.push_str(line);
            continue;
        }
        let rest = line
            .split_once("AS writes_since_compaction")
            .map_or(line, |x| x.1);
        out.push_str("0 AS writes_since_compaction");
        out.push_str(rest);
    }
    let mut out2 = String::new();
    for (k, part) in out
        .split("IF(COALESCE(cardinality(s.tf), 0) >=")
        .enumerate()
    {
        if k == 0 {
            out2.push_str(part);
            continue;
        }
        let rest = part.split_once("AS tail_drops").map_or(part, |x| x.1);
        out2.push_str("0 AS tail_drops");
        out2.push_str(rest);
    }
    out2
}

/// The file read as a join of `$entries` and `$snapshots` with the target as a literal
/// (the survey read `$properties`): two metadata tables, no `WITH`.
fn joined_file_read(t: &Table, h: &ScanParams) -> String {
    let target = h.target_file_size;
    let small = h.small_threshold(target);
    let large = (target as f64 * h.large_file_ratio) as u64;
    let part = match t.layout() {
        Layout::PartitionColumn => "e.data_file.partition",
        _ => "CAST(NULL AS varchar)",
    };
    let min = h.min_small_files;
    let crit = h.critical_partition_small_files.max(min);
    format!(
        "SELECT sum(files) AS data_files, sum(small) AS small_files, sum(large) AS large_files, sum(bytes) AS total_bytes, \
         sum(records) AS records, sum(pdf) AS position_delete_files, sum(edf) AS equality_delete_files, \
         sum(delete_bytes) AS delete_bytes, sum(pd) AS position_deletes, sum(ed) AS equality_deletes, \
         to_unixtime(min(oldest_small)) AS oldest_small_file_at, bool_or(undated) AS oldest_small_lower, \
         max(small) AS max_partition_small_files, count_if(files > 0) AS partitions, \
         count_if(small >= {min}) AS small_file_partitions, \
         count_if(small >= {crit} AND bytes <= (files - {crit}) * {target}) AS critical_partitions\n\
         FROM (SELECT part, count_if(content = 0) AS files, count_if(is_small) AS small, \
         count_if(content = 0 AND size > {large}) AS large, \
         COALESCE(sum(CASE WHEN content = 0 THEN size END), 0) AS bytes, \
         COALESCE(sum(CASE WHEN content = 0 THEN records END), 0) AS records, \
         count_if(content = 1) AS pdf, count_if(content = 2) AS edf, \
         COALESCE(sum(CASE WHEN content <> 0 THEN size END), 0) AS delete_bytes, \
         COALESCE(sum(CASE WHEN content = 1 THEN records END), 0) AS pd, \
         COALESCE(sum(CASE WHEN content = 2 THEN records END), 0) AS ed, \
         min(CASE WHEN is_small THEN written_at END) AS oldest_small, \
         bool_or(is_small AND written_at IS NULL) AS undated\n\
         FROM (SELECT e.data_file.content AS content, e.data_file.file_size_in_bytes AS size, \
         e.data_file.record_count AS records, {part} AS part, s.committed_at AS written_at, \
         e.data_file.content = 0 AND e.data_file.file_size_in_bytes < {small} AS is_small \
         FROM {entries} e LEFT JOIN {snapshots} s ON s.snapshot_id = e.snapshot_id WHERE e.status <> 2) f \
         GROUP BY part) p",
        entries = t.table.meta("entries"),
        snapshots = t.table.meta("snapshots"),
    )
}

/// A first pass that reads more without opening a manifest: the snapshots (their count,
/// age, the last compaction and the newest summary), the target file size
/// (`$properties`) and the manifest list (`$manifests`), three metadata tables a table.
fn first_pass(i: usize, t: &Table) -> String {
    let snaps = format!(
        "SELECT count(*) AS snapshots, to_unixtime(min(committed_at)) AS oldest_snapshot, \
         to_unixtime(max(committed_at)) AS newest_snapshot, \
         to_unixtime(max(CASE WHEN operation = 'replace' THEN committed_at END)) AS last_replace, \
         max_by(summary, committed_at) AS summary FROM {}",
        t.table.meta("snapshots")
    );
    format!(
        "SELECT {i} AS i, s.*, p.target_prop, m.manifests, m.manifest_bytes, m.live_files FROM ({snaps}) s\n\
         CROSS JOIN (SELECT max(CASE WHEN key = 'write.target-file-size-bytes' THEN value END) AS target_prop FROM {props}) p\n\
         CROSS JOIN (SELECT count(*) AS manifests, sum(length) AS manifest_bytes, \
         sum(added_data_files_count + existing_data_files_count) AS live_files FROM {man}) m",
        props = t.table.meta("properties"),
        man = t.table.meta("manifests"),
    )
}

/// A per-file read with no other metadata table: the target as a literal (known from an
/// earlier `$properties` read), per partition the small files and bytes, their table
/// totals and the partition counts the verdict uses, the oldest small file's data
/// sequence number (its time is in `$metadata_log_entries`, which the change probe reads):
/// two aggregations, no window, one metadata table.
fn lean_file_read(t: &Table, h: &ScanParams) -> String {
    let target = h.target_file_size;
    let small = h.small_threshold(target);
    let part = match t.layout() {
        Layout::PartitionColumn => "e.data_file.partition",
        _ => "CAST(NULL AS varchar)",
    };
    let min = h.min_small_files;
    let crit = h.critical_partition_small_files.max(min);
    format!(
        "SELECT sum(files) AS data_files, sum(small) AS small_files, sum(bytes) AS total_bytes, \
         sum(deletes) AS delete_files, count_if(files > 0) AS partitions, \
         count_if(small >= {min}) AS small_file_partitions, \
         count_if(small >= {crit} AND bytes <= (files - {crit}) * {target}) AS critical_partitions, \
         max(small) AS max_partition_small_files, min(oldest_small) AS oldest_small_sequence\n\
         FROM (SELECT {part} AS part, count_if(e.data_file.content = 0) AS files, \
         count_if(e.data_file.content = 0 AND e.data_file.file_size_in_bytes < {small}) AS small, \
         COALESCE(sum(CASE WHEN e.data_file.content = 0 THEN e.data_file.file_size_in_bytes END), 0) AS bytes, \
         count_if(e.data_file.content <> 0) AS deletes, \
         min(CASE WHEN e.data_file.content = 0 AND e.data_file.file_size_in_bytes < {small} THEN e.sequence_number END) AS oldest_small\n\
         FROM {entries} e WHERE e.status <> 2 GROUP BY 1) p",
        entries = t.table.meta("entries"),
    )
}

/// The per-partition counts alone from `$files` (no file age): the script's aggregate
/// grouped by partition, then summed; what decides a partition CRITICAL.
fn partition_file_read(t: &Table, h: &ScanParams) -> String {
    let target = h.target_file_size;
    let small = h.small_threshold(target);
    let part = match t.layout() {
        Layout::PartitionColumn => "partition",
        _ => "CAST(NULL AS varchar)",
    };
    let min = h.min_small_files;
    let crit = h.critical_partition_small_files.max(min);
    format!(
        "SELECT sum(files) AS data_files, sum(small) AS small_files, sum(bytes) AS total_bytes, \
         count(*) AS partitions, count_if(small >= {min}) AS small_file_partitions, \
         count_if(small >= {crit} AND bytes <= (files - {crit}) * {target}) AS critical_partitions, \
         max(small) AS max_partition_small_files\n\
         FROM (SELECT {part} AS part, count(*) AS files, count_if(file_size_in_bytes < {small}) AS small, \
         sum(file_size_in_bytes) AS bytes FROM {files} WHERE content = 0 GROUP BY 1) p",
        files = t.table.meta("files"),
    )
}
