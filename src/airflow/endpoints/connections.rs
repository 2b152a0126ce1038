//! Connections: listing them (passwords are never read) and testing one.

use reqwest::Method;
use serde_json::Value;

use crate::airflow::http::{JSON, Payload, decode, decode_written};
use crate::airflow::model::{ApiVersion, Connection, ConnectionTest, TestSite, Tested};
use crate::airflow::wire::WireConnection;
use crate::airflow::{AirflowClient, AirflowError, WriteRequest};

impl AirflowClient {
    /// Every connection (passwords are never read).
    pub async fn connections(&self) -> Result<Vec<Connection>, AirflowError> {
        let wire: Vec<WireConnection> = self
            .list(&["connections"], &[], "connections", None)
            .await?;
        Ok(wire.into_iter().map(Connection::from).collect())
    }

    /// `GET …/connections/{id}` (the password is masked by the server and never kept).
    pub async fn connection(&self, id: &str) -> Result<Connection, AirflowError> {
        let url = self.url(&["connections", id], &[])?;
        let w: WireConnection = self.get_json(&url).await?;
        Ok(Connection::from(w))
    }

    /// Point a connection at `host:port`, writing those two fields only: `PATCH
    /// …/connections/{id}` ([`WriteRequest::connection_endpoint`]). The password, login,
    /// schema and extra are neither sent nor touched. v2's body must carry `conn_type`, so
    /// it is the one the server has (`conn_type`).
    pub async fn set_connection_endpoint(
        &self,
        id: &str,
        conn_type: &str,
        host: &str,
        port: u16,
    ) -> Result<Connection, AirflowError> {
        let write = WriteRequest::connection_endpoint(self.api(), id, conn_type, host, port);
        let (url, r) = self.send_write(&write).await?;
        // Accepted: an answer that is not a connection does not undo the write.
        let w: WireConnection = decode_written(&Method::PATCH, &url, &r.text)?;
        Ok(Connection::from(w))
    }

    /// `POST …/connections/test` on the API server with the connection's fields (never a
    /// password: floe does not read one). Airflow 3 merges the stored connection's secrets
    /// into what it is sent, so its answer is a verdict on the stored connection; Airflow 2
    /// tests only what it is sent, so a refusal of the missing password there is
    /// [`ConnectionTest::NoVerdict`]. 403 (tests disabled by `[core] test_connection`, the
    /// default since 2.7, or not permitted) is [`ConnectionTest::NotAllowed`], not an error.
    pub async fn test_connection(&self, conn: &Connection) -> Result<ConnectionTest, AirflowError> {
        let url = self.url(&["connections", "test"], &[])?;
        // v1 lists connections without their extra (protocol, verify, catalog): the
        // connection's own document has it, and a test without it is of another connection.
        // A user who may not read it (a viewer) tests what was listed.
        let read = match (self.api(), &conn.extra) {
            (ApiVersion::V1, None) => self.connection(&conn.connection_id).await.ok(),
            _ => None,
        };
        let conn = read.as_ref().unwrap_or(conn);
        let body = conn.test_body();
        match self
            .call(Method::POST, &url, Payload::Json(&body), JSON)
            .await
        {
            Ok(r) => {
                let v: Value = decode(&url, &r.text)?;
                let message = v["message"].as_str().unwrap_or("").to_string();
                match v["status"].as_bool() {
                    Some(true) => Ok(ConnectionTest::Passed(message)),
                    Some(false) if self.api() == ApiVersion::V1 && auth_refused(&message) => {
                        Ok(ConnectionTest::NoVerdict(format!(
                            "Airflow 2 tests only the fields it is sent and floe never sends a password, so its test's refusal ({}) is that missing password, not the stored connection's",
                            crate::text::clip(&message, 160)
                        )))
                    }
                    Some(false) => Ok(ConnectionTest::Failed(message)),
                    None => Err(AirflowError::Malformed {
                        url: url.to_string(),
                        message: "no boolean status in the connection test result".into(),
                    }),
                }
            }
            Err(AirflowError::Auth {
                status: 403,
                message,
                ..
            }) => Ok(not_allowed(&message)),
            Err(e) => Err(e),
        }
    }

