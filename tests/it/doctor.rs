//! `floe doctor`, the real binary, against the lab: every check passing, and the failures
//! an operator meets first (a dead port, the wrong CA, a refused password) named with
//! their fix.

use crate::common;

use std::path::PathBuf;
use std::process::{Command, Output};

use common::lab;

struct Run {
    code: Option<i32>,
    out: String,
}

fn home(name: &str) -> PathBuf {
    let h = std::env::temp_dir().join(format!("floe-doctor-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&h);
    std::fs::create_dir_all(&h).unwrap();
    h
}

/// `floe --config <config> doctor` with a clean environment (no tmux, a 256-colour TERM).
fn doctor(name: &str, config: &str, env: &[(&str, &str)]) -> Run {
    doctor_in(&home(name), config, env)
}

/// [`doctor`] with `h` as its home.
fn doctor_in(h: &std::path::Path, config: &str, env: &[(&str, &str)]) -> Run {
    let path = h.join("config.toml");
    std::fs::write(
        &path,
        format!(
            "audit_log = {:?}\n{config}",
            h.join("state/audit.jsonl").display().to_string()
        ),
    )
    .unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_floe"));
    cmd.arg("--config")
        .arg(&path)
        .arg("doctor")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", h)
        .env("XDG_CONFIG_HOME", h.join("config"))
        .env("XDG_STATE_HOME", h.join("state"))
        .env("USER", "floe")
        .env("TERM", "xterm-256color");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let o: Output = cmd.output().expect("run floe doctor");
    let out = String::from_utf8(o.stdout).expect("utf-8");
    eprintln!("{out}{}", String::from_utf8_lossy(&o.stderr));
    Run {
        code: o.status.code(),
        out,
    }
}

fn trino(url: &str, extra: &str) -> String {
    format!("[trino]\nurl = {url:?}\ncatalog = \"iceberg\"\nschemas = [\"zoning\"]\n{extra}\n")
}

fn airflow(password_env: &str) -> String {
    let a = &lab().v["airflow"];
    format!(
        "[airflow]\nurl = {:?}\nuser = {:?}\npassword_env = {password_env:?}\n",
        a["url"].as_str().unwrap(),
        a["user"].as_str().unwrap(),
    )
}

fn line<'a>(out: &'a str, prefix: &str) -> &'a str {
    out.lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line starting {prefix:?} in\n{out}"))
}

/// The fix printed under the line starting with `prefix`.
fn fix_of<'a>(out: &'a str, prefix: &str) -> &'a str {
    let mut lines = out.lines().skip_while(|l| !l.starts_with(prefix));
    lines
        .next()
        .unwrap_or_else(|| panic!("no {prefix:?} in\n{out}"));
    lines
        .next()
        .map(str::trim_start)
        .filter(|l| l.starts_with("fix: "))
        .unwrap_or_else(|| panic!("no fix under {prefix:?} in\n{out}"))
}

