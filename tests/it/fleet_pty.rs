//! `floe --all` in a pseudo-terminal at 100x30 over the lab's two clusters at once — the
//! real Trino 476 with Airflow 3 (`lab`) and the Trino stand-in with Airflow 2 (`second`) —
//! beside a coordinator nothing listens on (`down`): one Triage lists both clusters'
//! incidents tagged by profile, the header has each cluster's state, the dead one is its
//! own incident while the others are read, the Tables tab names the cluster in front, and
//! an optimize asked there is confirmed naming that cluster's Trino and Airflow first
//! (answered `n`: the lab's shared tables stay as they are).

use crate::common;
use crate::common::pty;

use std::time::Duration;

use common::lab;

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
"#,
        real = lab().trino_url(),
        stand_in = lab().stand_in_url(),
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
    let stand_in = lab().stand_in_url();
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
        "the stand-in's URL: {line}\n{s}"
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
