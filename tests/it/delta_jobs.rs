//! A Delta Lake optimize as a job on the real Trino 476, as an Iceberg one is
//! (`real_optimize`): the confirmation says what it should cost, the job line reads the
//! coordinator's own stats of the running statement, and `c` cancels it there
//! (`USER_CANCELED` in `system.runtime.queries`), audited as cancelled, nothing committed.

use crate::common::lab;
use crate::real_optimize::{
    assert_cancelled_on_trino, job_stats, long_table_of, runtime, start_optimize, tui_on, user,
};

use std::time::Duration;

use floe::health::HealthConfig;
use floe::lakehouse::delta::TableFormat;
use floe::lakehouse::model::TableRef;
use floe::lakehouse::queries::Lakehouse;
use floe::trino::Client;

fn delta_lake(u: &str) -> Lakehouse {
    let catalog = lab().v["trino"]["delta"]["catalog"]
        .as_str()
        .expect("lab.json trino.delta: the primary real Trino serves a Delta Lake catalog");
    Lakehouse::new(
        Client::new(lab().config(&lab().trino_url(), u)).unwrap(),
        catalog,
        HealthConfig::default(),
    )
}

/// The operations of a Delta table's versions, oldest first.
async fn history(lake: &Lakehouse, t: &TableRef) -> Vec<String> {
    let q = format!(
        "SELECT operation FROM {} ORDER BY version",
        t.meta("history")
    );
    lake.client
        .query(&q)
        .await
        .unwrap_or_else(|e| panic!("{q}: {e}"))
        .rows
        .iter()
        .map(|r| r.str("operation").unwrap_or("").to_string())
        .collect()
}

#[test]
fn a_delta_optimize_shows_its_cost_and_stats_and_c_cancels_it_on_trino() {
    let rt = runtime();
    let owner = delta_lake("floe");
    // 3,000 thousand rows in ~200 files of 0.5 MB: an optimize of about 7 s on an unloaded
    // lab (1,500 thousand took 3.6 s), still running when `c` is sent.
    let t = rt.block_on(long_table_of(
        &owner,
        TableFormat::Delta,
        "delta_gauge",
        3000,
        false,
    ));
    // An optimize this coordinator ran before: what the estimate is measured from when
    // floe's audit log holds none.
    let warm = rt.block_on(long_table_of(
        &owner,
        TableFormat::Delta,
        "delta_warm",
        300,
        false,
    ));
    rt.block_on(owner.client.query(&format!(
        "ALTER TABLE {} EXECUTE optimize(file_size_threshold => '96MB')",
        warm.sql()
    )))
    .unwrap();
    let before = rt.block_on(history(&owner, &t));
    let u = user("delta_gauge");
    let dir = std::env::temp_dir().join(format!("floe-ro-delta-gauge-{}", std::process::id()));
    let mut pty = tui_on(&t, &u, &dir);
    pty.send(b"o");
    let confirm = pty.wait_for("the confirmation", Duration::from_secs(60), |s| {
        s.contains("EXECUTE optimize(file_size_threshold => ") && s.contains("expected: ")
    });
    // The statement is the Delta one; what it should cost is said before `y`, from the
    // coordinator's optimizes (an upper bound: their bytes are what they wrote).
    let expected = confirm
        .lines()
        .find(|l| l.contains("expected: "))
        .unwrap()
        .trim()
        .to_string();
    assert!(
        expected.contains("expected: at most ") || expected.contains("expected: ~"),
        "{expected}"
    );
    // Of the table's bytes, read the Delta way (an unpartitioned table's from its files'
    // hidden columns): never nothing.
    assert!(
        !expected.contains("at most 0s") && !expected.contains("~0s"),
        "{expected}"
    );
    pty.send(b"\x1b");
    pty.wait_for("the confirmation closed", Duration::from_secs(10), |s| {
        !s.contains("EXECUTE optimize")
    });
    let line = start_optimize(&mut pty);
    let (done, total, _) = job_stats(&line).unwrap();
    assert!(done <= total, "{line}");
    assert!(line.contains(" 1/1 "), "one statement: {line}");
    pty.send(b"c");
    pty.wait_for("the cancelled job", Duration::from_secs(60), |s| {
        s.contains("⊘ optimize") && s.contains("cancelled")
    });
    pty.send(b"q");
    assert!(pty.wait_exit(Duration::from_secs(15)).success());
    pty.assert_restored();
    assert_cancelled_on_trino(&dir, &u, "cancelled");
    // The cancelled statement committed no version.
    assert_eq!(
        rt.block_on(history(&owner, &t)),
        before,
        "the cancelled optimize committed nothing"
    );
}
