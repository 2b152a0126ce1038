//! The real Trino as production runs it: HTTPS with its own CA and Trino's password file
//! authenticator (`trino.https_url` in lab.json, the primary's as `trino_tls`). floe, `floe
//! doctor` and `floe check` read it as they read the plain listener, and the DAG story runs
//! over it: the lab's `compact_parcels` reaches it through the Airflow connection
//! `trino_tls` (login, password, `https`, the CA), on Airflow 3 and 2.

use crate::common;
use crate::common::pty;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::lab;
use serde_json::Value;

fn home(name: &str) -> PathBuf {
    let h = std::env::temp_dir().join(format!(
        "floe-tls-{name}-{}-{}",
        lab().trino_version(),
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&h);
    std::fs::create_dir_all(&h).unwrap();
    h
}

/// A config of the lab's real Trino over TLS (password from `$LAB_TRINO_PASSWORD`), with
/// the Airflow of `airflow` (`airflow` or `airflow2`) when given.
fn tls_config(h: &Path, airflow: Option<&str>) -> PathBuf {
    let (url, ca, user, _) = lab().trino_tls();
    let mut text = format!(
        "audit_log = {:?}\n[trino]\nurl = {url:?}\nuser = {user:?}\npassword_env = \"LAB_TRINO_PASSWORD\"\n\
         ca_file = {:?}\ncatalog = \"iceberg\"\nschemas = [\"zoning\"]\n",
        h.join("state/audit.jsonl").display().to_string(),
        ca.display().to_string(),
    );
    if let Some(key) = airflow {
        let a = &lab().v[key];
        text.push_str(&format!(
            "[airflow]\nurl = {:?}\nuser = {:?}\npassword_env = \"LAB_AIRFLOW_PASSWORD\"\n",
            a["url"].as_str().unwrap(),
            a["user"].as_str().unwrap(),
        ));
    }
    let path = h.join("config.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn floe(h: &Path, config: &Path, password: &str, args: &[&str]) -> (Option<i32>, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_floe"))
        .arg("--config")
        .arg(config)
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", h)
        .env("XDG_STATE_HOME", h.join("state"))
        .env("XDG_CACHE_HOME", h.join("cache"))
        .env("TERM", "xterm-256color")
        .env("LAB_TRINO_PASSWORD", password)
        .env(
            "LAB_AIRFLOW_PASSWORD",
            lab().v["airflow"]["password"].as_str().unwrap(),
        )
        .output()
        .unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).to_string(),
        String::from_utf8_lossy(&o.stderr).to_string(),
    )
}

fn line<'a>(out: &'a str, prefix: &str) -> &'a str {
    out.lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line starting {prefix:?} in\n{out}"))
}

#[test]
fn doctor_passes_over_tls_with_a_password_and_names_a_refused_one() {
    let h = home("doctor");
    let config = tls_config(&h, Some("airflow"));
    let (_, ca, user, password) = lab().trino_tls();
    let (code, out, err) = floe(&h, &config, &password, &["doctor"]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(line(&out, "✓ trino TLS").contains(&format!("CA file {}", ca.display())));
    let info = line(&out, "✓ trino /v1/info");
    assert!(
        info.contains(&format!("Trino {}", lab().trino_version())),
        "{info}"
    );
    assert!(
        line(&out, "✓ trino auth").contains(&format!("SELECT 1 as {user} (basic auth)")),
        "{out}"
    );
    line(&out, "✓ health statement");
    assert!(out.trim_end().ends_with("all checks passed"), "{out}");

    let (code, out, err) = floe(&h, &config, "not-the-password", &["doctor"]);
    assert_eq!(code, Some(1), "{out}{err}");
    line(&out, "✓ trino TLS");
    let auth = line(&out, "✗ trino auth");
    assert!(
        auth.contains("401") || auth.to_lowercase().contains("invalid credentials"),
        "{auth}"
    );
    let _ = std::fs::remove_dir_all(&h);
}

/// The same verdicts over TLS as over the plain listener: same exit code, same statuses.
#[test]
fn check_over_tls_says_what_check_over_http_says() {
    let h = home("check");
    let config = tls_config(&h, None);
    let (_, _, _, password) = lab().trino_tls();
    let (code, out, err) = floe(&h, &config, &password, &["check", "--format", "json"]);
    let plain = Command::new(env!("CARGO_BIN_EXE_floe"))
        .args(["check", "--format", "json", "--trino", &lab().trino_url()])
        .args([
            "--user",
            "floe",
            "--catalog",
            "iceberg",
            "--schema",
            "zoning",
        ])
        .env("XDG_STATE_HOME", h.join("plain-state"))
        .env("XDG_CACHE_HOME", h.join("plain-cache"))
        .env("XDG_CONFIG_HOME", h.join("plain-config"))
        .output()
        .unwrap();
    assert_eq!(code, plain.status.code(), "{out}{err}");
    assert_eq!(code, Some(2), "the seed's documents are CRITICAL: {err}");
    let statuses = |text: &str| -> Vec<(String, String)> {
        let v: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"));
        let mut rows: Vec<(String, String)> = v["tables"]
            .as_array()
            .unwrap_or_else(|| panic!("no tables in {v}"))
            .iter()
            .map(|t| {
                (
                    t["table"].as_str().unwrap().to_string(),
                    t["status"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect();
        rows.sort();
        rows
    };
    let tls = statuses(&out);
    assert!(
        tls.contains(&("documents".into(), "CRITICAL".into())),
        "{tls:?}"
    );
    assert_eq!(tls, statuses(&String::from_utf8_lossy(&plain.stdout)));
    let _ = std::fs::remove_dir_all(&h);
}

/// floe over TLS with a password, and the DAG story over it: `compact_parcels` (its
/// connection `trino_tls`: HTTPS, login and password) ran its history on this Trino and
/// succeeds; the seed incident is on Triage as over HTTP.
#[test]
fn the_tui_reads_the_coordinator_over_tls_and_its_dags_reach_it_too() {
    let (url, ca, user, password) = lab().trino_tls();
    let a = &lab().v["airflow"];
    let af = a["url"].as_str().unwrap().to_string();
    let af_user = a["user"].as_str().unwrap().to_string();
    let af_pw = a["password"].as_str().unwrap().to_string();
    let ca = ca.display().to_string();
    let mut p = pty::Pty::spawn_env(
        &[
            "--trino",
            &url,
            "--user",
            &user,
            "--ca-file",
            &ca,
            "--airflow",
            &af,
            "--airflow-user",
            &af_user,
            "--schema",
            "zoning",
        ],
        &[
            ("FLOE_TRINO_PASSWORD", password.as_str()),
            ("FLOE_AIRFLOW_PASSWORD", af_pw.as_str()),
            ("NO_COLOR", "1"),
        ],
        160,
        40,
    );
    let s = p.wait_for("the tables over TLS", Duration::from_secs(90), |s| {
        s.contains("zoning.documents") && s.contains(&format!("v{}", lab().trino_version()))
    });
    assert!(
        s.contains(&url),
        "the header names the HTTPS coordinator:\n{s}"
    );
    p.send(b"4");
    p.wait_for(
        "compact_parcels succeeding over trino_tls",
        Duration::from_secs(60),
        |s| {
            s.lines()
                .any(|l| l.starts_with("OK") && l.contains("compact_parcels"))
                && s.lines()
                    .any(|l| l.starts_with("CRIT") && l.contains("compact_documents"))
        },
    );
    p.send(b"q");
    assert!(p.wait_exit(Duration::from_secs(10)).success());
    p.assert_restored();
}
