//! `floe check`, the real binary, against the lab's seed scenario.

mod common;

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

fn json_check(extra: &[&str]) -> (Value, i32) {
    let url = lab().trino_url();
    let mut args = vec![
        "check", "--trino", &url, "--user", "floe", "--format", "json",
    ];
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
    assert_eq!(report["trino"]["version"], "480");
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
    assert_eq!(table(&report, "zoning", "permits")["status"], "CRITICAL");
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
            r#"floe_table_data_files{catalog="iceberg",schema="zoning",table="documents"} "#
        ),
        "{text}"
    );
    assert!(text.contains("floe_check_success 1"));
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn quoted_table_names_are_read() {
    let (report, _) = json_check(&["--table", "finance.*"]);
    let t = &report["tables"][0];
    assert_eq!(t["table"], "ledger \"q3\" it's-odd");
    assert_eq!(
        t["data_files"],
        lab().table("finance.ledger \"q3\" it's-odd")["data_files"]
    );
}

#[test]
fn text_report_starts_with_the_nagios_line_and_writes_files_atomically() {
    let url = lab().trino_url();
    let out = floe(&["check", "--trino", &url]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("CRITICAL: 7 tables:"), "{text}");
    assert!(text.contains("iceberg.zoning.documents"));
    let dir = std::env::temp_dir().join(format!("floe-prom-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("floe.prom");
    let out = floe(&[
        "check",
        "--trino",
        &url,
        "--format",
        "prometheus",
        "--output",
        file.to_str().unwrap(),
    ]);
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
