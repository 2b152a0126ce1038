//! What the Airflow client's parts share: the retry policy, request payloads, URLs built
//! from the server's base, and how an answer becomes a value or an [`AirflowError`]. It
//! points only down (to `error` and `net`): the client, its login (`auth`), its server
//! detection (`detect`) and the endpoints use it, and nothing here uses them.

use std::time::Duration;

use reqwest::Method;
use serde::de::DeserializeOwned;
use serde_json::Value;
use url::Url;

use super::error::{AirflowError, snippet};
use crate::net::{self, Mutations, Reply};

/// Backoff for retried requests.
#[derive(Clone, Debug)]
pub struct RetryPolicy {
    pub initial_backoff: Duration,
    pub max_backoff: Duration,
    /// How long one request may keep retrying.
    pub max_retry_time: Duration,
}

impl RetryPolicy {
    /// The retry loop's policy: a write is sent again only when the connection was refused.
    pub fn policy(&self) -> net::Policy {
        let (first, max, time) = (self.initial_backoff, self.max_backoff, self.max_retry_time);
        net::Policy::new(first, max, time, Mutations::RefusedOnly)
    }
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            initial_backoff: Duration::from_millis(200),
            max_backoff: Duration::from_secs(5),
            max_retry_time: Duration::from_secs(30),
        }
    }
}

#[derive(Clone, Copy)]
pub(super) enum Payload<'a> {
    None,
    Json(&'a Value),
    /// No body; this header (name, value) on the request.
    Header(&'static str, &'a str),
}

/// Percent-encode one path segment: everything but RFC 3986 unreserved characters (run
/// ids hold `:` and `+`, DAG ids may hold `.`).
pub fn encode_segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

pub(super) fn with_slash(url: &Url) -> Url {
    let mut u = url.clone();
    u.set_query(None);
    u.set_fragment(None);
    if !u.path().ends_with('/') {
        let p = format!("{}/", u.path());
        u.set_path(&p);
    }
    u
}

pub(super) fn join(base: &Url, rel: &str) -> Result<Url, AirflowError> {
    base.join(rel)
        .map_err(|e| AirflowError::Config(format!("bad Airflow URL {base}{rel}: {e}")))
}

pub(super) const JSON: &str = "application/json";

pub(super) fn status_error(r: &Reply, url: &Url, message: String) -> AirflowError {
    let status = r.status.as_u16();
    let message = if r.attempts > 1 {
        format!("{message} (gave up after {} attempts)", r.attempts)
            .trim_start()
            .to_string()
    } else {
        message
    };
    match status {
        401 | 403 => AirflowError::Auth {
            status,
            url: url.to_string(),
            message,
        },
        _ => AirflowError::Http {
            status,
            url: url.to_string(),
            message,
        },
    }
}

pub(super) fn decode<T: DeserializeOwned>(url: &Url, text: &str) -> Result<T, AirflowError> {
    serde_json::from_str(text).map_err(|e| AirflowError::Malformed {
        url: url.to_string(),
        message: format!("{e} (body starts {:?})", snippet(text)),
    })
}

/// The answer to a write Airflow accepted (2xx): one that cannot be read does not undo the
/// write, so it is [`AirflowError::MayHaveRun`], never a failure.
pub(super) fn decode_written<T: DeserializeOwned>(
    method: &Method,
    url: &Url,
    text: &str,
) -> Result<T, AirflowError> {
    serde_json::from_str(text).map_err(|e| AirflowError::MayHaveRun {
        method: method.to_string(),
        url: url.to_string(),
        message: format!("it was accepted, but the answer cannot be read ({e})"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_are_percent_encoded() {
        assert_eq!(
            encode_segment("manual__2026-11-29T17:22:00.304948+00:00"),
            "manual__2026-11-29T17%3A22%3A00.304948%2B00%3A00"
        );
        assert_eq!(encode_segment("a/b c"), "a%2Fb%20c");
        assert_eq!(encode_segment("compact_documents"), "compact_documents");
    }

    #[test]
    fn base_url_keeps_its_path() {
        let base = with_slash(&Url::parse("https://example.com/airflow").unwrap());
        assert_eq!(
            join(&base, "api/v2/dags/x%3Ay").unwrap().as_str(),
            "https://example.com/airflow/api/v2/dags/x%3Ay"
        );
        let base = with_slash(&Url::parse("http://127.0.0.1:8080").unwrap());
        assert_eq!(
            join(&base, "auth/token").unwrap().as_str(),
            "http://127.0.0.1:8080/auth/token"
        );
    }
}
