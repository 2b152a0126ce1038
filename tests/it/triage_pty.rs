//! The Triage tab end to end: the real binary in a pseudo-terminal against the lab with
//! Airflow 3, at 80x24 and without colour. `0` shows the seed incident as one line, Enter
//! opens the failing task's log, Esc comes back.

use crate::common;
use crate::common::pty;

use std::time::Duration;

use common::lab;

#[test]
fn zero_shows_the_incident_and_enter_opens_its_log() {
    let url = lab().trino_url();
    let a = &lab().v["airflow"];
    let af = a["url"].as_str().unwrap().to_string();
    let user = a["user"].as_str().unwrap().to_string();
    let pw = a["password"].as_str().unwrap().to_string();
    let mut pty = pty::Pty::spawn_env(
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
        &[("FLOE_AIRFLOW_PASSWORD", pw.as_str()), ("NO_COLOR", "1")],
        80,
        24,
    );
    pty.wait_for("the Tables tab", Duration::from_secs(60), |s| {
        s.contains(" 0 Triage ") && s.contains("zoning.documents")
    });
    pty.send(b"0");
    // The connection check and the failing task arrive a little later than the DAG list.
    let s = pty.wait_for(
        "the seed incident first, as one line",
        Duration::from_secs(90),
        |s| {
            s.lines()
                .find(|l| l.starts_with("CRIT"))
                .is_some_and(|l| l.contains("DAG compact_documents failing"))
                && s.contains("trino-old.internal:8080")
                && s.contains("documents: ")
                // The failing task is read (it comes after the DAG's facts).
                && s.contains("enter: the failing task's log of compact_documents")
        },
    );
    assert_eq!(
        s.lines()
            .filter(|l| l.contains("compact_documents failing"))
            .count(),
        2,
        "the list row and the evidence pane:\n{s}"
    );
    pty.send(b"\r");
    // At 80 columns the log's title names the task and its try (the run id shows from 120
    // columns; the tasks level above names the run).
    pty.wait_for("the failing task's log", Duration::from_secs(30), |s| {
        s.contains("compact · try 1")
            && s.lines()
                .any(|l| l.starts_with("ERROR") && l.contains("ConnectionError"))
    });
    pty.send(b"\x1b");
    pty.wait_for("back on the Triage tab", Duration::from_secs(10), |s| {
        s.contains("INCIDENT") && s.contains("evidence:")
    });
    pty.send(b"q");
    assert!(pty.wait_exit(Duration::from_secs(10)).success());
    pty.assert_restored();
}

/// Where floe opens by default (`start_tab = "auto"`): on the Triage tab, with the seed's
/// incident first, at 100x30; an operator in an incident starts there.
#[test]
fn floe_opens_on_the_triage_tab_when_it_holds_incidents() {
    let url = lab().trino_url();
    let dir = std::env::temp_dir().join(format!("floe-start-tab-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("config.toml");
    // A config of its own, without start_tab: the default.
    std::fs::write(&cfg, "mouse = false\n").unwrap();
    let cfg = cfg.to_str().unwrap().to_string();
    let mut pty = pty::Pty::spawn(
        &[
            "--config", &cfg, "--trino", &url, "--user", "floe", "--schema", "zoning", "--schema",
            "audit",
        ],
        100,
        30,
    );
    let s = pty.wait_for(
        "the Triage tab with documents' incident",
        Duration::from_secs(60),
        |s| {
            s.contains("INCIDENT → TABLES")
                && s.lines()
                    .find(|l| l.starts_with("CRIT"))
                    .is_some_and(|l| l.contains("documents"))
        },
    );
    assert!(!s.contains("COMPACTED"), "not the Tables tab:\n{s}");
    // Stays there once the refresh is in: there are incidents.
    std::thread::sleep(Duration::from_secs(2));
    let s = pty.screen();
    assert!(s.contains("INCIDENT → TABLES"), "{s}");
    pty.send(b"q");
    let status = pty.wait_exit(Duration::from_secs(10));
    assert!(status.success(), "{status:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
