use super::*;
use crate::config::{Auth, DEFAULT_MAX_RESPONSE_SIZE, TlsSettings, TrinoSettings};
use crate::health::HealthConfig;
use crate::lakehouse::plan::table_plan;
use crate::mutation::audit::AuditLog;
use crate::trino::Client;
use std::time::Duration;

/// A coordinator that takes statements and never answers: a statement sent there runs
/// until it is stopped.
fn silent() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in l.incoming() {
            held.push(s);
        }
    });
    format!("http://{addr}/")
}

fn lake(url: &str) -> Lakehouse {
    let settings = TrinoSettings {
        url: url.parse().unwrap(),
        user: "floe".into(),
        catalog: "iceberg".into(),
        more_catalogs: Vec::new(),
        catalogs_by_default: false,
        schemas: vec![],
        tables: vec![],
        auth: Auth::None,
        tls: TlsSettings {
            ca_file: None,
            insecure_skip_verify: false,
        },
        session: Default::default(),
        source: "floe".into(),
        client_tags: vec![],
        max_response_size: DEFAULT_MAX_RESPONSE_SIZE,
    };
    let client = Client::from_settings(&settings, Duration::from_secs(600)).unwrap();
    Lakehouse::new(client, "iceberg", HealthConfig::default())
}

fn ctx(target: &str, audit: std::path::PathBuf) -> RunContext {
    RunContext {
        profile: target.into(),
        user: "floe".into(),
        target: target.into(),
        readonly: false,
        audit: AuditLog::new(audit),
    }
}

/// `floe --all`: a table busy on one cluster is not busy on another that holds a
/// table of the same name (nor is the refusal audited there); on its own cluster a
/// second plan is refused, audited on that cluster.
#[tokio::test]
async fn a_table_is_busy_on_its_own_cluster_only() {
    let t = TableRef::new("iceberg", "zoning", "busy_per_cluster");
    let plan = table_plan(&t, Procedure::OptimizeManifests);
    let dir = std::env::temp_dir().join(format!("floe-busy-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (a, b) = (silent(), silent());
    let (ctx_a, ctx_b) = (ctx(&a, dir.join("a.jsonl")), ctx(&b, dir.join("b.jsonl")));
    let ctx_a2 = ctx(&a, dir.join("a2.jsonl"));
    let (lake_a, lake_b) = (lake(&a), lake(&b));
    let (stop_a, stop_b, stop_a2) = (Stop::new(), Stop::new(), Stop::new());
    let nothing = |_: StepEvent| {};
    let later = |ms| tokio::time::sleep(Duration::from_millis(ms));
    let (_, on_b, again_on_a, ()) = tokio::join!(
        run_plan_until(&lake_a, &plan, &ctx_a, &stop_a, &nothing),
        async {
            later(300).await;
            run_plan_until(&lake_b, &plan, &ctx_b, &stop_b, &nothing).await
        },
        async {
            later(300).await;
            run_plan_until(&lake_a, &plan, &ctx_a2, &stop_a2, &nothing).await
        },
        async {
            later(1500).await;
            stop_a.cancel();
            stop_b.cancel();
            stop_a2.cancel();
        }
    );
    assert!(!matches!(on_b, Err(RunError::Busy(_))), "{on_b:?}");
    let refused = |c: &RunContext| {
        c.audit
            .read()
            .iter()
            .filter(|r| r.outcome == Outcome::Refused)
            .map(|r| r.target.clone())
            .collect::<Vec<_>>()
    };
    assert!(refused(&ctx_b).is_empty(), "{:?}", ctx_b.audit.read());
    assert!(
        matches!(&again_on_a, Err(RunError::Busy(x)) if *x == t),
        "{again_on_a:?}"
    );
    assert_eq!(refused(&ctx_a2), vec![a.clone()]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_optimizes_metric_rows_read_as_what_it_rewrote() {
    let m = |pairs: &[(&str, i64)]| -> BTreeMap<String, i64> {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    };
    assert_eq!(metrics_text(&BTreeMap::new()), None, "Trino before 481");
    let six = m(&[
        (REWRITTEN_DATA_FILES, 2140),
        (REMOVED_DELETE_FILES, 0),
        (ADDED_DATA_FILES, 107),
    ]);
    assert_eq!(
        metrics_text(&six).unwrap(),
        "rewrote 2,140 data files into 107"
    );
    let deletes = m(&[
        (REWRITTEN_DATA_FILES, 1),
        (REMOVED_DELETE_FILES, 3),
        (ADDED_DATA_FILES, 1),
        ("new_metric", 7),
    ]);
    assert_eq!(
        metrics_text(&deletes).unwrap(),
        "rewrote 1 data file into 1, removed 3 delete files, new_metric 7"
    );
}
