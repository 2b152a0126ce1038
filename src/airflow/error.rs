//! Errors of the Airflow client. Every variant names what failed and where: the HTTP status
//! and URL with the server's `detail`, or the URL that could not be reached or read.

use serde_json::Value;
use thiserror::Error;
use url::Url;

use crate::fmt::fmt_size;
use crate::net::{NetFailure, detail, text_reason};
use reqwest::Method;

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum AirflowError {
    /// 401/403: credentials missing, refused or expired, or the user may not do this.
    #[error("{} HTTP {status} from {url}{}", auth_kind(*.status), detail(.message))]
    Auth {
        status: u16,
        url: String,
        message: String,
    },
    /// Any other HTTP status that is not retryable, or retries that ran out.
    #[error("HTTP {status} from {url}{}", detail(.message))]
    Http {
        status: u16,
        url: String,
        message: String,
    },
    /// Connection refused, reset, TLS failure, timeouts, a body cut short.
    #[error("cannot reach Airflow at {url}: {message}")]
    Transport { url: String, message: String },
    /// The answer was not the document the API describes.
    #[error("malformed response from {url}: {message}")]
    Malformed { url: String, message: String },
    /// Neither `/api/v2/version` nor `/api/v1/version` answered like Airflow.
    #[error("no Airflow REST API at {url}: {message}")]
    NotAirflow { url: String, message: String },
    /// An Airflow whose major version floe does not speak (1.x) or that contradicts the
    /// API version forced in the settings.
    #[error("Airflow {version} at {url} is not supported: {message}")]
    Unsupported {
        url: String,
        version: String,
        message: String,
    },
    /// A write was sent and what came back does not say whether Airflow carried it out
    /// (a gateway's 502/503/504, a connection lost or a timeout after it was sent). It is
    /// never sent again: a trigger sent twice is two runs.
    #[error(
        "{method} {url} may have been carried out: {message}; it was not sent again, check on the server before retrying"
    )]
    MayHaveRun {
        method: String,
        url: String,
        message: String,
    },
    /// An answer longer than its limit.
    #[error("response from {url} is larger than {} ({key})", fmt_size(*.limit))]
    TooLarge {
        url: String,
        limit: u64,
        key: &'static str,
    },
    /// Client-side configuration (bad CA file, bad URL, no `[airflow]` at all).
    #[error("{0}")]
    Config(String),
    /// floe itself failed while asking (a panic in the effect: a bug, or an answer nobody
    /// foresaw); the message is the panic's.
    #[error("internal error: {0} (a bug in floe; details in floe.log)")]
    Internal(String),
}

fn auth_kind(status: u16) -> &'static str {
    if status == 403 {
        "permission denied:"
    } else {
        "authentication failed:"
    }
}

