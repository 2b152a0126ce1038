//! `floe report TABLE`, the real binary, against the lab: the seed incident as a
//! postmortem, an audited optimize showing up in it, and errors that name what failed.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::lab;
use serde_json::Value;

fn home(name: &str) -> PathBuf {
    let h = std::env::temp_dir().join(format!("floe-report-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&h);
    std::fs::create_dir_all(&h).unwrap();
    h
}

/// `floe` with the lab's Trino and Airflow 3, state (the audit log) under `home`.
fn floe(args: &[&str], home: &Path) -> Output {
    floe_with("airflow", args, home)
}

/// `floe` with the lab's Trino and `which` Airflow (`airflow` 3 or `airflow2`).
fn floe_with(which: &str, args: &[&str], home: &Path) -> Output {
    let a = &lab().v[which];
    assert!(!a.is_null(), "lab.json has no {which}");
    let url = lab().trino_url();
    let mut all: Vec<&str> = vec!["--trino", &url, "--user", "floe"];
    let af = a["url"].as_str().unwrap().to_string();
    let af_user = a["user"].as_str().unwrap().to_string();
    all.extend(["--airflow", &af, "--airflow-user", &af_user]);
    all.extend_from_slice(args);
    Command::new(env!("CARGO_BIN_EXE_floe"))
        .args(&all)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_STATE_HOME", home.join("state"))
        .env("USER", "floe")
        .env("FLOE_AIRFLOW_PASSWORD", a["password"].as_str().unwrap())
        .output()
        .expect("run floe")
}

fn text(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    })
}

#[test]
fn the_seed_incident_as_a_postmortem() {
    let h = home("seed");
    let out = floe(&["report", "zoning.documents"], &h);
    assert_eq!(
        out.status.code(),
        Some(2),
        "CRITICAL, as floe check: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let md = text(&out);
    assert!(floe::text::is_inert(&md));
    for want in [
        "# Postmortem: `iceberg.zoning.documents`",
        "**CRITICAL**",
        "| `small_files` |",
        "| `compaction_stale` |",
        "| `stale_dag_failing` |",
        "- DAG: `compact_documents`",
        "- failing task: `compact` of run `scheduled__",
        "trino-old.internal:8080",
        "◆ compaction (replace)",
        "✗ run failed",
        "coordinator up",
        "None recorded in the audit log",
    ] {
        assert!(md.contains(want), "{want:?} not in:\n{md}");
    }
    let sentence = md
        .lines()
        .find(|l| l.starts_with("> "))
        .expect("the sentence");
    assert!(
        sentence.contains("compactions stopped")
            && sentence.contains("compact\\_documents has failed every run since")
            && sentence.contains(&format!(
                "→ {}",
                floe::fmt::thousands(
                    lab().table("zoning.documents")["data_files"]
                        .as_u64()
                        .unwrap()
                )
            )),
        "{sentence}"
    );

    let out = floe(&["report", "zoning.documents", "--format", "json"], &h);
    assert_eq!(out.status.code(), Some(2));
    let v = json(&out);
    assert_eq!(v["name"], "iceberg.zoning.documents");
    assert_eq!(v["trino"]["version"], lab().v["trino"]["version"]);
    assert!(v["trino"]["uptime_seconds"].as_f64().unwrap() > 0.0);
    assert_eq!(v["dag"]["dag_id"], "compact_documents");
    assert_eq!(v["dag"]["failing_task"], "compact");
    assert!(
        v["dag"]["error_line"]
            .as_str()
            .unwrap()
            .contains("trino-old.internal:8080")
    );
    assert_eq!(
        v["table"]["data_files"],
        lab().table("zoning.documents")["data_files"]
    );
    let rules: Vec<&str> = v["table"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap())
        .collect();
    assert!(rules.contains(&"stale_dag_failing"), "{rules:?}");
    let events = v["timeline"]["events"].as_array().unwrap();
    assert_eq!(
        events
            .iter()
            .filter(|e| e["kind"] != "run_failed"
                && e["kind"] != "run_succeeded"
                && e["kind"] != "run_pending")
            .count() as u64,
        lab().table("zoning.documents")["snapshots"]
            .as_u64()
            .unwrap(),
        "every snapshot is on the timeline"
    );
    assert!(events.iter().any(|e| e["kind"] == "run_failed"));
    assert!(
        v["timeline"]["sentence"]
            .as_str()
            .unwrap()
            .contains("compact_documents has failed every run since")
    );
}

#[test]
fn with_airflow_2_the_v1_api_tells_the_same_story() {
    let h = home("af2");
    let out = floe_with(
        "airflow2",
        &["report", "zoning.documents", "--format", "json"],
        &h,
    );
    assert_eq!(out.status.code(), Some(2));
    let v = json(&out);
    assert_eq!(v["airflow"]["api"], "v1");
    assert_eq!(v["dag"]["failing_task"], "compact");
    assert!(
        v["dag"]["error_line"]
            .as_str()
            .unwrap()
            .contains("trino-old.internal:8080")
    );
    assert!(
        v["timeline"]["sentence"]
            .as_str()
            .unwrap()
            .contains("compact_documents has failed every run since"),
        "{}",
        v["timeline"]["sentence"]
    );
}

#[tokio::test]
async fn an_audited_optimize_shows_up_with_its_query_id() {
    let name = format!("report_{}", std::process::id());
    lab()
        .clone_table("zoning.documents", &format!("scratch.{name}"))
        .await;
    let table = format!("scratch.{name}");
    let h = home("audit");
    // One small-file partition: a partition's optimize records its files before and after.
    let worst = &lab().table("zoning.documents")["small_file_partition_list"][0];
    let partition = worst["partition"].as_str().unwrap().to_string();
    let before = worst["small_files"].as_u64().unwrap();
    let (t, hh) = (table.clone(), h.clone());
    let optimized = tokio::task::spawn_blocking(move || {
        floe(
            &[
                "maintain",
                "optimize",
                &t,
                "--partition",
                &partition,
                "--yes",
            ],
            &hh,
        )
    })
    .await
    .unwrap();
    assert_eq!(
        optimized.status.code(),
        Some(0),
        "{}\n{}",
        text(&optimized),
        String::from_utf8_lossy(&optimized.stderr)
    );
    let audit = std::fs::read_to_string(h.join("state/floe/audit.jsonl")).expect("the audit log");
    let done: Value = audit
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|r| r["outcome"] == "succeeded")
        .expect("a succeeded record");
    let query_id = done["query_id"].as_str().expect("a query id").to_string();

    let (t, hh) = (table.clone(), h.clone());
    let out = tokio::task::spawn_blocking(move || floe(&["report", &t, "--format", "json"], &hh))
        .await
        .unwrap();
    let v = json(&out);
    let actions = v["actions"].as_array().unwrap();
    assert_eq!(actions.len(), 1, "{actions:?}");
    assert_eq!(actions[0]["action"], "optimize");
    assert_eq!(actions[0]["outcome"], "succeeded");
    assert_eq!(actions[0]["query_id"], query_id.as_str());
    assert!(
        actions[0]["files_before"].as_u64().unwrap() >= before,
        "{actions:?}"
    );
    assert!(
        actions[0]["files_after"].as_u64().unwrap() <= 2,
        "{actions:?}"
    );
    // The compaction is on the timeline too.
    assert!(
        v["timeline"]["events"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["kind"] == "compaction")
    );

    // Markdown to a file: private, the action with its query id.
    let file = h.join("pm.md");
    let (t, hh, f) = (table.clone(), h.clone(), file.clone());
    let out = tokio::task::spawn_blocking(move || {
        floe(&["report", &t, "--output", f.to_str().unwrap()], &hh)
    })
    .await
    .unwrap();
    assert!(text(&out).contains("written to"), "{}", text(&out));
    let md = std::fs::read_to_string(&file).unwrap();
    assert!(md.contains(&format!("`{query_id}`")), "{md}");
    assert!(md.contains("| optimize |"), "{md}");
    assert!(md.contains(" → "), "before → after: {md}");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );
}

