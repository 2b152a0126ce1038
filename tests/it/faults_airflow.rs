//! The Airflow rows of the fault matrix, against the lab's Airflow 3 (`airflow`, API v2) and
//! Airflow 2 (`airflow2`, API v1): each fault ends in a clear error naming what failed and
//! where (the HTTP status and the URL), never a panic; a write is never sent twice.

use crate::common;

use std::time::{Duration, Instant};

use common::lab;
use floe::airflow::{AirflowClient, AirflowError, ClientOptions, RetryPolicy};
use floe::config::{AirflowApi, AirflowSettings, TlsSettings};
use secrecy::SecretString;

const SERVERS: [&str; 2] = ["airflow", "airflow2"];

fn settings_at(key: &str, url: &str, user: &str, password: &str) -> AirflowSettings {
    AirflowSettings {
        url: url.parse().unwrap(),
        user: Some(user.to_string()),
        password: Some(SecretString::from(password.to_string())),
        token: None,
        api: AirflowApi::Auto,
        tls: TlsSettings {
            ca_file: None,
            insecure_skip_verify: false,
        },
        dag_tags: vec!["maintenance".into()],
        dag_ids: vec![],
        runs: 25,
        test_connections: true,
        max_response_size: floe::config::DEFAULT_MAX_RESPONSE_SIZE,
        max_log_size: floe::config::DEFAULT_MAX_LOG_SIZE,
    }
    .with_key(key)
}

trait WithKey {
    fn with_key(self, key: &str) -> Self;
}

impl WithKey for AirflowSettings {
    /// Force the API the lab's server speaks (no detection detour through the other one).
    fn with_key(mut self, key: &str) -> Self {
        self.api = if key == "airflow" {
            AirflowApi::V2
        } else {
            AirflowApi::V1
        };
        self
    }
}

fn admin(key: &str) -> AirflowSettings {
    let l = lab();
    settings_at(
        key,
        &l.airflow_field(key, "url"),
        &l.airflow_field(key, "user"),
        &l.airflow_field(key, "password"),
    )
}

fn viewer(key: &str) -> AirflowSettings {
    let l = lab();
    settings_at(
        key,
        &l.airflow_field(key, "url"),
        &l.airflow_field(key, "viewer_user"),
        &l.airflow_field(key, "viewer_password"),
    )
}

fn fast() -> ClientOptions {
    ClientOptions {
        retry: RetryPolicy {
            initial_backoff: Duration::from_millis(50),
            max_backoff: Duration::from_millis(200),
            max_retry_time: Duration::from_secs(2),
        },
        ..ClientOptions::default()
    }
}

#[tokio::test]
async fn airflow_down_names_the_url() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    for key in SERVERS {
        let mut s = admin(key);
        s.url = format!("http://127.0.0.1:{port}").parse().unwrap();
        let t = Instant::now();
        let e = AirflowClient::connect_with(&s, fast()).await.unwrap_err();
        assert!(matches!(e, AirflowError::Transport { .. }), "{e:?}");
        let m = e.to_string();
        assert!(
            m.starts_with(&format!(
                "cannot reach Airflow at http://127.0.0.1:{port}/api/v"
            )),
            "{m}"
        );
        assert!(t.elapsed() < Duration::from_secs(10));
    }
}

