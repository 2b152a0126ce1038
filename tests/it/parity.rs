//! The parity run: every statement shape floe sends, built by floe's own statement
//! functions, over every table of the lab (the seed scenario pyiceberg writes, catalog
//! `iceberg`, and the layouts only Trino writes, catalog `layouts`), sent with floe's client
//! to the real Trino 476 and to the lab's stand-in; column names, types, values and error
//! names compared. Mutating shapes run on clones, one per server, and compare their result
//! and their effect, read back through the real coordinator. Where the stand-in cannot
//! model the real server, the lab README's table "Where the real Trino and the stand-in
//! differ" says so and the test holds the real server's answer alone.

use crate::common;

use std::time::Duration;

use common::{lab, user};
use floe::health::HealthConfig;
use floe::lakehouse::model::{PartitionStats, TableRef};
use floe::lakehouse::plan::{PlanRefusal, PredicateError, Procedure, optimize_plan, table_plan};
use floe::lakehouse::probe::{layout_sql, parse_layouts, probe_sql};
use floe::lakehouse::queries::{Lakehouse, Layout};
use floe::lakehouse::scan::ScanParams;
use floe::lakehouse::statements::{
    MetaTables, RecountError, describe_sql, discover_sql, partitions_sql, properties_sql,
    recount_sql, show_create_sql, small_file_ages_sql, snapshots_sql, stats_sql,
};
use floe::trino::{Client, QueryOptions, QueryProgress, TrinoError, Value};
use tokio_util::sync::CancellationToken;

const SEED_SCHEMAS: [&str; 3] = ["audit", "finance", "zoning"];

/// The stand-in's personality of the real coordinator's release (`listeners.v476` for
/// Trino 476): what each server answers depends on its version.
fn stand_in_url() -> String {
    let version = lab().v["trino"]["version"]
        .as_str()
        .expect("lab.json trino has a version");
    lab().listener(&format!("v{version}"))
}

fn client(url: &str, u: &str) -> Client {
    Client::new(lab().config(url, u)).unwrap()
}

/// What one server answered to one statement.
#[derive(Clone, Debug)]
enum Answer {
    Rows {
        columns: Vec<(String, String)>,
        rows: Vec<Vec<Value>>,
        update_type: Option<String>,
        update_count: Option<i64>,
    },
    Failed {
        name: String,
        message: String,
    },
}

impl Answer {
    fn from(r: Result<floe::trino::QueryOutput, TrinoError>) -> Answer {
        match r {
            Ok(o) => Answer::Rows {
                columns: o
                    .columns
                    .iter()
                    .map(|c| (c.name.clone(), c.type_text.clone()))
                    .collect(),
                rows: o.rows.into_iter().map(|r| r.values).collect(),
                update_type: o.update_type,
                update_count: o.update_count,
            },
            Err(e) => Answer::Failed {
                name: e.name().to_string(),
                message: e.to_string(),
            },
        }
    }

    fn rows(&self) -> &[Vec<Value>] {
        match self {
            Answer::Rows { rows, .. } => rows,
            Answer::Failed { .. } => &[],
        }
    }

    fn failed(&self) -> Option<(&str, &str)> {
        match self {
            Answer::Failed { name, message } => Some((name, message)),
            Answer::Rows { .. } => None,
        }
    }

    fn ok(&self) -> bool {
        self.failed().is_none()
    }
}

/// Equal as values; doubles within a relative 1e-9 (the two servers sum in different
/// orders), maps whatever the order of their entries.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Double(x), Value::Double(y)) => {
            x == y || (x.is_nan() && y.is_nan()) || (x - y).abs() <= 1e-9 * x.abs().max(y.abs())
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Map(x), Value::Map(y)) => {
            let sort = |m: &[(Value, Value)]| {
                let mut v = m.to_vec();
                v.sort_by_key(|(k, _)| k.display());
                v
            };
            let (x, y) = (sort(x), sort(y));
            x.len() == y.len()
                && x.iter()
                    .zip(&y)
                    .all(|((ka, va), (kb, vb))| same(ka, kb) && same(va, vb))
        }
        (Value::Row(x), Value::Row(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((na, va), (nb, vb))| na == nb && same(va, vb))
        }
        _ => a == b,
    }
}

/// A sort key for a row of a statement without ORDER BY.
fn key(row: &[Value]) -> String {
    row.iter()
        .map(|v| match v {
            Value::Double(d) => format!("{d:.6e}"),
            Value::Map(kv) => {
                let mut e: Vec<String> = kv
                    .iter()
                    .map(|(k, v)| format!("{}={}", k.display(), v.display()))
                    .collect();
                e.sort();
                e.join(",")
            }
            other => other.display(),
        })
        .collect::<Vec<_>>()
        .join("\u{1f}")
}

