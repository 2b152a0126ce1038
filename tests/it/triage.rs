//! The incidents at the top of `floe check` (text, markdown, JSON), against the lab's seed
//! scenario with Airflow 3: the dead connection, its failing DAG and its table are one
//! incident, first.

use crate::common;

use std::process::Command;

use common::lab;
use serde_json::Value;

/// `floe check` with Airflow in `format`: (stdout, exit code).
fn check(format: &str) -> (String, i32) {
    let a = &lab().v["airflow"];
    assert!(!a.is_null(), "lab.json has no airflow");
    let mut schemas: Vec<String> = lab().expected["tables"]
        .as_object()
        .unwrap()
        .values()
        .map(|t| t["schema"].as_str().unwrap().to_string())
        .collect();
    schemas.sort();
    schemas.dedup();
    let home = std::env::temp_dir().join(format!("floe-triage-{}", std::process::id()));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_floe"));
    cmd.args([
        "check",
        "--trino",
        &lab().trino_url(),
        "--user",
        "floe",
        "--format",
        format,
        "--airflow",
        a["url"].as_str().unwrap(),
        "--airflow-user",
        a["user"].as_str().unwrap(),
    ]);
    for s in &schemas {
        cmd.args(["--schema", s]);
    }
    let out = cmd
        .env("FLOE_AIRFLOW_PASSWORD", a["password"].as_str().unwrap())
        .env("XDG_CONFIG_HOME", home.join("c"))
        .env("XDG_STATE_HOME", home.join("s"))
        .output()
        .unwrap();
    (
        String::from_utf8(out.stdout).unwrap(),
        out.status.code().unwrap(),
    )
}

/// The incident lines of a text or markdown report (each starts with `N. `).
fn incident_lines(text: &str, heading: &str) -> Vec<String> {
    let start = text
        .find(heading)
        .unwrap_or_else(|| panic!("no {heading:?} in\n{text}"));
    text[start..]
        .lines()
        .skip(1)
        .map(str::trim_start)
        .take_while(|l| {
            l.is_empty()
                || l.chars().next().is_some_and(|c| c.is_ascii_digit())
                || l.starts_with("next:")
        })
        .filter(|l| l.chars().next().is_some_and(|c| c.is_ascii_digit()))
        .map(str::to_string)
        .collect()
}

fn assert_seed_incident_first(lines: &[String]) {
    let first = &lines[0];
    assert!(
        first.contains("CRITICAL")
            && first.contains("DAG compact_documents failing")
            && first
                .contains("connection trino_documents → trino-old.internal:8080, fails its test")
            && first.contains("→ documents: "),
        "{lines:#?}"
    );
    // One incident: neither the DAG, its connection nor documents make a row of their own.
    for l in &lines[1..] {
        assert!(
            !l.contains("compact_documents")
                && !l.contains("trino_documents")
                && !l.contains("documents:"),
            "{l}"
        );
    }
    // The DAG that reports success while its table stays stale is its own kind.
    assert!(
        lines
            .iter()
            .any(|l| l.contains("DAG compact_permits reports success") && l.contains("permits: ")),
        "{lines:#?}"
    );
}

#[test]
fn text_report_opens_with_the_incidents() {
    let (text, code) = check("text");
    assert_eq!(code, 2);
    assert!(text.starts_with("CRITICAL: "), "{text}");
    let incidents = text.find("Incidents (").expect("an incident section");
    let table = text.find("STATUS   SCORE").expect("the table of tables");
    assert!(incidents < table, "the incidents come first:\n{text}");
    let lines = incident_lines(&text, "Incidents (");
    assert_seed_incident_first(&lines);
    assert!(
        text.contains("next: fix Airflow connection trino_documents · trigger compact_documents after fixing · floe maintain optimize iceberg.zoning.documents"),
        "{text}"
    );
}

#[test]
fn markdown_report_opens_with_the_incidents() {
    let (text, code) = check("markdown");
    assert_eq!(code, 2);
    // Prose is escaped (`compact\_documents`): read the lines as they render.
    let lines: Vec<String> = incident_lines(&text, "### Incidents")
        .iter()
        .map(|l| l.replace('\\', ""))
        .collect();
    assert_seed_incident_first(&lines);
    assert!(text.find("### Incidents").unwrap() < text.find("| status |").unwrap());
}

#[test]
fn json_report_lists_the_incidents() {
    let (text, _) = check("json");
    let v: Value = serde_json::from_str(&text).unwrap();
    let incidents = v["incidents"].as_array().unwrap();
    let first = &incidents[0];
    assert_eq!(first["kind"], "endpoint");
    assert_eq!(first["severity"], "CRITICAL");
    assert_eq!(first["dags"], serde_json::json!(["compact_documents"]));
    assert_eq!(first["tables"][0]["table"]["table"], "documents");
    assert_eq!(first["jump"]["to"], "dag_failure");
    assert!(
        first["summary"]
            .as_str()
            .unwrap()
            .starts_with("DAG compact_documents failing")
    );
    assert!(
        first["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e.as_str().unwrap().contains("trino-old.internal:8080"))
    );
}
