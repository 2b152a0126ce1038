//! The maintenance DAGs' own code on the lab's real Airflow 3 (`airflow`, API v2) and
//! Airflow 2 (`airflow2`, API v1): the sources Airflow serves for the seed's
//! `compact_permits` (its bare `except: pass`) and the `lab-dagcode` DAGs written as
//! operators write them (a TrinoHook bound to a name, an operator executed in a
//! PythonOperator's callable, a helper function of the file, and a clean DAG that
//! re-raises `TrinoQueryError`): each swallowing handler at its line, none on the clean
//! DAG; a source read once per version; a source Airflow refuses (403) or cannot find
//! (404) said so; `floe check` carrying the findings with file and line; and the TUI at
//! 80x24 over `LANG=C`, from Triage's incident to the line in the source view.

use crate::common;
use crate::common::pty::Pty;

use std::collections::BTreeSet;
use std::time::Duration;

use common::lab;
use floe::airflow::endpoints::sources::SourceKey;
use floe::airflow::scan::{self, CodeRead};
use floe::airflow::{AirflowClient, ApiVersion};
use floe::config::{AirflowApi, AirflowSettings, TlsSettings};
use floe::dag_code::{CodeFacts, CodeRule, DagCode};
use secrecy::SecretString;

const SERVERS: [&str; 2] = ["airflow", "airflow2"];

/// Each DAG, the line of each handler that swallows around a Trino call, what it is
/// around, and the connection its tasks use.
const EXPECTED: [(&str, &[usize], &str, &str); 5] = [
    (
        "compact_permits",
        &[56],
        "TrinoHook(...).run(...)",
        "trino_permits",
    ),
    ("dagcode_hook", &[39], "hook.run(...)", "trino_budget"),
    (
        "dagcode_operator",
        &[36],
        "op.execute(...)",
        "trino_inspections",
    ),
    (
        "dagcode_helper",
        &[29],
        "trino_execute(...)",
        "trino_staging",
    ),
    ("dagcode_clean", &[], "", "trino_default"),
];

fn settings(key: &str, url_field: &str) -> AirflowSettings {
    let l = lab();
    AirflowSettings {
        url: l.airflow_field(key, url_field).parse().unwrap(),
        user: Some(l.airflow_field(key, "user")),
        password: Some(SecretString::from(l.airflow_field(key, "password"))),
        token: None,
        api: if key == "airflow" {
            AirflowApi::V2
        } else {
            AirflowApi::V1
        },
        tls: TlsSettings {
            ca_file: None,
            insecure_skip_verify: false,
        },
        dag_tags: vec!["lab-dagcode".into()],
        dag_ids: vec!["compact_permits".into()],
        runs: 5,
        test_connections: false,
        max_response_size: floe::config::DEFAULT_MAX_RESPONSE_SIZE,
        max_log_size: floe::config::DEFAULT_MAX_LOG_SIZE,
    }
}

fn read<'a>(codes: &'a std::collections::BTreeMap<String, CodeFacts>, dag: &str) -> &'a DagCode {
    match codes.get(dag) {
        Some(CodeFacts::Read(c)) => c,
        other => panic!("{dag}: {other:?}"),
    }
}