    /// The connection tested where its answer is a verdict on the stored one: on Airflow
    /// 3.3+ a connection that stores no secret is tested on a worker (`POST
    /// /api/v2/connections/enqueue-test`, polled until it ends), whose network is the
    /// tasks'; the worker tests only what it is sent, so one that stores a password (or may:
    /// v1 never says) is tested by the API server, which merges the stored secrets on
    /// Airflow 3 (Airflow 2's refusal of the missing password is no verdict). The API
    /// server also when the worker test is not served or does not end in time.
    pub async fn check_connection(&self, conn: &Connection) -> Result<Tested, AirflowError> {
        let api_server = |test| Tested {
            test,
            site: TestSite::ApiServer,
        };
        if self.tests_on_workers()
            && conn.secret == Some(false)
            && let Some(test) = self.enqueue_test(conn).await?
        {
            return Ok(Tested {
                test,
                site: TestSite::Worker,
            });
        }
        self.test_connection(conn).await.map(api_server)
    }

    /// Whether the server can test connections on a worker (Airflow 3.3+).
    fn tests_on_workers(&self) -> bool {
        self.api() == ApiVersion::V2 && version_at_least(&self.server_version().version, (3, 3))
    }

    /// The worker test: enqueued, then polled until it succeeds or fails. While another
    /// test of the connection is under way (409: a colleague's floe, the Airflow UI) it
    /// is enqueued again once that one ends. `None` when the server does not serve it
    /// (404/405) or it did not end within [`WORKER_TEST_WAIT`].
    async fn enqueue_test(
        &self,
        conn: &Connection,
    ) -> Result<Option<ConnectionTest>, AirflowError> {
        let url = self.url(&["connections", "enqueue-test"], &[])?;
        let body = conn.test_body();
        let deadline = tokio::time::Instant::now() + WORKER_TEST_WAIT;
        let mut asked_again = false;
        let token = loop {
            match self
                .call(Method::POST, &url, Payload::Json(&body), JSON)
                .await
            {
                Err(AirflowError::Http { status: 409, .. })
                    if tokio::time::Instant::now() < deadline =>
                {
                    tokio::time::sleep(WORKER_TEST_POLL).await;
                }
                // A server error once (two requests deadlocked on the metadata DB: a 500;
                // an API server restarting: a 502-504, or the answer lost) is asked again:
                // a test only reads, and one enqueued after all answers 409, which waits.
                Err(AirflowError::Http { status: 500, .. } | AirflowError::MayHaveRun { .. })
                    if !asked_again && tokio::time::Instant::now() < deadline =>
                {
                    asked_again = true;
                    tokio::time::sleep(WORKER_TEST_POLL).await;
                }
                r => break r,
            }
        };
        let token = match token {
            Ok(r) => {
                let v: Value = decode(&url, &r.text)?;
                match v["token"].as_str() {
                    Some(t) => t.to_string(),
                    None => {
                        return Err(AirflowError::Malformed {
                            url: url.to_string(),
                            message: "no token in the enqueued connection test".into(),
                        });
                    }
                }
            }
            Err(AirflowError::Auth {
                status: 403,
                message,
                ..
            }) => return Ok(Some(not_allowed(&message))),
            Err(AirflowError::Http {
                status: 404 | 405 | 409,
                ..
            }) => return Ok(None),
            Err(e) => return Err(e),
        };
        loop {
            let r = self
                .call(Method::GET, &url, Payload::Header(TEST_TOKEN, &token), JSON)
                .await?;
            let v: Value = decode(&url, &r.text)?;
            let message = v["result_message"].as_str().unwrap_or("").to_string();
            match v["state"].as_str() {
                Some("success") => return Ok(Some(ConnectionTest::Passed(message))),
                Some("failed") => return Ok(Some(ConnectionTest::Failed(message))),
                Some(_) if tokio::time::Instant::now() < deadline => {
                    tokio::time::sleep(WORKER_TEST_POLL).await;
                }
                Some(state) => {
                    tracing::warn!(connection = %conn.connection_id, state, "the worker's connection test did not end in time; asking the API server");
                    return Ok(None);
                }
                None => {
                    return Err(AirflowError::Malformed {
                        url: url.to_string(),
                        message: "no state in the connection test's status".into(),
                    });
                }
            }
        }
    }
}

