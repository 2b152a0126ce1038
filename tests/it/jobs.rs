//! The TUI's runtime running maintenance jobs against the lab: a job keeps the connection
//! it started on across a profile switch, and leaving cancels it on Trino (the DELETE
//! sent and answered before the runtime is gone) with its outcome audited. The jobs must
//! stay RUNNING while the test acts, which the stand-in's `slow` fault does on demand (a
//! real optimize of a lab table ends in seconds), so these run on the stand-in.

use crate::common;

use std::path::PathBuf;
use std::time::Duration;

use common::{lab, user};
use floe::app::action::{Action, Effect};
use floe::app::maintenance::MaintenanceMsg;
use floe::config::{self, Overrides};
use floe::lakehouse::model::TableRef;
use floe::lakehouse::plan::{Plan, Procedure, table_plan};
use floe::mutation::audit::AuditLog;
use floe::mutation::run::StepEvent;
use floe::runtime::Runtime;
use serde_json::json;
use tokio::sync::mpsc;

async fn clone(source: &str, name: &str) -> TableRef {
    let table = format!("{name}_{}", std::process::id());
    lab().clone_table(source, &format!("scratch.{table}")).await;
    TableRef::new("iceberg", "scratch", table)
}

/// A config with two profiles on the lab, `a` (user `ua`, the default) and `b` (`ub`).
fn two_profiles(name: &str, ua: &str, ub: &str) -> (Overrides, PathBuf) {
    let dir = std::env::temp_dir().join(format!("floe-jobs-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let audit = dir.join("audit.jsonl");
    let text = format!(
        "default_profile = \"a\"\naudit_log = {audit:?}\n[trino]\nurl = {url:?}\ncatalog = \"iceberg\"\nschemas = [\"scratch\"]\n[profiles.a.trino]\nuser = {ua:?}\n[profiles.b.trino]\nuser = {ub:?}\n",
        audit = audit.display().to_string(),
        url = lab().stand_in_url(),
    );
    let path = dir.join("config.toml");
    std::fs::write(&path, text).unwrap();
    (
        Overrides {
            config: Some(path),
            ..Default::default()
        },
        audit,
    )
}

fn optimize(t: &TableRef) -> Plan {
    table_plan(
        t,
        Procedure::Optimize {
            threshold: 96 << 20,
        },
    )
}

/// The next maintenance message about job `job`, skipping everything else.
async fn next_of(rx: &mut mpsc::UnboundedReceiver<Action>, job: u64) -> MaintenanceMsg {
    loop {
        let a = tokio::time::timeout(Duration::from_secs(60), rx.recv())
            .await
            .expect("the job reports within a minute")
            .expect("the runtime is alive");
        if let Action::Maintenance(m) = a {
            match &m {
                MaintenanceMsg::Step { job: j, .. } | MaintenanceMsg::Done { job: j, .. }
                    if *j == job =>
                {
                    return m;
                }
                _ => {}
            }
        }
    }
}

/// Wait until the job's statement is running on Trino (its query id known).
async fn wait_running(rx: &mut mpsc::UnboundedReceiver<Action>, job: u64) -> String {
    loop {
        match next_of(rx, job).await {
            MaintenanceMsg::Step {
                event: StepEvent::Progress { progress, .. },
                ..
            } => return progress.query_id,
            MaintenanceMsg::Done { result, .. } => panic!("ended before running: {result:?}"),
            _ => {}
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_survives_a_profile_switch_and_audits_under_its_own_profile() {
    let t = clone("zoning.permits", "jobswitch").await;
    let (ua, ub) = (user("jswitch_a"), user("jswitch_b"));
    lab()
        .faults(
            &ua,
            json!([{"kind": "slow", "ms": 3000, "sql": "EXECUTE optimize"}]),
        )
        .await;
    let (over, audit) = two_profiles("switch", &ua, &ub);
    let settings = config::load(&over).unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut rt = Runtime::new(settings, over, tx).unwrap();
    let mut loaded = rt.take_loaded_profiles();
    rt.run(vec![Effect::RunPlan {
        job: 1,
        plan: optimize(&t),
    }]);
    let query_id = wait_running(&mut rx, 1).await;
    rt.run(vec![Effect::SwitchProfile("b".into())]);
    // The profile is read off the event loop; the loop would hand it back like this.
    let switched = rt.finish_switch(loaded.recv().await.unwrap());
    assert!(matches!(
        switched,
        Action::Connection(floe::app::connection::ConnectionMsg::ProfileSwitched(Ok(_)))
    ));
    let done = loop {
        if let MaintenanceMsg::Done { result, .. } = next_of(&mut rx, 1).await {
            break result;
        }
    };
    lab().clear_faults(&ua).await;
    assert_eq!(done, Ok(()), "the job ran to its end after the switch");
    let q = lab().queries_of(&ua).await;
    let ours = q.iter().find(|q| q["id"] == query_id.as_str()).unwrap();
    assert_eq!(ours["state"], "FINISHED", "{ours}");
    let records = AuditLog::new(&audit).read_all();
    let outcomes: Vec<(&str, &str, &str)> = records
        .iter()
        .map(|r| (r.outcome.as_str(), r.profile.as_str(), r.user.as_str()))
        .collect();
    assert_eq!(
        outcomes,
        vec![
            ("started", "a", ua.as_str()),
            ("succeeded", "a", ua.as_str())
        ]
    );
    assert_eq!(records[1].query_id.as_deref(), Some(query_id.as_str()));
    assert!(rt.shutdown(Duration::from_secs(1)).await == 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leaving_interrupts_running_jobs_on_trino_and_audits_them() {
    let t = clone("zoning.permits", "jobquit").await;
    let (ua, ub) = (user("jquit_a"), user("jquit_b"));
    lab()
        .faults(
            &ua,
            json!([{"kind": "slow", "ms": 30000, "sql": "EXECUTE optimize"}]),
        )
        .await;
    let (over, audit) = two_profiles("quit", &ua, &ub);
    let settings = config::load(&over).unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut rt = Runtime::new(settings, over, tx).unwrap();
    rt.run(vec![Effect::RunPlan {
        job: 7,
        plan: optimize(&t),
    }]);
    let query_id = wait_running(&mut rx, 7).await;
    // What update() answers to SIGTERM with a job running.
    rt.run(vec![Effect::StopJobs { interrupted: true }, Effect::Quit]);
    let started = std::time::Instant::now();
    assert_eq!(rt.shutdown(Duration::from_secs(10)).await, 0);
    assert!(started.elapsed() < Duration::from_secs(10));
    drop(rt);
    lab().clear_faults(&ua).await;
    // Nothing waited for after the runtime returned: the cancel already reached Trino.
    let q = lab().queries_of(&ua).await;
    let ours = q.iter().find(|q| q["id"] == query_id.as_str()).unwrap();
    assert_eq!(ours["error_name"], "USER_CANCELED", "{ours}");
    assert_eq!(ours["delete_received"], true, "{ours}");
    let records = AuditLog::new(&audit).read_all();
    let outcomes: Vec<&str> = records.iter().map(|r| r.outcome.as_str()).collect();
    assert_eq!(outcomes, vec!["started", "interrupted"]);
    assert_eq!(records[1].query_id.as_deref(), Some(query_id.as_str()));
    assert_eq!(records[0].statement, optimize(&t).steps[0].sql);
}