#[test]
fn every_check_passes_against_the_lab_over_tls() {
    let l = lab();
    let config = format!(
        "{}{}",
        trino(
            &l.https_url(),
            &format!(
                "user = \"alice\"\npassword_env = \"LAB_TRINO_PASSWORD\"\nca_file = {:?}",
                l.ca_file().display().to_string()
            )
        ),
        airflow("LAB_AIRFLOW_PASSWORD")
    );
    let password = l.v["airflow"]["password"].as_str().unwrap();
    let trino_password = l.stand_in()["users"]["alice"].as_str().unwrap();
    let r = doctor(
        "pass",
        &config,
        &[
            ("LAB_AIRFLOW_PASSWORD", password),
            ("LAB_TRINO_PASSWORD", trino_password),
        ],
    );
    assert_eq!(r.code, Some(0), "{}", r.out);
    let out = &r.out;
    // The build comes first, as `floe --version` says it.
    let first = out.lines().next().unwrap_or_default();
    assert!(
        first.starts_with(&format!("floe {} (", env!("CARGO_PKG_VERSION")))
            && first.contains(", glibc "),
        "{out}"
    );
    assert!(line(out, "✓ config and profile").contains("profile default"));
    assert!(line(out, "✓ trino DNS").contains("127.0.0.1"));
    assert!(line(out, "✓ trino TCP").contains(" ms"));
    assert!(line(out, "✓ trino TLS").contains(&format!("CA file {}", l.ca_file().display())));
    let info = line(out, "✓ trino /v1/info");
    assert!(
        info.contains(&format!(
            "Trino {}",
            l.stand_in()["version"].as_str().unwrap()
        )),
        "{info}"
    );
    assert!(info.contains(" up "), "{info}");
    assert!(line(out, "✓ trino auth").contains("SELECT 1 as alice (basic auth)"));
    assert!(line(out, "✓ catalog").contains("iceberg exists"));
    assert!(line(out, "✓ system.iceberg_tables").contains("Iceberg tables listed"));
    assert!(line(out, "✓ tables").contains("iceberg.zoning."));
    assert!(line(out, "✓ $entries").contains("readable"));
    assert!(line(out, "✓ health statement").contains("data files"));
    line(out, "✓ airflow DNS");
    line(out, "✓ airflow TCP");
    let api = line(out, "✓ airflow API version");
    assert!(
        api.contains(&format!(
            "Airflow {}, REST API v2",
            l.v["airflow"]["version"].as_str().unwrap()
        )),
        "{api}"
    );
    assert!(line(out, "✓ airflow auth").contains("admin accepted"));
    assert!(line(out, "✓ airflow DAG listing").contains("maintenance DAGs"));
    assert!(line(out, "✓ airflow connection test").contains("allowed"));
    assert!(line(out, "✓ audit log").contains("will be created"));
    line(out, "– terminal size");
    assert!(line(out, "✓ terminal colours").contains("TERM=xterm-256color, 256 colours"));
    assert!(line(out, "– tmux clipboard").contains("not inside tmux"));
    assert!(out.trim_end().ends_with("all checks passed"), "{out}");
    assert!(!out.contains('✗'));
}

#[test]
fn a_dead_port_fails_naming_the_url_and_the_fix() {
    // A port nothing listens on: bound, then released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}");
    let r = doctor("dead", &trino(&url, ""), &[]);
    assert_eq!(r.code, Some(1), "{}", r.out);
    let tcp = line(&r.out, "✗ trino TCP");
    assert!(tcp.contains(&url), "{tcp}");
    assert!(tcp.to_lowercase().contains("refused"), "{tcp}");
    let fix = fix_of(&r.out, "✗ trino TCP");
    assert!(
        fix.contains(&format!("port {port}")) && fix.contains("trino.url"),
        "{fix}"
    );
    // Nothing past it is asked; Airflow is not configured, which is no failure.
    assert!(line(&r.out, "– trino ").contains("not reachable"));
    assert!(line(&r.out, "– airflow").contains("not configured"));
    assert!(r.out.trim_end().ends_with("1 check failed"), "{}", r.out);
}

#[test]
fn the_wrong_ca_fails_at_the_tls_step() {
    let l = lab();
    let other = l.stand_in()["other_ca_file"].as_str().unwrap();
    let r = doctor(
        "ca",
        &trino(&l.https_url(), &format!("ca_file = {other:?}")),
        &[],
    );
    assert_eq!(r.code, Some(1), "{}", r.out);
    line(&r.out, "✓ trino TCP");
    let tls = line(&r.out, "✗ trino TLS");
    assert!(tls.contains("handshake failed"), "{tls}");
    let fix = fix_of(&r.out, "✗ trino TLS");
    assert!(
        fix.contains(other) && fix.contains("trino.ca_file"),
        "{fix}"
    );
    assert!(!r.out.contains("✓ trino auth"));
}

#[test]
fn a_refused_airflow_password_fails_at_auth() {
    let l = lab();
    let config = format!(
        "{}{}",
        trino(&l.trino_url(), ""),
        airflow("LAB_AIRFLOW_PASSWORD")
    );
    let r = doctor(
        "afpw",
        &config,
        &[("LAB_AIRFLOW_PASSWORD", "not-the-password")],
    );
    assert_eq!(r.code, Some(1), "{}", r.out);
    line(&r.out, "✓ trino auth");
    line(&r.out, "✓ airflow TCP");
    let auth = line(&r.out, "✗ airflow auth");
    assert!(
        auth.contains("401") || auth.contains("authentication failed"),
        "{auth}"
    );
    let fix = fix_of(&r.out, "✗ airflow auth");
    assert!(
        fix.contains("admin") && fix.contains("airflow.password_env"),
        "{fix}"
    );
    assert!(!r.out.contains("airflow DAG listing"));
}

