//! Airflow's connection tests as verdicts, on the lab's real Airflow 3 (`airflow`) and
//! Airflow 2 (`airflow2`): a test is evidence only when it tested the stored connection,
//! the worker's test (3.3+) is used where it can be one and said, and where Airflow tests
//! nothing (`[core] test_connection` at its default, Disabled, as the lab's Airflow 2 runs;
//! answered 403 by the fault proxy in front of Airflow 3 where a test needs it) the seed's
//! story still ends at the connection holding the endpoint its failing task could not
//! resolve. Airflow 2's second API process has the test enabled (`tested_url`).
//!
//! The password-protected Trino is the lab's stand-in HTTPS listener (`stand_in.https_url`,
//! its own CA, user `alice`), each test with connections of its own, deleted afterwards.

use crate::common;

use std::process::Command;

use common::lab;
use floe::airflow::{AirflowClient, ClientOptions, Connection, ConnectionTest, TestSite, Tested};
use floe::config::{AirflowApi, AirflowSettings, TlsSettings};
use floe::health::airflow::tested_finding;
use floe::health::{Rule, Severity};
use secrecy::SecretString;
use serde_json::{Value, json};

const SERVERS: [&str; 2] = ["airflow", "airflow2"];

fn admin(key: &str) -> AirflowSettings {
    let l = lab();
    AirflowSettings {
        url: l.airflow_field(key, "url").parse().unwrap(),
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
        dag_tags: vec!["maintenance".into()],
        dag_ids: vec![],
        runs: 25,
        test_connections: true,
        max_response_size: floe::config::DEFAULT_MAX_RESPONSE_SIZE,
        max_log_size: floe::config::DEFAULT_MAX_LOG_SIZE,
    }
}

async fn client(key: &str) -> AirflowClient {
    AirflowClient::connect_with(&admin(key), ClientOptions::default())
        .await
        .unwrap_or_else(|e| panic!("{key}: {e}"))
}

/// The Airflow of `key` where its connection test is enabled: Airflow 3 as the lab runs
/// it; Airflow 2 (as deployed: Disabled) through its second API process that enables it
/// (`tested_url`, same metadata DB).
async fn testing_client(key: &str) -> AirflowClient {
    let mut settings = admin(key);
    if lab().v[key]["test_connection"] == "Disabled" {
        settings.url = lab().airflow_field(key, "tested_url").parse().unwrap();
    }
    AirflowClient::connect_with(&settings, ClientOptions::default())
        .await
        .unwrap_or_else(|e| panic!("{key}: {e}"))
}

/// A request to one of the lab's Airflows as its admin, through curl (independent of floe).
/// A request of the test's own setup to Airflow's API. The lab's Airflow 3 keeps its
/// metadata on SQLite, where two requests' writes at once can deadlock until one fails
/// "Database error" (a 500); such a request is sent once more.
fn curl(key: &str, method: &str, path: &str, body: Option<&Value>) -> Value {
    let v = curl_once(key, method, path, body);
    if v["detail"]["reason"] == "Database error" {
        return curl_once(key, method, path, body);
    }
    v
}

fn curl_once(key: &str, method: &str, path: &str, body: Option<&Value>) -> Value {
    let a = &lab().v[key];
    let base = a["url"].as_str().unwrap();
    let api = a["api"].as_str().unwrap();
    let mut cmd = Command::new("curl");
    cmd.args(["-s", "-X", method, "-H", "Content-Type: application/json"]);
    if api == "v2" {
        let tok = Command::new("curl")
            .args([
                "-s",
                "-X",
                "POST",
                "-H",
                "Content-Type: application/json",
                "-d",
            ])
            .arg(json!({"username": a["user"], "password": a["password"]}).to_string())
            .arg(format!("{base}/auth/token"))
            .output()
            .unwrap();
        let tok: Value = serde_json::from_slice(&tok.stdout).unwrap();
        cmd.args([
            "-H",
            &format!(
                "Authorization: Bearer {}",
                tok["access_token"].as_str().unwrap()
            ),
        ]);
    } else {
        cmd.args([
            "-u",
            &format!(
                "{}:{}",
                a["user"].as_str().unwrap(),
                a["password"].as_str().unwrap()
            ),
        ]);
    }
    if let Some(b) = body {
        cmd.args(["-d", &b.to_string()]);
    }
    let out = cmd.arg(format!("{base}/api/{api}{path}")).output().unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
}

