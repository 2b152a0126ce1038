//! `floe check`, the real binary, against the lab's seed scenario.

use crate::common;

use std::process::{Command, Output};

use common::lab;
use serde_json::Value;

fn floe(args: &[&str]) -> Output {
    let home = std::env::temp_dir().join(format!("floe-check-home-{}", std::process::id()));
    std::fs::create_dir_all(&home).unwrap();
    Command::new(env!("CARGO_BIN_EXE_floe"))
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_STATE_HOME", home.join("state"))
        .env("USER", "floe")
        .output()
        .expect("run floe")
}

/// `--schema` flags for the seed's schemas: other tests clone tables into `scratch`.
fn seed_schemas() -> Vec<String> {
    let mut s: Vec<String> = lab().expected["tables"]
        .as_object()
        .unwrap()
        .values()
        .map(|t| t["schema"].as_str().unwrap().to_string())
        .collect();
    s.sort();
    s.dedup();
    s.into_iter()
        .flat_map(|x| ["--schema".to_string(), x])
        .collect()
}

fn json_check(extra: &[&str]) -> (Value, i32) {
    let url = lab().trino_url();
    let schemas = seed_schemas();
    let mut args = vec![
        "check", "--trino", &url, "--user", "floe", "--format", "json",
    ];
    args.extend(schemas.iter().map(String::as_str));
    args.extend_from_slice(extra);
    let out = floe(&args);
    let code = out.status.code().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    (
        serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{e}: {text}\n{}", String::from_utf8_lossy(&out.stderr))),
        code,
    )
}

fn table<'a>(report: &'a Value, schema: &str, name: &str) -> &'a Value {
    report["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["schema"] == schema && t["table"] == name)
        .unwrap_or_else(|| panic!("{schema}.{name} not in the report"))
}