/// The header that names an enqueued connection test when it is polled.
const TEST_TOKEN: &str = "Airflow-Connection-Test-Token";
/// How long a worker's connection test is waited for (Airflow's own `[connection_test]
/// timeout`, 60 s by default, bounds it on the worker), and how often it is asked after.
const WORKER_TEST_WAIT: std::time::Duration = std::time::Duration::from_secs(75);
const WORKER_TEST_POLL: std::time::Duration = std::time::Duration::from_millis(500);

fn not_allowed(message: &str) -> ConnectionTest {
    ConnectionTest::NotAllowed(format!(
        "not allowed by the server{}",
        if message.is_empty() {
            String::new()
        } else {
            format!(": {message}")
        }
    ))
}

/// Whether `version` (`3.3.2`, `3.10.0rc1`) is at least `major.minor`.
fn version_at_least(version: &str, (major, minor): (u32, u32)) -> bool {
    let mut parts = version.trim().split('.').map(|p| {
        p.chars()
            .take_while(char::is_ascii_digit)
            .collect::<String>()
            .parse::<u32>()
            .ok()
    });
    match (parts.next().flatten(), parts.next().flatten()) {
        (Some(a), _) if a > major => true,
        (Some(a), Some(b)) => a == major && b >= minor,
        _ => false,
    }
}

/// Whether a failed test's message is an authentication refusal (HTTP 401, an
/// authenticator's words): what a test without the stored password gets from a Trino that
/// wants one.
pub fn auth_refused(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    [
        "error 401",
        "401 unauthorized",
        "401 client error",
        "status 401",
        "unauthorized",
        "invalid credentials",
        "authentication failed",
        "authentication required",
    ]
    .iter()
    .any(|k| m.contains(k))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::airflow::ApiVersion;

    #[test]
    fn workers_test_connections_from_airflow_3_3() {
        for (v, want) in [
            ("3.3.2", true),
            ("3.10.0rc1", true),
            ("4.0.0", true),
            ("3.2.1", false),
            ("2.11.2", false),
            ("", false),
        ] {
            assert_eq!(version_at_least(v, (3, 3)), want, "{v}");
        }
    }

    #[test]
    fn a_refused_password_is_told_from_an_unreachable_host() {
        assert!(auth_refused("error 401: b'Unauthorized'"));
        assert!(auth_refused("Access Denied: Invalid credentials"));
        assert!(!auth_refused(
            "failed to execute: HTTPConnectionPool(host='trino-old.internal', port=8080): Max retries exceeded"
        ));
        assert!(!auth_refused("Connection refused"));
    }

    #[test]
    fn the_update_never_carries_a_password() {
        for api in [ApiVersion::V2, ApiVersion::V1] {
            let b = WriteRequest::connection_endpoint(
                api,
                "trino_documents",
                "trino",
                "trino.internal",
                8443,
            )
            .body;
            let o = b.as_object().unwrap();
            assert_eq!(o["host"], "trino.internal");
            assert_eq!(o["port"], 8443);
            assert!(!o.contains_key("password") && !o.contains_key("login"));
            assert!(!o.contains_key("extra") && !o.contains_key("schema"));
        }
        assert_eq!(
            WriteRequest::connection_endpoint(ApiVersion::V2, "c", "trino", "h", 1).body["conn_type"],
            "trino"
        );
    }
}
