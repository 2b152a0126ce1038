//! From the first screen to the fix, the real binary in a pseudo-terminal against the
//! lab's real Trino and Airflow 3: the Triage incident says what the dashboard query
//! suffered (the coordinator's own record), `i` lists the queries that read the table,
//! `F` proposes pointing the incident's connection at the coordinator floe reads and
//! shows the change as a diff — answered `n` here, so the lab's shared connection is left
//! as it is (the write itself is tested on a connection of its own in connection_fix.rs).

use crate::common;
use crate::common::pty;

use std::time::{Duration, Instant};

use common::{lab, user};
use floe::trino::Client;

#[tokio::test(flavor = "multi_thread")]
async fn the_slow_query_and_the_connection_fix_on_the_first_screen() {
    // A dashboard's query on the incident's table, in the coordinator's history.
    let mut cfg = lab().config(&lab().trino_url(), &user("loop_dashboard"));
    cfg.source = "dashboard".into();
    let dash = Client::new(cfg).unwrap();
    dash.query("SELECT district, count(*) FROM iceberg.zoning.documents GROUP BY district")
        .await
        .unwrap();

    let url = lab().trino_url();
    let trino = url::Url::parse(&url).unwrap();
    let a = &lab().v["airflow"];
    let af = a["url"].as_str().unwrap().to_string();
    let af_user = a["user"].as_str().unwrap().to_string();
    let pw = a["password"].as_str().unwrap().to_string();
    let started = Instant::now();
    let mut pty = pty::Pty::spawn_env(
        &[
            "--trino",
            &url,
            "--user",
            "floe",
            "--airflow",
            &af,
            "--airflow-user",
            &af_user,
            "--schema",
            "zoning",
        ],
        &[("FLOE_AIRFLOW_PASSWORD", pw.as_str()), ("NO_COLOR", "1")],
        160,
        48,
    );
    let mut keys = 0;
    pty.wait_for("the Tables tab", Duration::from_secs(60), |s| {
        s.contains(" 0 Triage ") && s.contains("zoning.documents")
    });
    pty.send(b"0");
    keys += 1;
    pty.wait_for(
        "the incident with what the dashboard query suffered",
        Duration::from_secs(90),
        |s| {
            s.contains("DAG compact_documents failing")
                // The slowest query that read the table: ours, or another's run meanwhile.
                && s.contains(" query on documents took ")
                && s.contains("F fix Airflow connection trino_documents")
        },
    );
    pty.send(b"i");
    keys += 1;
    pty.wait_for(
        "the queries in the breakdown",
        Duration::from_secs(30),
        |s| {
            s.contains("health breakdown")
                && s.lines()
                    .any(|l| l.contains("queries: ") && l.contains(" query on documents took "))
        },
    );
    pty.send(b"\x1b");
    keys += 1;
    pty.wait_for("the breakdown closed", Duration::from_secs(10), |s| {
        !s.contains("health breakdown")
    });
    pty.send(b"F");
    keys += 1;
    let target = format!("{}:{}", trino.host_str().unwrap(), trino.port().unwrap());
    // floe reached the lab's Trino at 127.0.0.1, this machine's own address: to Airflow's
    // workers that means their own machine, so it is not offered; the status line says
    // which connection works, and the operator types where this one should point.
    pty.wait_for("the prompt, empty", Duration::from_secs(10), |s| {
        s.contains(
            "point Airflow connection trino_documents at (host:port or trino:// URI): █  type where the workers reach Trino",
        ) && s.contains(" passes its test")
    });
    pty.send(target.as_bytes());
    pty.send(b"\r");
    keys += 1;
    let s = pty.wait_for("the change as a diff", Duration::from_secs(30), |s| {
        s.contains("confirm fix_connection")
            && s.contains("- host: trino-old.internal")
            && s.contains(&format!("+ host: {}", trino.host_str().unwrap()))
    });
    assert!(
        s.contains(&format!("+ port: {}", trino.port().unwrap())),
        "{s}"
    );
    assert!(
        s.contains("PATCH /api/v2/connections/trino_documents?update_mask=host&update_mask=port"),
        "{s}"
    );
    assert!(s.contains("the password, login, schema and extra are not read, sent or changed"));
    pty.answer(b"n");
    keys += 1;
    pty.wait_for("nothing sent", Duration::from_secs(10), |s| {
        s.contains("cancelled: nothing was sent to Airflow")
    });
    eprintln!(
        "first screen to the diff: {keys} keys and the address typed, {:.1}s",
        started.elapsed().as_secs_f64()
    );
    pty.send(b"q");
    assert!(pty.wait_exit(Duration::from_secs(10)).success());
    pty.assert_restored();
}
