//! A Delta Lake optimize as a job on the real Trino 476, as an Iceberg one is
//! (`real_optimize`): the confirmation says what it should cost, the job line reads the
//! coordinator's own stats of the running statement, and `c` cancels it there
//! (`USER_CANCELED` in `system.runtime.queries`), audited as cancelled, nothing committed.

use crate::delta::{delta, lake, operations};
use crate::real_optimize::{
    cancel_then_quit, job_stats, long_table_of, runtime, start_optimize, tui_on, user,
};

use std::time::Duration;

use floe::lakehouse::delta::TableFormat;

#[test]
fn a_delta_optimize_shows_its_cost_and_stats_and_c_cancels_it_on_trino() {
    let rt = runtime();
    let owner = lake("floe", &delta().0);
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
    let before = rt.block_on(operations(&owner, &t));
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
    cancel_then_quit(&mut pty, &dir, &u);
    // The cancelled statement committed no version.
    assert_eq!(
        rt.block_on(operations(&owner, &t)),
        before,
        "the cancelled optimize committed nothing"
    );
}
