//! The Trino client against the lab's Trino-protocol server: paging, queued polling,
//! typed values, errors, retries, faults, cancel, auth and TLS.

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{lab, user};
use floe::config::{Auth, TlsSettings};
use floe::trino::{Client, QueryOptions, QueryProgress, RetryPolicy, TrinoError, TrinoType, Value};
use secrecy::SecretString;
use serde_json::json;
use tokio_util::sync::CancellationToken;

const FILES: &str =
    r#"SELECT file_path, file_size_in_bytes, partition FROM iceberg.zoning."documents$files""#;

/// A statement that keeps the real coordinator busy for minutes (10^11 rows to count):
/// what a cancel or a deadline interrupts.
const LONG: &str = "SELECT count(*) FROM UNNEST(sequence(1, 10000)) a(x) \
     CROSS JOIN UNNEST(sequence(1, 10000)) b(y) CROSS JOIN UNNEST(sequence(1, 1000)) c(z)";

/// floe's client for `u` through the fault proxy in front of the real Trino.
fn proxied(u: &str) -> Client {
    Client::new(lab().config(&lab().proxy_url(), u)).unwrap()
}

/// floe's client for `u` on the lab's stand-in (page sizes and query failures on demand).
fn stand_in(u: &str) -> Client {
    Client::new(lab().config(&lab().stand_in_url(), u)).unwrap()
}

#[tokio::test]
async fn info_reports_version_and_uptime() {
    let info = lab().client("floe").info().await.unwrap();
    assert_eq!(
        info.version_number(),
        Some(476),
        "the lab's real coordinator"
    );
    assert!(!info.starting);
    assert!(info.uptime_secs().unwrap() > 0.0);
    let old = Client::new(lab().config(&lab().listener("v451"), "floe"))
        .unwrap()
        .info()
        .await
        .unwrap();
    assert_eq!(old.version_number(), Some(451));
}

#[tokio::test]
async fn drains_every_page_and_maps_rows_by_name() {
    let u = user("paging");
    lab().page_size(&u, 37).await;
    let out = stand_in(&u).query(FILES).await.unwrap();
    let expected = lab().table("zoning.documents");
    assert_eq!(
        out.rows.len() as u64,
        expected["data_files"].as_u64().unwrap()
    );
    let total: u64 = out
        .rows
        .iter()
        .map(|r| r.u64("file_size_in_bytes").unwrap())
        .sum();
    assert_eq!(total, expected["total_bytes"].as_u64().unwrap());
    let pages = lab().queries_of(&u).await.last().unwrap()["pages"]
        .as_u64()
        .unwrap();
    assert!(
        pages >= out.rows.len() as u64 / 37,
        "only {pages} pages for {} rows",
        out.rows.len()
    );
    // The partition ROW keeps its field names from the type signature.
    match out.rows[0].get("partition").unwrap() {
        Value::Row(fields) => {
            let names: Vec<_> = fields.iter().map(|(n, _)| n.clone().unwrap()).collect();
            assert_eq!(names, vec!["district", "filed_at_day"]);
            assert!(matches!(fields[1].1, Value::Date(_)));
        }
        other => panic!("partition is not a row: {other:?}"),
    }
}

