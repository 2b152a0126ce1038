//! The Trino rows of the fault matrix: each fault ends in a clear error naming what failed
//! and where (Trino's error name, or the HTTP status and the URL), never a panic; a
//! statement that changes data is never sent twice.
//!
//! Network faults are made by the lab's fault proxy in front of the real Trino
//! ([`proxied`], `Lab::real_faults`), and what the coordinator ran is read from its own
//! record (`system.runtime.queries`). What only a server can do on demand (a query failing
//! mid-optimize, a slow query, older type signatures, the TLS listeners) stays on the
//! lab's stand-in.

use crate::common;

use std::time::{Duration, Instant};

use common::{lab, user};
use floe::config::{Auth, TlsSettings};
use floe::trino::{Client, ClientConfig, QueryOptions, RetryPolicy, TrinoError};
use secrecy::SecretString;
use serde_json::{Value, json};

const FILES: &str =
    r#"SELECT file_path, file_size_in_bytes, partition FROM iceberg.zoning."documents$files""#;

/// A client that gives up retrying after `budget`.
fn fast(url: &str, u: &str, budget: Duration) -> Client {
    let mut cfg = lab().config(url, u);
    cfg.retry = RetryPolicy {
        initial_backoff: Duration::from_millis(50),
        max_backoff: Duration::from_millis(400),
        max_retry_time: budget,
        ..RetryPolicy::default()
    };
    Client::new(cfg).unwrap()
}

fn mutation() -> QueryOptions<'static> {
    QueryOptions {
        mutation: true,
        ..Default::default()
    }
}

/// floe's client for `u` through the fault proxy in front of the real Trino.
fn proxied(u: &str) -> Client {
    Client::new(lab().config(&lab().proxy_url(), u)).unwrap()
}

/// floe's client for `u` on the lab's stand-in.
fn stand_in(u: &str) -> Client {
    Client::new(lab().config(&lab().stand_in_url(), u)).unwrap()
}

/// A port nothing listens on.
fn dead_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// The statements the real Trino ran for `u` whose text contains `needle`.
async fn statements(u: &str, needle: &str) -> Vec<Value> {
    lab()
        .real_queries_of(u)
        .await
        .into_iter()
        .filter(|q| q["sql"].as_str().is_some_and(|s| s.contains(needle)))
        .collect()
}

/// The statements the stand-in received from `u` whose text contains `needle`.
async fn stand_in_statements(u: &str, needle: &str) -> Vec<Value> {
    lab()
        .queries_of(u)
        .await
        .into_iter()
        .filter(|q| q["sql"].as_str().is_some_and(|s| s.contains(needle)))
        .collect()
}

