//! `floe check --all` and profile groups, the real binary over two lab clusters at once:
//! the real Trino 476 with Airflow 3 (`lab`) and the Trino stand-in with Airflow 2
//! (`second`), beside a coordinator nothing listens on (`down`); and `floe report
//! --profile` picking one of them when the file reads every profile by default.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::lab;
use serde_json::Value;

fn home(name: &str) -> PathBuf {
    let h = std::env::temp_dir().join(format!("floe-check-all-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&h);
    std::fs::create_dir_all(&h).unwrap();
    h
}

/// A port nothing listens on (bound, then released).
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// The two lab clusters and a dead one, `lab`'s and `second`'s Airflow each its own.
fn config(home: &Path, head: &str) -> PathBuf {
    let af = |key: &str, field: &str| lab().airflow_field(key, field);
    let text = format!(
        r#"{head}
[trino]
user = "floe"
[profiles.lab.trino]
url = "{real}"
tables = ["zoning.*"]
[profiles.lab.airflow]
url = "{af3}"
user = "{af3_user}"
password_env = "FLOE_TEST_AF3_PASSWORD"
[profiles.second.trino]
url = "{stand_in}"
tables = ["zoning.*"]
[profiles.second.airflow]
url = "{af2}"
user = "{af2_user}"
password_env = "FLOE_TEST_AF2_PASSWORD"
[profiles.down.trino]
url = "http://127.0.0.1:{port}"
[profiles.parcels.trino]
url = "{real}"
tables = ["zoning.parcels"]
"#,
        real = lab().trino_url(),
        stand_in = lab().stand_in_url(),
        af3 = af("airflow", "url"),
        af3_user = af("airflow", "user"),
        af2 = af("airflow2", "url"),
        af2_user = af("airflow2", "user"),
        port = closed_port(),
    );
    let p = home.join("config.toml");
    std::fs::write(&p, text).unwrap();
    p
}

fn floe(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_floe"))
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_STATE_HOME", home.join("state"))
        .env("XDG_CACHE_HOME", home.join("cache"))
        .env("USER", "floe")
        .env(
            "FLOE_TEST_AF3_PASSWORD",
            lab().airflow_field("airflow", "password"),
        )
        .env(
            "FLOE_TEST_AF2_PASSWORD",
            lab().airflow_field("airflow2", "password"),
        )
        .output()
        .expect("run floe")
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn profile<'a>(j: &'a Value, name: &str) -> &'a Value {
    j["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["profile"] == name)
        .unwrap_or_else(|| panic!("profile {name} not in {j}"))
}

#[test]
fn check_all_exits_with_the_worst_cluster_and_labels_every_report_with_its_profile() {
    let h = home("all");
    let cfg = config(&h, "");
    let cfg = cfg.to_str().unwrap();

    let out = floe(&h, &["check", "--all", "--config", cfg, "--format", "json"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    let j: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(j["status"], "CRITICAL");
    assert_eq!(
        j["summary"],
        "CRITICAL: 4 clusters: down UNKNOWN, lab CRITICAL, parcels OK, second CRITICAL"
    );
    // The dead coordinator is UNKNOWN for itself only, naming where it failed.
    let down = profile(&j, "down");
    assert_eq!(down["status"], "UNKNOWN");
    let port = down["trino"]["url"].as_str().unwrap();
    assert!(
        down["error"]
            .as_str()
            .unwrap()
            .contains(port.trim_end_matches('/')),
        "{down}"
    );
    // Each cluster read through its own Trino and Airflow.
    let real = profile(&j, "lab");
    assert_eq!(real["trino"]["version"], "476");
    assert_eq!(real["airflow"]["api"], "v2");
    let second = profile(&j, "second");
    assert_eq!(second["trino"]["url"], format!("{}/", lab().stand_in_url()));
    assert_eq!(second["airflow"]["api"], "v1");
    for p in [real, second] {
        let docs = p["tables"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["table"] == "documents")
            .unwrap();
        assert_eq!(docs["status"], "CRITICAL", "{}", p["profile"]);
    }
    assert_eq!(profile(&j, "parcels")["status"], "OK");

    // Text: one block per cluster, the summary first.
    let out = floe(&h, &["check", "--all", "--config", cfg]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text.starts_with(
            "CRITICAL: 4 clusters: down UNKNOWN, lab CRITICAL, parcels OK, second CRITICAL\n"
        ),
        "{text}"
    );
    for p in ["down", "lab", "parcels", "second"] {
        assert_eq!(
            text.matches(&format!("== profile {p} ==\n")).count(),
            1,
            "{text}"
        );
    }

    // The textfile: one family each, every sample with its profile.
    let prom = h.join("floe.prom");
    let out = floe(
        &h,
        &[
            "check",
            "--all",
            "--config",
            cfg,
            "--format",
            "prometheus",
            "--output",
            prom.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stdout(&out).starts_with("CRITICAL: 4 clusters: "));
    let p = std::fs::read_to_string(&prom).unwrap();
    assert_eq!(
        p.matches("# TYPE floe_table_status gauge\n").count(),
        1,
        "{p}"
    );
    assert!(
        p.contains("floe_check_success{profile=\"down\"} 0\n"),
        "{p}"
    );
    assert!(p.contains("floe_check_success{profile=\"lab\"} 1\n"), "{p}");
    for cluster in ["lab", "second"] {
        assert!(
            p.contains(&format!(
                "floe_table_status{{profile=\"{cluster}\",catalog=\"iceberg\",schema=\"zoning\",table=\"documents\"}} 2\n"
            )),
            "{p}"
        );
    }
    assert!(
        p.contains("floe_dag_status{profile=\"second\",dag_id=\"compact_documents\"} 2\n"),
        "{p}"
    );
    for line in p.lines().filter(|l| !l.starts_with('#')) {
        assert!(
            line.contains("{profile=\""),
            "a sample without its profile: {line}"
        );
    }
}

#[test]
fn a_group_with_an_unreachable_cluster_beside_a_healthy_one_is_unknown() {
    let h = home("group");
    let cfg = config(&h, "groups = { calm = [\"parcels\", \"down\"] }");
    let out = floe(
        &h,
        &[
            "check",
            "--config",
            cfg.to_str().unwrap(),
            "--profile",
            "calm",
        ],
    );
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(3), "{text}");
    assert!(
        text.starts_with("UNKNOWN: 2 clusters: parcels OK, down UNKNOWN\n"),
        "{text}"
    );
    assert!(
        text.contains("== profile parcels ==\nOK: 1 tables: 0 critical"),
        "{text}"
    );
}

#[test]
fn report_takes_its_cluster_from_profile_when_the_file_reads_every_profile() {
    let h = home("report");
    let cfg = config(&h, "all = true");
    let cfg = cfg.to_str().unwrap();
    let out = floe(&h, &["report", "zoning.documents", "--config", cfg]);
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "floe report works on one cluster, and 4 profiles are selected (down, lab, parcels, second): name one with --profile"
        ),
        "{err}"
    );
    let out = floe(
        &h,
        &[
            "report",
            "zoning.documents",
            "--config",
            cfg,
            "--profile",
            "second",
            "--format",
            "json",
        ],
    );
    let text = stdout(&out);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains(&lab().stand_in_url()), "{text}");
    assert!(!text.contains(&lab().trino_url()), "{text}");
}

/// One profile's secret cannot be resolved (`password_env` names a variable that is not
/// set): that cluster is UNKNOWN for its own reason and the others are checked. The
/// `--output` textfile is rewritten whatever happens (atomically), so an earlier
/// `floe_check_success 1` never outlives a check that could not run.
#[test]
fn a_profile_whose_secret_is_missing_is_unknown_alone_and_the_textfile_is_always_rewritten() {
    let h = home("secret");
    let cfg = config(&h, "groups = { some = [\"parcels\", \"locked\"] }");
    let mut text = std::fs::read_to_string(&cfg).unwrap();
    text.push_str(&format!(
        "[profiles.locked.trino]\nurl = \"{}\"\nuser = \"alice\"\npassword_env = \"FLOE_TEST_UNSET_PASSWORD\"\n",
        lab().https_url()
    ));
    std::fs::write(&cfg, text).unwrap();
    let cfg = cfg.to_str().unwrap();
    let prom = h.join("floe.prom");
    let earlier = "# TYPE floe_check_success gauge\nfloe_check_success{profile=\"parcels\"} 1\nfloe_check_success{profile=\"locked\"} 1\n";
    std::fs::write(&prom, earlier).unwrap();
    let args = [
        "check",
        "--config",
        cfg,
        "--profile",
        "some",
        "--format",
        "prometheus",
        "--output",
        prom.to_str().unwrap(),
    ];
    let out = floe(&h, &args);
    let said = stdout(&out);
    assert_eq!(out.status.code(), Some(3), "{said}");
    assert!(
        said.starts_with("UNKNOWN: 2 clusters: parcels OK, locked UNKNOWN"),
        "{said}"
    );
    let p = std::fs::read_to_string(&prom).unwrap();
    assert!(
        p.contains("floe_check_success{profile=\"parcels\"} 1\n"),
        "{p}"
    );
    assert!(
        p.contains("floe_check_success{profile=\"locked\"} 0\n"),
        "{p}"
    );
    assert!(
        p.contains("floe_table_status{profile=\"parcels\",catalog=\"iceberg\",schema=\"zoning\",table=\"parcels\"} 0\n"),
        "{p}"
    );
    // Its own reason, in JSON.
    let out = floe(
        &h,
        &[
            "check",
            "--config",
            cfg,
            "--profile",
            "some",
            "--format",
            "json",
        ],
    );
    let j: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let locked = profile(&j, "locked");
    assert_eq!(locked["status"], "UNKNOWN");
    assert!(
        locked["error"]
            .as_str()
            .unwrap()
            .contains("environment variable FLOE_TEST_UNSET_PASSWORD is not set"),
        "{locked}"
    );
    assert_eq!(profile(&j, "parcels")["status"], "OK");

    // Nothing loads at all (the file does not parse): the textfile still says so.
    std::fs::write(&prom, earlier).unwrap();
    std::fs::write(h.join("broken.toml"), "[trino\n").unwrap();
    let broken = h.join("broken.toml");
    let out = floe(
        &h,
        &[
            "check",
            "--all",
            "--config",
            broken.to_str().unwrap(),
            "--format",
            "prometheus",
            "--output",
            prom.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(3), "{}", stdout(&out));
    assert!(stdout(&out).starts_with("UNKNOWN: "), "{}", stdout(&out));
    let p = std::fs::read_to_string(&prom).unwrap();
    assert!(!p.contains("} 1\n"), "{p}");
    assert!(p.contains("floe_check_success{profile=\"all\"} 0\n"), "{p}");
    let leftovers: Vec<_> = std::fs::read_dir(&h)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("floe.prom") && n != "floe.prom")
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}