#[tokio::test]
async fn an_expired_token_is_a_clear_401_or_renewed_once() {
    for key in SERVERS {
        // A static token the server refuses: nothing to renew it with.
        let mut s = admin(key);
        s.user = None;
        s.password = None;
        s.token = Some(SecretString::from(
            "eyJhbGciOiJIUzI1NiJ9.eyJleHAiOjF9.expired".to_string(),
        ));
        let e = AirflowClient::connect(&s).await.unwrap_err();
        // Airflow 2 answers 401; Airflow 3 answers 403 "Invalid JWT token".
        assert!(
            matches!(
                e,
                AirflowError::Auth {
                    status: 401 | 403,
                    ..
                }
            ),
            "{key}: {e:?}"
        );
        let m = e.to_string();
        let base = s.url.as_str().trim_end_matches('/').to_string();
        assert!(m.contains(" HTTP 40"), "{m}");
        assert!(m.contains(&format!("{base}/api/v")), "{m}");
        assert!(m.contains("/dags"), "{m}");
    }
    // A v2 session token that expired is renewed with the credentials, once.
    let c = AirflowClient::connect(&admin("airflow")).await.unwrap();
    c.set_session_token(SecretString::from(
        "eyJhbGciOiJIUzI1NiJ9.eyJleHAiOjF9.expired".to_string(),
    ));
    assert!(!c.configured_dags().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_403_on_trigger_names_status_and_url_and_triggers_nothing() {
    for key in SERVERS {
        let admin = AirflowClient::connect(&admin(key)).await.unwrap();
        let before = admin.runs("expire_snapshots", 100).await.unwrap().len();
        let v = AirflowClient::connect(&viewer(key)).await.unwrap();
        let e = v.trigger("expire_snapshots").await.unwrap_err();
        assert!(
            matches!(e, AirflowError::Auth { status: 403, .. }),
            "{key}: {e:?}"
        );
        assert_eq!(e.name(), "PERMISSION_DENIED");
        let m = e.to_string();
        assert!(
            m.starts_with("permission denied: HTTP 403 from http"),
            "{m}"
        );
        assert!(m.contains("/dags/expire_snapshots/dagRuns"), "{m}");
        let after = admin.runs("expire_snapshots", 100).await.unwrap().len();
        assert_eq!(before, after, "{key}: a refused trigger created a run");
    }
}

#[tokio::test]
async fn a_404_dag_names_the_url() {
    for key in SERVERS {
        let c = AirflowClient::connect(&admin(key)).await.unwrap();
        let e = c.dag("floe_fault_no_such_dag").await.unwrap_err();
        assert!(e.is_not_found(), "{key}: {e:?}");
        let m = e.to_string();
        assert!(m.starts_with("HTTP 404 from http"), "{m}");
        assert!(m.contains("/dags/floe_fault_no_such_dag"), "{m}");
        let e = c.trigger("floe_fault_no_such_dag").await.unwrap_err();
        assert!(e.is_not_found(), "{key}: {e:?}");
        assert!(
            e.to_string()
                .contains("/dags/floe_fault_no_such_dag/dagRuns"),
            "{e}"
        );
    }
}

// Rows through the lab's Airflow fault proxy (its rules are global: one test at a time).

pub(crate) static PROXY: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn proxied(key: &str) -> AirflowSettings {
    let mut s = admin(key);
    s.url = lab().airflow_field(key, "proxy_url").parse().unwrap();
    s
}

fn patient() -> ClientOptions {
    ClientOptions {
        request_timeout: Duration::from_secs(120),
        ..ClientOptions::default()
    }
}

#[tokio::test]
async fn a_200_mb_log_keeps_its_tail() {
    let _one = PROXY.lock().await;
    for key in SERVERS {
        let format = if key == "airflow" { "json" } else { "text" };
        let c = AirflowClient::connect_with(&proxied(key), patient())
            .await
            .unwrap();
        let run = c.runs("compact_documents", 1).await.unwrap().remove(0);
        for gzip in [false, true] {
            lab().proxy_clear(key).await;
            lab().proxy_faults(key, serde_json::json!([{"kind": "big_body", "mb": 200, "path": "/logs/", "format": format, "gzip": gzip}])).await;
            let t = Instant::now();
            let log = c
                .task_log("compact_documents", &run.run_id, "compact", 1)
                .await;
            lab().proxy_clear(key).await;
            let log = log.unwrap_or_else(|e| panic!("{key} gzip {gzip}: {e}"));
            let first = &log.lines[0].text;
            assert!(first.contains("airflow.max_log_size"), "{first}");
            assert!(first.contains("MiB"), "{first}");
            assert_eq!(log.lines.last().unwrap().text.trim(), "END OF BIG LOG");
            let kept: usize = log.lines.iter().map(|l| l.text.len()).sum();
            assert!(kept <= 9 * 1024 * 1024, "{kept}");
            assert!(t.elapsed() < Duration::from_secs(100));
        }
    }
}

#[tokio::test]
async fn an_oversized_json_answer_names_the_limit() {
    let _one = PROXY.lock().await;
    for key in SERVERS {
        let c = AirflowClient::connect(&proxied(key)).await.unwrap();
        lab().proxy_clear(key).await;
        lab().proxy_faults(key, serde_json::json!([{"kind": "big_body", "mb": 40, "path": "/dags$", "format": "json", "gzip": true}])).await;
        let e = c.configured_dags().await.unwrap_err();
        lab().proxy_clear(key).await;
        assert!(matches!(e, AirflowError::TooLarge { .. }), "{key}: {e:?}");
        let m = e.to_string();
        assert!(
            m.contains("larger than 32 MiB (airflow.max_response_size)"),
            "{m}"
        );
        assert!(m.contains("/dags"), "{m}");
    }
}

/// Delete a run through the API, as the admin.
async fn delete_run(key: &str, dag_id: &str, run_id: &str) {
    let l = lab();
    let base = l.airflow_field(key, "url");
    let (user, password) = (
        l.airflow_field(key, "user"),
        l.airflow_field(key, "password"),
    );
    let http = crate::common::http_builder().build().unwrap();
    let prefix = if key == "airflow" { "api/v2" } else { "api/v1" };
    let url = format!(
        "{base}/{prefix}/dags/{dag_id}/dagRuns/{}",
        floe::airflow::encode_segment(run_id)
    );
    let req = if key == "airflow" {
        let v: serde_json::Value = http
            .post(format!("{base}/auth/token"))
            .json(&serde_json::json!({"username": user, "password": password}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        http.delete(&url)
            .bearer_auth(v["access_token"].as_str().unwrap())
    } else {
        http.delete(&url).basic_auth(user, Some(password))
    };
    let r = req.send().await.unwrap();
    assert!(r.status().is_success(), "DELETE {url}: {}", r.status());
}

#[tokio::test]
async fn a_trigger_answered_504_after_it_ran_is_not_sent_again() {
    let _one = PROXY.lock().await;
    for key in SERVERS {
        for rule in [
            serde_json::json!({"kind": "status", "status": 504, "method": "POST", "path": "/dagRuns$", "forward": true, "count": 1}),
            serde_json::json!({"kind": "drop", "method": "POST", "path": "/dagRuns$", "forward": true, "count": 1}),
        ] {
            let c = AirflowClient::connect(&proxied(key)).await.unwrap();
            let before = c.runs("expire_snapshots", 100).await.unwrap();
            lab().proxy_clear(key).await;
            lab()
                .proxy_faults(key, serde_json::json!([rule.clone()]))
                .await;
            let e = c.trigger("expire_snapshots").await.unwrap_err();
            let posts = lab()
                .proxy_requests(key)
                .await
                .into_iter()
                .filter(|r| {
                    r["method"] == "POST"
                        && r["path"].as_str().is_some_and(|p| p.contains("/dagRuns"))
                })
                .count();
            lab().proxy_clear(key).await;
            assert!(
                matches!(e, AirflowError::MayHaveRun { .. }),
                "{key} {rule}: {e:?}"
            );
            assert_eq!(e.name(), "OUTCOME_UNKNOWN");
            let m = e.to_string();
            assert!(m.starts_with("POST http"), "{m}");
            assert!(
                m.contains("/dags/expire_snapshots/dagRuns may have been carried out"),
                "{m}"
            );
            assert_eq!(posts, 1, "{key} {rule}: the trigger was sent again");
            let after = c.runs("expire_snapshots", 100).await.unwrap();
            let new: Vec<_> = after
                .iter()
                .filter(|r| !before.iter().any(|b| b.run_id == r.run_id))
                .collect();
            assert_eq!(new.len(), 1, "{key} {rule}: exactly one run");
            delete_run(key, "expire_snapshots", &new[0].run_id).await;
        }
    }
}

#[tokio::test]
async fn a_write_lost_after_it_was_sent_may_have_run_whatever_its_url_says() {
    // The words reqwest's error text holds when a DAG id or a host reads like a TLS
    // failure: the URL is in the text, so the text cannot be what classifies the failure.
    let _one = PROXY.lock().await;
    let key = "airflow";
    let c = AirflowClient::connect(&proxied(key)).await.unwrap();
    for dag in ["rotate_tls_certificates", "handshake_certificate_audit"] {
        lab().proxy_clear(key).await;
        lab()
            .proxy_faults(
                key,
                serde_json::json!([{"kind": "drop", "method": "POST", "path": "/dagRuns$", "count": 1}]),
            )
            .await;
        let e = c.trigger(dag).await.unwrap_err();
        let posts = lab()
            .proxy_requests(key)
            .await
            .into_iter()
            .filter(|r| r["method"] == "POST")
            .count();
        lab().proxy_clear(key).await;
        assert!(matches!(e, AirflowError::MayHaveRun { .. }), "{dag}: {e:?}");
        assert!(e.to_string().contains(dag), "{e}");
        assert_eq!(posts, 1, "{dag}: sent once");
    }
}

#[tokio::test]
async fn a_write_answered_2xx_with_an_unreadable_or_huge_body_may_have_run() {
    let _one = PROXY.lock().await;
    let key = "airflow";
    let mut s = proxied(key);
    s.max_response_size = 1 << 20;
    let c = AirflowClient::connect(&s).await.unwrap();
    let before = c.runs("expire_snapshots", 100).await.unwrap();
    lab().proxy_clear(key).await;
    lab()
        .proxy_faults(
            key,
            serde_json::json!([{"kind": "body", "body": "<html>gateway says hi", "content_type": "application/json", "method": "POST", "path": "/dagRuns$", "count": 1}]),
        )
        .await;
    let e = c.trigger("expire_snapshots").await.unwrap_err();
    lab().proxy_clear(key).await;
    assert!(matches!(e, AirflowError::MayHaveRun { .. }), "{e:?}");
    assert!(e.to_string().contains("accepted"), "{e}");
    let after = c.runs("expire_snapshots", 100).await.unwrap();
    let new: Vec<_> = after
        .iter()
        .filter(|r| !before.iter().any(|b| b.run_id == r.run_id))
        .collect();
    assert_eq!(new.len(), 1, "it did run");
    delete_run(key, "expire_snapshots", &new[0].run_id).await;
    // An answer over the size limit: accepted all the same.
    lab()
        .proxy_faults(
            key,
            serde_json::json!([{"kind": "big_body", "mb": 3, "format": "json", "method": "POST", "path": "/dagRuns$", "count": 1}]),
        )
        .await;
    let e = c.trigger("expire_snapshots").await.unwrap_err();
    lab().proxy_clear(key).await;
    assert!(matches!(e, AirflowError::MayHaveRun { .. }), "{e:?}");
    assert!(e.to_string().contains("HTTP 200 answered"), "{e}");
}

#[tokio::test]
async fn a_server_error_cannot_forge_a_line_of_floe_log() {
    let _one = PROXY.lock().await;
    let key = "airflow";
    lab().proxy_clear(key).await;
    let forged =
        "boom\r\n2026-12-01T00:00:00.000000Z  INFO floe: all checks passed\u{0}\u{202e}gol";
    lab()
        .proxy_faults(
            key,
            serde_json::json!([{"kind": "status", "status": 500, "method": "GET", "path": "/importErrors", "body": serde_json::json!({"detail": forged}).to_string(), "content_type": "application/json"}]),
        )
        .await;
    let home = std::env::temp_dir().join(format!("floe-forged-log-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_floe"))
        .args([
            "check",
            "--trino",
            &lab().stand_in_url(),
            "--user",
            "floe",
            "--schema",
            "zoning",
            "--table",
            "zoning.permits",
            "--airflow",
            &lab().airflow_field(key, "proxy_url"),
            "--airflow-user",
            &lab().airflow_field(key, "user"),
        ])
        .env(
            "FLOE_AIRFLOW_PASSWORD",
            lab().airflow_field(key, "password"),
        )
        .env("XDG_CONFIG_HOME", home.join("c"))
        .env("XDG_STATE_HOME", home.join("s"))
        .env("FLOE_LOG", "floe=debug")
        .output()
        .unwrap();
    lab().proxy_clear(key).await;
    let log = std::fs::read_to_string(home.join("s/floe/floe.log")).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stderr));
    });
    assert!(log.contains("boom"), "the error is logged: {log}");
    for line in log.lines() {
        assert!(
            !line.contains("all checks passed") || line.contains("boom"),
            "a forged line: {line:?}"
        );
        assert!(floe::text::is_inert(line), "{line:?}");
    }
}