/// What differs between the real server's answer and the stand-in's; empty when they
/// agree. Rows are compared in order only when `ordered` (the statement has ORDER BY).
fn differences(real: &Answer, stand: &Answer, ordered: bool) -> Vec<String> {
    let mut out = Vec::new();
    match (real, stand) {
        (Answer::Failed { name: a, .. }, Answer::Failed { name: b, .. }) => {
            if a != b {
                out.push(format!("error names differ: real {a}, stand-in {b}"));
            }
        }
        (Answer::Failed { name, message }, Answer::Rows { .. }) => out.push(format!(
            "the real Trino fails ({name}: {message}), the stand-in answers"
        )),
        (Answer::Rows { .. }, Answer::Failed { name, message }) => out.push(format!(
            "the stand-in fails ({name}: {message}), the real Trino answers"
        )),
        (
            Answer::Rows {
                columns: ca,
                rows: ra,
                update_type: ua,
                update_count: na,
            },
            Answer::Rows {
                columns: cb,
                rows: rb,
                update_type: ub,
                update_count: nb,
            },
        ) => {
            if ca != cb {
                out.push(format!(
                    "columns differ:\n  real     {ca:?}\n  stand-in {cb:?}"
                ));
            }
            if ua != ub || na != nb {
                out.push(format!(
                    "update type/count differ: real {ua:?}/{na:?}, stand-in {ub:?}/{nb:?}"
                ));
            }
            if ra.len() != rb.len() {
                out.push(format!(
                    "row counts differ: real {}, stand-in {}",
                    ra.len(),
                    rb.len()
                ));
            }
            let (mut ra, mut rb) = (ra.clone(), rb.clone());
            if !ordered {
                ra.sort_by_key(|r| key(r));
                rb.sort_by_key(|r| key(r));
            }
            let mut shown = 0;
            for (i, (a, b)) in ra.iter().zip(&rb).enumerate() {
                if a.len() != b.len() || !a.iter().zip(b).all(|(x, y)| same(x, y)) {
                    let cols = ca.iter().map(|(n, _)| n.as_str());
                    let cells: Vec<String> = cols
                        .zip(a.iter().zip(b))
                        .filter(|(_, (x, y))| !same(x, y))
                        .map(|(n, (x, y))| format!("{n}: real {x:?}, stand-in {y:?}"))
                        .collect();
                    out.push(format!("row {i} differs: {}", cells.join("; ")));
                    shown += 1;
                    if shown == 5 {
                        out.push("(more rows differ)".into());
                        break;
                    }
                }
            }
        }
    }
    out
}

/// One shape's run over both servers: every divergence is collected, and reported at
/// the end with the statement that showed it.
struct Parity {
    shape: &'static str,
    real: Client,
    stand: Client,
    diffs: Vec<String>,
    compared: usize,
}

impl Parity {
    fn new(shape: &'static str) -> Parity {
        let u = user(&format!("parity_{shape}"));
        Parity {
            shape,
            real: client(&lab().trino_url(), &u),
            stand: client(&stand_in_url(), &u),
            diffs: Vec::new(),
            compared: 0,
        }
    }

    async fn both(&self, sql: &str) -> (Answer, Answer) {
        let (a, b) = tokio::join!(self.real.query(sql), self.stand.query(sql));
        (Answer::from(a), Answer::from(b))
    }

    fn record(&mut self, label: &str, sql: &str, real: &Answer, stand: &Answer, ordered: bool) {
        self.compared += 1;
        let d = differences(real, stand, ordered);
        if !d.is_empty() {
            self.diffs
                .push(format!("{label}\n{}\n-- statement:\n{sql}", d.join("\n")));
        }
    }

    /// Send `sql` to both servers and compare the answers.
    async fn check(&mut self, label: &str, sql: &str, ordered: bool) -> (Answer, Answer) {
        let (a, b) = self.both(sql).await;
        self.record(label, sql, &a, &b, ordered);
        (a, b)
    }

    /// `sql` over `$entries` of a table pyiceberg wrote: the real Trino fails it (the
    /// data files carry no `sort_order_id`; floe reads `$files` instead), the stand-in
    /// answers. Held to the real server's answer alone.
    async fn check_entries(&mut self, label: &str, sql: &str, t: &TableRef) -> (Answer, Answer) {
        let (a, b) = self.both(sql).await;
        match a.failed() {
            Some(("GENERIC_INTERNAL_ERROR", m)) if m.contains("sortOrderId") => {
                assert_eq!(
                    t.catalog, "iceberg",
                    "{label}: only pyiceberg-written tables lack sort_order_id: {m}"
                );
                self.compared += 1;
            }
            _ => self.record(label, sql, &a, &b, false),
        }
        (a, b)
    }