#[tokio::test]
async fn each_swallowing_handler_is_found_at_its_line_and_none_on_the_clean_dag() {
    for key in SERVERS {
        let c = AirflowClient::connect(&settings(key, "url")).await.unwrap();
        let dags = c.configured_dags().await.unwrap();
        let ids: BTreeSet<String> = EXPECTED.iter().map(|e| e.0.to_string()).collect();
        let listed: BTreeSet<String> = dags.iter().map(|d| d.dag_id.clone()).collect();
        assert_eq!(listed, ids, "{key}: the DAGs Airflow parsed");
        let codes = scan::codes(&c, &dags, &ids, 4).await;
        for (dag, lines, around, conn) in EXPECTED {
            let code = read(&codes, dag);
            assert_eq!(code.file, format!("{dag}.py"), "{key}");
            assert_eq!(code.unparsed, None, "{key} {dag}");
            let swallowing: Vec<_> = code
                .findings
                .iter()
                .filter(|f| f.rule == CodeRule::SwallowsErrors)
                .collect();
            assert_eq!(
                swallowing.iter().map(|f| f.line).collect::<Vec<_>>(),
                lines,
                "{key} {dag}: {:?}",
                code.findings
            );
            if let Some(f) = swallowing.first() {
                assert_eq!(f.around.as_deref(), Some(around), "{key} {dag}");
            }
            assert_eq!(code.connection_ids(), vec![conn], "{key} {dag}");
        }
        assert_eq!(
            read(&codes, "compact_permits")
                .swallowing()
                .unwrap()
                .text("compact_permits.py"),
            "may hide failures: compact_permits.py:56 `except: pass` around `TrinoHook(...).run(...)`"
        );
        // The clean DAG: no finding of any rule, whatever the table's size.
        assert_eq!(
            read(&codes, "dagcode_clean").advice(&|_| None),
            vec![],
            "{key}"
        );
        // The seed's DAG lacks what its author added after the incident.
        let permits: Vec<CodeRule> = read(&codes, "compact_permits")
            .findings
            .iter()
            .map(|f| f.rule)
            .collect();
        assert_eq!(
            permits,
            vec![
                CodeRule::NoFreshnessCheck,
                CodeRule::CatchupOverlap,
                CodeRule::NoRetries,
                CodeRule::SwallowsErrors
            ],
            "{key}"
        );
    }
}

#[tokio::test]
async fn a_source_is_read_once_per_version() {
    for key in SERVERS {
        let c = AirflowClient::connect(&settings(key, "url")).await.unwrap();
        let dag = c.dag("compact_permits").await.unwrap();
        let k = c.source_key(&dag).await.unwrap();
        let again = scan::read_code(&c, &dag, Some(k.clone())).await.unwrap();
        match c.api() {
            // Airflow 3 numbers each version: the same number is not read again.
            ApiVersion::V2 => {
                assert!(
                    matches!(&k, SourceKey::V2 { version_number: Some(n), .. } if *n >= 1),
                    "{k:?}"
                );
                assert_eq!(again, CodeRead::Unchanged, "{key}");
            }
            // Airflow 2's token names the file's path: the file is read again.
            ApiVersion::V1 => {
                assert!(matches!(k, SourceKey::V1 { .. }), "{k:?}");
                assert!(matches!(again, CodeRead::Read { .. }), "{key}");
            }
        }
    }
}

#[tokio::test]
async fn a_source_airflow_refuses_or_cannot_find_says_so() {
    let _one = crate::faults_airflow::PROXY.lock().await;
    for key in SERVERS {
        let c = AirflowClient::connect(&settings(key, "proxy_url"))
            .await
            .unwrap();
        let dags = c.configured_dags().await.unwrap();
        let ids: BTreeSet<String> = ["dagcode_hook".to_string()].into();
        for (status, note) in [
            (403, "source refused: HTTP 403"),
            (404, "no source: HTTP 404"),
        ] {
            lab().proxy_clear(key).await;
            lab()
                .proxy_faults(
                    key,
                    serde_json::json!([{"kind": "status", "status": status, "path": "/dagSources/",
                        "body": "{\"detail\": \"no\"}", "content_type": "application/json"}]),
                )
                .await;
            let codes = scan::codes(&c, &dags, &ids, 1).await;
            lab().proxy_clear(key).await;
            let facts = &codes["dagcode_hook"];
            assert_eq!(facts.row_note().as_deref(), Some(note), "{key}: {facts:?}");
            let CodeFacts::Unread { error, .. } = facts else {
                panic!("{key}: {facts:?}")
            };
            assert!(
                error.contains(&format!("HTTP {status}")) && error.contains("/dagSources/"),
                "{key}: the error names the status and the URL: {error}"
            );
        }
    }
}

