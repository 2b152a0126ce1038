//! Connections: listing them (passwords are never read) and testing one.

use reqwest::Method;
use serde_json::Value;

use crate::airflow::client::{JSON, Payload, decode};
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