impl AirflowError {
    /// A short kind for status lines and reports.
    pub fn name(&self) -> &'static str {
        match self {
            AirflowError::Auth { status: 403, .. } => "PERMISSION_DENIED",
            AirflowError::Auth { .. } => "AUTHENTICATION_FAILED",
            AirflowError::Http { .. } => "HTTP_ERROR",
            AirflowError::Transport { .. } => "UNREACHABLE",
            AirflowError::Malformed { .. } => "MALFORMED_RESPONSE",
            AirflowError::NotAirflow { .. } => "NOT_AIRFLOW",
            AirflowError::Unsupported { .. } => "UNSUPPORTED_VERSION",
            AirflowError::MayHaveRun { .. } => "OUTCOME_UNKNOWN",
            AirflowError::TooLarge { .. } => "RESPONSE_TOO_LARGE",
            AirflowError::Config(_) => "CONFIG",
            AirflowError::Internal(_) => "INTERNAL_ERROR",
        }
    }

    /// The HTTP status the server answered, when it answered.
    pub fn status(&self) -> Option<u16> {
        match self {
            AirflowError::Auth { status, .. } | AirflowError::Http { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// True for 404 (an unknown DAG, run, task or try).
    pub fn is_not_found(&self) -> bool {
        self.status() == Some(404)
    }

    /// What the retry loop could not get an answer for.
    pub(crate) fn from_net(method: &Method, url: &Url, failure: NetFailure) -> AirflowError {
        match failure {
            NetFailure::Transport { message } => AirflowError::Transport {
                url: url.to_string(),
                message,
            },
            NetFailure::MayHaveRun { message } => AirflowError::MayHaveRun {
                method: method.to_string(),
                url: url.to_string(),
                message,
            },
            NetFailure::TooLarge { limit } => AirflowError::TooLarge {
                url: url.to_string(),
                limit,
                key: "airflow.max_response_size",
            },
        }
    }
}

/// The server's reason from an error body: v2 `{"detail": "…"}` (or a validation list, or
/// an object with `message`), v1 problem+json (`detail`, else `title`), Airflow 3's answer
/// on `/api/v1` (`error`), an HTML page's title, else the text.
/// The start of an answer's body, for a message about it.
pub(super) fn snippet(text: &str) -> String {
    text.chars().take(120).collect()
}

pub(crate) fn body_message(text: &str) -> String {
    let t = text.trim();
    if let Ok(v) = serde_json::from_str::<Value>(t) {
        match &v["detail"] {
            Value::String(s) if !s.trim().is_empty() => return s.trim().to_string(),
            Value::Array(items) if !items.is_empty() => {
                return items
                    .iter()
                    .map(|i| {
                        let loc = i["loc"]
                            .as_array()
                            .map(|l| {
                                l.iter()
                                    .map(|p| match p {
                                        Value::String(s) => s.clone(),
                                        other => other.to_string(),
                                    })
                                    .collect::<Vec<_>>()
                                    .join(".")
                            })
                            .unwrap_or_default();
                        let msg = i["msg"]
                            .as_str()
                            .map(str::to_string)
                            .unwrap_or_else(|| i.to_string());
                        if loc.is_empty() {
                            msg
                        } else {
                            format!("{loc}: {msg}")
                        }
                    })
                    .collect::<Vec<_>>()
                    .join("; ");
            }
            Value::Object(o) => {
                for k in ["message", "reason"] {
                    if let Some(s) = o.get(k).and_then(Value::as_str) {
                        return s.to_string();
                    }
                }
                return Value::Object(o.clone()).to_string();
            }
            _ => {}
        }
        for k in ["title", "error", "message"] {
            if let Some(s) = v[k].as_str().filter(|s| !s.trim().is_empty()) {
                return s.trim().to_string();
            }
        }
        return snippet(t);
    }
    text_reason(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_status_url_and_detail() {
        let e = AirflowError::Auth {
            status: 401,
            url: "http://127.0.0.1:8080/auth/token".into(),
            message: "Invalid credentials".into(),
        };
        assert_eq!(
            e.to_string(),
            "authentication failed: HTTP 401 from http://127.0.0.1:8080/auth/token: Invalid credentials"
        );
        let e = AirflowError::Auth {
            status: 403,
            url: "http://a/api/v2/dags/x".into(),
            message: "Forbidden".into(),
        };
        assert_eq!(
            e.to_string(),
            "permission denied: HTTP 403 from http://a/api/v2/dags/x: Forbidden"
        );
        assert_eq!(e.name(), "PERMISSION_DENIED");
        let e = AirflowError::Http {
            status: 404,
            url: "http://a/api/v2/dags/nope".into(),
            message: String::new(),
        };
        assert_eq!(e.to_string(), "HTTP 404 from http://a/api/v2/dags/nope");
        assert!(e.is_not_found());
    }

    #[test]
    fn error_bodies_of_both_apis() {
        assert_eq!(
            body_message(r#"{"detail":"Invalid credentials"}"#),
            "Invalid credentials"
        );
        assert_eq!(
            body_message(
                r#"{"detail":[{"type":"missing","loc":["body","logical_date"],"msg":"Field required","input":{}}]}"#
            ),
            "body.logical_date: Field required"
        );
        assert_eq!(
            body_message(
                r#"{"detail":{"reason":"Unique constraint violation","statement":"hidden","message":"Serious error when handling your request."}}"#
            ),
            "Serious error when handling your request."
        );
        assert_eq!(
            body_message(
                r#"{"detail":null,"status":401,"title":"Unauthorized","type":"https://airflow.apache.org/docs/apache-airflow/2.10.5/stable-rest-api-ref.html#section/Errors/Unauthenticated"}"#
            ),
            "Unauthorized"
        );
        assert_eq!(
            body_message(
                r#"{"error":"/api/v1 has been removed in Airflow 3, please use its upgraded version /api/v2 instead."}"#
            ),
            "/api/v1 has been removed in Airflow 3, please use its upgraded version /api/v2 instead."
        );
        assert_eq!(
            body_message(
                "<!DOCTYPE html>\n<html><head><title>Airflow 404 = lots of circles</title></head></html>"
            ),
            "Airflow 404 = lots of circles"
        );
    }
}