/// Whether the real Trino recorded `u`'s last query as cancelled by its client.
async fn last_cancelled(u: &str) -> bool {
    for _ in 0..50 {
        let q = lab().real_queries_of(u).await;
        if let Some(last) = q.last()
            && last["state"] == "FAILED"
        {
            return last["error_name"] == "USER_CANCELED";
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

/// Whether floe cancelled `u`'s last query (a DELETE went through the proxy) and the real
/// Trino does not have it running: cancelled, or already finished when the DELETE came
/// (a page that held every row was also the last).
async fn not_left_running(u: &str) -> bool {
    let deleted = lab()
        .proxy_requests_of(u)
        .await
        .iter()
        .any(|r| r["method"] == "DELETE");
    if !deleted {
        return false;
    }
    let q = lab().real_queries_of(u).await;
    match q.last().map(|q| q["state"].clone()) {
        Some(s) if s == "FINISHED" => true,
        _ => last_cancelled(u).await,
    }
}

/// A private copy of zoning.permits to optimize.
async fn scratch_table(test: &str) -> String {
    let name = format!("scratch.fault_{test}_{}", std::process::id());
    lab().clone_table("zoning.permits", &name).await;
    format!("iceberg.{name}")
}

#[tokio::test]
async fn refused_names_the_url() {
    let url = format!("http://127.0.0.1:{}", dead_port());
    let t = Instant::now();
    let e = fast(&url, "floe", Duration::from_secs(2))
        .query("SELECT 1")
        .await
        .unwrap_err();
    assert!(matches!(e, TrinoError::Transport { .. }), "{e:?}");
    let m = e.to_string();
    assert!(m.contains(&format!("{url}/v1/statement")), "{m}");
    assert!(m.to_lowercase().contains("connect"), "{m}");
    assert!(t.elapsed() < Duration::from_secs(10));
}

#[tokio::test]
async fn dns_failure_names_the_host_and_is_not_retried() {
    let t = Instant::now();
    let e = fast(
        "http://floe-fault-matrix.invalid:8080",
        "floe",
        Duration::from_secs(30),
    )
    .query("SELECT 1")
    .await
    .unwrap_err();
    assert!(matches!(e, TrinoError::Transport { .. }), "{e:?}");
    let m = e.to_string();
    assert!(
        m.contains("floe-fault-matrix.invalid:8080/v1/statement"),
        "{m}"
    );
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
}

#[tokio::test]
async fn tls_with_the_wrong_ca_fails_clearly() {
    // An unrelated CA: the lab's other CA, or any public root.
    let other = lab().stand_in()["other_ca_file"]
        .as_str()
        .map(std::path::PathBuf::from)
        .filter(|p| p.exists())
        .unwrap_or_else(|| "/etc/ssl/certs/ca-certificates.crt".into());
    let mut cfg = lab().config(&lab().https_url(), "alice");
    cfg.tls = TlsSettings {
        ca_file: Some(other),
        insecure_skip_verify: false,
    };
    cfg.retry.max_retry_time = Duration::from_secs(30);
    let t = Instant::now();
    let e = Client::new(cfg)
        .unwrap()
        .query("SELECT 1")
        .await
        .unwrap_err();
    assert!(matches!(e, TrinoError::Transport { .. }), "{e:?}");
    let m = e.to_string();
    assert!(m.contains(&lab().https_url()), "{m}");
    assert!(m.to_lowercase().contains("certificate"), "{m}");
    assert!(t.elapsed() < Duration::from_secs(10), "not retried");
}

#[tokio::test]
async fn http_401_is_an_authentication_error_naming_the_url() {
    let u = user("f401");
    lab()
        .real_faults(&u, json!([{"kind": "status", "status": 401, "on": "post"}]))
        .await;
    let e = proxied(&u).query("SELECT 1").await.unwrap_err();
    lab().clear_real_faults(&u).await;
    assert!(matches!(e, TrinoError::Auth { status: 401, .. }), "{e:?}");
    let m = e.to_string();
    assert!(
        m.starts_with("authentication failed: HTTP 401 from http"),
        "{m}"
    );
    assert!(m.contains("/v1/statement"), "{m}");
}

#[tokio::test]
async fn http_403_from_a_gateway_shows_its_page_title() {
    let u = user("f403");
    let page =
        "<html><head><title>403 Forbidden</title></head><body><center>nginx</center></body></html>";
    lab()
        .real_faults(
            &u,
            json!([{"kind": "status", "status": 403, "on": "post", "body": page}]),
        )
        .await;
    let e = proxied(&u).query("SELECT 1").await.unwrap_err();
    lab().clear_real_faults(&u).await;
    assert!(matches!(e, TrinoError::Auth { status: 403, .. }), "{e:?}");
    let m = e.to_string();
    assert!(m.contains("/v1/statement: 403 Forbidden"), "{m}");
    assert!(!m.contains("<html>"), "{m}");
    // Trino's own refusal is a query error with its name.
    let denied = lab().stand_in()["denied_user"]
        .as_str()
        .unwrap()
        .to_string();
    let e = lab().client(&denied).query("SELECT 1").await.unwrap_err();
    assert_eq!(e.name(), "PERMISSION_DENIED", "{e}");
}

#[tokio::test]
async fn a_429_storm_with_numeric_retry_after_waits_as_asked() {
    let u = user("f429n");
    lab().real_faults(&u, json!([{"kind": "status", "status": 429, "retry_after": "1", "count": 2, "on": "next"}])).await;
    let t = Instant::now();
    let out = proxied(&u).query("SELECT 1").await.unwrap();
    assert_eq!(out.retries, 2);
    assert!(
        t.elapsed() >= Duration::from_millis(1900),
        "{:?}",
        t.elapsed()
    );
}

#[tokio::test]
async fn a_429_storm_with_unreadable_retry_after_backs_off_and_gives_up() {
    for (i, value) in ["NaN", "inf", "-1", "1e30", "soon"].iter().enumerate() {
        let u = user(&format!("f429x{i}"));
        lab()
            .real_faults(
                &u,
                json!([{"kind": "status", "status": 429, "retry_after": value, "on": "next"}]),
            )
            .await;
        let t = Instant::now();
        let e = fast(&lab().proxy_url(), &u, Duration::from_secs(1))
            .query("SELECT 1")
            .await
            .unwrap_err();
        lab().clear_real_faults(&u).await;
        match &e {
            TrinoError::Http {
                status: 429,
                url,
                message,
            } => {
                assert!(url.contains("/v1/statement/"), "{url}");
                assert!(message.contains("gave up after"), "{value}: {message}");
            }
            other => panic!("Retry-After {value}: {other:?}"),
        }
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "{value}: {:?}",
            t.elapsed()
        );
    }
}

#[tokio::test]
async fn a_429_storm_with_a_date_retry_after() {
    // A date in the past: retry now.
    let u = user("f429p");
    lab().real_faults(&u, json!([{"kind": "status", "status": 429, "retry_after": "Wed, 21 Oct 2015 07:28:00 GMT", "count": 2, "on": "next"}])).await;
    let t = Instant::now();
    let out = proxied(&u).query("SELECT 1").await.unwrap();
    assert_eq!(out.retries, 2);
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    // A date in 3000: capped, and past the retry budget it gives up at once.
    let u = user("f429f");
    lab().real_faults(&u, json!([{"kind": "status", "status": 429, "retry_after": "Wed, 01 Jan 3000 00:00:00 GMT", "on": "next"}])).await;
    let t = Instant::now();
    let e = fast(&lab().proxy_url(), &u, Duration::from_secs(3))
        .query("SELECT 1")
        .await
        .unwrap_err();
    lab().clear_real_faults(&u).await;
    assert!(matches!(e, TrinoError::Http { status: 429, .. }), "{e:?}");
    assert!(e.to_string().contains("/v1/statement/"), "{e}");
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
}

#[tokio::test]
async fn a_503_storm_gives_up_with_status_and_url() {
    let u = user("f503");
    lab()
        .real_faults(&u, json!([{"kind": "status", "status": 503, "on": "next"}]))
        .await;
    let e = fast(&lab().proxy_url(), &u, Duration::from_secs(2))
        .query("SELECT 1")
        .await
        .unwrap_err();
    lab().clear_real_faults(&u).await;
    match &e {
        TrinoError::Http {
            status: 503,
            url,
            message,
        } => {
            assert!(url.contains("/v1/statement/"), "{url}");
            assert!(message.contains("gave up after"), "{message}");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_503_with_retry_after_waits_as_asked() {
    let u = user("f503ra");
    lab().real_faults(&u, json!([{"kind": "status", "status": 503, "count": 1, "on": "next", "headers": {"Retry-After": "1"}}])).await;
    let t = Instant::now();
    let out = proxied(&u).query("SELECT 1").await.unwrap();
    assert_eq!(out.retries, 1);
    assert!(
        t.elapsed() >= Duration::from_millis(900),
        "{:?}",
        t.elapsed()
    );
}

#[tokio::test]
async fn a_mutation_is_retried_only_after_trinos_own_503() {
    // Trino's own answer while it initialises: nothing started, sent again.
    let u = user("fmut503");
    lab().real_faults(&u, json!([{"kind": "status", "status": 503, "count": 2, "on": "post", "body": "Trino server is still initializing"}])).await;
    let out = proxied(&u)
        .execute("SELECT 42 AS answer", mutation())
        .await
        .unwrap();
    assert_eq!(out.retries, 2);
    assert_eq!(statements(&u, "42").await.len(), 1);
    // A gateway's 502/503/504 may come after it forwarded the statement: never resent.
    for status in [502, 503, 504] {
        let u = user(&format!("fmut{status}"));
        lab()
            .real_faults(
                &u,
                json!([{"kind": "status", "status": status, "count": 1, "on": "post"}]),
            )
            .await;
        let e = proxied(&u)
            .execute("SELECT 43 AS answer", mutation())
            .await
            .unwrap_err();
        assert!(
            matches!(e, TrinoError::MayHaveRun { .. }),
            "{status}: {e:?}"
        );
        let m = e.to_string();
        assert!(
            m.contains("may have run: query id unknown, check before retrying"),
            "{m}"
        );
        assert!(
            m.contains(&format!("{}/v1/statement", lab().proxy_url())),
            "{m}"
        );
        assert!(m.contains(&format!("HTTP {status}")), "{m}");
        assert!(
            statements(&u, "43").await.is_empty(),
            "sent again after {status}"
        );
    }
    // A read is still sent again.
    let u = user("fread502");
    lab()
        .real_faults(
            &u,
            json!([{"kind": "status", "status": 502, "count": 1, "on": "post"}]),
        )
        .await;
    let out = proxied(&u).query("SELECT 44 AS answer").await.unwrap();
    assert_eq!(out.retries, 1);
}

#[tokio::test]
async fn ten_seconds_of_latency_against_a_short_deadline() {
    let u = user("flatency");
    lab()
        .real_faults(
            &u,
            json!([{"kind": "latency", "ms": 10000, "on": "next", "count": 1}]),
        )
        .await;
    let t = Instant::now();
    let e = proxied(&u)
        .execute(
            "SELECT 1",
            QueryOptions {
                deadline: Some(Some(Duration::from_secs(2))),
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
    assert!(matches!(e, TrinoError::Deadline { .. }), "{e:?}");
    assert!(e.to_string().contains("exceeded the 2s deadline"), "{e}");
    assert!(t.elapsed() < Duration::from_secs(6), "{:?}", t.elapsed());
    // Slow before the statement is even answered.
    let u = user("flatpost");
    lab()
        .real_faults(
            &u,
            json!([{"kind": "latency", "ms": 10000, "on": "post", "count": 1}]),
        )
        .await;
    let t = Instant::now();
    let e = proxied(&u)
        .execute(
            "SELECT 1",
            QueryOptions {
                deadline: Some(Some(Duration::from_secs(2))),
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
    assert!(matches!(e, TrinoError::Deadline { .. }), "{e:?}");
    assert!(e.to_string().contains("within the 2s deadline"), "{e}");
    assert!(t.elapsed() < Duration::from_secs(6), "{:?}", t.elapsed());
}

#[tokio::test]
async fn a_connection_dropped_mid_page() {
    // A read fetches the page again: nothing lost or doubled.
    let u = user("fdrop");
    lab()
        .real_faults(&u, json!([{"kind": "drop", "on": "next", "count": 2}]))
        .await;
    let out = proxied(&u).query(FILES).await.unwrap();
    assert_eq!(
        out.rows.len() as u64,
        lab().table("zoning.documents")["data_files"]
            .as_u64()
            .unwrap()
    );
    assert!(out.retries >= 2);
    // A mutation whose answer is lost after it was sent: reported, not sent again.
    let table = scratch_table("drop").await;
    let u = user("fdropmut");
    lab()
        .real_faults(&u, json!([{"kind": "drop", "on": "post", "count": 1}]))
        .await;
    let sql = format!("ALTER TABLE {table} EXECUTE optimize");
    let e = proxied(&u).execute(&sql, mutation()).await.unwrap_err();
    assert!(matches!(e, TrinoError::MayHaveRun { .. }), "{e:?}");
    assert!(e.to_string().contains("/v1/statement"), "{e}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let posts = lab()
        .proxy_requests_of(&u)
        .await
        .into_iter()
        .filter(|r| r["method"] == "POST")
        .count();
    assert_eq!(posts, 1, "sent once");
    // Trino starts a statement when its first nextUri is fetched: this one never ran.
    assert!(statements(&u, "EXECUTE optimize").await.is_empty());
}

#[tokio::test]
async fn malformed_json_names_the_url() {
    let u = user("fmalformed");
    lab()
        .real_faults(&u, json!([{"kind": "malformed", "on": "next", "count": 1}]))
        .await;
    proxied(&u).query("SELECT 1").await.unwrap();
    let u = user("fgarbage");
    lab()
        .real_faults(&u, json!([{"kind": "malformed", "on": "next"}]))
        .await;
    let e = proxied(&u).query("SELECT 1").await.unwrap_err();
    lab().clear_real_faults(&u).await;
    assert!(matches!(e, TrinoError::Malformed { .. }), "{e:?}");
    assert!(e.to_string().contains("/v1/statement/"), "{e}");
}

#[tokio::test]
async fn legacy_type_signatures_decode_like_current_ones() {
    let sql = "SELECT * FROM iceberg.zoning.permits ORDER BY 1 LIMIT 20";
    let new = lab().client("floe").query(sql).await.unwrap();
    let old = Client::new(lab().config(&lab().listener("v451"), "floe"))
        .unwrap()
        .query(sql)
        .await
        .unwrap();
    let types = |o: &floe::trino::QueryOutput| {
        o.columns
            .iter()
            .map(|c| format!("{} {:?}", c.name, c.ty))
            .collect::<Vec<_>>()
    };
    assert_eq!(types(&old), types(&new));
    assert_eq!(old.rows.len(), new.rows.len());
    for (a, b) in old.rows.iter().zip(&new.rows) {
        assert_eq!(a.values, b.values);
    }
}

#[tokio::test]
async fn a_page_over_the_size_limit_names_limit_key_and_url() {
    let u = user("fbig");
    let client = proxied(&u).with_max_response_size(64 * 1024);
    let e = client.query(FILES).await.unwrap_err();
    assert!(matches!(e, TrinoError::TooLarge { .. }), "{e:?}");
    let m = e.to_string();
    assert!(m.contains("larger than 64 KiB"), "{m}");
    assert!(m.contains("trino.max_response_size"), "{m}");
    assert!(m.contains("/v1/statement/"), "{m}");
    // The query is not left running.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        not_left_running(&u).await,
        "{:?}",
        lab().real_queries_of(&u).await
    );
}

#[tokio::test]
async fn failed_mid_optimize_reports_trinos_error_and_is_not_resent() {
    let table = scratch_table("midopt").await;
    let u = user("fmidopt");
    lab().faults(&u, json!([{"kind": "fail_query", "error_name": "GENERIC_INTERNAL_ERROR", "message": "worker lost during optimize", "after_pages": 0}])).await;
    let sql = format!("ALTER TABLE {table} EXECUTE optimize");
    let e = stand_in(&u).execute(&sql, mutation()).await.unwrap_err();
    lab().clear_faults(&u).await;
    match &e {
        TrinoError::Query {
            error_name,
            message,
            query_id,
            ..
        } => {
            assert_eq!(error_name, "GENERIC_INTERNAL_ERROR");
            assert!(message.contains("worker lost"), "{message}");
            assert!(!query_id.is_empty());
        }
        other => panic!("{other:?}"),
    }
    let m = e.to_string();
    assert!(m.starts_with("GENERIC_INTERNAL_ERROR: worker lost"), "{m}");
    assert_eq!(stand_in_statements(&u, "EXECUTE optimize").await.len(), 1);
}

#[tokio::test]
async fn a_token_that_cannot_be_sent_is_refused_before_any_request() {
    let u = user("ftoken");
    let mut cfg: ClientConfig = lab().config(&lab().https_url(), &u);
    cfg.auth = Auth::Bearer {
        token: SecretString::from("eyJhbGciOiJIUzI1NiJ9.e30.sig\n".to_string()),
    };
    cfg.tls.ca_file = Some(lab().ca_file());
    let e = Client::new(cfg)
        .unwrap()
        .query("SELECT 1")
        .await
        .unwrap_err();
    assert!(matches!(e, TrinoError::Config(_)), "{e:?}");
    let m = e.to_string();
    assert!(m.contains("FLOE_TRINO_TOKEN"), "{m}");
    assert!(!m.contains("eyJ"), "{m}");
}

#[test]
fn check_timeout_is_unknown_and_names_what_was_still_running() {
    let u = user("fchecktimeout");
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(lab().faults(&u, json!([{"kind": "slow", "ms": 30000}])));
    let home = std::env::temp_dir().join(format!("floe-faults-home-{}", std::process::id()));
    std::fs::create_dir_all(&home).unwrap();
    let t = Instant::now();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_floe"))
        .args([
            "check",
            "--trino",
            &lab().stand_in_url(),
            "--user",
            &u,
            "--schema",
            "zoning",
            "--timeout",
            "2s",
        ])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_STATE_HOME", home.join("state"))
        .output()
        .unwrap();
    rt.block_on(lab().clear_faults(&u));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{text}");
    assert!(t.elapsed() < Duration::from_secs(15), "{:?}", t.elapsed());
    assert!(
        text.starts_with("UNKNOWN: the check did not finish within its 2s timeout (--timeout); still running: Trino: "),
        "{text}"
    );
}

// Rows that need the lab's page-reshaping faults and its alias host.

#[tokio::test]
async fn unknown_fields_everywhere_are_ignored() {
    let u = user("fextra");
    lab()
        .real_faults(&u, json!([{"kind": "extra_fields"}]))
        .await;
    let c = proxied(&u);
    let out = c.query(FILES).await;
    // A real error, its error object and failureInfo padded too.
    let failed = c.query("SELECT * FROM iceberg.zoning.no_such_table").await;
    lab().clear_real_faults(&u).await;
    let out = out.unwrap();
    assert_eq!(
        out.rows.len() as u64,
        lab().table("zoning.documents")["data_files"]
            .as_u64()
            .unwrap()
    );
    let e = failed.unwrap_err();
    assert_eq!(e.name(), "TABLE_NOT_FOUND", "{e}");
}

#[tokio::test]
async fn a_50_mb_page_stops_at_the_limit() {
    for (i, gzip) in [false, true].into_iter().enumerate() {
        let u = user(&format!("f50mb{i}"));
        lab()
            .real_faults(
                &u,
                json!([{"kind": "big_page", "mb": 50, "gzip": gzip, "count": 1}]),
            )
            .await;
        let e = proxied(&u).query(FILES).await.unwrap_err();
        lab().clear_real_faults(&u).await;
        assert!(
            matches!(e, TrinoError::TooLarge { .. }),
            "gzip {gzip}: {e:?}"
        );
        let m = e.to_string();
        assert!(
            m.contains("larger than 32 MiB (trino.max_response_size)"),
            "{m}"
        );
        assert!(
            m.contains(&format!("{}/v1/statement/", lab().proxy_url())),
            "{m}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(
            not_left_running(&u).await,
            "{:?}",
            lab().real_queries_of(&u).await
        );
    }
}

#[tokio::test]
async fn a_429_with_an_http_date_retry_after_waits_until_then() {
    let u = user("f429d");
    lab().real_faults(&u, json!([{"kind": "status", "status": 429, "count": 1, "on": "next", "headers": {"Retry-After": {"http_date_in_s": 2}}}])).await;
    let t = Instant::now();
    let out = proxied(&u).query("SELECT 1").await.unwrap();
    assert_eq!(out.retries, 1);
    assert!(
        t.elapsed() >= Duration::from_millis(500),
        "{:?}",
        t.elapsed()
    );
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
}

fn alice() -> Client {
    let pw = lab().stand_in()["users"]["alice"]
        .as_str()
        .unwrap()
        .to_string();
    let mut cfg = lab().config(&lab().https_url(), "alice");
    cfg.auth = Auth::Basic {
        password: SecretString::from(pw),
    };
    cfg.tls.ca_file = Some(lab().ca_file());
    Client::new(cfg).unwrap()
}

#[tokio::test]
async fn next_uri_to_another_host_or_to_http_is_refused_with_or_without_credentials() {
    for (rule, why) in [
        (
            json!({"kind": "redirect_host", "host": "127.0.0.2", "count": 1}),
            "another host",
        ),
        (
            json!({"kind": "redirect_host", "scheme": "http", "count": 1}),
            "downgrades https to http",
        ),
    ] {
        lab().faults("alice", json!([rule])).await;
        let sql = format!("SELECT 1 AS redirect_{}", why.len());
        let e = alice().query(&sql).await.unwrap_err();
        lab().clear_faults("alice").await;
        let TrinoError::UnsafeRedirect { from, to, .. } = &e else {
            panic!("{why}: {e:?}");
        };
        assert_eq!(from, &format!("{}/v1/statement", lab().https_url()));
        let m = e.to_string();
        assert!(m.contains(why), "{m}");
        assert!(m.contains(to.as_str()) && m.contains(from.as_str()), "{m}");
        // The credentials never went there.
        let q = stand_in_statements("alice", &sql).await;
        let q = q.last().unwrap();
        assert_eq!(q["redirect_hits"].as_u64().unwrap_or(0), 0, "{q}");
        assert!(
            q["redirect_auth"].as_array().is_none_or(|a| a.is_empty()),
            "{q}"
        );
    }
    // Without credentials too: a request from the bastion to wherever an answer points is
    // a request forgery, and its answer must not come back in the error.
    let u = user("fredirect");
    lab()
        .faults(
            &u,
            json!([{"kind": "redirect_host", "host": "127.0.0.2", "count": 1}]),
        )
        .await;
    let client = Client::new(lab().config(&lab().stand_in_url(), &u)).unwrap();
    let e = client.query("SELECT 7 AS n").await.unwrap_err();
    lab().clear_faults(&u).await;
    assert!(matches!(e, TrinoError::UnsafeRedirect { .. }), "{e:?}");
    assert!(e.to_string().contains("another host"), "{e}");
    let q = stand_in_statements(&u, "SELECT 7").await;
    let q = q.last().unwrap();
    assert_eq!(q["redirect_hits"].as_u64().unwrap_or(0), 0, "{q}");
}

#[tokio::test]
async fn a_retry_after_of_zero_or_a_past_date_does_not_shorten_the_backoff() {
    // Every poll answered 429 for 2 s with "come back now": the backoff (from 100 ms,
    // doubling) is the floor, so a handful of polls, never a hot loop.
    for (i, value) in ["0", "Wed, 21 Oct 2015 07:28:00 GMT"].iter().enumerate() {
        let u = user(&format!("f429zero{i}"));
        lab()
            .faults(
                &u,
                json!([{"kind": "status", "status": 429, "retry_after": value, "on": "next"}]),
            )
            .await;
        let mut cfg = lab().config(&lab().stand_in_url(), &u);
        cfg.retry = RetryPolicy {
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(1),
            max_retry_time: Duration::from_secs(2),
            ..RetryPolicy::default()
        };
        let e = Client::new(cfg)
            .unwrap()
            .query("SELECT 1")
            .await
            .unwrap_err();
        lab().clear_faults(&u).await;
        assert!(matches!(e, TrinoError::Http { status: 429, .. }), "{e:?}");
        let attempts: u32 = e
            .to_string()
            .split("gave up after ")
            .nth(1)
            .and_then(|t| t.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{value}: {e}"));
        assert!(
            attempts <= 8,
            "Retry-After {value}: {attempts} attempts in 2 s"
        );
    }
}
