//! The Airflow client against the lab's real Airflow 3 (REST API v2, `lab.json` → `airflow`)
//! and Airflow 2 (API v1, `airflow2`). A missing lab is a failure, never a skip.
//!
//! The lab's DAGs: `compact_documents` fails every run in `compact` (dead host
//! `trino-old.internal:8080`), `compact_permits` "succeeds" (a bare except), `compact_parcels`
//! succeeds, `expire_snapshots` is paused without runs, `broken_dag.py` does not import.
//! Writes stay invisible to other tests: the trigger goes to the paused `expire_snapshots`
//! (its run stays queued) and the run is deleted afterwards; clears are dry runs; pausing
//! touches only the already-paused DAG.

use crate::common;

use std::process::Command;
use std::time::Duration;

use floe::airflow::{
    AirflowClient, AirflowError, ApiVersion, ClearScope, ClientOptions, ConnectionTest,
    DagRunState, HealthStatus, RetryPolicy, TaskState,
};
use floe::config::{AirflowApi, AirflowSettings, TlsSettings};
use secrecy::SecretString;
use serde_json::Value;

const DEAD_ENDPOINT: &str = "trino-old.internal:8080";
const DEFAULT_INTERVAL: Duration = Duration::from_secs(36 * 3600);
const MAINTENANCE: [&str; 4] = [
    "compact_documents",
    "compact_parcels",
    "compact_permits",
    "expire_snapshots",
];

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Server {
    /// Airflow 3, `lab.json` → `airflow`.
    Three,
    /// Airflow 2, `lab.json` → `airflow2`.
    Two,
}

fn entry(server: Server) -> &'static Value {
    let lab = common::lab();
    let (key, hint) = match server {
        Server::Three => ("airflow", "the lab was started with --no-airflow"),
        Server::Two => ("airflow2", "start the lab with --airflow2"),
    };
    let v = &lab.v[key];
    assert!(
        v.is_object(),
        "lab.json ({}) has no `{key}` entry: {hint}",
        lab.dir.display()
    );
    v
}

fn field(server: Server, name: &str) -> String {
    entry(server)[name]
        .as_str()
        .unwrap_or_else(|| panic!("lab.json {server:?} has no {name}"))
        .to_string()
}

