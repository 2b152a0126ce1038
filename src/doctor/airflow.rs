//! `floe doctor`: the Airflow checks (reachable, API version, auth, DAG listing,
//! connection tests).

use super::*;
use crate::airflow::Connection;
use crate::airflow::model::{TestSite, Tested};
use crate::config::AirflowSettings;

impl Doctor<'_> {
    pub(super) async fn airflow(&mut self, s: &Settings, a: &AirflowSettings) {
        // Each step reports its checks; `None`: one failed that the rest needs.
        let _ = self.airflow_steps(s, a).await;
    }

    async fn airflow_steps(&mut self, s: &Settings, a: &AirflowSettings) -> Option<()> {
        let client = self.airflow_client(a).await?;
        self.airflow_dags(a, &client).await?;
        self.airflow_connection_test(s, a, &client).await;
        Some(())
    }

    /// DNS and TCP of the webserver, then a client that detected its API and logged in.
    async fn airflow_client(&mut self, a: &AirflowSettings) -> Option<AirflowClient> {
        if self
            .reach("airflow", &a.url, "airflow.url (--airflow)")
            .await
            .is_none()
        {
            self.report(Check::skip("airflow", "not reachable: nothing else asked"));
            return None;
        }
        let opts = ClientOptions {
            connect_timeout: STEP_TIMEOUT,
            request_timeout: Duration::from_secs(30),
            retry: crate::airflow::RetryPolicy {
                max_retry_time: STEP_TIMEOUT,
                ..crate::airflow::RetryPolicy::default()
            },
            ..ClientOptions::default()
        };
        let t = Instant::now();
        let client = match AirflowClient::connect_with(a, opts).await {
            Ok(c) => c,
            Err(e) => {
                let (name, fix) = connect_failure(a, &e);
                self.report(Check::fail(name, e.to_string(), fix));
                return None;
            }
        };
        let took = t.elapsed();
        self.report(Check::pass(
            "airflow API version",
            format!(
                "Airflow {}, REST API {}",
                client.server_version().version,
                client.api()
            ),
        ));
        self.report(Check::pass(
            "airflow auth",
            format!(
                "{} accepted (detect and log in: {})",
                a.user.as_deref().unwrap_or("the token"),
                ms(took)
            ),
        ));
        Some(client)
    }

    /// The maintenance DAGs floe is configured to watch.
    async fn airflow_dags(&mut self, a: &AirflowSettings, client: &AirflowClient) -> Option<()> {
        let t = Instant::now();
        match client.configured_dags().await {
            Ok(dags) => {
                self.report(Check::pass(
                    "airflow DAG listing",
                    format!(
                        "{} maintenance DAGs (tags {}; ids {}) in {}",
                        dags.len(),
                        list_or_none(&a.dag_tags),
                        list_or_none(&a.dag_ids),
                        ms(t.elapsed())
                    ),
                ));
            }
            Err(e) => {
                self.report(Check::fail(
                    "airflow DAG listing",
                    e.to_string(),
                    "the user needs to read DAGs (Viewer role at least)",
                ));
                return None;
            }
        }
        Some(())
    }

    /// Airflow's own test of its Trino connection, when floe may ask for it.
    async fn airflow_connection_test(
        &mut self,
        s: &Settings,
        a: &AirflowSettings,
        client: &AirflowClient,
    ) {
        if !a.test_connections {
            self.report(Check::skip(
                "airflow connection test",
                "airflow.test_connections = false",
            ));
            return;
        }
        let conns = match client.connections().await {
            Ok(c) => c,
            Err(e) => {
                self.report(Check::fail(
                    "airflow connection test",
                    format!("cannot list connections: {e}"),
                    "give the user read access to connections, or set airflow.test_connections = false",
                ));
                return;
            }
        };
        let Some(conn) = trino_connection(s, &conns) else {
            self.report(Check::skip(
                "airflow connection test",
                "no Trino connection in Airflow to test",
            ));
            return;
        };
        let t = Instant::now();
        let r = client.check_connection(conn).await;
        let (id, took) = (&conn.connection_id, ms(t.elapsed()));
        let site = |s: TestSite| match s {
            TestSite::ApiServer => "by the API server",
            TestSite::Worker => "on a worker",
        };
        match r {
            Ok(Tested {
                test: ConnectionTest::Passed(_),
                site: at,
            }) => {
                self.report(Check::pass(
                    "airflow connection test",
                    format!("allowed: {id} passed {} in {took}", site(at)),
                ));
            }
            Ok(Tested {
                test: ConnectionTest::Failed(m),
                site: at,
            }) => {
                self.report(Check::pass(
                    "airflow connection test",
                    format!(
                        "allowed: {id} was tested {} and fails ({}): floe check reports it",
                        site(at),
                        m.lines().next().unwrap_or("")
                    ),
                ));
            }
            Ok(Tested {
                test: ConnectionTest::NoVerdict(m),
                ..
            }) => {
                self.report(Check::pass(
                    "airflow connection test",
                    format!("allowed, but no verdict on {id}: {m}"),
                ));
            }
            Ok(Tested {
                test: ConnectionTest::NotAllowed(m),
                ..
            }) => {
                self.report(Check::skip(
                    "airflow connection test",
                    format!(
                        "{m} (Airflow's default since 2.7): floe names a suspect connection from the failing task's error instead, and a fix is proven by the DAG's next run"
                    ),
                ));
            }
            Err(e) => {
                self.report(Check::fail(
                    "airflow connection test",
                    e.to_string(),
                    "or set airflow.test_connections = false",
                ));
            }
        }
    }
}