#[test]
fn check_carries_the_findings_with_file_and_line() {
    for key in SERVERS {
        let a = &lab().v[key];
        let url = lab().trino_url();
        let home =
            std::env::temp_dir().join(format!("floe-dagcode-check-{key}-{}", std::process::id()));
        let cfg = home.join("config.toml");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(
            &cfg,
            format!(
                "[trino]\nurl = \"{url}\"\nuser = \"floe\"\nschemas = [\"zoning\"]\n\n[airflow]\nurl = \"{}\"\nuser = \"{}\"\npassword_env = \"DAGCODE_AIRFLOW_PASSWORD\"\ndag_tags = [\"lab-dagcode\"]\ndag_ids = [\"compact_permits\"]\n",
                a["url"].as_str().unwrap(),
                a["user"].as_str().unwrap(),
            ),
        )
        .unwrap();
        let run = |format: &str| {
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_floe"))
                .args([
                    "check",
                    "--config",
                    cfg.to_str().unwrap(),
                    "--format",
                    format,
                ])
                .env("DAGCODE_AIRFLOW_PASSWORD", a["password"].as_str().unwrap())
                .env("XDG_CONFIG_HOME", home.join("c"))
                .env("XDG_STATE_HOME", home.join("s"))
                .env("XDG_CACHE_HOME", home.join("cache"))
                .output()
                .unwrap();
            String::from_utf8(out.stdout).unwrap()
        };
        let text = run("text");
        let line = "code: may hide failures: compact_permits.py:56 `except: pass` around `TrinoHook(...).run(...)`";
        assert!(text.contains(line), "{key}: {text}");
        assert!(
            text.contains("code: may hide failures: dagcode_helper.py:29 `except BaseException: return False` around `trino_execute(...)`"),
            "{key}: {text}"
        );
        // The incident names the line.
        assert!(
            text.lines()
                .any(|l| l.contains("DAG compact_permits reports success")
                    && l.contains("may hide failures: compact_permits.py:56")),
            "{key}: {text}"
        );
        let json: serde_json::Value = serde_json::from_str(&run("json")).unwrap();
        let dags = json["dags"].as_array().unwrap();
        let permits = dags
            .iter()
            .find(|d| d["dag_id"] == "compact_permits")
            .unwrap();
        let swallowing = permits["code_findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["rule"] == "swallows_errors")
            .unwrap_or_else(|| panic!("{key}: {permits}"));
        assert_eq!(swallowing["file"], "compact_permits.py");
        assert_eq!(swallowing["line"], 56);
        let clean = dags
            .iter()
            .find(|d| d["dag_id"] == "dagcode_clean")
            .unwrap();
        assert_eq!(clean["code"]["source"], "read", "{key}: {clean}");
        assert_eq!(
            clean["code_findings"],
            serde_json::json!([]),
            "{key}: {clean}"
        );
        let md = run("markdown");
        assert!(md.contains("#### DAG code"), "{key}: {md}");
        assert!(md.contains("compact\\_permits.py:56"), "{key}: {md}");
        // `floe report` of the table the DAG maintains: the same lines, with file and line.
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_floe"))
            .args([
                "report",
                "zoning.permits",
                "--config",
                cfg.to_str().unwrap(),
            ])
            .env("DAGCODE_AIRFLOW_PASSWORD", a["password"].as_str().unwrap())
            .env("XDG_CONFIG_HOME", home.join("c"))
            .env("XDG_STATE_HOME", home.join("s"))
            .env("XDG_CACHE_HOME", home.join("cache"))
            .output()
            .unwrap();
        let report = String::from_utf8(out.stdout).unwrap();
        assert!(
            report
                .contains("- code: may hide failures: compact\\_permits.py:56 \\`except: pass\\`"),
            "{key}: {report}"
        );
    }
}

/// floe on the lab's Airflow 3, through its fault proxy, at 80x24 under `LANG=C`.
fn tui(cfg_dir: &std::path::Path) -> Pty {
    let a = &lab().v["airflow"];
    let cfg = cfg_dir.join("config.toml");
    std::fs::create_dir_all(cfg_dir).unwrap();
    std::fs::write(
        &cfg,
        format!(
            "start_tab = \"triage\"\nrefresh = \"10s\"\n\n[trino]\nurl = \"{}\"\nuser = \"floe\"\nschemas = [\"zoning\", \"finance\"]\n\n[airflow]\nurl = \"{}\"\nuser = \"{}\"\npassword_env = \"DAGCODE_AIRFLOW_PASSWORD\"\ndag_tags = [\"lab-dagcode\"]\ndag_ids = [\"compact_permits\"]\n",
            lab().trino_url(),
            a["proxy_url"].as_str().unwrap(),
            a["user"].as_str().unwrap(),
        ),
    )
    .unwrap();
    Pty::spawn_env(
        &["--config", cfg.to_str().unwrap()],
        &[
            ("DAGCODE_AIRFLOW_PASSWORD", a["password"].as_str().unwrap()),
            ("LANG", "C"),
        ],
        80,
        24,
    )
}

#[tokio::test]
async fn from_triage_to_the_line_at_80x24_over_lang_c_and_the_refused_source_on_its_row() {
    let _one = crate::faults_airflow::PROXY.lock().await;
    lab().proxy_clear("airflow").await;
    // Airflow refuses one DAG's source and cannot find another's.
    lab()
        .proxy_faults(
            "airflow",
            serde_json::json!([
                {"kind": "status", "status": 403, "path": "/dagSources/dagcode_hook$",
                 "body": "{\"detail\": \"Forbidden\"}", "content_type": "application/json"},
                {"kind": "status", "status": 404, "path": "/dagSources/dagcode_operator$",
                 "body": "{\"detail\": \"not found\"}", "content_type": "application/json"}
            ]),
        )
        .await;
    let dir = std::env::temp_dir().join(format!("floe-dagcode-tui-{}", std::process::id()));
    let mut pty = tui(&dir);
    let ascii = |s: &str| s.is_ascii();
    // Triage: the incident of the DAG that reports success; selected, it names the line.
    let s = pty.wait_for(
        "the incident of the DAG that reports success",
        Duration::from_secs(150),
        |s| s.contains("WARN DAG compact_permits reports success"),
    );
    assert!(ascii(&s), "{s}");
    // Down to it (its detail under the list), then the line once its code is read.
    for _ in 0..12 {
        if pty
            .screen()
            .contains("WARNING DAG compact_permits reports success")
        {
            break;
        }
        pty.send(b"j");
        std::thread::sleep(Duration::from_millis(300));
    }
    let s = pty.wait_for(
        "the incident naming the line",
        Duration::from_secs(60),
        |s| s.contains("enter: the code of compact_permits.py at line 56"),
    );
    assert!(
        s.contains("may hide failures: compact_permits.py:56"),
        "{s}"
    );
    pty.send(b"\r");
    let s = pty.wait_for("the source view at line 56", Duration::from_secs(20), |s| {
        s.contains(" compact_permits.py . v1 ")
            && s.lines()
                .any(|l| l.starts_with("56 >") && l.contains("except:  # noqa"))
    });
    assert!(ascii(&s), "{s}");
    assert!(s.contains("esc back"), "{s}");
    // `/` finds a line; Esc clears the search, Esc again goes back to Triage.
    pty.send(b"/");
    pty.send(b"get_connection_nope");
    pty.send(b"\r");
    std::thread::sleep(Duration::from_millis(300));
    pty.send(b"/");
    for _ in 0..20 {
        pty.send(b"\x7f");
    }
    pty.send(b"history_start");
    pty.send(b"\r");
    pty.wait_for(
        "the search's line at the top",
        Duration::from_secs(10),
        |s| {
            s.contains("(history_start)")
                && s.lines()
                    .any(|l| l.starts_with("30 ") && l.contains("def history_start"))
        },
    );
    // (Each Esc alone: an Esc and the next key at once read as one Alt chord.)
    pty.send(b"\x1b");
    std::thread::sleep(Duration::from_millis(300));
    pty.send(b"\x1b");
    pty.wait_for("back on Triage", Duration::from_secs(10), |s| {
        s.contains("compact_permits.py:56") && !s.contains("esc back")
    });
    // The DAGs tab (still on the source the jump opened: Esc to its list): the refused
    // and the missing source on their rows.
    std::thread::sleep(Duration::from_millis(300));
    pty.send(b"4");
    pty.wait_for("the DAGs tab on the source", Duration::from_secs(10), |s| {
        s.contains(" compact_permits.py . v1 ")
    });
    std::thread::sleep(Duration::from_millis(300));
    pty.send(b"\x1b");
    let s = pty.wait_for(
        "the refused and missing sources",
        Duration::from_secs(60),
        |s| {
            s.contains("dagcode_hook (paused; source refused: HTTP 403)")
                && s.contains("dagcode_operator (paused; no source: HTTP 404)")
        },
    );
    assert!(ascii(&s), "{s}");
    lab().proxy_clear("airflow").await;
    pty.send(b"q");
    pty.wait_exit(Duration::from_secs(20));
    pty.assert_restored();
    let _ = std::fs::remove_dir_all(&dir);
}
