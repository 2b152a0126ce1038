//! End to end: the real binary in a pseudo-terminal against the lab. It waits for the
//! seed's documents table to show CRITICAL, drills into its partitions, opens the
//! snapshots tab, and quits (or is killed) with the terminal restored.

mod common;
#[path = "common/pty.rs"]
mod pty;

use std::time::Duration;

use common::lab;
use pty::Pty;

/// The lab's seed schemas: other tests' scratch tables (dozens, cloned and dropped while
/// this runs) would slow the first refresh and push the seed's tables off the screen.
fn seed_args(url: &str) -> [&str; 8] {
    [
        "--trino", url, "--user", "floe", "--schema", "zoning", "--schema", "audit",
    ]
}

fn row_with<'a>(screen: &'a str, needle: &str) -> Option<&'a str> {
    screen.lines().find(|l| l.contains(needle))
}

#[test]
fn drill_from_the_critical_table_to_partitions_and_snapshots_then_quit() {
    let url = lab().trino_url();
    let mut pty = Pty::spawn(&seed_args(&url), 100, 30);
    let s = pty.wait_for("documents to show CRIT", Duration::from_secs(60), |s| {
        row_with(s, "zoning.documents").is_some_and(|r| r.contains("CRIT") && !r.contains('~'))
    });
    // Worst first: the incident is on the first data row, selected.
    let first_data_row = s.lines().nth(3).unwrap_or("");
    assert!(first_data_row.contains("CRIT"), "{s}");
    assert!(
        s.contains("v480"),
        "header shows the coordinator version:\n{s}"
    );
    // Move to documents (it may share CRIT with others) and drill down.
    let rows: Vec<&str> = s.lines().skip(3).collect();
    let pos = rows
        .iter()
        .position(|l| l.contains("zoning.documents"))
        .unwrap();
    for _ in 0..pos {
        pty.send(b"j");
    }
    pty.send(b"\r");
    let s = pty.wait_for("partitions of documents", Duration::from_secs(30), |s| {
        s.contains("Partitions: documents")
            && s.contains("district=")
            && s.contains("filed_at_day=")
    });
    assert!(
        s.contains("CRIT"),
        "small-file partitions are flagged:\n{s}"
    );
    pty.send(b" ");
    pty.wait_for("one partition marked", Duration::from_secs(5), |s| {
        s.contains("[1 marked]")
    });
    pty.send(b"3");
    let s = pty.wait_for("snapshots of documents", Duration::from_secs(30), |s| {
        s.contains("Snapshots: documents")
            && s.contains("replace")
            && s.contains("since the last compaction")
    });
    assert!(s.contains("append"), "{s}");
    pty.send(b"q");
    let status = pty.wait_exit(Duration::from_secs(10));
    assert!(status.success(), "{status:?}");
    pty.assert_restored();
}

#[test]
fn sigterm_and_sighup_restore_the_terminal() {
    for sig in [libc::SIGTERM, libc::SIGHUP] {
        let url = lab().trino_url();
        let mut pty = Pty::spawn(&seed_args(&url), 80, 24);
        pty.wait_for("the table list", Duration::from_secs(60), |s| {
            s.contains("zoning.documents")
        });
        // SAFETY: sending a signal to our own child.
        unsafe { libc::kill(pty.child.id() as i32, sig) };
        pty.wait_exit(Duration::from_secs(10));
        pty.assert_restored();
    }
}

#[test]
fn an_unreachable_trino_shows_the_error_and_quits_cleanly() {
    let mut pty = Pty::spawn(&["--trino", "http://127.0.0.1:9", "--user", "floe"], 80, 24);
    let s = pty.wait_for(
        "the error in the status line",
        Duration::from_secs(30),
        |s| s.contains("ERROR") && s.contains("127.0.0.1:9"),
    );
    assert!(s.contains("UNREACHABLE"), "{s}");
    pty.send(b"q");
    assert!(pty.wait_exit(Duration::from_secs(10)).success());
    pty.assert_restored();
}

/// A small Airflow v2 client for checking what the TUI did.
fn airflow_api() -> (String, String) {
    let a = &lab().v["airflow"];
    let base = a["url"].as_str().unwrap().trim_end_matches('/').to_string();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let token = rt.block_on(async {
        let r: serde_json::Value = reqwest::Client::new()
            .post(format!("{base}/auth/token"))
            .json(&serde_json::json!({"username": a["user"], "password": a["password"]}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        r["access_token"].as_str().unwrap().to_string()
    });
    (base, token)
}

fn runs_of(dag: &str) -> Vec<String> {
    let (base, token) = airflow_api();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let r: serde_json::Value = reqwest::Client::new()
            .get(format!("{base}/api/v2/dags/{dag}/dagRuns"))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        r["dag_runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["dag_run_id"].as_str().unwrap().to_string())
            .collect()
    })
}

fn delete_run(dag: &str, run: &str) {
    let (base, token) = airflow_api();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        reqwest::Client::new()
            .delete(format!(
                "{base}/api/v2/dags/{dag}/dagRuns/{}",
                floe::airflow::encode_segment(run)
            ))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
    });
}

