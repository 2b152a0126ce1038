//! Errors of the Trino client. Every variant names what failed and where: Trino's error
//! name and message with the query id, or the HTTP status and URL.

use std::time::Duration;

use thiserror::Error;

use crate::fmt::fmt_size;
use crate::net::detail;

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum TrinoError {
    /// The query ran and Trino reported it FAILED.
    #[error("{error_name}: {message} (query {query_id})")]
    Query {
        query_id: String,
        error_name: String,
        error_code: i64,
        error_type: String,
        message: String,
        location: Option<(u32, u32)>,
    },
    /// 401/403: credentials missing or refused.
    #[error("authentication failed: HTTP {status} from {url}{}", detail(.message))]
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
    #[error("cannot reach Trino at {url}: {message}")]
    Transport { url: String, message: String },
    /// The answer was not a Trino document.
    #[error("malformed response from {url}: {message}")]
    Malformed { url: String, message: String },
    /// The whole query took longer than allowed (it was cancelled on the server).
    #[error("{}", deadline_text(.query_id, *.deadline))]
    Deadline {
        query_id: String,
        deadline: Duration,
    },
    /// The client cancelled it (the server was told with DELETE).
    #[error("query {query_id} was cancelled")]
    Cancelled { query_id: String },
    /// The coordinator no longer knows the query (404/410 on nextUri: restarted, purged).
    #[error("query {query_id} is gone from the coordinator (HTTP {status} from {url})")]
    Gone {
        query_id: String,
        status: u16,
        url: String,
    },
    /// A statement that changes data was sent and the answer does not say whether it ran
    /// (a gateway's 502/504, a connection lost or a timeout after it was sent).
    #[error(
        "the statement may have run: query id unknown, check before retrying (POST {url}: {message})"
    )]
    MayHaveRun { url: String, message: String },
    /// An answer longer than `trino.max_response_size`.
    #[error("response from {url} is larger than {} (trino.max_response_size)", fmt_size(*.limit))]
    TooLarge { url: String, limit: u64 },
    /// The server pointed the client at another origin (host, port) or from https to
    /// http: never followed, with credentials or without (a request from the bastion to
    /// wherever an answer says is a request forgery).
    #[error(
        "refusing to follow nextUri {to} from {from}: {reason}; the query was cancelled (a coordinator behind a proxy names its public address with http-server.process-forwarded=true)"
    )]
    UnsafeRedirect {
        from: String,
        to: String,
        reason: Unfollowable,
    },
    /// Client-side configuration (bad CA file, bad URL, a value that cannot be sent).
    #[error("{0}")]
    Config(String),
    /// floe itself failed while asking (a panic in the effect: a bug, or an answer nobody
    /// foresaw); the message is the panic's.
    #[error("internal error: {0} (a bug in floe; details in floe.log)")]
    Internal(String),
}

fn deadline_text(query_id: &str, deadline: Duration) -> String {
    let d = humantime::format_duration(deadline);
    if query_id.is_empty() {
        format!("Trino did not answer the statement within the {d} deadline")
    } else {
        format!("query {query_id} exceeded the {d} deadline and was cancelled")
    }
}

/// Why a `nextUri` is not followed.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum Unfollowable {
    #[error("{0} is not an HTTP URL")]
    NotHttp(String),
    #[error("it downgrades https to http")]
    Downgrade,
    #[error("it points at another host ({next} instead of {origin})")]
    Host { next: String, origin: String },
    #[error("it points at another port ({next} instead of {origin})")]
    Port { next: u16, origin: u16 },
}

impl TrinoError {
    /// Trino's error name for failed queries, else a short kind.
    pub fn name(&self) -> &str {
        match self {
            TrinoError::Query { error_name, .. } => error_name,
            TrinoError::Auth { .. } => "AUTHENTICATION_FAILED",
            TrinoError::Http { .. } => "HTTP_ERROR",
            TrinoError::Transport { .. } => "UNREACHABLE",
            TrinoError::Malformed { .. } => "MALFORMED_RESPONSE",
            TrinoError::Deadline { .. } => "DEADLINE_EXCEEDED",
            TrinoError::Cancelled { .. } => "USER_CANCELED",
            TrinoError::Gone { .. } => "QUERY_GONE",
            TrinoError::MayHaveRun { .. } => "OUTCOME_UNKNOWN",
            TrinoError::TooLarge { .. } => "RESPONSE_TOO_LARGE",
            TrinoError::UnsafeRedirect { .. } => "UNSAFE_REDIRECT",
            TrinoError::Config(_) => "CONFIG",
            TrinoError::Internal(_) => "INTERNAL_ERROR",
        }
    }

    /// True for errors where the server never answered usefully (check → UNKNOWN).
    pub fn is_connectivity(&self) -> bool {
        matches!(
            self,
            TrinoError::Auth { .. }
                | TrinoError::Http { .. }
                | TrinoError::Transport { .. }
                | TrinoError::Malformed { .. }
                | TrinoError::MayHaveRun { .. }
                | TrinoError::TooLarge { .. }
                | TrinoError::UnsafeRedirect { .. }
                | TrinoError::Config(_)
        )
    }

    pub fn query_id(&self) -> Option<&str> {
        match self {
            TrinoError::Query { query_id, .. }
            | TrinoError::Deadline { query_id, .. }
            | TrinoError::Cancelled { query_id }
            | TrinoError::Gone { query_id, .. } => Some(query_id),
            _ => None,
        }
    }
}