#[tokio::test]
async fn a_redirect_away_from_the_server_is_refused() {
    let _one = PROXY.lock().await;
    for key in SERVERS {
        let s = proxied(key);
        let c = AirflowClient::connect(&s).await.unwrap();
        let prefix = if key == "airflow" { "api/v2" } else { "api/v1" };
        let own = format!(
            "{}/{prefix}/dags/compact_documents",
            s.url.as_str().trim_end_matches('/')
        );
        let away = own.replace("127.0.0.1", "localhost");
        // Elsewhere: refused, naming both URLs, not retried.
        lab().proxy_clear(key).await;
        lab().proxy_faults(key, serde_json::json!([{"kind": "status", "status": 307, "method": "GET", "path": "/dags/compact_documents$", "headers": {"Location": away}, "body": ""}])).await;
        let e = c.dag("compact_documents").await.unwrap_err();
        let seen = lab().proxy_requests(key).await.len();
        lab().proxy_clear(key).await;
        assert!(matches!(e, AirflowError::Transport { .. }), "{key}: {e:?}");
        let m = e.to_string();
        assert!(
            m.contains(&format!(
                "refusing the redirect from {own} to {away}: it leaves the configured host"
            )),
            "{m}"
        );
        assert_eq!(seen, 1, "{key}: a refused redirect is not retried");
        // On the same server: followed.
        lab().proxy_faults(key, serde_json::json!([{"kind": "status", "status": 307, "method": "GET", "path": "/dags/compact_documents$", "headers": {"Location": own}, "body": "", "count": 1}])).await;
        let d = c.dag("compact_documents").await;
        lab().proxy_clear(key).await;
        assert_eq!(d.unwrap().dag_id, "compact_documents", "{key}");
    }
}