/// A connection of this test's own to the stand-in's password listener, deleted on drop.
struct Own {
    key: &'static str,
    id: String,
}

impl Own {
    fn secure(key: &'static str, name: &str, password: &str) -> Own {
        let id = format!("floe_test_{name}_{}", std::process::id());
        let own = Own { key, id };
        own.delete();
        let https = url::Url::parse(&lab().https_url()).unwrap();
        let extra = json!({
            "protocol": "https",
            "verify": lab().ca_file(),
            "catalog": "iceberg",
        });
        let made = curl(
            key,
            "POST",
            "/connections",
            Some(&json!({
                "connection_id": own.id, "conn_type": "trino", "host": "localhost",
                "port": https.port().unwrap(), "login": "alice", "password": password,
                "schema": "zoning", "extra": extra.to_string(),
            })),
        );
        assert_eq!(made["connection_id"], own.id.as_str(), "{key}: {made}");
        own
    }

    fn delete(&self) {
        curl(
            self.key,
            "DELETE",
            &format!("/connections/{}", self.id),
            None,
        );
    }

    /// The connection as floe lists it.
    async fn listed(&self, c: &AirflowClient) -> Connection {
        c.connections()
            .await
            .unwrap()
            .into_iter()
            .find(|c| c.connection_id == self.id)
            .unwrap_or_else(|| panic!("{}: no {} listed", self.key, self.id))
    }
}

impl Drop for Own {
    fn drop(&mut self) {
        self.delete();
    }
}

fn endpoint(c: &Connection) -> String {
    format!("{}:{}", c.host.as_deref().unwrap(), c.port.unwrap())
}

/// A Trino connection behind a password authenticator: floe never reads the password, so
/// only a test that merges the stored one is a verdict. Airflow 3 merges it (the API
/// server's test; its worker test would take only what floe sends): the right password
/// passes, a wrong one fails. Airflow 2 tests only what it is sent: its refusal of the
/// missing password is no verdict on either, and no finding calls the connection broken.
#[tokio::test]
async fn a_password_connection_is_judged_only_by_a_test_of_the_stored_one() {
    let floe_url = url::Url::parse(&lab().trino_url()).unwrap();
    for key in SERVERS {
        let good = Own::secure(key, "secure", "alice-secret");
        let bad = Own::secure(key, "secure_bad", "not-alices-password");
        let c = testing_client(key).await;
        let (g, b) = (good.listed(&c).await, bad.listed(&c).await);
        let tested_g = c.check_connection(&g).await.unwrap();
        let tested_b = c.check_connection(&b).await.unwrap();
        if key == "airflow" {
            assert_eq!(g.secret, Some(true), "v2 lists the stored password as ***");
            assert_eq!(
                tested_g,
                Tested {
                    test: ConnectionTest::Passed("Connection successfully tested".into()),
                    site: TestSite::ApiServer,
                },
                "{key}"
            );
            match &tested_b.test {
                ConnectionTest::Failed(m) => assert!(m.contains("401"), "{key}: {m}"),
                other => panic!("{key}: a wrong stored password is a verdict: {other:?}"),
            }
        } else {
            for t in [&tested_g, &tested_b] {
                match &t.test {
                    ConnectionTest::NoVerdict(m) => assert!(
                        m.starts_with("Airflow 2 tests only the fields it is sent")
                            && m.contains("401"),
                        "{key}: {m}"
                    ),
                    other => panic!("{key}: {other:?}"),
                }
            }
        }
        let f =
            tested_finding(&g.connection_id, &endpoint(&g), &floe_url, Some(&tested_g)).unwrap();
        assert_ne!(f.rule, Rule::AirflowConnectionFailing, "{key}: {f:?}");
        assert_eq!(f.severity, Severity::Info, "{key}: {f:?}");
    }
}