fn settings_as(server: Server, user: &str, password: &str) -> AirflowSettings {
    AirflowSettings {
        url: field(server, "url").parse().unwrap(),
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
}

fn settings(server: Server) -> AirflowSettings {
    settings_as(server, &field(server, "user"), &field(server, "password"))
}

async fn client(server: Server) -> AirflowClient {
    AirflowClient::connect(&settings(server))
        .await
        .unwrap_or_else(|e| panic!("connect to {server:?}: {e}"))
}

async fn viewer(server: Server) -> AirflowClient {
    let s = settings_as(
        server,
        &field(server, "viewer_user"),
        &field(server, "viewer_password"),
    );
    AirflowClient::connect(&s).await.unwrap()
}

fn http() -> reqwest::Client {
    crate::common::http_builder()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap()
}

/// A v2 token straight from the server, independent of the client under test.
async fn raw_token(server: Server) -> String {
    let url = format!("{}/auth/token", field(server, "url"));
    let r = http()
        .post(&url)
        .json(&serde_json::json!({
            "username": field(server, "user"),
            "password": field(server, "password"),
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 201);
    r.json::<Value>().await.unwrap()["access_token"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Delete a run with a plain HTTP call, so the lab is left as it was found.
async fn delete_run(server: Server, dag_id: &str, run_id: &str) {
    let base = field(server, "url");
    let prefix = match server {
        Server::Three => "api/v2",
        Server::Two => "api/v1",
    };
    let url = format!(
        "{base}/{prefix}/dags/{dag_id}/dagRuns/{}",
        floe::airflow::encode_segment(run_id)
    );
    let req = http().delete(&url);
    let req = match server {
        Server::Three => req.bearer_auth(raw_token(server).await),
        Server::Two => req.basic_auth(field(server, "user"), Some(field(server, "password"))),
    };
    let r = req.send().await.unwrap();
    assert!(
        r.status().is_success(),
        "DELETE {url}: {} {}",
        r.status(),
        r.text().await.unwrap_or_default()
    );
}

/// An expired copy of a real token, signed with the lab's JWT secret (the one
/// `tests/lab/airflow/ctl.py` starts Airflow 3 with), as the lab's own tests do.
fn expired_copy(token: &str) -> String {
    let ctl = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/lab/airflow/ctl.py");
    let script = r#"
import base64, hashlib, hmac, importlib.util, json, sys, time
spec = importlib.util.spec_from_file_location("lab_airflow_ctl", sys.argv[1])
ctl = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ctl)
header, payload, _ = sys.argv[2].split(".")
claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
now = int(time.time())
claims.update(iat=now - 7200, nbf=now - 7200, exp=now - 3600)
b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()
signing = header + "." + b64(json.dumps(claims).encode())
sig = hmac.new(ctl.JWT_SECRET.encode(), signing.encode(), hashlib.sha512).digest()
print(signing + "." + b64(sig))
"#;
    let out = Command::new("python3")
        .args(["-c", script, ctl, token])
        .output()
        .expect("python3 (the lab needs it too)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

async fn status_with_token(server: Server, token: &str) -> (u16, String) {
    let r = http()
        .get(format!("{}/api/v2/dags?limit=1", field(server, "url")))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

// ------------------------------------------------------------------------ detection, auth

#[tokio::test]
async fn v2_detects_airflow_3_and_reads_health() {
    let c = client(Server::Three).await;
    assert_eq!(c.api(), ApiVersion::V2);
    assert_eq!(c.server_version().version, field(Server::Three, "version"));
    assert_eq!(c.server_version().major(), Some(3));
    assert_eq!(
        c.version().await.unwrap().version,
        c.server_version().version
    );
    let h = c.health().await.unwrap();
    assert_eq!(h.metadatabase.status, Some(HealthStatus::Healthy));
    assert_eq!(h.scheduler.status, Some(HealthStatus::Healthy));
    assert_eq!(h.dag_processor.status, Some(HealthStatus::Healthy));
    assert!(h.scheduler.latest_heartbeat.is_some());
    assert!(format!("{c:?}").contains("jwt"));
    assert!(!format!("{c:?}").contains(&field(Server::Three, "password")));
}

#[tokio::test]
async fn v2_forced_api_must_match_the_server() {
    let mut s = settings(Server::Three);
    s.api = AirflowApi::V2;
    assert_eq!(
        AirflowClient::connect(&s).await.unwrap().api(),
        ApiVersion::V2
    );
    s.api = AirflowApi::V1;
    let e = AirflowClient::connect(&s).await.unwrap_err();
    assert!(matches!(e, AirflowError::NotAirflow { .. }), "{e}");
    let text = e.to_string();
    assert!(
        text.contains("/api/v1/version") && text.contains("404"),
        "{text}"
    );
    assert!(
        text.contains("removed in Airflow 3"),
        "the server's reason: {text}"
    );
}

#[tokio::test]
async fn v2_wrong_password_is_an_auth_error_naming_status_and_url() {
    let s = settings_as(Server::Three, &field(Server::Three, "user"), "wrong");
    let e = AirflowClient::connect(&s).await.unwrap_err();
    let AirflowError::Auth {
        status,
        ref url,
        ref message,
    } = e
    else {
        panic!("expected an auth error, got {e}");
    };
    assert_eq!(status, 401);
    assert_eq!(url, &format!("{}/auth/token", field(Server::Three, "url")));
    assert_eq!(message, "Invalid credentials");
    let text = e.to_string();
    assert!(
        text.contains("HTTP 401") && text.contains("/auth/token"),
        "{text}"
    );
    assert!(!text.contains("wrong"), "never the password: {text}");
}

#[tokio::test]
async fn v2_refused_tokens_are_renewed_once() {
    let c = client(Server::Three).await;
    let token = raw_token(Server::Three).await;

    // An expired token: 401 "Token Expired" from the server, then a new login.
    let expired = expired_copy(&token);
    assert_eq!(
        status_with_token(Server::Three, &expired).await,
        (401, r#"{"detail":"Token Expired"}"#.to_string())
    );
    c.set_session_token(SecretString::from(expired));
    assert_eq!(
        c.dags(&[], &["compact_documents".into()])
            .await
            .unwrap()
            .len(),
        1
    );

    // A token signed with another secret (a rotated JWT secret): 403 "Invalid JWT token".
    let (head, rest) = token.split_once('.').unwrap();
    let (payload, _) = rest.split_once('.').unwrap();
    let forged = format!("{head}.{payload}.AAAA");
    assert_eq!(status_with_token(Server::Three, &forged).await.0, 403);
    c.set_session_token(SecretString::from(forged));
    assert_eq!(
        c.dags(&[], &["compact_documents".into()])
            .await
            .unwrap()
            .len(),
        1
    );

    // No token at all: 401 "Not authenticated", then a login.
    c.forget_token();
    assert!(c.health().await.is_ok());
    assert_eq!(c.runs("compact_documents", 1).await.unwrap().len(), 1);

    // A static token from the settings is used as is.
    let mut s = settings(Server::Three);
    s.token = Some(SecretString::from(token));
    s.password = None;
    let fixed = AirflowClient::connect(&s).await.unwrap();
    assert!(format!("{fixed:?}").contains("bearer"));
    assert_eq!(
        fixed
            .dags(&["maintenance".into()], &[])
            .await
            .unwrap()
            .len(),
        4
    );
    // … and a bad one is refused when connecting, not renewed.
    s.token = Some(SecretString::from("not-a-jwt".to_string()));
    let e = AirflowClient::connect(&s).await.unwrap_err();
    assert_eq!(e.status(), Some(403), "{e}");
    assert!(e.to_string().contains("Invalid JWT token"), "{e}");
}

#[tokio::test]
async fn no_airflow_behind_the_url() {
    // Nothing listens: a transport error naming the URL.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut s = settings(Server::Three);
    s.url = format!("http://127.0.0.1:{port}").parse().unwrap();
    let opts = ClientOptions {
        retry: RetryPolicy {
            initial_backoff: Duration::from_millis(10),
            max_backoff: Duration::from_millis(50),
            max_retry_time: Duration::from_secs(2),
        },
        ..ClientOptions::default()
    };
    let e = AirflowClient::connect_with(&s, opts.clone())
        .await
        .unwrap_err();
    assert!(matches!(e, AirflowError::Transport { .. }), "{e}");
    assert!(
        e.to_string()
            .contains(&format!("http://127.0.0.1:{port}/api/v2/version")),
        "{e}"
    );

    // Something else listens (the lab's Trino): neither version endpoint answers like Airflow.
    s.url = common::lab().trino_url().parse().unwrap();
    let e = AirflowClient::connect_with(&s, opts).await.unwrap_err();
    let AirflowError::NotAirflow { ref message, .. } = e else {
        panic!("expected NotAirflow, got {e}");
    };
    assert!(
        message.contains("/api/v2/version") && message.contains("/api/v1/version"),
        "{message}"
    );
}

// ------------------------------------------------------------------------ the lab's DAGs, v2

#[tokio::test]
async fn v2_maintenance_dags_by_tag_and_id() {
    let c = client(Server::Three).await;
    let dags = c.configured_dags().await.unwrap();
    assert_eq!(dags, c.dags(&["maintenance".into()], &[]).await.unwrap());
    let ids: Vec<&str> = dags.iter().map(|d| d.dag_id.as_str()).collect();
    assert_eq!(ids, MAINTENANCE);
    for d in &dags {
        assert!(d.tags.contains(&"maintenance".to_string()));
        assert!(
            d.tags.iter().any(|t| t.starts_with("iceberg.")),
            "{:?}",
            d.tags
        );
        assert_eq!(d.schedule.as_deref(), Some("0 0 * * *"));
        assert_eq!(d.schedule_interval, Some(Duration::from_secs(86_400)));
        assert_eq!(d.paused, d.dag_id == "expire_snapshots", "{}", d.dag_id);
        assert!(!d.has_import_errors && d.active);
        assert_eq!(d.owners, vec!["data-platform"]);
        assert_eq!(d.relative_fileloc, Some(format!("{}.py", d.dag_id)));
    }
    let documents = &dags[0];
    assert!(
        documents.next_run.is_some(),
        "an unpaused daily DAG has a next run"
    );

    // Tags are ORed.
    let two = c
        .dags(
            &[
                "iceberg.zoning.documents".into(),
                "iceberg.audit.events".into(),
            ],
            &[],
        )
        .await
        .unwrap();
    let ids: Vec<&str> = two.iter().map(|d| d.dag_id.as_str()).collect();
    assert_eq!(ids, ["compact_documents", "expire_snapshots"]);
    // Ids alone, unknown ids left out; tags and ids together are a union.
    let by_id = c
        .dags(&[], &["compact_parcels".into(), "no_such_dag".into()])
        .await
        .unwrap();
    assert_eq!(by_id.len(), 1);
    assert_eq!(by_id[0].dag_id, "compact_parcels");
    let both = c
        .dags(
            &["iceberg.zoning.documents".into()],
            &["expire_snapshots".into(), "compact_documents".into()],
        )
        .await
        .unwrap();
    let ids: Vec<&str> = both.iter().map(|d| d.dag_id.as_str()).collect();
    assert_eq!(ids, ["compact_documents", "expire_snapshots"]);

    let e = c.dag("no_such_dag").await.unwrap_err();
    assert!(e.is_not_found(), "{e}");
    assert!(e.to_string().contains("no_such_dag"), "{e}");
}

#[tokio::test]
async fn listings_follow_pages() {
    for server in [Server::Three, Server::Two] {
        let opts = ClientOptions {
            page_size: 1,
            ..ClientOptions::default()
        };
        let paged = AirflowClient::connect_with(&settings(server), opts)
            .await
            .unwrap();
        let whole = client(server).await;
        let dags = paged.dags(&["maintenance".into()], &[]).await.unwrap();
        assert_eq!(
            dags,
            whole.dags(&["maintenance".into()], &[]).await.unwrap()
        );
        assert_eq!(dags.len(), 4, "{server:?}: one page per DAG");
        let runs = paged.runs("compact_documents", 5).await.unwrap();
        assert_eq!(runs, whole.runs("compact_documents", 5).await.unwrap());
        assert_eq!(runs.len(), 5);
        let tasks = paged
            .task_instances("compact_documents", &runs[0].run_id)
            .await
            .unwrap();
        assert_eq!(tasks.len(), 3, "{server:?}");
    }
}

#[tokio::test]
async fn v2_compact_documents_fails_in_compact_on_the_dead_host() {
    let c = client(Server::Three).await;
    let runs = c.runs("compact_documents", 100).await.unwrap();
    assert!(runs.len() >= 14, "{} runs", runs.len());
    assert!(runs.iter().all(|r| r.state == DagRunState::Failed));
    assert!(
        runs.windows(2).all(|w| w[0].run_after >= w[1].run_after),
        "newest first"
    );
    let latest = &runs[0];
    assert!(
        latest.run_id.contains(':') && latest.run_id.contains('+'),
        "{}",
        latest.run_id
    );
    assert!(latest.duration.is_some() && latest.end_date.is_some());
    assert_eq!(latest.triggered_by.as_deref(), Some("timetable"));

    let tasks = c
        .task_instances("compact_documents", &latest.run_id)
        .await
        .unwrap();
    let state = |id: &str| {
        tasks
            .iter()
            .find(|t| t.task_id == id)
            .and_then(|t| t.state.clone())
    };
    assert_eq!(state("check_table"), Some(TaskState::Success));
    assert_eq!(state("compact"), Some(TaskState::Failed));
    assert_eq!(state("report"), Some(TaskState::UpstreamFailed));

    let log = c
        .task_log("compact_documents", &latest.run_id, "compact", 1)
        .await
        .unwrap();
    let line = log.error_line.clone().expect("an error line");
    assert!(
        line.starts_with(
            "ConnectionError: optimize of iceberg.zoning.documents failed: could not connect to Trino at trino-old.internal:8080"
        ),
        "{line}"
    );
    assert!(
        line.contains("Failed to resolve 'trino-old.internal'"),
        "{line}"
    );
    assert!(log.continuation_token.is_none());
    assert!(!log.lines.iter().any(|l| l.text.contains("::group::")));
    assert!(
        log.lines.iter().any(|l| l.error
            && l.text.contains("compact_documents.py:")
            && l.text.ends_with(" in compact")),
        "a frame of the DAG file"
    );
    assert!(
        log.lines
            .iter()
            .any(|l| l.text.contains("EXECUTE optimize"))
    );

    let dag = c.dag("compact_documents").await.unwrap();
    let facts = c.fetch_facts(&dag, DEFAULT_INTERVAL).await.unwrap();
    assert_eq!(facts.last_run_text(), "failed");
    assert_eq!(facts.failing_task.as_deref(), Some("compact"));
    assert_eq!(facts.error_line.as_deref(), Some(line.as_str()));
    assert_eq!(facts.failed_runs as usize, runs.len().min(25));
    assert_eq!(facts.last_success_at, None);
    assert_eq!(facts.last_run_at, latest.end_date);
    assert_eq!(facts.expected_interval, Duration::from_secs(86_400));
    assert!(!facts.paused && facts.import_error.is_none());
}

#[tokio::test]
async fn v2_permits_succeeds_silently_and_parcels_succeeds() {
    let c = client(Server::Three).await;
    for dag_id in ["compact_permits", "compact_parcels"] {
        let dag = c.dag(dag_id).await.unwrap();
        let facts = c.fetch_facts(&dag, DEFAULT_INTERVAL).await.unwrap();
        assert_eq!(facts.last_run_text(), "success", "{dag_id}");
        assert_eq!(facts.failed_runs, 0, "{dag_id}");
        assert_eq!(facts.failing_task, None);
        assert!(facts.last_success_at.is_some());
        assert_eq!(facts.expected_interval, Duration::from_secs(86_400));
    }
    // The bare except leaves no error in the log of a compaction that never happened.
    let run = &c.runs("compact_permits", 1).await.unwrap()[0];
    let log = c
        .task_log("compact_permits", &run.run_id, "compact", 1)
        .await
        .unwrap();
    assert_eq!(log.error_line, None);
    assert!(log.lines.iter().all(|l| !l.error));
    assert!(log.lines.iter().any(|l| {
        l.text
            .contains("ALTER TABLE iceberg.zoning.permits EXECUTE optimize")
    }));
}

#[tokio::test]
async fn v2_expire_snapshots_is_paused() {
    let c = client(Server::Three).await;
    let dag = c.dag("expire_snapshots").await.unwrap();
    assert!(dag.paused);
    let facts = c.fetch_facts(&dag, DEFAULT_INTERVAL).await.unwrap();
    assert!(facts.paused);
    assert_eq!(facts.failed_runs, 0);
    assert_eq!(facts.last_success_at, None);
    // Pausing a paused DAG changes nothing and returns the DAG.
    assert!(c.set_paused("expire_snapshots", true).await.unwrap().paused);
    // A viewer may read but not pause: a permission error naming status and URL.
    let v = viewer(Server::Three).await;
    assert_eq!(
        v.dag("compact_documents").await.unwrap().dag_id,
        "compact_documents"
    );
    let e = v.set_paused("compact_documents", true).await.unwrap_err();
    assert_eq!(e.status(), Some(403), "{e}");
    assert!(
        e.to_string()
            .contains("/api/v2/dags/compact_documents?update_mask=is_paused"),
        "{e}"
    );
    assert!(!c.dag("compact_documents").await.unwrap().paused);
}

#[tokio::test]
async fn v2_import_errors_list_broken_dag() {
    let c = client(Server::Three).await;
    let errors = c.import_errors().await.unwrap();
    let broken = errors
        .iter()
        .find(|e| e.filename == "broken_dag.py")
        .unwrap_or_else(|| panic!("{errors:?}"));
    assert_eq!(broken.bundle_name.as_deref(), Some("dags-folder"));
    assert_eq!(
        broken.summary(),
        "ModuleNotFoundError: No module named 'lakehouse_maintenance_helpers'"
    );
    assert!(broken.timestamp.is_some());
}

#[tokio::test]
async fn v2_connections_and_their_tests() {
    let c = client(Server::Three).await;
    let conns = c.connections().await.unwrap();
    let get = |id: &str| {
        conns
            .iter()
            .find(|c| c.connection_id == id)
            .unwrap_or_else(|| panic!("no {id} in {conns:?}"))
            .clone()
    };
    let trino = url::Url::parse(&common::lab().trino_url()).unwrap();
    let default = get("trino_default");
    assert_eq!(default.conn_type, "trino");
    assert_eq!(default.host.as_deref(), trino.host_str());
    assert_eq!(default.port, trino.port());
    let documents = get("trino_documents");
    assert_eq!(
        format!(
            "{}:{}",
            documents.host.clone().unwrap(),
            documents.port.unwrap()
        ),
        DEAD_ENDPOINT
    );
    assert_eq!(
        c.test_connection(&default).await.unwrap(),
        ConnectionTest::Passed("Connection successfully tested".into())
    );
    match c.test_connection(&documents).await.unwrap() {
        ConnectionTest::Failed(m) => assert!(m.contains("trino-old.internal"), "{m}"),
        other => panic!("{other:?}"),
    }
    // The viewer may not test connections: a result, not an error.
    match viewer(Server::Three)
        .await
        .test_connection(&default)
        .await
        .unwrap()
    {
        ConnectionTest::NotAllowed(m) => assert!(m.starts_with("not allowed by the server"), "{m}"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn v2_trigger_creates_a_queued_run_on_the_paused_dag() {
    let c = client(Server::Three).await;
    let run = c.trigger("expire_snapshots").await.unwrap();
    let cleanup = run.run_id.clone();
    let c2 = c.clone();
    let outcome = async move {
        assert_eq!(run.dag_id, "expire_snapshots");
        assert_eq!(run.state, DagRunState::Queued);
        assert_eq!(run.run_type.as_str(), "manual");
        assert_eq!(run.logical_date, None, "triggered with logical_date null");
        assert!(run.run_after.is_some());
        assert!(run.run_id.starts_with("manual__"), "{}", run.run_id);
        // Paused: it stays queued. Read back through the percent-encoded run id.
        tokio::time::sleep(Duration::from_secs(3)).await;
        let again = c2.run("expire_snapshots", &run.run_id).await.unwrap();
        assert_eq!(again.state, DagRunState::Queued);
        assert_eq!(again.start_date, None);
        let listed = c2.runs("expire_snapshots", 10).await.unwrap();
        assert!(listed.iter().any(|r| r.run_id == run.run_id));
    };
    let result = tokio::spawn(outcome).await;
    delete_run(Server::Three, "expire_snapshots", &cleanup).await;
    if let Err(e) = result {
        std::panic::resume_unwind(e.into_panic());
    }
    let e = c.trigger("no_such_dag").await.unwrap_err();
    assert!(e.is_not_found(), "{e}");
}

#[tokio::test]
async fn v2_clear_dry_run_lists_the_failed_tasks() {
    let c = client(Server::Three).await;
    let run = &c.runs("compact_documents", 1).await.unwrap()[0];
    let only_failed = c
        .clear_run("compact_documents", &run.run_id, true, true)
        .await
        .unwrap();
    assert!(only_failed.dry_run && only_failed.run.is_none());
    assert_eq!(only_failed.scope, ClearScope::OnlyFailed);
    let mut ids: Vec<&str> = only_failed
        .tasks
        .iter()
        .map(|t| t.task_id.as_str())
        .collect();
    ids.sort();
    assert_eq!(ids, ["compact", "report"]);
    let compact = only_failed
        .tasks
        .iter()
        .find(|t| t.task_id == "compact")
        .unwrap();
    assert_eq!(compact.state, Some(TaskState::Failed));
    let all = c
        .clear_run("compact_documents", &run.run_id, true, false)
        .await
        .unwrap();
    assert_eq!(all.scope, ClearScope::AllTasks);
    assert_eq!(all.tasks.len(), 3);
    // Nothing changed.
    let after = c.run("compact_documents", &run.run_id).await.unwrap();
    assert_eq!(after.state, DagRunState::Failed);
}

// ------------------------------------------------------------------------ Airflow 2, v1

#[tokio::test]
async fn v1_detects_airflow_2_with_basic_auth() {
    let c = client(Server::Two).await;
    assert_eq!(c.api(), ApiVersion::V1);
    assert_eq!(c.server_version().version, field(Server::Two, "version"));
    assert_eq!(c.server_version().major(), Some(2));
    assert!(format!("{c:?}").contains("basic"));
    let h = c.health().await.unwrap();
    assert_eq!(h.metadatabase.status, Some(HealthStatus::Healthy));
    assert_eq!(h.scheduler.status, Some(HealthStatus::Healthy));

    let mut forced = settings(Server::Two);
    forced.api = AirflowApi::V2;
    let e = AirflowClient::connect(&forced).await.unwrap_err();
    assert!(matches!(e, AirflowError::NotAirflow { .. }), "{e}");
    assert!(e.to_string().contains("/api/v2/version: HTTP 404"), "{e}");
}

#[tokio::test]
async fn v1_wrong_password_is_an_auth_error_naming_status_and_url() {
    let s = settings_as(Server::Two, &field(Server::Two, "user"), "wrong");
    let e = AirflowClient::connect(&s).await.unwrap_err();
    let AirflowError::Auth {
        status,
        ref url,
        ref message,
    } = e
    else {
        panic!("expected an auth error, got {e}");
    };
    // Airflow 2.11 answers a wrong password with 403 (2.10 answered 401).
    assert_eq!(status, 403);
    assert!(
        url.starts_with(&format!("{}/api/v1/dags", field(Server::Two, "url"))),
        "{url}"
    );
    assert_eq!(message, "Forbidden");
    assert!(!e.to_string().contains("wrong"));
}

#[tokio::test]
async fn v1_the_same_facts() {
    let c = client(Server::Two).await;
    let dags = c.dags(&["maintenance".into()], &[]).await.unwrap();
    let ids: Vec<&str> = dags.iter().map(|d| d.dag_id.as_str()).collect();
    assert_eq!(ids, MAINTENANCE);
    for d in &dags {
        assert_eq!(d.schedule.as_deref(), Some("@daily"));
        assert_eq!(d.schedule_interval, Some(Duration::from_secs(86_400)));
        assert_eq!(d.paused, d.dag_id == "expire_snapshots");
        assert!(
            d.fileloc
                .as_deref()
                .unwrap()
                .ends_with(&format!("/{}.py", d.dag_id))
        );
    }

    let runs = c.runs("compact_documents", 100).await.unwrap();
    assert!(runs.len() >= 14, "{} runs", runs.len());
    assert!(runs.iter().all(|r| r.state == DagRunState::Failed));
    assert!(
        runs.windows(2)
            .all(|w| w[0].logical_date > w[1].logical_date)
    );
    assert!(runs[0].duration.is_some(), "computed from start and end");
    assert_eq!(runs[0].external_trigger, Some(false));

    let dag = c.dag("compact_documents").await.unwrap();
    let facts = c.fetch_facts(&dag, DEFAULT_INTERVAL).await.unwrap();
    assert_eq!(facts.last_run_text(), "failed");
    assert_eq!(facts.failing_task.as_deref(), Some("compact"));
    let line = facts.error_line.clone().expect("an error line");
    assert!(
        line.starts_with(
            "ConnectionError: optimize of iceberg.zoning.documents failed: could not connect to Trino at trino-old.internal:8080"
        ),
        "{line}"
    );
    assert!(
        line.contains("Failed to resolve 'trino-old.internal'"),
        "{line}"
    );
    assert_eq!(facts.failed_runs as usize, runs.len().min(25));

    // The try the facts were read from: the scheduler may have run the task twice.
    let tries = c
        .task_instances("compact_documents", &runs[0].run_id)
        .await
        .unwrap()
        .into_iter()
        .find(|t| t.task_id == "compact")
        .map(|t| t.try_number.max(1))
        .unwrap();
    let log = c
        .task_log("compact_documents", &runs[0].run_id, "compact", tries)
        .await
        .unwrap();
    assert_eq!(log.error_line.as_deref(), Some(line.as_str()));
    assert!(
        log.lines
            .iter()
            .any(|l| l.error && l.text.starts_with("Traceback"))
    );
    assert!(
        log.lines
            .iter()
            .any(|l| l.error && l.text.starts_with("trino.exceptions.TrinoConnectionError"))
    );

    for dag_id in ["compact_permits", "compact_parcels"] {
        let dag = c.dag(dag_id).await.unwrap();
        let facts = c.fetch_facts(&dag, DEFAULT_INTERVAL).await.unwrap();
        assert_eq!(facts.last_run_text(), "success", "{dag_id}");
        assert_eq!(facts.failed_runs, 0);
    }
    let permits = &c.runs("compact_permits", 1).await.unwrap()[0];
    let log = c
        .task_log("compact_permits", &permits.run_id, "compact", 1)
        .await
        .unwrap();
    assert_eq!(log.error_line, None);

    let expire = c.dag("expire_snapshots").await.unwrap();
    let facts = c.fetch_facts(&expire, DEFAULT_INTERVAL).await.unwrap();
    assert!(facts.paused);
    assert_eq!(facts.failed_runs, 0);

    let errors = c.import_errors().await.unwrap();
    let broken = errors
        .iter()
        .find(|e| e.filename.ends_with("/broken_dag.py"))
        .unwrap_or_else(|| panic!("{errors:?}"));
    assert!(broken.filename.starts_with('/'), "absolute on 2.x");
    assert_eq!(
        broken.summary(),
        "ModuleNotFoundError: No module named 'lakehouse_maintenance_helpers'"
    );
}

/// The same Airflow 2 through its API process with the connection test enabled
/// (`lab.json` → `airflow2.tested_url`): what a deployment that turned it on answers.
async fn tested_as(user: &str, password: &str) -> AirflowClient {
    let mut s = settings_as(Server::Two, user, password);
    s.url = field(Server::Two, "tested_url").parse().unwrap();
    AirflowClient::connect(&s).await.unwrap()
}

#[tokio::test]
async fn v1_connections_and_their_tests() {
    // As deployed (`[core] test_connection` at its default, Disabled): every test is refused,
    // in Airflow's words, and is no verdict on the connection.
    let deployed = client(Server::Two).await;
    let conns = deployed.connections().await.unwrap();
    assert_eq!(entry(Server::Two)["test_connection"], "Disabled");
    for conn in conns.iter().filter(|c| c.conn_type == "trino") {
        match deployed.test_connection(conn).await.unwrap() {
            ConnectionTest::NotAllowed(m) => assert!(
                m.starts_with("not allowed by the server")
                    && m.contains("Testing connections is disabled in Airflow configuration"),
                "{m}"
            ),
            other => panic!("{}: {other:?}", conn.connection_id),
        }
    }
    // Where it is enabled, a test passes or fails on the connection it is sent.
    let c = tested_as(&field(Server::Two, "user"), &field(Server::Two, "password")).await;
    let get = |id: &str| {
        conns
            .iter()
            .find(|c| c.connection_id == id)
            .unwrap_or_else(|| panic!("no {id}"))
            .clone()
    };
    assert_eq!(
        c.test_connection(&get("trino_default")).await.unwrap(),
        ConnectionTest::Passed("Connection successfully tested".into())
    );
    match c.test_connection(&get("trino_documents")).await.unwrap() {
        ConnectionTest::Failed(m) => assert!(m.contains("trino-old.internal"), "{m}"),
        other => panic!("{other:?}"),
    }
    match tested_as(
        &field(Server::Two, "viewer_user"),
        &field(Server::Two, "viewer_password"),
    )
    .await
    .test_connection(&get("trino_default"))
    .await
    .unwrap()
    {
        ConnectionTest::NotAllowed(m) => assert!(m.starts_with("not allowed by the server"), "{m}"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn v1_trigger_and_clear() {
    let c = client(Server::Two).await;
    let run = c.trigger("expire_snapshots").await.unwrap();
    let cleanup = run.run_id.clone();
    let c2 = c.clone();
    let outcome = async move {
        assert_eq!(run.state, DagRunState::Queued);
        assert_eq!(run.run_type.as_str(), "manual");
        assert!(run.logical_date.is_some(), "v1 runs always have one");
        assert_eq!(run.external_trigger, Some(true));
        tokio::time::sleep(Duration::from_secs(3)).await;
        let again = c2.run("expire_snapshots", &run.run_id).await.unwrap();
        assert_eq!(again.state, DagRunState::Queued);
    };
    let result = tokio::spawn(outcome).await;
    delete_run(Server::Two, "expire_snapshots", &cleanup).await;
    if let Err(e) = result {
        std::panic::resume_unwind(e.into_panic());
    }

    // v1 cannot clear only the failed tasks of a run: the outcome says so.
    let latest = &c.runs("compact_documents", 1).await.unwrap()[0];
    let dry = c
        .clear_run("compact_documents", &latest.run_id, true, true)
        .await
        .unwrap();
    assert_eq!(dry.scope, ClearScope::AllTasks);
    let mut ids: Vec<&str> = dry.tasks.iter().map(|t| t.task_id.as_str()).collect();
    ids.sort();
    assert_eq!(ids, ["check_table", "compact", "report"]);
    assert_eq!(
        c.run("compact_documents", &latest.run_id)
            .await
            .unwrap()
            .state,
        DagRunState::Failed
    );
    assert!(c.set_paused("expire_snapshots", true).await.unwrap().paused);
}
