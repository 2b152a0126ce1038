//! What each read costs the coordinator, on the lab's real Trino: every statement shape
//! floe sends, every Iceberg metadata table alone, and the newest snapshot's summary, for
//! one table and for ten in one `UNION ALL` statement, at each table size the catalog
//! holds. The figures are the coordinator's own (`GET /v1/query/{id}`: planning, CPU,
//! elapsed, processed rows and bytes, splits), with the load average when each statement
//! was sent; so the client's build profile does not matter (`--profile dev` builds fast).
//!
//! `FLOE_LAB_DIR=… cargo bench --profile dev --bench coord` writes one JSON file per run
//! (`COORD_OUT`, default `target/coord/`) and prints its table;
//! `COORD_REPORT=run1.json,run2.json cargo bench --profile dev --bench coord` prints the
//! markdown table of runs side by side (the one in benches/README.md).
//!
//! Knobs (environment): COORD_CATALOG (`iceberg`), COORD_SCHEMAS (the schemas whose tables
//! are measured, comma-separated; all when unset), COORD_SETS (`name=s.t,s.t;name=…`:
//! explicit sets of up to ten tables, the first one also measured alone, e.g. those
//! `benches/coord/tables.py` makes; by default the catalog's tables by live files:
//! `small` under 100, `thousands` 1,000-9,999, `10k+`), COORD_SHAPES (`a,b`: only the
//! statements whose names contain one of these).

use std::time::Duration;

use serde_json::{Value, json};

mod measure;
mod report;
mod shapes;

fn main() {
    // `cargo test --all-targets` runs bench targets once as tests; this one needs the lab.
    if !std::env::args().any(|a| a == "--bench") {
        println!("the coordinator-cost benchmark runs under `cargo bench` against the lab");
        return;
    }
    if let Ok(list) = std::env::var("COORD_REPORT") {
        let runs: Vec<Value> = list
            .split(',')
            .map(|p| serde_json::from_str(&std::fs::read_to_string(p.trim()).unwrap()).unwrap())
            .collect();
        print!("{}", report::markdown(&runs));
        return;
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(run());
}

async fn run() {
    let lab = measure::Lab::open();
    let catalog = std::env::var("COORD_CATALOG").unwrap_or_else(|_| "iceberg".into());
    let client = lab.client(&catalog);
    let started = chrono::Utc::now();
    let status_before = lab.status().await;
    let sets = shapes::sets(&client, &catalog).await;
    for s in &sets {
        println!(
            "set {}: {}",
            s.name,
            s.tables
                .iter()
                .map(|t| format!("{}.{} ({} files)", t.table.schema, t.table.table, t.files))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let mut rows = Vec::new();
    // The listing first: it also warms the coordinator's planner for this run.
    rows.push(
        measure::run(
            &client,
            "listing (iceberg_tables)",
            "catalog",
            1,
            &shapes::listing(&catalog),
        )
        .await,
    );
    for s in &sets {
        let widths: Vec<usize> = if s.tables.len() > 1 {
            vec![1, s.tables.len()]
        } else {
            vec![1]
        };
        for w in widths {
            for (shape, sql) in shapes::statements(&s.tables[..w]) {
                let r = measure::run(&client, &shape, &s.name, w, &sql).await;
                report::print_row(&r);
                rows.push(r);
            }
        }
    }
    let status_after = lab.status().await;
    let doc = json!({
        "started": started.to_rfc3339(),
        "finished": chrono::Utc::now().to_rfc3339(),
        "trino": lab.url(),
        "catalog": catalog,
        "server": {"before": status_before, "after": status_after},
        "sets": sets.iter().map(|s| json!({
            "name": s.name,
            "tables": s.tables.iter().map(|t| json!({
                "table": format!("{}.{}", t.table.schema, t.table.table),
                "files": t.files,
                "partitioned": t.partitioned,
            })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "rows": rows,
    });
    let dir = std::env::var_os("COORD_OUT")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/coord")
        });
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("coord-{}.json", started.format("%Y%m%dT%H%M%SZ")));
    std::fs::write(&path, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    println!();
    print!("{}", report::markdown(std::slice::from_ref(&doc)));
    println!("\nwritten: {}", path.display());
    tokio::time::sleep(Duration::from_millis(10)).await;
}
