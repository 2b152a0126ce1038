use super::*;

#[test]
fn appends_json_lines_and_reads_them_back() {
    let dir = std::env::temp_dir().join(format!("floe-audit-{}", std::process::id()));
    let log = AuditLog::new(dir.join("sub/audit.jsonl"));
    let mut r = Record::now(
        "lab",
        "floe",
        "http://127.0.0.1:1/",
        Action::Optimize,
        "ALTER TABLE \"t\" EXECUTE optimize",
    );
    r.outcome = Outcome::Succeeded;
    r.metrics.insert("rewritten_data_files_count".into(), 24);
    log.append(&r).unwrap();
    r.outcome = Outcome::Failed;
    log.append(&r).unwrap();
    let back = log.read();
    assert_eq!(back.len(), 2);
    assert_eq!(back[0].outcome, Outcome::Succeeded);
    assert_eq!(back[0].metrics["rewritten_data_files_count"], 24);
    assert_eq!(back[1].statement, r.statement);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(log.path()).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The log's spelling of every action and outcome, written and read back: the file
/// format other tools read.
/// Each value written as the log spells it, and read back from that spelling.
fn spelled_as<T: Serialize + PartialEq + std::fmt::Debug>(
    pairs: &[(T, &str)],
    parse: fn(&str) -> T,
) {
    for (value, text) in pairs {
        assert_eq!(serde_json::to_value(value).unwrap(), *text);
        assert_eq!(&parse(text), value);
    }
}

#[test]
fn actions_and_outcomes_are_spelled_as_the_log_has_them() {
    let outcomes = [
        (Outcome::Started, "started"),
        (Outcome::Succeeded, "succeeded"),
        (Outcome::Failed, "failed"),
        (Outcome::Cancelled, "cancelled"),
        (Outcome::Interrupted, "interrupted"),
        (Outcome::MayHaveRun, "may_have_run"),
        (Outcome::WroteOtherwise, "wrote_otherwise"),
        (Outcome::NotRun, "not_run"),
        (Outcome::Refused, "refused"),
        (Outcome::Passed, "passed"),
        (Outcome::NotAllowed, "not_allowed"),
        (Outcome::NoVerdict, "no_verdict"),
        (Outcome::Error, "error"),
    ];
    spelled_as(&outcomes, Outcome::parse);
    let actions = [
        (Action::Optimize, "optimize"),
        (Action::ExpireSnapshots, "expire_snapshots"),
        (Action::RemoveOrphanFiles, "remove_orphan_files"),
        (Action::OptimizeManifests, "optimize_manifests"),
        (Action::TriggerDag, "trigger_dag"),
        (Action::ClearDagRun, "clear_dag_run"),
        (Action::PauseDag, "pause_dag"),
        (Action::UnpauseDag, "unpause_dag"),
        (Action::FixConnection, "fix_connection"),
        (Action::TestConnection, "test_connection"),
    ];
    spelled_as(&actions, Action::parse);
    // What another floe wrote is kept as it reads.
    assert_eq!(Outcome::parse("skipped"), Outcome::Other("skipped".into()));
    assert_eq!(Action::parse("rollback").as_str(), "rollback");
    let r = Record::now("lab", "floe", "h", Action::TriggerDag, "trigger d");
    let v = serde_json::to_value(&r).unwrap();
    assert_eq!(
        (&v["action"], &v["outcome"]),
        (&"trigger_dag".into(), &"started".into())
    );
}

#[test]
fn started_records_are_kept_apart_from_outcomes() {
    let dir = std::env::temp_dir().join(format!("floe-audit-started-{}", std::process::id()));
    let log = AuditLog::new(dir.join("audit.jsonl"));
    let mut r = Record::now("lab", "floe", "http://h/", Action::Optimize, "ALTER …");
    r.outcome = Outcome::Started;
    log.append(&r).unwrap();
    r.outcome = Outcome::Interrupted;
    r.query_id = Some("q1".into());
    log.append(&r).unwrap();
    assert_eq!(log.read_all().len(), 2);
    let outcomes = log.read();
    assert_eq!(outcomes.len(), 1);
    assert_eq!(outcomes[0].outcome, Outcome::Interrupted);
    assert_eq!(outcomes[0].query_id.as_deref(), Some("q1"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Two writers (threads here; `tests/it/audit_append.rs` uses two processes) appending
/// many long records: every line is a whole record.
#[test]
fn concurrent_appends_never_interleave_a_line() {
    let dir = std::env::temp_dir().join(format!("floe-audit-race-{}", std::process::id()));
    let log = AuditLog::new(dir.join("audit.jsonl"));
    let big = "x".repeat(6000);
    std::thread::scope(|sc| {
        for w in 0..4 {
            let (log, big) = (log.clone(), big.clone());
            sc.spawn(move || {
                for i in 0..200 {
                    let mut r = Record::now("lab", "floe", "h", Action::Optimize, &big);
                    r.outcome = Outcome::Other(format!("w{w}-{i}"));
                    log.append(&r).unwrap();
                }
            });
        }
    });
    let text = std::fs::read_to_string(log.path()).unwrap();
    assert_eq!(text.lines().count(), 800);
    for l in text.lines() {
        let v: serde_json::Value = serde_json::from_str(l).expect("a whole record");
        assert_eq!(v["statement"].as_str().unwrap().len(), 6000);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn an_airflow_write_is_not_sent_when_its_started_record_cannot_be_written() {
    let dir = std::env::temp_dir().join(format!("floe-audit-ro-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // A directory where the file should be: every append fails.
    std::fs::create_dir_all(dir.join("audit.jsonl")).unwrap();
    let ctx = super::super::audit::RunContext {
        profile: "lab".into(),
        user: "floe".into(),
        target: "h".into(),
        readonly: false,
        audit: AuditLog::new(dir.join("audit.jsonl")),
    };
    let sent = std::sync::atomic::AtomicBool::new(false);
    let r = audited(&ctx, "u", "h", Action::TriggerDag, "trigger d", async {
        sent.store(true, std::sync::atomic::Ordering::SeqCst);
        Ok::<_, WriteFailure>("triggered".to_string())
    })
    .await;
    assert!(!sent.load(std::sync::atomic::Ordering::SeqCst));
    let e = r.unwrap_err();
    assert!(matches!(e, WriteError::NotSent(_)), "{e:?}");
    assert!(e.to_string().contains("audit log"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn a_write_that_may_have_run_is_audited_so_never_as_failed() {
    let dir = std::env::temp_dir().join(format!("floe-audit-mhr-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let ctx = super::super::audit::RunContext {
        profile: "lab".into(),
        user: "floe".into(),
        target: "h".into(),
        readonly: false,
        audit: AuditLog::new(dir.join("audit.jsonl")),
    };
    let gateway = AirflowError::MayHaveRun {
        method: "POST".into(),
        url: "http://h/api/v2/dags/d/dagRuns".into(),
        message: "HTTP 504".into(),
    };
    let sent = gateway.clone();
    let r = audited(&ctx, "u", "h", Action::TriggerDag, "trigger d", async {
        Err(write_failure(sent))
    })
    .await;
    assert_eq!(
        r.unwrap_err(),
        WriteError::Failed(WriteFailure::MayHaveRun(gateway.clone()))
    );
    let back = ctx.audit.read();
    assert_eq!(back.len(), 1);
    assert_eq!(back[0].outcome, Outcome::MayHaveRun);
    assert_eq!(back[0].error, Some(gateway.to_string()));
    std::fs::remove_dir_all(&dir).unwrap();
}
