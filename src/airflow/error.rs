//! Errors of the Airflow client. Every variant names what failed and where: the HTTP status
//! and URL with the server's `detail`, or the URL that could not be reached or read.

use thiserror::Error;

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
    /// Client-side configuration (bad CA file, bad URL).
    #[error("{0}")]
    Config(String),
}

fn auth_kind(status: u16) -> &'static str {
    if status == 403 {
        "permission denied:"
    } else {
        "authentication failed:"
    }
}

fn detail(m: &str) -> String {
    let m = m.trim();
    if m.is_empty() {
        String::new()
    } else {
        format!(": {m}")
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
            AirflowError::Config(_) => "CONFIG",
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
}
