//! Benchmarks against the lab (`cargo xtask bench` brings it up with the scale scenario):
//! what an operator waits for, end to end through Trino's protocol.

use std::path::PathBuf;
use std::time::Duration;

use divan::Bencher;
use floe::config::{Auth, TlsSettings};
use floe::health::HealthConfig;
use floe::lakehouse::model::TableRef;
use floe::lakehouse::queries::Lakehouse;
use floe::trino::{Client, ClientConfig, RetryPolicy};
use futures::StreamExt;

fn main() {
    // `cargo test --all-targets` runs bench targets once as tests; these need the lab's
    // scale scenario, which only `cargo xtask bench` brings up.
    if !std::env::args().any(|a| a == "--bench") {
        println!(
            "lab benchmarks run under `cargo bench` (cargo xtask bench), with the scale scenario"
        );
        return;
    }
    divan::main();
}

fn lab() -> serde_json::Value {
    let dir = std::env::var_os("FLOE_LAB_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".lab"));
    let text = std::fs::read_to_string(dir.join("lab.json")).unwrap_or_else(|e| {
        panic!(
            "{}: {e}: start the lab with `cargo xtask lab up --scale`",
            dir.display()
        )
    });
    serde_json::from_str(&text).unwrap()
}

fn lakehouse(catalog: &str) -> Lakehouse {
    let j = lab();
    let cfg = ClientConfig {
        url: j["trino"]["url"].as_str().unwrap().parse().unwrap(),
        user: "floe-bench".into(),
        source: "floe-bench".into(),
        catalog: Some(catalog.into()),
        schema: None,
        auth: Auth::None,
        tls: TlsSettings {
            ca_file: None,
            insecure_skip_verify: false,
        },
        session: Default::default(),
        client_tags: vec![],
        retry: RetryPolicy::default(),
        request_timeout: Duration::from_secs(60),
        connect_timeout: Duration::from_secs(5),
        query_timeout: Some(Duration::from_secs(300)),
    };
    Lakehouse::new(Client::new(cfg).unwrap(), catalog, HealthConfig::default())
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn scale_catalog() -> String {
    let j = lab();
    j["scale"]["catalog"]
        .as_str()
        .unwrap_or_else(|| {
            panic!("the lab runs without the scale scenario: `cargo xtask lab up --scale`")
        })
        .to_string()
}

/// Discover the 1,000 tables of the scale scenario (one query).
#[divan::bench(sample_count = 10)]
fn discover_1000_tables(b: Bencher) {
    let rt = runtime();
    let lake = lakehouse(&scale_catalog());
    b.bench_local(|| {
        rt.block_on(async { assert_eq!(lake.discover(&[], &[]).await.unwrap().len(), 1000) })
    });
}

/// A full refresh of 1,000 tables: discovery plus one aggregate query per table, four at
/// a time (max_concurrent_queries), as the Tables tab and `floe check` do.
#[divan::bench(sample_count = 3)]
fn refresh_1000_tables(b: Bencher) {
    let rt = runtime();
    let lake = lakehouse(&scale_catalog());
    b.bench_local(|| {
        rt.block_on(async {
            let tables = lake.discover(&[], &[]).await.unwrap();
            let ok = futures::stream::iter(tables)
                .map(|t| {
                    let lake = lake.clone();
                    async move { lake.table_stats(&t).await.is_ok() }
                })
                .buffer_unordered(4)
                .filter(|ok| futures::future::ready(*ok))
                .count()
                .await;
            assert_eq!(ok, 1000);
        })
    });
}

/// The incident's table: health query, partitions and snapshots of zoning.documents.
#[divan::bench(args = ["stats", "partitions", "snapshots"], sample_count = 10)]
fn seed_documents(b: Bencher, what: &str) {
    let rt = runtime();
    let lake = lakehouse("iceberg");
    let t = TableRef::new("iceberg", "zoning", "documents");
    b.bench_local(|| {
        rt.block_on(async {
            match what {
                "stats" => assert!(lake.table_stats(&t).await.unwrap().data_files > 0),
                "partitions" => assert!(!lake.partitions(&t).await.unwrap().partitions.is_empty()),
                _ => assert!(!lake.snapshots(&t).await.unwrap().is_empty()),
            }
        })
    });
}