    fn finish(self) {
        assert!(self.compared > 0, "{}: nothing compared", self.shape);
        assert!(
            self.diffs.is_empty(),
            "{}: {} of {} statements differ between the real Trino and the stand-in:\n\n{}",
            self.shape,
            self.diffs.len(),
            self.compared,
            self.diffs.join("\n\n")
        );
    }
}

fn seed_tables() -> Vec<TableRef> {
    let mut v: Vec<TableRef> = lab().expected["tables"]
        .as_object()
        .expect("expected.json lists its tables")
        .keys()
        .map(|k| {
            let (schema, table) = k.split_once('.').unwrap();
            TableRef::new("iceberg", schema, table)
        })
        .collect();
    v.sort();
    v
}

/// The tables only the real Trino writes (`lab.json` `trino.layouts`).
fn layout_tables() -> Vec<TableRef> {
    let l = &lab().v["trino"]["layouts"];
    let catalog = l["catalog"]
        .as_str()
        .expect("lab.json trino.layouts names the catalog of the Trino-written tables");
    let schema = l["schema"].as_str().unwrap();
    let mut v: Vec<TableRef> = l["tables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| TableRef::new(catalog, schema, t.as_str().unwrap()))
        .collect();
    assert!(v.len() >= 18, "the lab has its layouts: {v:?}");
    v.sort();
    v
}

fn all_tables() -> Vec<TableRef> {
    let mut v = seed_tables();
    v.extend(layout_tables());
    v
}

fn missing(catalog: &str) -> TableRef {
    TableRef::new(catalog, "zoning", "no_such_table")
}

/// The layout floe reads each table with: the layout batch's answer on the real server
/// (`Some(true)` partitioned, `Some(false)` not, `None` no manifest to tell).
async fn learned_layouts(p: &Parity, tables: &[TableRef]) -> Vec<Option<bool>> {
    let out = p
        .real
        .query(&layout_sql(tables, "partition_summaries"))
        .await
        .unwrap();
    parse_layouts(&out.rows, tables.len()).unwrap()
}

const FILES_ONLY: MetaTables = MetaTables {
    entries: false,
    metadata_log: true,
    file_times: false,
};

/// `$files` with each file dated by the data table's hidden columns (`"$path"`,
/// `"$file_modified_time"`): the partitions statement where `$entries` failed.
const FILES_DATED: MetaTables = MetaTables {
    file_times: true,
    ..FILES_ONLY
};

/// The forms of a per-table statement floe sends to a table, over `$entries` and over
/// `$files`: the partition-column form when the layout batch said partitioned; else the
/// unpartitioned form and the partition-column form too (floe's first statement when the
/// batch could not tell: its error is what tells floe the table is unpartitioned).
fn forms(learned: Option<bool>, metas: &[MetaTables]) -> Vec<(Layout, MetaTables)> {
    let layouts = if learned == Some(true) {
        vec![Layout::PartitionColumn]
    } else {
        vec![Layout::Unpartitioned, Layout::PartitionColumn]
    };
    let mut v = Vec::new();
    for &meta in metas {
        for &layout in &layouts {
            v.push((layout, meta));
        }
    }
    v
}

#[tokio::test]
async fn listing() {
    let mut p = Parity::new("listing");
    let seed: Vec<String> = SEED_SCHEMAS.iter().map(|s| s.to_string()).collect();
    for iceberg_tables in [true, false] {
        let sql = discover_sql("iceberg", &seed, iceberg_tables);
        let (a, _) = p.check("seed schemas", &sql, false).await;
        assert_eq!(a.rows().len(), seed_tables().len(), "{sql}: {a:?}");
        let sql = discover_sql("layouts", &["zoo".to_string()], iceberg_tables);
        let (a, _) = p.check("layouts", &sql, false).await;
        assert_eq!(a.rows().len(), layout_tables().len(), "{sql}: {a:?}");
        // The whole catalog: other tests clone tables into it meanwhile, so only the seed
        // schemas' rows are compared.
        let sql = discover_sql("iceberg", &[], iceberg_tables);
        let (a, b) = p.both(&sql).await;
        let seed_rows = |x: &Answer| -> Answer {
            let mut x = x.clone();
            if let Answer::Rows { rows, .. } = &mut x {
                rows.retain(|r| r[0].as_str().is_some_and(|s| SEED_SCHEMAS.contains(&s)));
            }
            x
        };
        p.record("whole catalog", &sql, &seed_rows(&a), &seed_rows(&b), false);
        let sql = discover_sql("no_such_catalog", &[], iceberg_tables);
        let (a, _) = p.check("missing catalog", &sql, false).await;
        assert!(a.failed().is_some(), "{sql}");
    }
    p.finish();
}

#[tokio::test]
async fn layout_batch() {
    let mut p = Parity::new("layout_batch");
    for tables in [seed_tables(), layout_tables()] {
        let sql = layout_sql(&tables, "partition_summaries");
        let (a, b) = p.check("layout batch", &sql, false).await;
        let (ra, rb) = match (&a, &b) {
            (Answer::Rows { .. }, Answer::Rows { .. }) => (
                p.real.query(&sql).await.unwrap(),
                p.stand.query(&sql).await.unwrap(),
            ),
            _ => panic!("{sql}: {a:?} / {b:?}"),
        };
        assert_eq!(
            parse_layouts(&ra.rows, tables.len()).unwrap(),
            parse_layouts(&rb.rows, tables.len()).unwrap()
        );
        let mut with_missing = tables.clone();
        with_missing.push(missing(&tables[0].catalog));
        let sql = layout_sql(&with_missing, "partition_summaries");
        p.check("layout batch with a missing table", &sql, false)
            .await;
        // Before 468 the column was `partitions`: what a 476 says to the old name.
        let sql = layout_sql(&tables[..1], "partitions");
        p.check("layout batch, pre-468 column", &sql, false).await;
    }
    p.finish();
}

#[tokio::test]
async fn change_probe() {
    let mut p = Parity::new("change_probe");
    for metadata_log in [true, false] {
        for tables in [seed_tables(), layout_tables()] {
            let sql = probe_sql(&tables, metadata_log);
            let (a, _) = p.check("probe", &sql, false).await;
            assert_eq!(a.rows().len(), tables.len(), "{sql}");
            let mut with_missing = tables.clone();
            with_missing.push(missing(&tables[0].catalog));
            p.check(
                "probe with a missing table",
                &probe_sql(&with_missing, metadata_log),
                false,
            )
            .await;
        }
    }
    p.finish();
}

async fn per_table(
    shape: &'static str,
    metas: &[MetaTables],
    build: fn(&TableRef, Layout, MetaTables) -> String,
) {
    let mut p = Parity::new(shape);
    let tables = all_tables();
    let learned = learned_layouts(&p, &tables).await;
    for (t, l) in tables.iter().zip(learned) {
        for (layout, meta) in forms(l, metas) {
            let sql = build(t, layout, meta);
            let label = format!(
                "{t} {layout:?} entries={} file_times={}",
                meta.entries, meta.file_times
            );
            let (a, _) = if meta.entries {
                p.check_entries(&label, &sql, t).await
            } else {
                p.check(&label, &sql, false).await
            };
            if (layout == Layout::PartitionColumn) == (l == Some(true)) {
                assert!(
                    a.ok() || meta.entries,
                    "{label}: the form floe reads {t} with fails on the real Trino: {a:?}"
                );
            }
        }
    }
    let t = missing("iceberg");
    let sql = build(&t, Layout::PartitionColumn, FILES_ONLY);
    p.check("a missing table", &sql, false).await;
    p.finish();
}

#[tokio::test]
async fn health() {
    per_table("health", &[MetaTables::ALL, FILES_ONLY], |t, l, m| {
        stats_sql(t, &ScanParams::default(), l, m)
    })
    .await;
}

#[tokio::test]
async fn partitions() {
    per_table(
        "partitions",
        &[MetaTables::ALL, FILES_ONLY, FILES_DATED],
        |t, l, m| partitions_sql(t, &ScanParams::default(), l, m),
    )
    .await;
}

/// The small files' age where `$entries` failed: `$files` joined with the data table's
/// hidden columns (`"$path"`, `"$file_modified_time"`), on every table and a missing one.
#[tokio::test]
async fn small_file_ages() {
    let mut p = Parity::new("small_file_ages");
    let h = ScanParams::default();
    for t in all_tables() {
        let sql = small_file_ages_sql(&t, &h);
        let (a, _) = p.check(&t.to_string(), &sql, false).await;
        assert!(a.ok(), "{t}: {sql}: {a:?}");
    }
    let sql = small_file_ages_sql(&missing("iceberg"), &h);
    p.check("a missing table", &sql, false).await;
    p.finish();
}

/// The snapshots view and the timeline read the same statement.
#[tokio::test]
async fn snapshots() {
    let mut p = Parity::new("snapshots");
    for t in all_tables() {
        let sql = snapshots_sql(&t, 2000);
        let (a, _) = p.check(&t.to_string(), &sql, true).await;
        assert!(a.ok(), "{sql}: {a:?}");
    }
    p.check(
        "a missing table",
        &snapshots_sql(&missing("iceberg"), 2000),
        true,
    )
    .await;
    p.finish();
}

#[tokio::test]
async fn table_definition() {
    let mut p = Parity::new("table_definition");
    for t in all_tables() {
        let (a, _) = p
            .check(&format!("{t} DESCRIBE"), &describe_sql(&t), true)
            .await;
        assert!(a.ok(), "{t}: {a:?}");
        let (a, _) = p
            .check(&format!("{t} properties"), &properties_sql(&t), false)
            .await;
        assert!(a.ok(), "{t}: {a:?}");
        let (a, _) = p
            .check(
                &format!("{t} SHOW CREATE TABLE"),
                &show_create_sql(&t),
                true,
            )
            .await;
        assert!(a.ok(), "{t}: {a:?}");
    }
    let t = missing("iceberg");
    p.check("a missing table", &describe_sql(&t), true).await;
    p.check("a missing table", &show_create_sql(&t), true).await;
    p.finish();
}

/// The re-read after an optimize step, over partitions floe listed on the real server.
#[tokio::test]
async fn plan_recount() {
    let mut p = Parity::new("plan_recount");
    let lake = Lakehouse::new(p.real.clone(), "iceberg", HealthConfig::default());
    for t in all_tables() {
        let lake = if t.catalog == "iceberg" {
            lake.clone()
        } else {
            Lakehouse::new(p.real.clone(), t.catalog.clone(), HealthConfig::default())
        };
        let parts = lake.partitions(&t).await.unwrap();
        let targets: Vec<Vec<(String, Option<String>)>> = parts
            .partitions
            .iter()
            .map(|p| p.values.clone())
            .filter(|v| !v.is_empty())
            .collect();
        if targets.is_empty() {
            continue;
        }
        let spec = lake.table_layout(&t).await.unwrap();
        let threshold = 96 << 20;
        // Each partition alone, and all of them in one statement.
        let mut sets: Vec<Vec<_>> = targets.iter().take(4).map(|v| vec![v.clone()]).collect();
        sets.push(targets.clone());
        for set in sets {
            match recount_sql(&t, &spec, &set, threshold) {
                Ok(sql) => {
                    let (a, _) = p.check(&format!("{t} {set:?}"), &sql, false).await;
                    assert!(a.ok(), "{t}: {sql}: {a:?}");
                    let files: u64 = a.rows()[0][0].as_u64().unwrap();
                    assert!(files > 0, "{t}: {sql} finds no file of a listed partition");
                }
                // A field of an older spec (the evolved table): floe says so, no statement.
                Err(e) => assert!(
                    matches!(e, RecountError::Predicate(PredicateError::NotInSpec(_))),
                    "{t}: {e}"
                ),
            }
        }
    }
    p.finish();
}

/// What `floe doctor` sends.
#[tokio::test]
async fn doctor_statements() {
    let mut p = Parity::new("doctor");
    p.check("select 1", "SELECT 1", false).await;
    // The Iceberg catalogs: the real 476 serves a Delta Lake one too, the stand-in none.
    p.check(
        "catalogs",
        "SELECT catalog_name FROM system.metadata.catalogs WHERE connector_name IN ('iceberg', 'system')",
        false,
    )
    .await;
    for t in all_tables() {
        let sql = format!("SELECT status FROM {} LIMIT 1", t.meta("entries"));
        let (a, b) = p.both(&sql).await;
        // LIMIT without ORDER BY: any row; compare the shape and whether it answers.
        let shape = |x: &Answer| match x {
            Answer::Rows { columns, rows, .. } => Answer::Rows {
                columns: columns.clone(),
                rows: rows.iter().map(|_| vec![]).collect(),
                update_type: None,
                update_count: None,
            },
            f => f.clone(),
        };
        match a.failed() {
            Some(("GENERIC_INTERNAL_ERROR", m)) if m.contains("sortOrderId") => {
                assert_eq!(t.catalog, "iceberg", "{t}: {m}");
            }
            _ => p.record(&t.to_string(), &sql, &shape(&a), &shape(&b), false),
        }
    }
    p.finish();
}

// ---------------------------------------------------------------- mutating shapes

/// Two isolated copies of `source`, one per server.
async fn clones(source: &TableRef, what: &str) -> (TableRef, TableRef) {
    let pid = std::process::id();
    let mk = |side: &str| {
        TableRef::new(
            source.catalog.clone(),
            "scratch",
            format!("parity_{what}_{side}_{pid}"),
        )
    };
    let (a, b) = (mk("real"), mk("stand"));
    for t in [&a, &b] {
        lab()
            .post(
                "engine/clone_table",
                serde_json::json!({
                    "source": format!("{}.{}.{}", source.catalog, source.schema, source.table),
                    "target": format!("{}.{}.{}", t.catalog, t.schema, t.table),
                    "replace": true,
                }),
            )
            .await;
    }
    (a, b)
}

/// A fact of a table read through the real coordinator (the one reader of both clones).
async fn fact(p: &Parity, sql: String) -> Vec<Vec<Value>> {
    p.real
        .query(&sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .rows
        .into_iter()
        .map(|r| r.values)
        .collect()
}

/// Data files per partition, records and snapshots of a table, and its manifests,
/// through the real server, in one statement (the counts of manifests and snapshots on
/// every row of the files'); a table without data files reads them apart.
async fn effect(p: &Parity, t: &TableRef) -> (String, u64) {
    let counts = format!(
        "(SELECT count(*) FROM {}), (SELECT count(*) FROM {})",
        t.meta("manifests"),
        t.meta("snapshots")
    );
    let by_partition = format!(
        "SELECT partition, count(*), sum(record_count), {counts} FROM {} WHERE content = 0 GROUP BY 1",
        t.meta("files")
    );
    let rows = match p.real.query(&by_partition).await {
        Ok(o) => o.rows.into_iter().map(|r| r.values).collect(),
        // An unpartitioned table's files have no partition column.
        Err(TrinoError::Query { error_name, .. }) if error_name == "COLUMN_NOT_FOUND" => {
            fact(
                p,
                format!(
                    "SELECT count(*), sum(record_count), {counts} FROM {} WHERE content = 0",
                    t.meta("files")
                ),
            )
            .await
        }
        Err(e) => panic!("{by_partition}: {e}"),
    };
    let (manifests, snapshots) = match rows.first() {
        Some(r) => (r[r.len() - 2].clone(), r[r.len() - 1].clone()),
        None => (
            fact(p, format!("SELECT count(*) FROM {}", t.meta("manifests"))).await[0][0].clone(),
            fact(p, format!("SELECT count(*) FROM {}", t.meta("snapshots"))).await[0][0].clone(),
        ),
    };
    let mut files: Vec<String> = rows.iter().map(|r| key(&r[..r.len() - 2])).collect();
    files.sort();
    (
        format!(
            "files by partition {}\nsnapshots {}",
            files.join(" | "),
            snapshots.display()
        ),
        manifests.as_u64().unwrap(),
    )
}

/// The manifests of a table, through the real server.
async fn manifest_count(p: &Parity, t: &TableRef) -> u64 {
    fact(p, format!("SELECT count(*) FROM {}", t.meta("manifests"))).await[0][0]
        .as_u64()
        .unwrap()
}

/// Whether the manifests a commit leaves are compared: only after optimize_manifests. Other
/// commits leave the manifests Iceberg's own merge policy leaves (Trino keeps every
/// manifest below commit.manifest.min-count-to-merge and adds its own), which the stand-in
/// does not model (the lab README's table of differences).
#[derive(Clone, Copy, PartialEq)]
enum Manifests {
    Compared,
    RealOnly,
}

/// Run each step of the same plan on each server's clone; compare each step's answer,
/// then the clones' effect.
async fn run_on_both(
    p: &mut Parity,
    label: &str,
    real_steps: &[String],
    stand_steps: &[String],
    clones: (&TableRef, &TableRef),
    manifests: Manifests,
) {
    let before = manifest_count(p, clones.0).await;
    for (sa, sb) in real_steps.iter().zip(stand_steps) {
        let opts = || QueryOptions {
            mutation: true,
            deadline: Some(Some(Duration::from_secs(600))),
            ..Default::default()
        };
        let (a, b) = tokio::join!(p.real.execute(sa, opts()), p.stand.execute(sb, opts()));
        let (a, b) = (Answer::from(a), Answer::from(b));
        // A partition of an evolved table's older spec reads as a null in the current spec's
        // newer field, which floe turns into `col IS NULL`: Trino cannot enforce it on the
        // older spec's files and refuses the statement (floe cannot tell that null from a
        // real one yet). Every other step must run on the real server.
        let older_spec = label.contains(".evolved ")
            && a.failed().is_some_and(|(n, m)| {
                n == "GENERIC_INTERNAL_ERROR" && m.contains("Unexpected FilterNode")
            });
        assert!(a.ok() || older_spec, "{label}: {sa}: {a:?}");
        p.record(label, sa, &a, &b, false);
    }
    let ((ea, ma), (eb, mb)) = tokio::join!(effect(p, clones.0), effect(p, clones.1));
    p.compared += 1;
    if ea != eb {
        p.diffs.push(format!(
            "{label}: the effects differ\n  real:\n{ea}\n  stand-in:\n{eb}"
        ));
    }
    match manifests {
        Manifests::Compared if ma != mb => p.diffs.push(format!(
            "{label}: manifests after: real {ma}, stand-in {mb}"
        )),
        Manifests::Compared => {}
        // The real server never merges the manifests of a small table on commit.
        Manifests::RealOnly => assert!(
            ma >= before.min(1),
            "{label}: {before} manifests, then {ma}"
        ),
    }
}

async fn partitions_of(p: &Parity, t: &TableRef) -> (Lakehouse, Vec<PartitionStats>) {
    let lake = Lakehouse::new(p.real.clone(), t.catalog.clone(), HealthConfig::default());
    let mut parts = lake.partitions(t).await.unwrap().partitions;
    parts.sort_by_key(|p| std::cmp::Reverse((p.small_files, p.label())));
    (lake, parts)
}

#[tokio::test]
async fn optimize() {
    let mut p = Parity::new("optimize");
    let threshold = 96 << 20;
    // The whole table.
    let src = TableRef::new("iceberg", "zoning", "permits");
    let (a, b) = clones(&src, "opt_whole").await;
    let plan = |t: &TableRef| {
        table_plan(t, Procedure::Optimize { threshold }).steps[0]
            .sql
            .clone()
    };
    run_on_both(
        &mut p,
        "whole table",
        &[plan(&a)],
        &[plan(&b)],
        (&a, &b),
        Manifests::RealOnly,
    )
    .await;
    // Chosen partitions, for every partition transform of the lab, on one pair of clones:
    // the partition with the most small files alone (a statement of its own), then the next
    // two grouped over "$partition" (one statement).
    let sources = [
        TableRef::new("iceberg", "finance", "budget"),
        TableRef::new("iceberg", "zoning", "documents"),
    ]
    .into_iter()
    .chain(
        layout_tables()
            .into_iter()
            .filter(|t| !t.table.starts_with("unpartitioned")),
    );
    for src in sources {
        let what = format!(
            "opt_{}",
            src.table.replace(|c: char| !c.is_alphanumeric(), "")
        );
        let (a, b) = clones(&src, &what).await;
        let (lake, parts) = partitions_of(&p, &a).await;
        let layout = lake.table_layout(&a).await.unwrap();
        let (alone, next) = parts.split_at(parts.len().min(1));
        let next = &next[..next.len().min(2)];
        let (mut sa, mut sb, mut what_ran) = (Vec::new(), Vec::new(), Vec::new());
        for (chosen, grouped) in [(alone, false), (next, true)] {
            if chosen.is_empty() {
                continue;
            }
            let steps = |t: &TableRef| -> Result<Vec<String>, PlanRefusal> {
                Ok(optimize_plan(t, &layout, chosen, threshold, grouped)?
                    .steps
                    .into_iter()
                    .map(|s| s.sql)
                    .collect())
            };
            match (steps(&a), steps(&b)) {
                (Ok(x), Ok(y)) => {
                    sa.extend(x);
                    sb.extend(y);
                    what_ran.push(format!(
                        "grouped={grouped} {:?}",
                        chosen.iter().map(|c| c.label()).collect::<Vec<_>>()
                    ));
                }
                (Err(e), _) | (_, Err(e)) => {
                    // A partition of an older spec: floe refuses before any statement.
                    assert!(
                        e.to_string()
                            .contains("not in the table's current partitioning"),
                        "{src}: {e}"
                    );
                }
            }
        }
        if !sa.is_empty() {
            let label = format!("{src} {}", what_ran.join(", then "));
            run_on_both(&mut p, &label, &sa, &sb, (&a, &b), Manifests::RealOnly).await;
        }
    }
    p.finish();
}

#[tokio::test]
async fn expire_snapshots() {
    let mut p = Parity::new("expire_snapshots");
    let src = TableRef::new("iceberg", "audit", "events");
    let (a, b) = clones(&src, "expire").await;
    let proc = Procedure::ExpireSnapshots {
        retention_secs: 7 * 86_400,
    };
    let sql = |t: &TableRef| table_plan(t, proc.clone()).steps[0].sql.clone();
    run_on_both(
        &mut p,
        "expire 7d",
        &[sql(&a)],
        &[sql(&b)],
        (&a, &b),
        Manifests::Compared,
    )
    .await;
    p.finish();
}

#[tokio::test]
async fn optimize_manifests() {
    let mut p = Parity::new("optimize_manifests");
    for src in [
        TableRef::new("iceberg", "zoning", "documents"),
        TableRef::new("layouts", "zoo", "evolved"),
    ] {
        let (a, b) = clones(&src, &format!("optman_{}", src.table)).await;
        let sql = |t: &TableRef| {
            table_plan(t, Procedure::OptimizeManifests).steps[0]
                .sql
                .clone()
        };
        run_on_both(
            &mut p,
            &src.to_string(),
            &[sql(&a)],
            &[sql(&b)],
            (&a, &b),
            Manifests::Compared,
        )
        .await;
    }
    p.finish();
}

/// A file in the table's data directory that no snapshot reaches, 30 days old.
async fn plant_orphan(p: &Parity, t: &TableRef) -> std::path::PathBuf {
    let rows = fact(
        p,
        format!("SELECT file_path FROM {} LIMIT 1", t.meta("files")),
    )
    .await;
    let path = rows[0][0]
        .as_str()
        .unwrap()
        .trim_start_matches("file://")
        .to_string();
    let dir = std::path::Path::new(&path).parent().unwrap();
    let orphan = dir.join("orphan-parity.parquet");
    std::fs::write(&orphan, b"not reachable from any snapshot").unwrap();
    let old = std::time::SystemTime::now() - Duration::from_secs(30 * 86_400);
    std::fs::File::options()
        .write(true)
        .open(&orphan)
        .unwrap()
        .set_modified(old)
        .unwrap();
    orphan
}

#[tokio::test]
async fn remove_orphan_files() {
    let mut p = Parity::new("remove_orphan_files");
    let src = TableRef::new("iceberg", "zoning", "inspections");
    let (a, b) = clones(&src, "orphans").await;
    let (oa, ob) = (plant_orphan(&p, &a).await, plant_orphan(&p, &b).await);
    let proc = Procedure::RemoveOrphanFiles {
        retention_secs: 7 * 86_400,
    };
    let sql = |t: &TableRef| table_plan(t, proc.clone()).steps[0].sql.clone();
    run_on_both(
        &mut p,
        "remove orphans 7d",
        &[sql(&a)],
        &[sql(&b)],
        (&a, &b),
        Manifests::Compared,
    )
    .await;
    assert!(!oa.exists(), "the real Trino removed {}", oa.display());
    assert!(!ob.exists(), "the stand-in removed {}", ob.display());
    p.finish();
}

// ---------------------------------------------------------------- cancel

/// A long optimize cancelled once it runs: the client says cancelled, the server records
/// USER_CANCELED, the table keeps its snapshots. The stand-in's optimize of a small table
/// ends in milliseconds, so it is held running (`slow`) for as long as the real one takes.
#[tokio::test]
async fn cancel() {
    let p = Parity::new("cancel");
    let src = TableRef::new("iceberg", "zoning", "documents");
    let (a, b) = clones(&src, "cancel").await;
    let u = user("parity_cancel");
    lab()
        .faults(&u, serde_json::json!([{"kind": "slow", "ms": 60000}]))
        .await;
    let before = (effect(&p, &a).await, effect(&p, &b).await);
    let run = |url: String, t: TableRef| {
        let u = u.clone();
        async move {
            let c = client(&url, &u);
            let token = CancellationToken::new();
            let t2 = token.clone();
            let progress = move |q: &QueryProgress| {
                if q.state == "RUNNING" && q.completed_splits < q.total_splits.max(1) {
                    t2.cancel();
                }
            };
            let sql = table_plan(
                &t,
                Procedure::Optimize {
                    threshold: 96 << 20,
                },
            )
            .steps[0]
                .sql
                .clone();
            let r = c
                .execute(
                    &sql,
                    QueryOptions {
                        progress: Some(&progress),
                        cancel: Some(token),
                        mutation: true,
                        deadline: Some(Some(Duration::from_secs(300))),
                        ..Default::default()
                    },
                )
                .await;
            r.map(|_| ()).map_err(|e| e.name().to_string())
        }
    };
    let (ra, rb) = tokio::join!(
        run(lab().trino_url(), a.clone()),
        run(stand_in_url(), b.clone())
    );
    lab().clear_faults(&u).await;
    assert_eq!(ra, Err("USER_CANCELED".into()), "real");
    assert_eq!(rb, Err("USER_CANCELED".into()), "stand-in");
    // What each server recorded of the query.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let (real_q, stand_q) = loop {
        let r = lab().real_queries_of(&u).await;
        let s = lab().queries_of(&u).await;
        let last = |v: &[serde_json::Value]| {
            v.iter()
                .rev()
                .find(|q| {
                    q["sql"]
                        .as_str()
                        .is_some_and(|s| s.contains("EXECUTE optimize"))
                })
                .cloned()
        };
        if let (Some(r), Some(s)) = (last(&r), last(&s))
            && r["state"] == "FAILED"
            && s["state"] == "FAILED"
        {
            break (r, s);
        }
        assert!(std::time::Instant::now() < deadline, "{r:?}\n{s:?}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    assert_eq!(real_q["error_name"], "USER_CANCELED", "{real_q}");
    assert_eq!(stand_q["error_name"], real_q["error_name"], "{stand_q}");
    let after = (effect(&p, &a).await, effect(&p, &b).await);
    assert_eq!(after, before, "a cancelled optimize commits nothing");
}
