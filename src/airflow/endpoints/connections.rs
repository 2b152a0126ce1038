//! Connections: listing them (passwords are never read) and testing one.

use reqwest::Method;
use serde_json::{Value, json};

use crate::airflow::http::{JSON, Payload, decode, decode_written};
use crate::airflow::model::{Connection, ConnectionTest};
use crate::airflow::wire::WireConnection;
use crate::airflow::{AirflowClient, AirflowError};

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
    /// …/connections/{id}` with the update mask of [`endpoint_mask`]. The password, login,
    /// schema and extra are neither sent nor touched. v2's body must carry `conn_type`, so
    /// it is the one the server has (`conn_type`).
    pub async fn set_connection_endpoint(
        &self,
        id: &str,
        conn_type: &str,
        host: &str,
        port: u16,
    ) -> Result<Connection, AirflowError> {
        let url = self.url(&["connections", id], &endpoint_mask(self.api()))?;
        let body = endpoint_body(self.api(), id, conn_type, host, port);
        let r = self
            .call(Method::PATCH, &url, Payload::Json(&body), JSON)
            .await?;
        // Accepted: an answer that is not a connection does not undo the write.
        let w: WireConnection = decode_written(&Method::PATCH, &url, &r.text)?;
        Ok(Connection::from(w))
    }

    /// `POST …/connections/test` with the connection's fields. The server tests what it is
    /// sent, not the stored connection, and never reveals stored passwords: a connection that
    /// needs one fails the test. 403 (tests disabled by `[core] test_connection`, or not
    /// permitted) is [`ConnectionTest::NotAllowed`], not an error.
    pub async fn test_connection(&self, conn: &Connection) -> Result<ConnectionTest, AirflowError> {
        let url = self.url(&["connections", "test"], &[])?;
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
            }) => Ok(ConnectionTest::NotAllowed(format!(
                "not allowed by the server{}",
                if message.is_empty() {
                    String::new()
                } else {
                    format!(": {message}")
                }
            ))),
            Err(e) => Err(e),
        }
    }
}

/// The update mask of a host/port update. v2 (FastAPI) reads a repeated key; v1
/// (connexion) keeps only the last of repeated keys — measured on Airflow 2.10.5:
/// `update_mask=host&update_mask=port` wrote the port alone — and reads a comma list.
pub fn endpoint_mask(api: crate::airflow::ApiVersion) -> Vec<(&'static str, String)> {
    match api {
        crate::airflow::ApiVersion::V2 => {
            vec![
                ("update_mask", "host".into()),
                ("update_mask", "port".into()),
            ]
        }
        crate::airflow::ApiVersion::V1 => vec![("update_mask", "host,port".into())],
    }
}

/// The body of a host/port update: the id (both APIs check it against the path), v2's
/// required `conn_type`, and the two fields; never a password.
pub fn endpoint_body(
    api: crate::airflow::ApiVersion,
    id: &str,
    conn_type: &str,
    host: &str,
    port: u16,
) -> Value {
    match api {
        crate::airflow::ApiVersion::V2 => json!({
            "connection_id": id, "conn_type": conn_type, "host": host, "port": port
        }),
        crate::airflow::ApiVersion::V1 => json!({
            "connection_id": id, "host": host, "port": port
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::airflow::ApiVersion;

    #[test]
    fn the_update_never_carries_a_password() {
        for api in [ApiVersion::V2, ApiVersion::V1] {
            let b = endpoint_body(api, "trino_documents", "trino", "trino.internal", 8443);
            let o = b.as_object().unwrap();
            assert_eq!(o["host"], "trino.internal");
            assert_eq!(o["port"], 8443);
            assert!(!o.contains_key("password") && !o.contains_key("login"));
            assert!(!o.contains_key("extra") && !o.contains_key("schema"));
        }
        assert_eq!(
            endpoint_body(ApiVersion::V2, "c", "trino", "h", 1)["conn_type"],
            "trino"
        );
    }
}
