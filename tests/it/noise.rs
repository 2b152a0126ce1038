//! The noise budget against the lab: a lakehouse of small tables that never ran
//! expire_snapshots (healthy but unmaintained) shows no WARNING in `floe check`.

use crate::common;

use std::process::Command;

use common::lab;
use serde_json::{Value, json};

#[test]
fn small_unmaintained_tables_are_info_not_warnings() {
    let schema = format!("noise_{}", std::process::id());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // Three, ten and eleven snapshots past the 7-day retention, one small file each (fewer
    // small files than make a small-file finding: healthy tables).
    for (name, snapshots, days_ago) in [("three", 3, 30), ("ten", 10, 9), ("eleven", 11, 60)] {
        let r = rt.block_on(lab().post(
            "engine/unmaintained_table",
            json!({"target": format!("{schema}.{name}"), "snapshots": snapshots, "days_ago": days_ago}),
        ));
        assert_eq!(r["snapshots"], snapshots, "{r}");
    }
    let home = std::env::temp_dir().join(format!("floe-noise-home-{}", std::process::id()));
    std::fs::create_dir_all(&home).unwrap();
    let url = lab().trino_url();
    let out = Command::new(env!("CARGO_BIN_EXE_floe"))
        .args([
            "check", "--trino", &url, "--user", "floe", "--schema", &schema, "--format", "json",
        ])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_STATE_HOME", home.join("state"))
        .output()
        .expect("run floe");
    let text = String::from_utf8_lossy(&out.stdout);
    let report: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{e}: {text}\n{}", String::from_utf8_lossy(&out.stderr)));
    let tables = report["tables"].as_array().unwrap();
    assert_eq!(tables.len(), 3, "{report}");
    for t in tables {
        assert_eq!(t["status"], "OK", "{t}");
        let findings = t["findings"].as_array().unwrap();
        assert!(findings.iter().all(|f| f["severity"] != "WARNING"), "{t}");
        let bloat = findings
            .iter()
            .find(|f| f["rule"] == "snapshot_bloat")
            .unwrap_or_else(|| panic!("past retention is still said: {t}"));
        assert_eq!(bloat["severity"], "INFO", "{t}");
        assert!(
            bloat["message"]
                .as_str()
                .unwrap()
                .contains("pinning 0 data files"),
            "{bloat}"
        );
    }
    assert_eq!(report["status"], "OK", "{report}");
    // Nagios: 0 OK.
    assert_eq!(out.status.code(), Some(0));
    // The same tables with a stricter budget: the old snapshots are worth an action.
    let cfg = home.join("strict.toml");
    std::fs::write(
        &cfg,
        format!(
            "[trino]\nurl = {url:?}\nuser = \"floe\"\n[health]\nexpirable_snapshots_warn = 5\n"
        ),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_floe"))
        .args([
            "check",
            "--config",
            cfg.to_str().unwrap(),
            "--schema",
            &schema,
            "--format",
            "json",
        ])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("XDG_STATE_HOME", home.join("state"))
        .output()
        .expect("run floe");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["status"], "WARNING", "{report}");
    assert_eq!(out.status.code(), Some(1));
}
