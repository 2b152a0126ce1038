//! `floe --all` in a pseudo-terminal at 100x30 over the lab's two clusters at once — the
//! real Trino 476 with Airflow 3 (`lab`) and the lab's second cluster (the stand-in over a
//! copy of the seed's catalog, `labctl up` starts it) with Airflow 2 (`second`) —
//! beside a coordinator nothing listens on (`down`) and one that never answers (`silent`):
//! one Triage lists both clusters'
//! incidents tagged by profile, the header has each cluster's state, the dead one is its
//! own incident while the others are read, the Tables tab names the cluster in front, and
//! an optimize asked there is confirmed naming that cluster's Trino and Airflow first
//! (answered `n`: the lab's shared tables stay as they are).

use crate::common;
use crate::common::pty;

use std::time::Duration;

use common::lab;

/// A coordinator that takes connections and never answers: a cluster slow to the point of
/// silence. Its connections are held open until the test's process ends.
fn silent_coordinator() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for c in l.incoming().flatten() {
            held.push(c);
        }
    });
    port
}

fn config() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("floe-fleet-pty-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let af = |key: &str, field: &str| lab().airflow_field(key, field);
    let text = format!(
        r#"all = true
[trino]
user = "floe"
schemas = ["zoning"]
[profiles.lab.trino]
url = "{real}"
[profiles.lab.airflow]
url = "{af3}"
user = "{af3_user}"
password_env = "FLOE_TEST_AF3_PASSWORD"
[profiles.second.trino]
url = "{stand_in}"
[profiles.second.airflow]
url = "{af2}"
user = "{af2_user}"
password_env = "FLOE_TEST_AF2_PASSWORD"
[profiles.down.trino]
url = "http://127.0.0.1:{closed}"
[profiles.silent.trino]
url = "http://127.0.0.1:{silent}"
"#,
        silent = silent_coordinator(),
        real = lab().trino_url(),
        stand_in = lab().second_url(),
        af3 = af("airflow", "url"),
        af3_user = af("airflow", "user"),
        af2 = af("airflow2", "url"),
        af2_user = af("airflow2", "user"),
    );
    let p = dir.join("config.toml");
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn every_cluster_on_one_triage_and_an_optimize_confirmed_on_its_own_cluster() {
    let cfg = config();
    let af3_pw = lab().airflow_field("airflow", "password");
    let af2_pw = lab().airflow_field("airflow2", "password");
    let mut p = pty::Pty::spawn_env(
        &["--config", cfg.to_str().unwrap()],
        &[
            ("FLOE_TEST_AF3_PASSWORD", af3_pw.as_str()),
            ("FLOE_TEST_AF2_PASSWORD", af2_pw.as_str()),
        ],
        100,
        30,
    );
    let s = p.wait_for(
        "both clusters' incidents and the dead one on one Triage",
        Duration::from_secs(150),
        |s| {
            s.contains("[lab] ")
                && s.contains("[second] ")
                && s.contains("[down] Trino http://127.0.0.1:")
                && s.contains("down ✗ unreachable")
                && s.contains("lab ✓")
                && s.contains("second ✓")
                && s.contains("crit")
                // a cluster that never answers is still being read: it delays no other
                && s.contains("silent … reading")
        },
    );
    assert!(s.contains(" 0 Triage "), "{s}");
    eprintln!("the first screen:\n{s}");
    // Bring a `second` row to the front: the tab bar names the cluster in front.
    let mut front_second = false;
    for _ in 0..40 {
        if p.screen()
            .lines()
            .any(|l| l.contains("[second]") && l.contains(" 0 Triage "))
        {
            front_second = true;
            break;
        }
        p.send(b"j");
        std::thread::sleep(Duration::from_millis(150));
    }
    assert!(
        front_second,
        "no row of second came to the front:\n{}",
        p.screen()
    );
    // Its Tables tab: the second cluster's tables.
    p.send(b"1");
    p.wait_for("second's Tables tab", Duration::from_secs(30), |s| {
        s.lines()
            .any(|l| l.contains("[second]") && l.contains(" 1 Tables "))
            && s.contains("documents")
    });
    p.send(b"/documents\r");
    p.wait_for("the filter on documents", Duration::from_secs(10), |s| {
        s.contains("documents") && !s.contains("parcels")
    });
    p.send(b"o");
    let stand_in = lab().second_url();
    let af2 = lab().airflow_field("airflow2", "url");
    let s = p.wait_for(
        "the confirmation naming second's Trino and Airflow first",
        Duration::from_secs(90),
        |s| s.contains("on cluster second: Trino "),
    );
    eprintln!("the confirmation:\n{s}");
    let line = s
        .lines()
        .find(|l| l.contains("on cluster second: Trino "))
        .unwrap();
    assert!(
        line.contains(stand_in.trim_end_matches('/')),
        "the second cluster's URL: {line}\n{s}"
    );
    assert!(
        line.contains(&format!(", Airflow {}", af2.trim_end_matches('/'))),
        "second's Airflow: {line}\n{s}"
    );
    assert!(
        !s.contains(&lab().trino_url()),
        "the first cluster's Trino is not named: {s}"
    );
    // `n` answers no: nothing runs.
    p.send(b"n");
    p.wait_for("the confirmation closed", Duration::from_secs(10), |s| {
        !s.contains("on cluster second: Trino ")
    });
    p.send(b"q");
    let st = p.wait_exit(Duration::from_secs(20));
    assert!(st.success(), "{st:?}");
    p.assert_restored();
}

/// A second cluster of its own: the stand-in over a copy of the seed's catalog
/// (`lab.trino.second`), stopped by PID when dropped.
struct Second {
    child: std::process::Child,
    url: String,
}

impl Second {
    fn start(dir: &std::path::Path) -> Second {
        let seed = lab().v["scenario"]["path"].as_str().unwrap().to_string();
        let log = std::fs::File::create(dir.join("second.log")).unwrap();
        let child = std::process::Command::new(common::lab_python())
            .args(["-m", "lab.trino.second", "--from", &seed, "--dir"])
            .arg(dir)
            .env(
                "PYTHONPATH",
                std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests"),
            )
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start the second cluster");
        let state = dir.join("state.json");
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        let url = loop {
            if let Ok(t) = std::fs::read_to_string(&state)
                && let Ok(v) = serde_json::from_str::<serde_json::Value>(&t)
            {
                break v["listeners"]["plain"]["url"].as_str().unwrap().to_string();
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the second cluster did not listen: {}",
                std::fs::read_to_string(dir.join("second.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        };
        Second { child, url }
    }
}

impl Drop for Second {
    fn drop(&mut self) {
        // SAFETY: a plain kill(2) of the process this test started.
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        let _ = self.child.wait();
    }
}

async fn newest(c: &floe::trino::Client, t: &str) -> (i64, String) {
    let q = format!(
        "SELECT snapshot_id, operation FROM {t_snap} ORDER BY committed_at DESC LIMIT 1",
        t_snap = t.replace(".events", ".\"events$snapshots\"")
    );
    let out = c.query(&q).await.unwrap_or_else(|e| panic!("{q}: {e}"));
    (
        out.rows[0].i64("snapshot_id").unwrap(),
        out.rows[0].str("operation").unwrap().to_string(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn an_optimize_on_the_second_cluster_leaves_the_first_clusters_same_named_table_untouched() {
    // A table of 14 small files on the first cluster (the real Trino).
    let schema = format!("fleet_{}", std::process::id());
    let t = format!("iceberg.{schema}.events");
    let real = lab().client(&common::user("fleet_first"));
    real.query(&format!("CREATE SCHEMA IF NOT EXISTS iceberg.{schema}"))
        .await
        .unwrap();
    real.query(&format!("DROP TABLE IF EXISTS {t}"))
        .await
        .unwrap();
    real.query(&format!("CREATE TABLE {t} (id bigint, what varchar)"))
        .await
        .unwrap();
    for i in 0..14 {
        real.query(&format!("INSERT INTO {t} VALUES ({i}, 'event {i}')"))
            .await
            .unwrap();
    }
    let before = newest(&real, &t).await;

    // The second cluster: its own catalog, the same tables under the same names.
    let dir = std::env::temp_dir().join(format!("floe-fleet-second-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let second = Second::start(&dir);
    let other = floe::trino::Client::new(lab().config(&second.url, "floe")).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(90);
    while other
        .query(&format!("SELECT count(*) AS n FROM {t}"))
        .await
        .is_err()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the second cluster never answered"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert_eq!(
        newest(&other, &t).await,
        before,
        "both start from one snapshot"
    );

    let cfg = dir.join("config.toml");
    std::fs::write(
        &cfg,
        format!(
            "all = true\nconfirm_dwell = \"0s\"\n[trino]\nuser = \"floe\"\ntables = [\"{schema}.*\"]\n\
             [profiles.first.trino]\nurl = \"{}\"\n[profiles.second.trino]\nurl = \"{}\"\n",
            lab().trino_url(),
            second.url
        ),
    )
    .unwrap();
    let mut p = pty::Pty::spawn(&["--config", cfg.to_str().unwrap()], 100, 30);
    p.wait_for(
        "the table's incident on both clusters",
        Duration::from_secs(120),
        |s| s.contains("[first] ") && s.contains("[second] ") && s.contains("events"),
    );
    let mut on_second = false;
    for _ in 0..10 {
        if p.screen()
            .lines()
            .any(|l| l.contains("[second]") && l.contains(" 0 Triage "))
        {
            on_second = true;
            break;
        }
        p.send(b"j");
        std::thread::sleep(Duration::from_millis(150));
    }
    assert!(on_second, "second never came to the front:\n{}", p.screen());
    p.send(b"1");
    p.wait_for("second's Tables tab", Duration::from_secs(30), |s| {
        s.lines()
            .any(|l| l.contains("[second]") && l.contains(" 1 Tables "))
            && s.contains("events")
    });
    p.send(b"o");
    let s = p.wait_for("the confirmation on second", Duration::from_secs(60), |s| {
        s.contains("on cluster second: Trino ")
    });
    assert!(s.contains(&second.url), "{s}");
    assert!(!s.contains(&lab().trino_url()), "{s}");
    std::thread::sleep(Duration::from_millis(300));
    p.send(b"y");
    // The optimize lands on the second cluster: its newest snapshot is a replace.
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    let after_second = loop {
        let n = newest(&other, &t).await;
        if n.1 == "replace" {
            break n;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no optimize on the second cluster:\n{}",
            p.screen()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    assert_ne!(after_second.0, before.0);
    // The first cluster's same-named table: the same snapshot, the same 14 files.
    assert_eq!(
        newest(&real, &t).await,
        before,
        "the first cluster's table was touched"
    );
    let files = real
        .query(&format!(
            "SELECT count(*) AS n FROM iceberg.{schema}.\"events$files\""
        ))
        .await
        .unwrap();
    assert_eq!(files.rows[0].u64("n"), Some(14));
    p.send(b"q");
    let st = p.wait_exit(Duration::from_secs(30));
    assert!(st.success(), "{st:?}");
    drop(second);
    real.query(&format!("DROP TABLE {t}")).await.unwrap();
    real.query(&format!("DROP SCHEMA iceberg.{schema}"))
        .await
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