#[test]
fn errors_name_what_failed_and_exit_unknown() {
    let h = home("errors");
    let out = floe(&["report", "zoning.no_such_table"], &h);
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("UNKNOWN") && err.contains("iceberg.zoning.no_such_table"),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "no half document");

    let out = Command::new(env!("CARGO_BIN_EXE_floe"))
        .args([
            "report",
            "zoning.documents",
            "--trino",
            "http://127.0.0.1:9",
            "--user",
            "floe",
        ])
        .env("XDG_CONFIG_HOME", h.join("config"))
        .env("XDG_STATE_HOME", h.join("state"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot reach Trino at http://127.0.0.1:9"),
        "{err}"
    );

    let out = floe(&["report", "documents"], &h);
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("needs a schema"));
}

#[test]
fn the_man_page_and_completions_know_report() {
    let h = home("cli");
    let roff = text(
        &Command::new(env!("CARGO_BIN_EXE_floe"))
            .arg("man")
            .output()
            .unwrap(),
    );
    assert!(roff.contains(".SS \"floe report\""), "{roff}");
    assert!(roff.contains("\\-\\-format"), "{roff}");
    let config = h.join("floe.toml");
    std::fs::write(
        &config,
        "[[maintenance]]\ntable = \"iceberg.zoning.documents\"\ndag_id = \"compact_documents\"\n",
    )
    .unwrap();
    let script = h.join("floe.bash");
    std::fs::write(
        &script,
        text(
            &Command::new(env!("CARGO_BIN_EXE_floe"))
                .args(["completions", "bash"])
                .output()
                .unwrap(),
        ),
    )
    .unwrap();
    let (completed, stderr) = common::bash_completes(
        &script,
        &format!(
            "{} --config {} report zon",
            env!("CARGO_BIN_EXE_floe"),
            config.display()
        ),
        4,
    );
    assert_eq!(completed, "zoning.documents\n", "{stderr}");
}
