//! The writes floe sends to Airflow, each as one value: the request a confirmation shows
//! ([`WriteRequest::line`]) is the request that is sent ([`crate::AirflowClient`]'s
//! `trigger`, `set_paused` and `set_connection_endpoint` build it the same way).

use reqwest::Method;
use serde_json::{Value, json};

use super::http::encode_segment;
use super::model::ApiVersion;

/// One write: its method, path under the API's prefix, query and JSON body.
#[derive(Clone, Debug, PartialEq)]
pub struct WriteRequest {
    pub method: Method,
    /// The path's segments under `api/v1` or `api/v2`, unencoded.
    pub segments: Vec<String>,
    pub query: Vec<(&'static str, String)>,
    pub body: Value,
}

impl WriteRequest {
    /// A manual run now: `{"logical_date": null}` on v2, `{}` on v1.
    pub fn trigger(api: ApiVersion, dag_id: &str) -> WriteRequest {
        WriteRequest {
            method: Method::POST,
            segments: vec!["dags".into(), dag_id.into(), "dagRuns".into()],
            query: Vec::new(),
            body: match api {
                ApiVersion::V2 => json!({"logical_date": null}),
                ApiVersion::V1 => json!({}),
            },
        }
    }

    /// Pause or unpause a DAG (only `is_paused` in the mask).
    pub fn set_paused(dag_id: &str, paused: bool) -> WriteRequest {
        WriteRequest {
            method: Method::PATCH,
            segments: vec!["dags".into(), dag_id.into()],
            query: vec![("update_mask", "is_paused".into())],
            body: json!({ "is_paused": paused }),
        }
    }

    /// A connection's host and port, and nothing else: the id (both APIs check it against
    /// the path), v2's required `conn_type`, the two fields; never a password.
    pub fn connection_endpoint(
        api: ApiVersion,
        id: &str,
        conn_type: &str,
        host: &str,
        port: u16,
    ) -> WriteRequest {
        let (query, body) = match api {
            ApiVersion::V2 => (
                vec![
                    ("update_mask", "host".into()),
                    ("update_mask", "port".into()),
                ],
                json!({"connection_id": id, "conn_type": conn_type, "host": host, "port": port}),
            ),
            ApiVersion::V1 => (
                vec![("update_mask", "host,port".into())],
                json!({"connection_id": id, "host": host, "port": port}),
            ),
        };
        WriteRequest {
            method: Method::PATCH,
            segments: vec!["connections".into(), id.into()],
            query,
            body,
        }
    }

    /// The request as a confirmation shows it: `POST /api/v2/dags/x/dagRuns {"logical_date":null}`
    /// (the path encoded as it is sent, the query as it is sent).
    pub fn line(&self, api: ApiVersion) -> String {
        let path: Vec<String> = self.segments.iter().map(|s| encode_segment(s)).collect();
        let query: Vec<String> = self.query.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let query = if query.is_empty() {
            String::new()
        } else {
            format!("?{}", query.join("&"))
        };
        format!(
            "{} /{}/{}{query} {}",
            self.method,
            api.prefix(),
            path.join("/"),
            self.body
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_write_reads_as_it_is_sent() {
        assert_eq!(
            WriteRequest::trigger(ApiVersion::V2, "compact_documents").line(ApiVersion::V2),
            r#"POST /api/v2/dags/compact_documents/dagRuns {"logical_date":null}"#
        );
        assert_eq!(
            WriteRequest::trigger(ApiVersion::V1, "a b").line(ApiVersion::V1),
            "POST /api/v1/dags/a%20b/dagRuns {}"
        );
        assert_eq!(
            WriteRequest::set_paused("d", true).line(ApiVersion::V1),
            r#"PATCH /api/v1/dags/d?update_mask=is_paused {"is_paused":true}"#
        );
        let c = WriteRequest::connection_endpoint(ApiVersion::V2, "t", "trino", "h", 8080);
        assert_eq!(
            c.line(ApiVersion::V2),
            r#"PATCH /api/v2/connections/t?update_mask=host&update_mask=port {"conn_type":"trino","connection_id":"t","host":"h","port":8080}"#
        );
        assert!(!c.line(ApiVersion::V2).contains("password"));
    }
}