/// On Airflow 3.3+ a connection that stores no secret is tested on a worker (the tasks'
/// network), and floe says so.
#[tokio::test]
async fn a_connection_without_a_secret_is_tested_on_a_worker_and_floe_says_so() {
    let c = client("airflow").await;
    let conns = c.connections().await.unwrap();
    let get = |id: &str| {
        conns
            .iter()
            .find(|c| c.connection_id == id)
            .unwrap_or_else(|| panic!("no {id}"))
            .clone()
    };
    let dead = get("trino_documents");
    assert_eq!(dead.secret, Some(false));
    let t = c.check_connection(&dead).await.unwrap();
    assert_eq!(t.site, TestSite::Worker, "{t:?}");
    match &t.test {
        ConnectionTest::Failed(m) => assert!(m.contains("trino-old.internal"), "{m}"),
        other => panic!("{other:?}"),
    }
    let floe_url = url::Url::parse(&lab().trino_url()).unwrap();
    let f = tested_finding(&dead.connection_id, &endpoint(&dead), &floe_url, Some(&t)).unwrap();
    assert!(
        f.message
            .starts_with("Airflow connection trino_documents points at trino-old.internal:8080 and fails its test on a worker: "),
        "{}",
        f.message
    );
    let t = c.check_connection(&get("trino_default")).await.unwrap();
    assert_eq!(
        (t.site, matches!(t.test, ConnectionTest::Passed(_))),
        (TestSite::Worker, true),
        "{t:?}"
    );
}

