//! What an optimize will cost, before it runs: the bytes per second earlier optimizes on
//! the real coordinator rewrote, from floe's audit log and from the coordinator's own
//! query history, with the basis named — from the CLI here (the TUI's confirmation says
//! the same, see the unit tests of the confirm popup).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{lab, user};
use floe::health::HealthConfig;
use floe::lakehouse::model::TableRef;
use floe::lakehouse::queries::Lakehouse;
use floe::lakehouse::query_history::TableQueries;
use floe::mutation::audit::{Action, AuditLog, Outcome};
use floe::mutation::eta;
use floe::trino::Client;

fn home(name: &str) -> PathBuf {
    let h = std::env::temp_dir().join(format!("floe-eta-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&h);
    std::fs::create_dir_all(&h).unwrap();
    h
}

fn floe(args: &[&str], home: &Path, user: &str) -> Output {
    let url = lab().trino_url();
    let mut all: Vec<&str> = vec!["--trino", &url, "--user", user];
    all.extend_from_slice(args);
    Command::new(env!("CARGO_BIN_EXE_floe"))
        .args(&all)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_STATE_HOME", home.join("state"))
        .env("USER", "floe")
        .output()
        .expect("run floe")
}

#[tokio::test]
async fn the_plan_says_how_long_from_the_optimizes_this_coordinator_ran() {
    let name = format!("eta_{}", std::process::id());
    lab()
        .clone_table("zoning.permits", &format!("scratch.{name}"))
        .await;
    let t = TableRef::new("iceberg", "scratch", &name);
    let u = user("eta");
    let lake = Lakehouse::new(
        Client::new(lab().config(&lab().trino_url(), &u)).unwrap(),
        "iceberg",
        HealthConfig::default(),
    );
    lake.connect().await.unwrap();
    let parts = lake.partitions(&t).await.unwrap().partitions;
    assert!(parts.len() >= 2, "{parts:?}");
    let spec = |i: usize| {
        let (k, v) = &parts[i].values[0];
        format!("{k}={}", v.as_deref().unwrap())
    };
    let h = home("cli");
    let table = format!("scratch.{name}");

    // Never optimized here (a fresh audit log): whatever the coordinator kept is the basis.
    let first = floe(
        &[
            "maintain",
            "optimize",
            &table,
            "--partition",
            &spec(0),
            "--yes",
        ],
        &h,
        &u,
    );
    assert_eq!(
        first.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let audit = AuditLog::new(h.join("state/floe/audit.jsonl")).read();
    let done = audit
        .iter()
        .find(|r| r.action == Action::Optimize && r.outcome == Outcome::Succeeded)
        .unwrap_or_else(|| panic!("{audit:#?}"));
    assert!(
        done.bytes_before.unwrap_or(0) > 0,
        "what it rewrote: {done:?}"
    );
    let qid = done.query_id.clone().unwrap();

    // The coordinator keeps that optimize with what it wrote.
    let TableQueries::Runs { runs, .. } = lake.optimize_runs().await.unwrap() else {
        panic!("the real coordinator keeps its queries");
    };
    let mine = runs
        .iter()
        .find(|r| r.query_id == qid)
        .unwrap_or_else(|| panic!("{qid} not among {runs:#?}"));
    assert!(mine.physical_written_bytes.unwrap_or(0) > 0, "{mine:?}");
    assert!(mine.elapsed_ms.unwrap_or(0) > 0);
    // Both sources name it: counted once, as the audit log's.
    let m = eta::measure(&lake, &audit).await;
    let rate = m.rate.expect("a measured rate");
    assert!(rate.from_audit >= 1, "{rate:?}");
    // One measure: the audit log's (a plan's bytes), never mixed with the bytes the
    // coordinator's other optimizes wrote.
    assert_eq!(rate.from_coordinator, 0, "{rate:?}");
    assert!(rate.samples <= eta::RATE_SAMPLES);

    // The next plan says how long it should take, and on what basis.
    let plan = floe(
        &["maintain", "optimize", &table, "--partition", &spec(1)],
        &h,
        &u,
    );
    let out = String::from_utf8(plan.stdout).unwrap();
    let line = out
        .lines()
        .find(|l| l.starts_with("-- expected: "))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(line.starts_with("-- expected: ~"), "{line}");
    assert!(line.contains("/s of the last "), "{line}");
    assert!(line.contains("in the audit log"), "{line}");
    assert!(out.contains("-- not run: add --yes"), "{out}");
}
