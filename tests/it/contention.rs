//! Never two compactions on one table, on the real Trino 476: while another client (the
//! official `trino` Python client of the lab's venv, as a cron or a colleague's script
//! would) runs a long optimize of a table, floe's `o` (its draft's check) and `floe
//! maintain` refuse to plan one and say who runs it — query id, user, source, how long,
//! its progress — and a plan drafted before that write began is refused before its
//! statement is sent, audited `refused`. floe sends no optimize of its own meanwhile.

use crate::common;
use crate::real_optimize::{lakehouse, long_table};

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{lab, user};
use floe::lakehouse::plan::optimize_plan;
use floe::mutation::audit::{AuditLog, Outcome, RunContext};
use floe::mutation::contention::{Others, writers};
use floe::mutation::draft::{self, PlanError};
use floe::mutation::run::{RunError, run_plan};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// Another client's statement, run by the official `trino` Python client as `user` with
/// `source`; waited for (bounded) when dropped.
struct OtherClient(Child);

impl OtherClient {
    fn start(user: &str, source: &str, statement: &str) -> OtherClient {
        let url = url::Url::parse(&lab().trino_url()).unwrap();
        let script = "import sys, trino\n\
             host, port, user, source, sql = sys.argv[1:]\n\
             c = trino.dbapi.connect(host=host, port=int(port), user=user, source=source, catalog='iceberg')\n\
             cur = c.cursor()\n\
             cur.execute(sql)\n\
             print(cur.fetchall())\n";
        let child = Command::new(common::lab_python())
            .args(["-c", script, url.host_str().unwrap()])
            .arg(url.port().unwrap().to_string())
            .args([user, source, statement])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the lab's python with the trino client");
        OtherClient(child)
    }
}

impl Drop for OtherClient {
    fn drop(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(300);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `u`'s statement as the real coordinator lists it, once it is RUNNING there.
async fn running(u: &str) -> Value {
    let start = Instant::now();
    loop {
        if let Some(q) = lab()
            .real_queries_of(u)
            .await
            .into_iter()
            .find(|q| q["state"] == "RUNNING")
        {
            return q;
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "the other client's optimize never ran: {:?}",
            lab().real_queries_of(u).await
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn ctx(name: &str, u: &str) -> RunContext {
    let path = std::env::temp_dir().join(format!(
        "floe-audit-contention-{name}-{}.jsonl",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&path);
    RunContext {
        profile: "lab".into(),
        user: u.into(),
        target: lab().trino_url(),
        readonly: false,
        audit: AuditLog::new(path),
    }
}

/// `floe maintain optimize TABLE --yes` as `u`, its audit log in `home`.
fn maintain(u: &str, table: &str, home: &std::path::Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_floe"))
        .args([
            "--trino",
            &lab().trino_url(),
            "--user",
            u,
            "--catalog",
            "iceberg",
        ])
        .args(["maintain", "optimize", table, "--yes"])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_STATE_HOME", home.join("state"))
        .env("USER", "floe")
        .output()
        .expect("run floe")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_running_on_the_table_refuses_o_and_floe_maintain_and_says_who_runs_it() {
    let owner = lakehouse("floe");
    let t = long_table(&owner, "contended", 3000, false).await;
    let other = user("cron");
    let floe_user = user("contended");
    let lake = lakehouse(&floe_user);
    // The plan on screen before the other write began.
    let before = optimize_plan(&t, &Default::default(), &[], 96 << 20, false).unwrap();
    assert!(
        draft::unwritten(&lake, &Others::default(), &t)
            .await
            .unwrap()
            .is_empty(),
        "nobody writes the table yet"
    );

    let started = Instant::now();
    let _cron = OtherClient::start(
        &other,
        "nightly-compaction",
        &format!("ALTER TABLE {} EXECUTE optimize", t.sql()),
    );
    let q = running(&other).await;
    let id = q["id"].as_str().unwrap().to_string();

    // `o`: the draft's check refuses, naming who runs it.
    let e = draft::unwritten(&lake, &Others::default(), &t)
        .await
        .unwrap_err();
    assert!(matches!(e, PlanError::Contended(_)), "{e:?}");
    let said = e.to_string();
    for part in [
        format!(
            "{t} is being written by query {id} by {other} (source nightly-compaction), RUNNING for "
        ),
        format!("ALTER TABLE {} EXECUTE optimize", t.sql()),
        "nothing was sent".to_string(),
    ] {
        assert!(said.contains(&part), "{part:?} in {said}");
    }

    // What Triage says of it: who, and Trino's own progress once the optimize is scheduled.
    let deadline = Instant::now() + Duration::from_secs(20);
    let w = loop {
        let w = writers(&lake, &Others::default(), &t).await.unwrap();
        if w.statements.iter().any(|s| s.progress.is_some()) || Instant::now() > deadline {
            break w;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    assert_eq!(w.statements.len(), 1, "{w:?}");
    let s = &w.statements[0];
    assert_eq!(
        (s.query_id.as_str(), s.user.as_str(), s.source.as_deref()),
        (id.as_str(), other.as_str(), Some("nightly-compaction"))
    );
    assert!(s.elapsed_ms.is_some() && s.progress.is_some(), "{s:?}");
    assert_eq!(
        w.short(),
        format!("query {id} by {other}, {} %", s.progress.unwrap())
    );

    // `floe maintain optimize … --yes`: nothing planned, nothing sent.
    let home = std::env::temp_dir().join(format!("floe-contention-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    let cli_user = user("maintain");
    let table = t.to_string();
    let h = home.clone();
    let u = cli_user.clone();
    let out = tokio::task::spawn_blocking(move || maintain(&u, &table, &h))
        .await
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("is being written by query {id} by {other}")),
        "{err}"
    );

    // A plan drafted before the write began: refused before its statement is sent.
    let c = ctx("before", &floe_user);
    let refused = run_plan(&lake, &before, &c, CancellationToken::new(), &|_| {})
        .await
        .unwrap_err();
    assert!(matches!(refused, RunError::Contended(_)), "{refused:?}");
    assert!(refused.to_string().contains(&id), "{refused}");
    let audit = c.audit.read_all();
    assert_eq!(
        audit.iter().map(|r| r.outcome.clone()).collect::<Vec<_>>(),
        vec![Outcome::Refused],
        "{audit:?}"
    );
    assert!(audit[0].error.as_deref().unwrap().contains(&id));

    // The other write still ran: the race was there to be refused.
    let still = lab()
        .real_queries_of(&other)
        .await
        .into_iter()
        .find(|q| q["id"] == id.as_str())
        .unwrap();
    assert_eq!(
        still["state"],
        "RUNNING",
        "the other optimize ended ({:?} after it began): the table was too small to race",
        started.elapsed()
    );
    // floe sent no optimize of its own.
    for u in [&floe_user, &cli_user] {
        let sent: Vec<Value> = lab()
            .real_queries_of(u)
            .await
            .into_iter()
            .filter(|q| q["sql"].as_str().unwrap_or("").contains("EXECUTE optimize"))
            .collect();
        assert!(sent.is_empty(), "{u}: {sent:?}");
    }
    assert!(
        !std::fs::read_to_string(home.join("state/floe/audit.jsonl"))
            .unwrap_or_default()
            .contains("\"started\""),
        "floe maintain started nothing"
    );
}