#[tokio::test]
async fn typed_values_from_snapshots() {
    let sql = r#"SELECT snapshot_id, committed_at, operation, summary, element_at(summary, 'total-data-files') AS total
                 FROM iceberg.zoning."documents$snapshots" ORDER BY committed_at DESC"#;
    let out = lab().client("floe").query(sql).await.unwrap();
    let t = lab().table("zoning.documents");
    assert_eq!(out.rows.len() as u64, t["snapshots"].as_u64().unwrap());
    let newest = &out.rows[0];
    // Snapshot ids exceed 2^53: exact only as i64.
    assert_eq!(
        newest.i64("snapshot_id").unwrap(),
        t["newest_snapshot"]["snapshot_id"].as_i64().unwrap()
    );
    let col = out
        .columns
        .iter()
        .find(|c| c.name == "committed_at")
        .unwrap();
    assert_eq!(col.ty, TrinoType::TimestampTz { precision: 3 });
    match newest.get("committed_at").unwrap() {
        Value::TimestampTz(at, zone) => {
            assert_eq!(zone, "UTC", "the client pins X-Trino-Time-Zone: UTC");
            assert_eq!(
                at.timestamp_millis(),
                t["newest_snapshot"]["committed_at_ms"].as_i64().unwrap()
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        newest
            .get("summary")
            .unwrap()
            .map_get("total-data-files")
            .and_then(Value::as_u64),
        Some(t["data_files"].as_u64().unwrap())
    );
    assert_eq!(newest.u64("total"), t["data_files"].as_u64());
    assert!(matches!(
        out.columns.iter().find(|c| c.name == "summary").unwrap().ty,
        TrinoType::Map(_, _)
    ));
}

#[tokio::test]
async fn legacy_type_signatures_decode_the_same() {
    let sql =
        r#"SELECT snapshot_id, committed_at, summary FROM iceberg.zoning."documents$snapshots""#;
    let new = lab().client("floe").query(sql).await.unwrap();
    let old = Client::new(lab().config(&lab().listener("v451"), "floe"))
        .unwrap()
        .query(sql)
        .await
        .unwrap();
    assert_eq!(
        new.columns.iter().map(|c| &c.ty).collect::<Vec<_>>(),
        old.columns.iter().map(|c| &c.ty).collect::<Vec<_>>()
    );
    assert_eq!(new.rows.len(), old.rows.len());
}

#[tokio::test]
async fn queued_queries_are_polled_and_progress_is_reported() {
    let u = user("queued");
    lab()
        .faults(
            &u,
            json!([{"kind": "hold", "ms": 1500}, {"kind": "slow", "ms": 1500}]),
        )
        .await;
    let seen: Arc<Mutex<Vec<QueryProgress>>> = Arc::default();
    let seen2 = seen.clone();
    let cb = move |p: &QueryProgress| seen2.lock().unwrap().push(p.clone());
    let out = stand_in(&u)
        .execute(
            "SELECT count(*) AS n FROM iceberg.zoning.documents",
            QueryOptions {
                progress: Some(&cb),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(
        out.rows[0].u64("n"),
        lab().table("zoning.documents")["records"].as_u64()
    );
    let seen = seen.lock().unwrap();
    let states: Vec<&str> = seen.iter().map(|p| p.state.as_str()).collect();
    assert_eq!(states.first(), Some(&"QUEUED"), "{states:?}");
    assert!(states.contains(&"RUNNING"), "{states:?}");
    assert_eq!(states.last(), Some(&"FINISHED"), "{states:?}");
    assert!(
        seen.iter()
            .any(|p| p.percentage.is_some_and(|x| x > 0.0 && x < 100.0)),
        "no partial progress in {seen:?}"
    );
}

#[tokio::test]
async fn trino_errors_keep_name_message_location_and_query_id() {
    let err = lab()
        .client("floe")
        .query("SELECT * FROM iceberg.zoning.nope")
        .await
        .unwrap_err();
    match &err {
        TrinoError::Query {
            error_name,
            message,
            location,
            query_id,
            ..
        } => {
            assert_eq!(error_name, "TABLE_NOT_FOUND");
            assert!(message.contains("iceberg.zoning.nope"), "{message}");
            assert_eq!(*location, Some((1, 15)));
            assert!(!query_id.is_empty());
        }
        other => panic!("{other:?}"),
    }
    assert!(
        err.to_string().starts_with("TABLE_NOT_FOUND: line 1:15:"),
        "{err}"
    );
    let e = lab().client("floe").query("SELEC 1").await.unwrap_err();
    assert_eq!(e.name(), "SYNTAX_ERROR");
    let e = lab()
        .client("floe")
        .query(r#"SELECT summary['no-such-key'] FROM iceberg.zoning."documents$snapshots""#)
        .await
        .unwrap_err();
    assert!(
        matches!(e, TrinoError::Query { .. }),
        "a missing map key fails the query, as on Trino: {e}"
    );
    let denied = lab().stand_in()["denied_user"]
        .as_str()
        .unwrap()
        .to_string();
    let e = lab().client(&denied).query("SELECT 1").await.unwrap_err();
    assert_eq!(e.name(), "PERMISSION_DENIED");
}

#[tokio::test]
async fn retries_503_storms_and_honours_429_retry_after() {
    let u = user("storm");
    lab().real_faults(&u, json!([{"kind": "status", "status": 503, "count": 4, "on": "next"}, {"kind": "status", "status": 502, "count": 1, "on": "post"}])).await;
    let out = proxied(&u).query(FILES).await.unwrap();
    assert!(out.retries >= 5, "retries {}", out.retries);
    assert_eq!(
        out.rows.len() as u64,
        lab().table("zoning.documents")["data_files"]
            .as_u64()
            .unwrap()
    );

    let u = user("toomany");
    lab().real_faults(&u, json!([{"kind": "status", "status": 429, "retry_after": "1", "count": 2, "on": "next"}])).await;
    let t = std::time::Instant::now();
    let out = proxied(&u)
        .query("SELECT count(*) AS n FROM iceberg.zoning.permits")
        .await
        .unwrap();
    assert_eq!(out.retries, 2);
    assert!(
        t.elapsed() >= Duration::from_millis(1900),
        "Retry-After: 1 was not honoured ({:?})",
        t.elapsed()
    );
}

#[tokio::test]
async fn a_storm_longer_than_the_retry_budget_fails_with_status_and_url() {
    let u = user("endless");
    lab()
        .real_faults(&u, json!([{"kind": "status", "status": 504, "on": "next"}]))
        .await;
    let mut cfg = lab().config(&lab().proxy_url(), &u);
    cfg.retry = RetryPolicy {
        max_retry_time: Duration::from_secs(2),
        ..RetryPolicy::default()
    };
    let err = Client::new(cfg)
        .unwrap()
        .query("SELECT 1")
        .await
        .unwrap_err();
    lab().clear_real_faults(&u).await;
    match &err {
        TrinoError::Http {
            status,
            url,
            message,
        } => {
            assert_eq!(*status, 504);
            assert!(url.contains("/v1/statement/"), "{url}");
            assert!(message.contains("gave up after"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    // The abandoned query was cancelled: the DELETE was sent (the storm answers it 504
    // too, so the coordinator abandons the query on its own client timeout).
    tokio::time::sleep(Duration::from_millis(300)).await;
    let deletes = lab()
        .proxy_requests_of(&u)
        .await
        .into_iter()
        .filter(|r| r["method"] == "DELETE")
        .count();
    assert!(deletes >= 1, "floe sent its cancel");
}

#[tokio::test]
async fn unauthorized_is_an_auth_error_with_status_and_url() {
    let u = user("unauth");
    lab()
        .real_faults(&u, json!([{"kind": "status", "status": 401, "on": "post"}]))
        .await;
    let err = proxied(&u).query("SELECT 1").await.unwrap_err();
    lab().clear_real_faults(&u).await;
    match err {
        TrinoError::Auth { status, url, .. } => {
            assert_eq!(status, 401);
            assert!(url.ends_with("/v1/statement"), "{url}");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn dropped_connections_and_malformed_pages_are_fetched_again() {
    let u = user("flaky");
    lab().real_faults(&u, json!([{"kind": "drop", "on": "next", "count": 2}, {"kind": "malformed", "count": 2, "on": "next"}])).await;
    let out = proxied(&u).query(FILES).await.unwrap();
    assert_eq!(
        out.rows.len() as u64,
        lab().table("zoning.documents")["data_files"]
            .as_u64()
            .unwrap(),
        "no page lost or doubled"
    );
    assert!(out.retries >= 4);

    let u = user("garbage");
    lab()
        .real_faults(&u, json!([{"kind": "malformed", "on": "next"}]))
        .await;
    let err = proxied(&u).query("SELECT 1").await.unwrap_err();
    lab().clear_real_faults(&u).await;
    assert!(matches!(err, TrinoError::Malformed { .. }), "{err}");
    assert!(
        err.to_string().contains("/v1/statement/"),
        "names the URL: {err}"
    );
}

#[tokio::test]
async fn failed_mid_query_reports_trinos_error() {
    let u = user("midfail");
    lab().page_size(&u, 100).await;
    lab().faults(&u, json!([{"kind": "fail_query", "error_name": "GENERIC_INTERNAL_ERROR", "message": "worker lost", "after_pages": 2}])).await;
    let err = stand_in(&u).query(FILES).await.unwrap_err();
    match err {
        TrinoError::Query {
            error_name,
            message,
            ..
        } => {
            assert_eq!(error_name, "GENERIC_INTERNAL_ERROR");
            assert!(message.contains("worker lost"));
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn cancel_deletes_the_query_on_the_server() {
    let u = user("cancel");
    let token = CancellationToken::new();
    let t2 = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(700)).await;
        t2.cancel();
    });
    let err = lab()
        .client(&u)
        .execute(
            LONG,
            QueryOptions {
                cancel: Some(token),
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
    assert!(matches!(err, TrinoError::Cancelled { .. }), "{err}");
    let q = wait_for_state(&u, "FAILED").await;
    assert_eq!(q["error_name"], "USER_CANCELED");
}

#[tokio::test]
async fn dropping_the_future_cancels_the_query() {
    let u = user("dropped");
    let client = lab().client(&u);
    let task = tokio::spawn(async move { client.query(LONG).await });
    tokio::time::sleep(Duration::from_millis(700)).await;
    task.abort();
    let q = wait_for_state(&u, "FAILED").await;
    assert_eq!(q["error_name"], "USER_CANCELED");
}

#[tokio::test]
async fn the_deadline_cancels_and_says_so() {
    let u = user("deadline");
    let err = lab()
        .client(&u)
        .execute(
            LONG,
            QueryOptions {
                deadline: Some(Some(Duration::from_secs(1))),
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
    assert!(matches!(err, TrinoError::Deadline { .. }), "{err}");
    assert!(err.to_string().contains("1s deadline"), "{err}");
    let q = wait_for_state(&u, "FAILED").await;
    assert_eq!(q["error_name"], "USER_CANCELED");
}

/// `user`'s last query as the real coordinator recorded it, once it is in `state`.
async fn wait_for_state(user: &str, state: &str) -> serde_json::Value {
    for _ in 0..50 {
        if let Some(q) = lab().real_queries_of(user).await.last()
            && q["state"] == state
        {
            return q.clone();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!(
        "no query of {user} reached {state}: {:?}",
        lab().real_queries_of(user).await
    );
}

fn tls_config(user: &str, auth: Auth, ca: bool) -> floe::trino::ClientConfig {
    let mut cfg = lab().config(&lab().https_url(), user);
    cfg.auth = auth;
    cfg.tls = TlsSettings {
        ca_file: ca.then(|| lab().ca_file()),
        insecure_skip_verify: false,
    };
    cfg
}

#[tokio::test]
async fn basic_auth_over_tls_with_the_lab_ca() {
    let pw = lab().stand_in()["users"]["alice"]
        .as_str()
        .unwrap()
        .to_string();
    let c = Client::new(tls_config(
        "alice",
        Auth::Basic {
            password: SecretString::from(pw),
        },
        true,
    ))
    .unwrap();
    let out = c
        .query("SELECT count(*) AS n FROM iceberg.zoning.permits")
        .await
        .unwrap();
    assert_eq!(
        out.rows[0].u64("n"),
        lab().table("zoning.permits")["records"].as_u64()
    );
    let bad = Client::new(tls_config(
        "alice",
        Auth::Basic {
            password: SecretString::from("wrong".to_string()),
        },
        true,
    ))
    .unwrap();
    match bad.query("SELECT 1").await.unwrap_err() {
        TrinoError::Auth {
            status: 401,
            url,
            message,
        } => {
            assert!(url.starts_with("https://"), "{url}");
            assert!(
                !message.contains("wrong"),
                "the password never appears: {message}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn bearer_token_over_tls() {
    let token = lab().stand_in()["bearer_token"]
        .as_str()
        .unwrap()
        .to_string();
    let c = Client::new(tls_config(
        "bob",
        Auth::Bearer {
            token: SecretString::from(token),
        },
        true,
    ))
    .unwrap();
    c.query("SELECT 1").await.unwrap();
    let forged = Client::new(tls_config(
        "bob",
        Auth::Bearer {
            token: SecretString::from("eyJ.forged.x".to_string()),
        },
        true,
    ))
    .unwrap();
    assert!(matches!(
        forged.query("SELECT 1").await.unwrap_err(),
        TrinoError::Auth { status: 401, .. }
    ));
}

#[tokio::test]
async fn tls_without_the_ca_fails_clearly_and_skip_verify_is_explicit() {
    let err = Client::new(tls_config("alice", Auth::None, false))
        .unwrap()
        .info()
        .await
        .unwrap_err();
    match &err {
        TrinoError::Transport { url, message } => {
            assert!(url.starts_with("https://"));
            assert!(message.to_lowercase().contains("certificate"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    let mut cfg = tls_config("alice", Auth::None, false);
    cfg.tls.insecure_skip_verify = true;
    Client::new(cfg).unwrap().info().await.unwrap();
    // A CA file that is not a certificate is a configuration error naming it.
    let mut cfg = tls_config("alice", Auth::None, false);
    cfg.tls.ca_file = Some(std::path::PathBuf::from("Cargo.toml"));
    let e = Client::new(cfg).unwrap_err();
    assert!(e.to_string().contains("Cargo.toml"), "{e}");
}

#[tokio::test]
async fn unreachable_coordinator_names_the_url() {
    let mut cfg = lab().config("http://127.0.0.1:9/", "floe");
    cfg.retry = RetryPolicy {
        max_retry_time: Duration::from_millis(500),
        ..RetryPolicy::default()
    };
    let err = Client::new(cfg)
        .unwrap()
        .query("SELECT 1")
        .await
        .unwrap_err();
    assert!(matches!(err, TrinoError::Transport { .. }), "{err}");
    assert!(
        err.to_string().contains("http://127.0.0.1:9/v1/statement"),
        "{err}"
    );
    assert!(err.is_connectivity());
}