/// `floe check --format json` with Airflow behind its fault proxy.
fn check_through_proxy(key: &str) -> Value {
    let a = &lab().v[key];
    let home = std::env::temp_dir().join(format!("floe-conn-tests-{key}-{}", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_floe"))
        .args([
            "check",
            "--trino",
            &lab().trino_url(),
            "--user",
            "floe",
            "--format",
            "json",
            "--schema",
            "zoning",
            "--airflow",
            a["proxy_url"].as_str().unwrap(),
            "--airflow-user",
            a["user"].as_str().unwrap(),
        ])
        .env("FLOE_AIRFLOW_PASSWORD", a["password"].as_str().unwrap())
        .env("XDG_CONFIG_HOME", home.join("c"))
        .env("XDG_STATE_HOME", home.join("s"))
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{key}: {e}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// Airflow as deployed: `[core] test_connection` at its default, so every connection test
/// answers 403 (both routes, as Airflow words it). The seed's story still ends at the
/// connection: the failing task's error names trino-old.internal:8080, the connection
/// holding that endpoint is the suspect, in those words, and its fix is offered.
#[tokio::test]
async fn with_connection_tests_disabled_the_seed_story_ends_at_its_connection() {
    let _one = crate::faults_airflow::PROXY.lock().await;
    const DISABLED: &str = "Testing connections is disabled in Airflow configuration. Contact your deployment admin to enable it.";
    for key in SERVERS {
        let body = if key == "airflow" {
            json!({ "detail": DISABLED }).to_string()
        } else {
            json!({"detail": DISABLED, "status": 403, "title": "Forbidden", "type": "about:blank"})
                .to_string()
        };
        lab().proxy_clear(key).await;
        lab()
            .proxy_faults(
                key,
                json!([{"kind": "status", "status": 403, "method": "POST",
                        "path": "/connections/(test|enqueue-test)$", "body": body,
                        "content_type": "application/json"}]),
            )
            .await;
        let report = tokio::task::spawn_blocking(move || check_through_proxy(key))
            .await
            .unwrap();
        let asked: Vec<Value> = lab().proxy_requests(key).await;
        lab().proxy_clear(key).await;
        assert!(
            asked
                .iter()
                .any(|r| r["rule"] == "status"
                    && r["path"].as_str().unwrap().contains("/connections/")),
            "{key}: the connection tests were asked and refused: {asked:?}"
        );
        let incidents = report["incidents"].as_array().unwrap();
        let doc = incidents
            .iter()
            .find(|i| {
                i["dags"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|d| d == "compact_documents")
            })
            .unwrap_or_else(|| panic!("{key}: no incident of compact_documents: {report}"));
        let cause = doc["cause"].as_str().unwrap();
        assert!(
            cause.contains(
                "(connection trino_documents → trino-old.internal:8080, the host the failing task could not resolve; Airflow does not test connections here)"
            ),
            "{key}: {cause}"
        );
        let next = doc["next"].to_string();
        assert!(
            next.contains("\"fix_connection\"") && next.contains("\"trino_documents\""),
            "{key}: {next}"
        );
        assert_eq!(doc["severity"], "CRITICAL", "{key}: {doc}");
    }
}

/// A connection of this test's own at the seed's dead host, without a password.
fn dead_connection(key: &'static str, name: &str) -> Own {
    let id = format!("floe_test_{name}_{}", std::process::id());
    let own = Own { key, id };
    own.delete();
    let made = curl(
        key,
        "POST",
        "/connections",
        Some(&json!({
            "connection_id": own.id, "conn_type": "trino", "host": "trino-old.internal",
            "port": 8080, "login": "floe", "schema": "zoning",
            "extra": "{\"catalog\": \"iceberg\", \"protocol\": \"http\"}",
        })),
    );
    assert_eq!(made["connection_id"], own.id.as_str(), "{key}: {made}");
    own
}

/// Where Airflow tests nothing, `floe connection … --yes` writes the fix, says the DAG's
/// next run proves it (not a test) and exits 0; the audit records the write and a test
/// `not_allowed`.
#[tokio::test]
async fn with_connection_tests_disabled_a_fix_is_proven_by_the_next_run() {
    let _one = crate::faults_airflow::PROXY.lock().await;
    let trino = url::Url::parse(&lab().trino_url()).unwrap();
    let target = format!("{}:{}", trino.host_str().unwrap(), trino.port().unwrap());
    for key in SERVERS {
        let own = dead_connection(key, "fix_untested");
        lab().proxy_clear(key).await;
        lab()
            .proxy_faults(
                key,
                json!([{"kind": "status", "status": 403, "method": "POST",
                        "path": "/connections/(test|enqueue-test)$"}]),
            )
            .await;
        let a = &lab().v[key];
        let home =
            std::env::temp_dir().join(format!("floe-conn-untested-{key}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&home);
        let args = [
            "--trino".to_string(),
            lab().trino_url(),
            "--airflow".into(),
            a["proxy_url"].as_str().unwrap().into(),
            "--airflow-user".into(),
            a["user"].as_str().unwrap().into(),
            "connection".into(),
            own.id.clone(),
            target.clone(),
            "--yes".into(),
        ];
        let password = a["password"].as_str().unwrap().to_string();
        let h = home.clone();
        let out = tokio::task::spawn_blocking(move || {
            Command::new(env!("CARGO_BIN_EXE_floe"))
                .args(&args)
                .env_clear()
                .env("PATH", std::env::var("PATH").unwrap_or_default())
                .env("HOME", &h)
                .env("XDG_CONFIG_HOME", h.join("config"))
                .env("XDG_STATE_HOME", h.join("state"))
                .env("USER", "floe")
                .env("FLOE_AIRFLOW_PASSWORD", password)
                .output()
                .unwrap()
        })
        .await
        .unwrap();
        lab().proxy_clear(key).await;
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            said.contains(&format!(
                "connection {} → {target}; not tested (not allowed by the server",
                own.id
            )) && said.contains("): the DAG's next run proves it (t trigger)"),
            "{key}: {said}"
        );
        assert_eq!(out.status.code(), Some(0), "{key}: {said}");
        let now = curl(key, "GET", &format!("/connections/{}", own.id), None);
        assert_eq!(
            format!("{}:{}", now["host"].as_str().unwrap(), now["port"]),
            target,
            "{key}: {now}"
        );
        let audit = std::fs::read_to_string(home.join("state/floe/audit.jsonl")).unwrap();
        let outcomes: Vec<(String, String)> = audit
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .map(|r| {
                (
                    r["action"].as_str().unwrap().to_string(),
                    r["outcome"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        assert_eq!(
            outcomes,
            [
                ("fix_connection", "started"),
                ("fix_connection", "succeeded"),
                ("test_connection", "not_allowed")
            ]
            .map(|(a, o)| (a.to_string(), o.to_string())),
            "{key}: {audit}"
        );
    }
}

/// Two tests of one connection at once (two operators, or floe beside the Airflow UI):
/// Airflow answers the second 409 while the first runs; it is enqueued again once that
/// one ends, and both are the worker's verdict.
#[tokio::test]
async fn two_tests_of_one_connection_at_once_both_run_on_a_worker() {
    let c = client("airflow").await;
    let conns = c.connections().await.unwrap();
    let dead = conns
        .iter()
        .find(|c| c.connection_id == "trino_documents")
        .expect("trino_documents")
        .clone();
    let (a, b) = tokio::join!(c.check_connection(&dead), c.check_connection(&dead));
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!(
        (a.site, b.site),
        (TestSite::Worker, TestSite::Worker),
        "{a:?} {b:?}"
    );
    for t in [a, b] {
        assert!(
            matches!(&t.test, ConnectionTest::Failed(m) if m.contains("trino-old.internal")),
            "{t:?}"
        );
    }
}

/// A worker test whose enqueue the API server answers with a server error (a 500 as two
/// requests deadlock on its metadata DB; a 504 after it enqueued the test) is enqueued
/// once more, through the lab's Airflow fault proxy, and its verdict is the worker's (a
/// test of the same connection by another subject meanwhile answers 409s, which wait).
#[tokio::test]
async fn a_server_error_on_the_enqueue_is_asked_once_more_and_the_worker_still_answers() {
    let _one = crate::faults_airflow::PROXY.lock().await;
    let key = "airflow";
    let mut settings = admin(key);
    settings.url = lab().airflow_field(key, "proxy_url").parse().unwrap();
    let c = AirflowClient::connect_with(&settings, ClientOptions::default())
        .await
        .unwrap();
    let dead = c
        .connections()
        .await
        .unwrap()
        .into_iter()
        .find(|c| c.connection_id == "trino_documents")
        .expect("trino_documents");
    for (rule, posts) in [
        (
            json!({"kind": "status", "status": 500, "method": "POST", "path": "/connections/enqueue-test$", "count": 1}),
            2..=20,
        ),
        (
            json!({"kind": "status", "status": 504, "method": "POST", "path": "/connections/enqueue-test$", "forward": true, "count": 1}),
            2..=20,
        ),
    ] {
        lab().proxy_clear(key).await;
        lab().proxy_faults(key, json!([rule.clone()])).await;
        let t = c.check_connection(&dead).await;
        let sent = lab()
            .proxy_requests(key)
            .await
            .into_iter()
            .filter(|r| {
                r["method"] == "POST"
                    && r["path"]
                        .as_str()
                        .is_some_and(|p| p.ends_with("/connections/enqueue-test"))
            })
            .count();
        lab().proxy_clear(key).await;
        let t = t.unwrap_or_else(|e| panic!("{rule}: {e}"));
        assert_eq!(t.site, TestSite::Worker, "{rule}: {t:?}");
        assert!(
            matches!(&t.test, ConnectionTest::Failed(m) if m.contains("trino-old.internal")),
            "{rule}: {t:?}"
        );
        assert!(posts.contains(&sent), "{rule}: {sent} enqueues sent");
    }
}