#[test]
fn an_older_trino_passes_through_the_fallbacks() {
    let l = lab();
    let r = doctor("old", &trino(&l.listener("v451"), ""), &[]);
    assert_eq!(r.code, Some(0), "fallbacks are not failures:\n{}", r.out);
    let it = line(&r.out, "! system.iceberg_tables");
    assert!(it.contains("451"), "{it}");
    assert!(fix_of(&r.out, "! system.iceberg_tables").contains("information_schema.tables"));
    line(&r.out, "✓ health statement");
}

#[test]
fn a_broken_config_is_the_first_failure() {
    let r = doctor(
        "badconf",
        "[trino]\nurl = \"http://x:1\"\nmystery = 1\n",
        &[],
    );
    assert_eq!(r.code, Some(1), "{}", r.out);
    assert!(line(&r.out, "✗ config and profile").contains("mystery"));
    assert!(fix_of(&r.out, "✗ config and profile").contains("config.example.toml"));
    assert!(!r.out.contains("trino DNS"));
}

#[test]
fn the_catalog_is_checked_through_what_floe_reads_not_system_metadata() {
    let l = lab();
    let u = common::user("doccat");
    let r = doctor(
        "cat",
        &trino(&l.stand_in_url(), &format!("user = {u:?}")),
        &[],
    );
    let c = line(&r.out, "✓ catalog");
    assert!(c.contains("iceberg exists"), "{c}");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let sent: Vec<String> = rt
        .block_on(l.queries_of(&u))
        .iter()
        .filter_map(|q| q["sql"].as_str().map(str::to_string))
        .collect();
    assert!(
        !sent.is_empty(),
        "the doctor's statements are in the lab's log"
    );
    assert!(
        !sent.iter().any(|q| q.contains("system.metadata")),
        "a user without system.metadata would fail: {sent:?}"
    );
    // A catalog that does not exist, on the real coordinator: named, with the others.
    let r = doctor(
        "nocat",
        &format!(
            "[trino]\nurl = {:?}\ncatalog = \"nope\"\nschemas = [\"zoning\"]\n",
            l.trino_url()
        ),
        &[],
    );
    assert_eq!(r.code, Some(1), "{}", r.out);
    let c = line(&r.out, "✗ catalog");
    assert!(
        c.contains("no catalog nope") && c.contains("iceberg"),
        "{c}"
    );
}

/// What floe learned a coordinator cannot read (kept beside the stats cache, per
/// coordinator and server version) is what doctor reports, in the server's words, without
/// asking again: `$entries` of a catalog whose tables all failed it.
#[test]
fn a_read_floe_learned_the_server_cannot_serve_is_reported_not_asked_again() {
    let l = lab();
    let user = common::user("doctor_learned");
    let h = home("learned");
    let url = l.trino_url();
    let mut learned = floe::lakehouse::fallbacks::EntriesRecord::default();
    for n in 0..floe::lakehouse::fallbacks::ENTRIES_GIVE_UP {
        learned.failed(
            &floe::lakehouse::model::TableRef::new("iceberg", "zoning", format!("t{n}")),
            "GENERIC_INTERNAL_ERROR: Cannot invoke \"java.lang.Integer.intValue()\"",
        );
    }
    // Where floe keeps it for this home's stats cache.
    let stats = h.join(".cache/floe/stats.json");
    let file = floe::lakehouse::fallbacks::file_of(&stats, &url);
    floe::lakehouse::fallbacks::store(&file, &url, l.trino_version(), &learned).unwrap();
    let config = format!(
        "[trino]\nurl = {url:?}\ncatalog = \"iceberg\"\nschemas = [\"zoning\"]\nuser = {user:?}\n"
    );
    let r = doctor_in(&h, &config, &[]);
    let entries = line(&r.out, "! $entries");
    assert!(
        entries.contains("as floe learned")
            && entries.contains("GENERIC_INTERNAL_ERROR")
            && entries.contains(&l.trino_version().to_string()),
        "{entries}"
    );
    assert!(fix_of(&r.out, "! $entries").contains("$files"));
    let asked = tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(l.real_queries_of(&user))
        .into_iter()
        .filter(|q| q["sql"].as_str().unwrap_or("").contains("$entries"))
        .count();
    assert_eq!(asked, 0, "a read known to fail is not sent");
}