#[test]
fn seed_incident_documents_is_critical_with_the_right_counts_and_age() {
    let (report, code) = json_check(&[]);
    assert_eq!(code, 2, "CRITICAL exit code");
    assert_eq!(report["status"], "CRITICAL");
    assert_eq!(report["trino"]["version"], lab().v["trino"]["version"]);
    let docs = table(&report, "zoning", "documents");
    let exp = lab().table("zoning.documents");
    assert_eq!(docs["status"], "CRITICAL");
    for k in [
        "data_files",
        "small_files",
        "records",
        "total_bytes",
        "partitions",
        "small_file_partitions",
        "snapshots",
    ] {
        assert_eq!(docs[k], exp[k], "{k}");
    }
    assert_eq!(docs["delete_files"], 0);
    let last = exp["last_replace"]["committed_at_ms"].as_i64().unwrap();
    let generated =
        chrono::DateTime::parse_from_rfc3339(report["generated_at"].as_str().unwrap()).unwrap();
    let age_h = (generated.timestamp_millis() - last) as f64 / 3_600_000.0;
    let got = docs["last_compaction_age_hours"].as_f64().unwrap();
    assert!(
        (got - age_h).abs() < 0.05,
        "age {got} h, expected {age_h} h"
    );
    assert!(
        got > 14.0 * 24.0,
        "the seed's compaction is about 15 days old: {got} h"
    );
    let rules: Vec<&str> = docs["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap())
        .collect();
    assert!(
        rules.contains(&"small_files") && rules.contains(&"compaction_stale"),
        "{rules:?}"
    );
}

#[test]
fn every_seed_table_matches_the_generator() {
    let (report, _) = json_check(&[]);
    let tables = lab().expected["tables"].as_object().unwrap();
    assert_eq!(report["tables"].as_array().unwrap().len(), tables.len());
    for (key, exp) in tables {
        let t = table(
            &report,
            exp["schema"].as_str().unwrap(),
            exp["table"].as_str().unwrap(),
        );
        assert_eq!(t["data_files"], exp["data_files"], "{key}");
        match exp["properties"]["write.target-file-size-bytes"].as_str() {
            // expected.json counts small files against the 128 MB default; a table that
            // sets its own target is judged against that target.
            Some(target) => {
                let threshold = target.parse::<f64>().unwrap() * 0.75;
                assert!(
                    exp["min_file_bytes"].as_f64().unwrap() >= threshold,
                    "{key}: the generator made small files"
                );
                assert_eq!(t["small_files"], 0, "{key}");
                assert_eq!(t["target_file_size"].as_str().map(str::to_string), None);
                assert_eq!(
                    t["target_file_size"].as_u64(),
                    target.parse::<u64>().ok(),
                    "{key}"
                );
            }
            None => assert_eq!(t["small_files"], exp["small_files"], "{key}"),
        }
        assert_eq!(t["snapshots"], exp["snapshots"], "{key}");
    }
    // Verdicts the story needs.
    // permits' 300 small files of 3 KB over 5 partitions are worth compacting, but a reader
    // of 962 KB pays little for them: a WARNING. documents' 2,004 are the CRITICAL one.
    assert_eq!(table(&report, "zoning", "permits")["status"], "WARNING");
    assert_eq!(table(&report, "zoning", "documents")["status"], "CRITICAL");
    for (schema, name) in [("finance", "budget"), ("zoning", "inspections")] {
        let t = table(&report, schema, name);
        assert_eq!(t["status"], "WARNING", "{schema}.{name}");
        let small = t["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["rule"] == "small_files")
            .unwrap();
        assert!(
            small["message"]
                .as_str()
                .unwrap()
                .contains("WARNING, worth compacting; CRITICAL from 1,000 files"),
            "{small}"
        );
    }
    assert!(table(&report, "zoning", "permits")["last_compaction_at"].is_null());
    assert_eq!(
        table(&report, "zoning", "staging")["status"],
        "OK",
        "an empty table is not an incident"
    );
    assert_eq!(
        table(&report, "zoning", "inspections")["partitioned"],
        false
    );
    let events = table(&report, "audit", "events");
    assert!(
        events["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["rule"] == "snapshot_bloat")
    );
}

#[test]
fn table_globs_and_prometheus() {
    let (report, code) = json_check(&["--table", "zoning.parcels"]);
    assert_eq!(report["tables"].as_array().unwrap().len(), 1);
    assert_ne!(code, 2);
    let url = lab().trino_url();
    let out = floe(&[
        "check",
        "--trino",
        &url,
        "--format",
        "prometheus",
        "--table",
        "zoning.doc*",
    ]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("# TYPE floe_table_last_compaction_age_hours gauge"),
        "{text}"
    );
    assert!(
        text.contains(
            r#"floe_table_data_files{profile="default",catalog="iceberg",schema="zoning",table="documents"} "#
        ),
        "{text}"
    );
    assert!(text.contains(r#"floe_check_success{profile="default"} 1"#));
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn quoted_table_names_are_read() {
    let (report, _) = json_check(&["--table", "finance.*"]);
    let t = table(&report, "finance", "ledger \"q3\" it's-odd");
    assert_eq!(t["table"], "ledger \"q3\" it's-odd");
    assert_eq!(
        t["data_files"],
        lab().table("finance.ledger \"q3\" it's-odd")["data_files"]
    );
}

#[test]
fn text_report_starts_with_the_nagios_line_and_writes_files_atomically() {
    let url = lab().trino_url();
    let schemas = seed_schemas();
    let mut args = vec!["check", "--trino", url.as_str()];
    args.extend(schemas.iter().map(String::as_str));
    let out = floe(&args);
    let text = String::from_utf8(out.stdout).unwrap();
    let seed_tables = lab().expected["tables"].as_object().unwrap().len();
    assert!(
        text.starts_with(&format!("CRITICAL: {seed_tables} tables:")),
        "{text}"
    );
    assert!(text.contains("iceberg.zoning.documents"));
    let dir = std::env::temp_dir().join(format!("floe-prom-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("floe.prom");
    let mut args = vec![
        "check",
        "--trino",
        url.as_str(),
        "--format",
        "prometheus",
        "--output",
        file.to_str().unwrap(),
    ];
    args.extend(schemas.iter().map(String::as_str));
    let out = floe(&args);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        std::fs::read_to_string(&file)
            .unwrap()
            .contains("floe_table_status")
    );
    assert!(
        String::from_utf8(out.stdout)
            .unwrap()
            .starts_with("CRITICAL:")
    );
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        1,
        "no temporary file left behind"
    );
}

#[test]
fn older_trino_without_iceberg_tables_still_works() {
    let url = lab().listener("v451");
    let out = floe(&["check", "--trino", &url, "--format", "json"]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let docs = table(&report, "zoning", "documents");
    assert_eq!(
        docs["data_files"],
        lab().table("zoning.documents")["data_files"]
    );
    assert_eq!(docs["status"], "CRITICAL");
}

#[test]
fn unknown_when_trino_is_unreachable_or_the_config_is_wrong() {
    let out = floe(&["check", "--trino", "http://127.0.0.1:9"]);
    assert_eq!(out.status.code(), Some(3));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with("UNKNOWN: cannot reach Trino at http://127.0.0.1:9/v1/info"),
        "{text}"
    );

    let out = floe(&["check", "--trino", "http://127.0.0.1:9", "--format", "json"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["status"], "UNKNOWN");
    assert!(v["error"].as_str().unwrap().contains("127.0.0.1:9"));

    let out = floe(&["check"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(
        String::from_utf8(out.stdout)
            .unwrap()
            .contains("no Trino URL")
    );

    let out = floe(&["check", "--trino", "trino://u:secret@h:8443/iceberg"]);
    assert_eq!(out.status.code(), Some(3));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("--trino") && text.contains("password") && !text.contains("secret@"),
        "{text}"
    );
}

#[test]
fn auth_failure_is_unknown_and_says_where() {
    let url = lab().https_url();
    let ca = lab().ca_file();
    let home = std::env::temp_dir().join(format!("floe-check-auth-{}", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_floe"))
        .args([
            "check",
            "--trino",
            &url,
            "--user",
            "alice",
            "--ca-file",
            ca.to_str().unwrap(),
        ])
        .env("FLOE_TRINO_PASSWORD", "not-her-password")
        .env("XDG_CONFIG_HOME", home.join("c"))
        .env("XDG_STATE_HOME", home.join("s"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("authentication failed: HTTP 401"), "{text}");
    assert!(text.contains(url.trim_end_matches('/')), "{text}");
    assert!(!text.contains("not-her-password"));
}

fn with_airflow(which: &str, extra: &[&str]) -> (Value, i32) {
    let a = &lab().v[which];
    assert!(
        !a.is_null(),
        "lab.json has no {which}: start the lab with `cargo xtask lab up --airflow2`"
    );
    let url = lab().trino_url();
    let af = a["url"].as_str().unwrap().to_string();
    let user = a["user"].as_str().unwrap().to_string();
    let schemas = seed_schemas();
    let mut args = vec![
        "check",
        "--trino",
        url.as_str(),
        "--user",
        "floe",
        "--format",
        "json",
        "--airflow",
        af.as_str(),
        "--airflow-user",
        user.as_str(),
    ];
    args.extend(schemas.iter().map(String::as_str));
    args.extend_from_slice(extra);
    let home = std::env::temp_dir().join(format!("floe-check-af-{}", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_floe"))
        .args(&args)
        .env("FLOE_AIRFLOW_PASSWORD", a["password"].as_str().unwrap())
        .env("XDG_CONFIG_HOME", home.join("c"))
        .env("XDG_STATE_HOME", home.join("s"))
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (v, out.status.code().unwrap())
}

fn rules(t: &Value) -> Vec<String> {
    t["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap().to_string())
        .collect()
}

fn message<'a>(t: &'a Value, rule: &str) -> &'a str {
    t["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == rule)
        .unwrap_or_else(|| panic!("no {rule} in {t}"))["message"]
        .as_str()
        .unwrap()
}

fn assert_incident_story(report: &Value) {
    assert_eq!(report["status"], "CRITICAL");
    // documents: stale compaction, and its DAG fails on the dead host.
    let docs = table(report, "zoning", "documents");
    let m = message(docs, "stale_dag_failing");
    assert!(
        m.contains("compact_documents") && m.contains("trino-old.internal:8080"),
        "{m}"
    );
    assert_eq!(docs["maintenance_dag"]["dag_id"], "compact_documents");
    // permits: never compacted although its DAG reports success (the bare except).
    let permits = table(report, "zoning", "permits");
    assert!(message(permits, "stale_dag_succeeds").contains("compact_permits"));
    // audit.events: its maintenance DAG is paused.
    assert!(rules(table(report, "audit", "events")).contains(&"stale_dag_paused".to_string()));
    // parcels is healthy with a succeeding DAG: no correlation finding.
    assert!(
        !rules(table(report, "zoning", "parcels"))
            .iter()
            .any(|r| r.starts_with("stale_dag"))
    );
    // The DAGs themselves.
    let dags = report["dags"].as_array().unwrap();
    let cd = dags
        .iter()
        .find(|d| d["dag_id"] == "compact_documents")
        .unwrap();
    assert_eq!(cd["status"], "CRITICAL");
    assert_eq!(cd["last_run_state"], "failed");
    assert_eq!(cd["failing_task"], "compact");
    assert!(
        cd["error_line"]
            .as_str()
            .unwrap()
            .contains("trino-old.internal:8080")
    );
    assert!(
        cd["failed_runs"].as_u64().unwrap() >= 10,
        "two weeks of failures: {cd}"
    );
    assert_eq!(
        dags.iter()
            .find(|d| d["dag_id"] == "expire_snapshots")
            .unwrap()["paused"],
        true
    );
    // Import errors and the connection pointing at the dead host.
    let findings: Vec<(&str, &str)> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["rule"].as_str().unwrap(), f["message"].as_str().unwrap()))
        .collect();
    assert!(
        findings
            .iter()
            .any(|(r, m)| *r == "dag_import_error" && m.contains("broken_dag.py")),
        "{findings:?}"
    );
    assert!(
        findings
            .iter()
            .any(|(r, m)| r.starts_with("airflow_connection")
                && m.contains("trino_documents")
                && m.contains("trino-old.internal:8080")),
        "{findings:?}"
    );
}

#[test]
fn with_airflow_3_the_whole_incident_is_in_one_report() {
    let (report, code) = with_airflow("airflow", &[]);
    assert_eq!(code, 2);
    assert_eq!(report["airflow"]["api"], "v2");
    assert_incident_story(&report);
}

#[test]
fn with_airflow_2_the_v1_api_tells_the_same_story() {
    let (report, _) = with_airflow("airflow2", &[]);
    assert_eq!(report["airflow"]["api"], "v1");
    assert_incident_story(&report);
}

#[test]
fn prometheus_has_dag_metrics() {
    let (_, _) = with_airflow("airflow", &[]);
    let a = &lab().v["airflow"];
    let url = lab().trino_url();
    let af = a["url"].as_str().unwrap().to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_floe"))
        .args([
            "check",
            "--trino",
            &url,
            "--airflow",
            &af,
            "--airflow-user",
            "admin",
            "--format",
            "prometheus",
            "--table",
            "zoning.*",
        ])
        .env("FLOE_AIRFLOW_PASSWORD", a["password"].as_str().unwrap())
        .env("XDG_STATE_HOME", std::env::temp_dir().join("floe-prom-af"))
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains(r#"floe_dag_status{profile="default",dag_id="compact_documents"} 2"#),
        "{text}"
    );
    assert!(
        text.contains(
            r#"floe_dag_last_success_age_hours{profile="default",dag_id="compact_documents"} +Inf"#
        ),
        "{text}"
    );
}

#[test]
fn an_unreachable_airflow_degrades_to_a_finding() {
    let url = lab().trino_url();
    let schemas = seed_schemas();
    let mut args = vec![
        "check",
        "--trino",
        url.as_str(),
        "--format",
        "json",
        "--airflow",
        "http://127.0.0.1:9",
    ];
    args.extend(schemas.iter().map(String::as_str));
    let out = floe(&args);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["status"], "CRITICAL", "the tables are still evaluated");
    assert!(
        v["airflow"]["error"]
            .as_str()
            .unwrap()
            .contains("127.0.0.1:9")
    );
    assert!(
        v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["rule"] == "airflow_unreachable" && f["severity"] == "UNKNOWN")
    );
}

#[test]
fn error_lines_never_carry_control_characters() {
    // A config key (or a server's message) with an OSC 52 clipboard write and a clear-screen:
    // the error that names it is printed with visible escapes, on stdout and on stderr.
    let dir = std::env::temp_dir().join(format!("floe-hostile-cfg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("config.toml");
    std::fs::write(
        &cfg,
        "[trino]\nurl = \"http://127.0.0.1:1\"\n\"evil\\u001b]52;c;ZXZpbA==\\u0007\\u001b[2J\" = 1\n",
    )
    .unwrap();
    let cfg = cfg.display().to_string();
    let out = floe(&["check", "--config", &cfg]);
    assert_eq!(out.status.code(), Some(3));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.starts_with("UNKNOWN:"), "{stdout}");
    assert!(stdout.contains("evil"), "{stdout}");
    assert!(floe::text::is_inert(&stdout), "{stdout:?}");
    let out = floe(&["config", "--config", &cfg]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("evil"), "{stderr}");
    assert!(floe::text::is_inert(&stderr), "{stderr:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_check_that_matches_no_table_is_unknown_and_names_its_filters() {
    let url = lab().trino_url();
    let out = floe(&[
        "check",
        "--trino",
        &url,
        "--user",
        "floe",
        "--schema",
        "zoning",
        "--table",
        "zoning.documnets",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{text}");
    assert!(text.starts_with("UNKNOWN"), "{text}");
    assert!(
        text.contains("no table matched") && text.contains("zoning.documnets"),
        "{text}"
    );
}
