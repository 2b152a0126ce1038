//! End to end: the real binary in a pseudo-terminal against the lab. It waits for the
//! seed's documents table to show CRITICAL, drills into its partitions, opens the
//! snapshots tab, and quits (or is killed) with the terminal restored.

use crate::common;
use crate::common::pty;

use std::time::{Duration, Instant};

use common::lab;
use floe::mutation::audit::Outcome;
use pty::Pty;

/// The lab's seed schemas: other tests' scratch tables (dozens, cloned and dropped while
/// this runs) would slow the first refresh and push the seed's tables off the screen.
fn seed_args(url: &str) -> [&str; 8] {
    [
        "--trino", url, "--user", "floe", "--schema", "zoning", "--schema", "audit",
    ]
}

/// No row is loading any more (`…`) or stale (`~`): the order will not change under the
/// keys a test sends to reach a row.
fn every_row_loaded(screen: &str) -> bool {
    !screen
        .lines()
        .skip(3)
        .any(|l| l.contains('~') || l.trim_start().starts_with('…'))
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
            && every_row_loaded(s)
    });
    // Worst first: the incident is on the first data row, selected.
    let first_data_row = s.lines().nth(3).unwrap_or("");
    assert!(first_data_row.contains("CRIT"), "{s}");
    assert!(
        s.contains("v476"),
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
    // Flagged WARN: no partition of documents holds the 100 small files that make a
    // reader of one partition pay (the table is CRITICAL by its 2,004 files).
    assert!(
        s.contains("WARN"),
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

/// The table name on a Tables row (`zoning.documents`), from the screen.
fn table_on(row: &str) -> Option<String> {
    row.split_whitespace()
        .find(|w| w.starts_with("zoning.") || w.starts_with("audit."))
        .map(str::to_string)
}

#[test]
fn the_snapshots_tab_shows_the_opened_table_after_the_list_re_sorts() {
    let url = lab().trino_url();
    let mut pty = Pty::spawn(&seed_args(&url), 100, 30);
    let s = pty.wait_for("every table loaded", Duration::from_secs(60), |s| {
        row_with(s, "zoning.documents").is_some_and(|r| r.contains("CRIT") && !r.contains('~'))
            && every_row_loaded(s)
    });
    // The worst table, untouched on the first row: open it.
    let opened = table_on(s.lines().nth(3).unwrap_or("")).expect("a table on the first row");
    let short = opened.split('.').nth(1).unwrap().to_string();
    pty.send(b"\r");
    pty.wait_for("its partitions", Duration::from_secs(30), |s| {
        s.contains(&format!("Partitions: {short}"))
    });
    // Back on Tables, reverse the order: the healthiest table is on the first row now.
    pty.send(b"1");
    pty.send(b"S");
    let s = pty.wait_for("another table first", Duration::from_secs(10), |s| {
        table_on(s.lines().nth(3).unwrap_or("")).is_some_and(|t| t != opened)
    });
    let first = table_on(s.lines().nth(3).unwrap_or("")).unwrap_or_default();
    assert_ne!(first, opened, "the re-sort moved the opened table:\n{s}");
    pty.send(b"3");
    let s = pty.wait_for("the snapshots tab, loaded", Duration::from_secs(30), |s| {
        s.contains("Snapshots: ") && s.contains("append")
    });
    assert!(s.contains(&format!("Snapshots: {short}")), "{s}");
    pty.send(b"q");
    assert!(pty.wait_exit(Duration::from_secs(10)).success());
    pty.assert_restored();
}

#[test]
fn y_copies_the_selected_table_with_osc_52() {
    let url = lab().trino_url();
    let mut pty = Pty::spawn(&seed_args(&url), 100, 30);
    let s = pty.wait_for("documents loaded", Duration::from_secs(60), |s| {
        row_with(s, "zoning.documents").is_some_and(|r| r.contains("CRIT") && !r.contains('~'))
            && every_row_loaded(s)
    });
    let pos = s
        .lines()
        .skip(3)
        .position(|l| l.contains("zoning.documents"))
        .unwrap();
    for _ in 0..pos {
        pty.send(b"j");
    }
    pty.send(b"y");
    let s = pty.wait_for("the status line", Duration::from_secs(10), |s| {
        s.contains("copied table name")
    });
    assert!(s.contains(r#""iceberg"."zoning"."documents""#), "{s}");
    // base64 of "iceberg"."zoning"."documents", for the terminal's clipboard.
    let seq = "\x1b]52;c;ImljZWJlcmciLiJ6b25pbmciLiJkb2N1bWVudHMi\x07";
    let out = pty.output();
    assert!(out.contains(seq), "no OSC 52 in the output");
    assert!(!out.contains("\x1bPtmux;"), "not in tmux: no passthrough");
    pty.send(b"q");
    assert!(pty.wait_exit(Duration::from_secs(10)).success());
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
        // The listing's error and the server info's come from two reads, in either order.
        |s| s.contains("ERROR") && s.contains("127.0.0.1:9") && s.contains("UNREACHABLE"),
    );
    assert!(
        s.contains("cannot reach Trino at http://127.0.0.1:9"),
        "{s}"
    );
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
        let r: serde_json::Value = crate::common::http_builder()
            .build()
            .unwrap()
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
        let r: serde_json::Value = crate::common::http_builder()
            .build()
            .unwrap()
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
        crate::common::http_builder()
            .build()
            .unwrap()
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
        // The pinned error line wraps: the host is on its first rows.
        |s| {
            s.lines()
                .skip_while(|l| !l.starts_with("ERROR"))
                .take(3)
                .any(|l| l.contains("trino-old.internal"))
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
    pty.answer(b"y");
    // Triggered, and the run floe created is now followed in the status line.
    pty.wait_for("the trigger's result", Duration::from_secs(30), |s| {
        s.contains("watching expire_snapshots ")
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
    assert_eq!(last["outcome"], "succeeded");
    assert!(
        !audit.contains(&pw) || pw.len() < 6,
        "no password in the audit log"
    );
}

/// A TUI on its own clone of the documents table (the only table it lists), as user `u`,
/// with its audit log in its own directory; the table is shown with its partitions read.
/// On the stand-in: its jobs are held RUNNING on demand (`slow`), which a real optimize of
/// a lab table is not for long enough to act on.
struct JobTui {
    pty: Pty,
    user: String,
    audit: std::path::PathBuf,
}

fn job_tui(name: &str) -> JobTui {
    job_tui_with(name, "", "")
}

/// [`job_tui`] with more config: top-level keys, and sections after `[trino]`.
fn job_tui_with(name: &str, top: &str, extra: &str) -> JobTui {
    let u = format!("t_{name}_{}", std::process::id());
    let table = format!("{name}_{}", std::process::id());
    let dir = std::env::temp_dir().join(format!("floe-pty-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(lab().clone_table("zoning.documents", &format!("scratch.{table}")));
    let audit = dir.join("audit.jsonl");
    let config = dir.join("config.toml");
    std::fs::write(
        &config,
        format!(
            "{top}audit_log = {:?}\n[trino]\nurl = {:?}\nuser = {u:?}\ncatalog = \"iceberg\"\nschemas = [\"scratch\"]\ntables = [\"scratch.{table}\"]\n{extra}",
            audit.display().to_string(),
            lab().stand_in_url(),
        ),
    )
    .unwrap();
    let pty = Pty::spawn(&["--config", config.to_str().unwrap()], 120, 30);
    pty.wait_for("the clone, loaded", Duration::from_secs(60), |s| {
        row_with(s, &table).is_some_and(|r| r.contains("CRIT") && !r.contains('~'))
    });
    JobTui {
        pty,
        user: u,
        audit,
    }
}

fn lab_rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

impl JobTui {
    /// `o`, the confirm popup, then `y` with the first statement slowed to 30 s on the
    /// engine; returns the lab's id of the running optimize.
    fn start_optimize(&mut self) -> String {
        self.start_optimize_slowed(30000)
    }

    fn start_optimize_slowed(&mut self, ms: u64) -> String {
        self.pty.send(b"o");
        self.pty
            .wait_for("the confirm popup", Duration::from_secs(30), |s| {
                s.contains("EXECUTE optimize")
            });
        lab_rt().block_on(lab().faults(
            &self.user,
            serde_json::json!([{"kind": "slow", "ms": ms, "count": 1, "sql": "EXECUTE optimize"}]),
        ));
        self.pty.answer(b"y");
        self.pty
            .wait_for("the job line", Duration::from_secs(30), |s| {
                s.contains("▶ optimize")
            });
        let start = Instant::now();
        loop {
            let q = lab_rt().block_on(lab().queries_of(&self.user));
            if let Some(q) = q.iter().find(|q| {
                q["sql"].as_str().unwrap_or("").contains("EXECUTE optimize")
                    && q["state"] == "RUNNING"
            }) {
                return q["id"].as_str().unwrap().to_string();
            }
            assert!(start.elapsed() < Duration::from_secs(30), "{q:?}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Right after floe exited: the query was cancelled on the server, and the audit log
    /// has its started record then `outcome` with its query id.
    fn assert_cancelled(&self, id: &str, outcome: &str) {
        let rt = lab_rt();
        let q = rt.block_on(lab().queries_of(&self.user));
        rt.block_on(lab().clear_faults(&self.user));
        let q = q.iter().find(|q| q["id"] == id).unwrap();
        assert_eq!(q["error_name"], "USER_CANCELED", "{q}");
        assert_eq!(q["delete_received"], true, "{q}");
        let audit = floe::mutation::audit::AuditLog::new(&self.audit).read_all();
        let outcomes: Vec<&str> = audit.iter().map(|r| r.outcome.as_str()).collect();
        // The plan optimizes several partitions: the cut leaves one record of the
        // statements it never sent.
        assert_eq!(outcomes, vec!["started", outcome, "not_run"]);
        assert_eq!(audit[1].query_id.as_deref(), Some(id));
        assert!(audit[0].statement.contains("EXECUTE optimize"));
        assert_eq!(audit[0].user, self.user);
    }
}

#[test]
fn quitting_with_a_running_job_asks_and_y_cancels_it_on_trino() {
    let mut t = job_tui("ptyquit");
    let id = t.start_optimize();
    t.pty.send(b"q");
    t.pty
        .wait_for("the quit question", Duration::from_secs(10), |s| {
            s.contains("quit while jobs run?")
        });
    t.pty.answer(b"n");
    t.pty
        .wait_for("the question gone", Duration::from_secs(10), |s| {
            !s.contains("quit while jobs run?") && s.contains("▶ optimize")
        });
    assert!(t.pty.child.try_wait().unwrap().is_none(), "n stays");
    t.pty.send(b"q");
    t.pty
        .wait_for("the quit question", Duration::from_secs(10), |s| {
            s.contains("quit while jobs run?")
        });
    t.pty.answer(b"y");
    let status = t.pty.wait_exit(Duration::from_secs(15));
    assert!(status.success(), "{status:?}");
    t.pty.assert_restored();
    t.assert_cancelled(&id, "cancelled");
}

#[test]
fn sigterm_with_a_running_job_cancels_it_on_trino_and_audits_interrupted() {
    let mut t = job_tui("ptyterm");
    let id = t.start_optimize();
    // SAFETY: signalling our own child.
    unsafe { libc::kill(t.pty.child.id() as i32, libc::SIGTERM) };
    t.pty.wait_exit(Duration::from_secs(15));
    t.pty.assert_restored();
    t.assert_cancelled(&id, "interrupted");
}

#[test]
fn a_plan_arriving_under_the_filter_prompt_does_not_take_the_next_y() {
    let mut t = job_tui("ptyahead");
    // The plan's reads are slowed so it arrives while the prompt is open.
    lab_rt().block_on(lab().faults(
        &t.user,
        serde_json::json!([{"kind": "latency", "ms": 300, "on": "post", "count": 4}]),
    ));
    t.pty.send(b"o/");
    t.pty
        .wait_for("the plan under the prompt", Duration::from_secs(30), |s| {
            s.contains("EXECUTE optimize")
        });
    t.pty.send(b"y");
    std::thread::sleep(Duration::from_millis(1500));
    let s = t.pty.screen();
    assert!(!s.contains("▶ optimize"), "y ran the plan:\n{s}");
    assert!(s.contains("/y"), "y went to the filter:\n{s}");
    let q = lab_rt().block_on(lab().queries_of(&t.user));
    lab_rt().block_on(lab().clear_faults(&t.user));
    assert!(
        !q.iter()
            .any(|q| q["sql"].as_str().unwrap_or("").contains("EXECUTE optimize")),
        "nothing sent: {q:?}"
    );
    t.pty.send(b"\x1b");
    std::thread::sleep(Duration::from_millis(500));
    t.pty.send(b"n");
    t.pty
        .wait_for("the popup closed", Duration::from_secs(10), |s| {
            !s.contains("EXECUTE optimize")
        });
    t.pty.send(b"q");
    assert!(t.pty.wait_exit(Duration::from_secs(10)).success());
    t.pty.assert_restored();
}

#[test]
fn a_running_job_survives_a_profile_switch_and_reports_under_its_profile() {
    let other = format!("t_ptyswitch_b_{}", std::process::id());
    let mut t = job_tui_with(
        "ptyswitch",
        "default_profile = \"main\"\n",
        &format!("[profiles.main]\n[profiles.other.trino]\nuser = {other:?}\n"),
    );
    // One partition: a plan of one statement.
    t.pty.send(b"\r");
    t.pty
        .wait_for("the partitions", Duration::from_secs(30), |s| {
            s.contains("Partitions: ptyswitch") && s.contains("district=")
        });
    let id = t.start_optimize_slowed(4000);
    t.pty.send(b":profile other\r");
    t.pty.wait_for("the switch", Duration::from_secs(10), |s| {
        s.contains("switched to profile other") || s.contains("floe other")
    });
    t.pty.wait_for(
        "the job's end, under its profile",
        Duration::from_secs(60),
        |s| s.contains("[profile main] ✓ optimize"),
    );
    let rt = lab_rt();
    let q = rt.block_on(lab().queries_of(&t.user));
    rt.block_on(lab().clear_faults(&t.user));
    let q = q.iter().find(|q| q["id"] == id.as_str()).unwrap();
    assert_eq!(q["state"], "FINISHED", "{q}");
    let audit = floe::mutation::audit::AuditLog::new(&t.audit).read_all();
    assert!(audit.len() >= 2, "{audit:?}");
    assert_eq!(audit[0].outcome, Outcome::Started);
    assert_eq!(audit[1].outcome, Outcome::Succeeded);
    assert_eq!(audit[1].query_id.as_deref(), Some(id.as_str()));
    assert!(
        audit
            .iter()
            .all(|r| r.profile == "main" && r.user == t.user)
    );
    // Nothing runs any more: q quits without asking.
    t.pty.send(b"q");
    assert!(t.pty.wait_exit(Duration::from_secs(10)).success());
    t.pty.assert_restored();
}