#[test]
fn the_incident_through_airflow_from_the_table_to_the_failing_log_line_then_a_trigger() {
    let url = lab().trino_url();
    let a = &lab().v["airflow"];
    let af = a["url"].as_str().unwrap().to_string();
    let user = a["user"].as_str().unwrap().to_string();
    let pw = a["password"].as_str().unwrap().to_string();
    let mut pty = Pty::spawn_env(
        &[
            "--trino",
            &url,
            "--user",
            "floe",
            "--airflow",
            &af,
            "--airflow-user",
            &user,
            "--schema",
            "zoning",
            "--schema",
            "audit",
        ],
        &[("FLOE_AIRFLOW_PASSWORD", pw.as_str())],
        120,
        34,
    );
    // The Tables tab marks documents' DAG as failing next to its compaction age.
    pty.wait_for(
        "documents with its failing DAG",
        Duration::from_secs(90),
        |s| row_with(s, "zoning.documents").is_some_and(|r| r.contains("CRIT") && r.contains("✗")),
    );
    pty.send(b"4");
    let s = pty.wait_for(
        "the DAGs tab with the failing task's error",
        Duration::from_secs(60),
        |s| {
            s.contains("IMPORT ERROR broken_dag.py")
                && row_with(s, "compact_documents").is_some_and(|r| r.contains("failed"))
                && s.contains("failing task compact")
                && s.contains("trino-old.internal:8080")
        },
    );
    assert!(s.contains("expire_snapshots (paused)"), "{s}");
    // Runs → task instances → the log, opened on the error.
    pty.send(b"\r");
    pty.wait_for("the runs", Duration::from_secs(30), |s| {
        s.contains("runs of compact_documents") && s.contains("scheduled__")
    });
    pty.send(b"\r");
    pty.wait_for("the task instances", Duration::from_secs(30), |s| {
        row_with(s, " compact ").is_some_and(|r| r.contains("failed"))
    });
    pty.send(b"\r");
    pty.wait_for(
        "the log with the error pinned",
        Duration::from_secs(30),
        |s| {
            row_with(s, "ERROR").is_some_and(|r| r.contains("trino-old.internal"))
                && s.contains("try 1")
        },
    );
    // Back to the list, trigger the paused expire_snapshots (its run stays queued).
    for _ in 0..3 {
        pty.send(b"\x1b");
        std::thread::sleep(Duration::from_millis(200));
    }
    let before = runs_of("expire_snapshots");
    let s = pty.wait_for("the DAG list", Duration::from_secs(10), |s| {
        s.contains("LAST RUN")
    });
    let rows: Vec<&str> = s
        .lines()
        .skip_while(|l| !l.contains("LAST RUN"))
        .skip(1)
        .collect();
    let pos = rows
        .iter()
        .position(|l| l.contains("expire_snapshots"))
        .unwrap();
    pty.send(b"g");
    for _ in 0..pos {
        pty.send(b"j");
    }
    pty.send(b"t");
    pty.wait_for("the confirm popup", Duration::from_secs(10), |s| {
        s.contains("trigger a run of expire_snapshots")
    });
    pty.send(b"y");
    pty.wait_for("the trigger's result", Duration::from_secs(30), |s| {
        s.contains("triggered expire_snapshots")
    });
    let after = runs_of("expire_snapshots");
    let new: Vec<&String> = after.iter().filter(|r| !before.contains(r)).collect();
    assert_eq!(new.len(), 1, "one run created: {after:?}");
    delete_run("expire_snapshots", new[0]);
    pty.send(b"q");
    assert!(pty.wait_exit(Duration::from_secs(10)).success());
    pty.assert_restored();
    let audit = std::fs::read_to_string(pty.home.join("state/floe/audit.jsonl")).unwrap();
    let last: serde_json::Value = serde_json::from_str(audit.lines().last().unwrap()).unwrap();
    assert_eq!(last["action"], "trigger_dag");
    assert_eq!(last["outcome"], "success");
    assert!(
        !audit.contains(&pw) || pw.len() < 6,
        "no password in the audit log"
    );
}