/// The check a failed connect makes, and its fix.
fn connect_failure(a: &AirflowSettings, e: &AirflowError) -> (&'static str, String) {
    match e {
            AirflowError::Transport { message, .. } if is_tls(message) => {
                ("airflow TLS", tls_fix(&a.tls, "airflow.ca_file"))
            }
            AirflowError::Transport { .. } | AirflowError::Http { .. } => (
                "airflow HTTP",
                "check airflow.url: the base URL of the webserver / API server".into(),
            ),
            AirflowError::NotAirflow { .. }
            | AirflowError::Unsupported { .. }
            | AirflowError::Malformed { .. } => (
                "airflow API version",
                "airflow.url must be Airflow's base URL (2.x: /api/v1, 3.x: /api/v2); airflow.api forces one"
                    .into(),
            ),
            AirflowError::Auth { status: 403, .. } => (
                "airflow auth",
                format!(
                    "the user {} may not read DAGs: give it a role that can",
                    a.user.as_deref().unwrap_or("(none)")
                ),
            ),
            AirflowError::Auth { .. } => (
                "airflow auth",
                format!(
                    "the credentials of {} are refused: FLOE_AIRFLOW_PASSWORD, airflow.password_env or airflow.password_command (FLOE_AIRFLOW_TOKEN or airflow.token_env for a token)",
                    a.user.as_deref().unwrap_or("(no user)")
                ),
            ),
            _ => ("airflow", "see the error above".into()),
        }
}

/// The connection pointing at floe's own Trino, else any Trino connection.
fn trino_connection<'a>(s: &Settings, conns: &'a [Connection]) -> Option<&'a Connection> {
    let ours = (
        s.trino.url.host_str().unwrap_or("").to_string(),
        s.trino.url.port_or_known_default(),
    );
    let trino_conns: Vec<_> = conns
        .iter()
        .filter(|c| c.conn_type.eq_ignore_ascii_case("trino"))
        .collect();
    trino_conns
        .iter()
        .find(|c| (c.host.clone().unwrap_or_default(), c.port) == (ours.0.clone(), ours.1))
        .or(trino_conns.first())
        .copied()
}
