//! HTTP plumbing shared by the Trino and Airflow clients: TLS settings, error chains, and
//! the one retry loop ([`send`]) that decides what is sent again, how long to wait
//! (backoff, `Retry-After`) and when to give up.

use std::time::Duration;

use reqwest::header::HeaderMap;
use reqwest::{RequestBuilder, StatusCode};
use tokio::time::Instant;
use url::Url;

use crate::config::TlsSettings;

/// Build a reqwest client with the TLS settings (custom CA, or verification off when asked).
pub fn http_client(
    tls: &TlsSettings,
    connect: Duration,
    request: Duration,
) -> Result<reqwest::Client, String> {
    let mut b = reqwest::Client::builder()
        .connect_timeout(connect)
        .timeout(request)
        .user_agent(concat!("floe/", env!("CARGO_PKG_VERSION")))
        .tcp_nodelay(true);
    if let Some(ca) = &tls.ca_file {
        let pem =
            std::fs::read(ca).map_err(|e| format!("cannot read CA file {}: {e}", ca.display()))?;
        let certs = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| {
            format!(
                "CA file {} holds no usable PEM certificate: {e}",
                ca.display()
            )
        })?;
        if certs.is_empty() {
            return Err(format!("CA file {} holds no PEM certificate", ca.display()));
        }
        for c in certs {
            b = b.add_root_certificate(c);
        }
    }
    if tls.insecure_skip_verify {
        b = b.tls_danger_accept_invalid_certs(true);
    }
    b.build()
        .map_err(|e| format!("cannot build HTTP client: {}", error_chain(&e)))
}

/// An error and its sources in one line (reqwest hides the useful part in the chain).
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut src = e.source();
    while let Some(s) = src {
        let t = s.to_string();
        if !out.contains(&t) {
            out.push_str(": ");
            out.push_str(&t);
        }
        src = s.source();
    }
    out
}

/// How a transport failure should be treated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// A certificate, TLS or name-resolution failure: it will not fix itself in a second.
    Permanent,
    /// Connection refused: maybe a server restarting.
    Connect,
    /// Timeouts, resets, bodies cut short.
    Transient,
}

pub fn transport_kind(e: &reqwest::Error, chain: &str) -> Transport {
    let c = chain.to_ascii_lowercase();
    let permanent = [
        "certificate",
        "tls",
        "handshake",
        "dns error",
        "failed to lookup address",
        "name or service not known",
    ];
    if permanent.iter().any(|p| c.contains(p)) {
        Transport::Permanent
    } else if e.is_connect() {
        Transport::Connect
    } else {
        Transport::Transient
    }
}

/// `Retry-After` in seconds or as an HTTP date.
pub fn retry_after(h: &HeaderMap) -> Option<Duration> {
    let v = h.get("retry-after")?.to_str().ok()?.trim();
    if let Ok(secs) = v.parse::<f64>() {
        return Some(Duration::from_secs_f64(secs.clamp(0.0, 300.0)));
    }
    let when = chrono::DateTime::parse_from_rfc2822(v).ok()?;
    let delta = when.with_timezone(&chrono::Utc) - chrono::Utc::now();
    Some(delta.to_std().unwrap_or(Duration::ZERO))
}

/// `": reason"` after an error's status and URL, or nothing when there is no reason.
pub fn detail(reason: &str) -> String {
    let m = reason.trim();
    if m.is_empty() {
        String::new()
    } else {
        format!(": {m}")
    }
}

/// The reason in an error body that is not JSON: its text on one line (at most 300
/// characters), or the title of an HTML page (a proxy's error page), or nothing.
pub fn text_reason(text: &str) -> String {
    let one_line = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    if one_line.starts_with('<') {
        let lower = one_line.to_ascii_lowercase();
        if let Some(start) = lower.find("<title>")
            && let Some(end) = lower[start..].find("</title>")
        {
            return one_line[start + 7..start + end].trim().to_string();
        }
        return String::new();
    }
    one_line.chars().take(300).collect()
}

/// Whether sending a request twice could do its work twice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Idempotency {
    /// Reads, cancels, logins: sent again after any failure that may pass.
    Idempotent,
    /// Starts or changes something: sent again only after what the policy's
    /// [`Mutations`] rule takes as proof that it never started.
    Mutation,
}

/// What, besides a refused connection, a mutation is sent again after.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mutations {
    /// Nothing else: an answer of any status, or an exchange broken half-way, may mean the
    /// work was done.
    RefusedOnly,
    /// Also 429 and 502/503/504, as Trino's protocol asks of its clients.
    BusyStatuses,
}

/// How one request is retried.
#[derive(Clone, Copy, Debug)]
pub struct Policy {
    /// First backoff; doubled after every retry up to `max_backoff`.
    pub initial_backoff: Duration,
    pub max_backoff: Duration,
    /// How long one request may keep retrying (an earlier deadline given to [`send`] wins).
    pub max_retry_time: Duration,
    pub mutations: Mutations,
}

impl Policy {
    pub fn new(
        initial_backoff: Duration,
        max_backoff: Duration,
        max_retry_time: Duration,
        mutations: Mutations,
    ) -> Policy {
        Policy {
            initial_backoff,
            max_backoff,
            max_retry_time,
            mutations,
        }
    }
}

/// An answer: any status the loop did not retry, or a busy status it gave up on.
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    /// The body; empty when an error status's body was cut short.
    pub text: String,
    /// How many times the request was sent.
    pub attempts: u32,
    /// The status asked for another try (429, 502/503/504) and the retry time ran out.
    pub gave_up: bool,
}

/// Why [`send`] has no answer to return.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NetFailure {
    /// Refused, reset, timed out, TLS or name resolution, a successful answer cut short.
    /// The message says why, and after how many attempts when the retry time ran out.
    Transport { message: String },
}

/// What went wrong with one attempt.
enum Failure {
    Transport {
        kind: Transport,
        message: String,
    },
    /// 429 or 502/503/504.
    Busy(Reply),
}

impl Failure {
    fn describe(&self) -> String {
        match self {
            Failure::Transport { message, .. } => message.clone(),
            Failure::Busy(r) => format!("HTTP {}", r.status.as_u16()),
        }
    }

    /// The end of the loop: the answer or the failure, marked when the retry time ran out.
    fn finish(self, attempts: u32, gave_up: bool) -> Result<Reply, NetFailure> {
        match self {
            Failure::Busy(reply) => Ok(Reply { gave_up, ..reply }),
            Failure::Transport { message, .. } if gave_up => Err(NetFailure::Transport {
                message: format!("{message} (gave up after {attempts} attempts)"),
            }),
            Failure::Transport { message, .. } => Err(NetFailure::Transport { message }),
        }
    }
}

/// Whether a failed attempt may be sent again: the one place that says what is retried.
fn may_retry(policy: &Policy, idempotency: Idempotency, failure: &Failure, attempt: u32) -> bool {
    let idempotent = idempotency == Idempotency::Idempotent;
    match failure {
        // A certificate or a hostname will not fix itself in a second.
        Failure::Transport {
            kind: Transport::Permanent,
            ..
        } => false,
        // Refused: nothing reached the server (maybe one restarting); a few quick tries only.
        Failure::Transport {
            kind: Transport::Connect,
            ..
        } => attempt < 4,
        // The request may have been received and acted on.
        Failure::Transport {
            kind: Transport::Transient,
            ..
        } => idempotent,
        Failure::Busy(_) => idempotent || policy.mutations == Mutations::BusyStatuses,
    }
}

/// Send what `build` makes until it is answered, retrying as `policy` allows for a request
/// of this `idempotency`: with exponential backoff, after `Retry-After` for 429, and never
/// past `deadline` nor the policy's retry time. `url` names the request in the log.
pub async fn send(
    policy: &Policy,
    idempotency: Idempotency,
    deadline: Option<Instant>,
    url: &Url,
    build: impl Fn() -> RequestBuilder,
) -> Result<Reply, NetFailure> {
    let budget_end = {
        let b = Instant::now() + policy.max_retry_time;
        deadline.map_or(b, |d| d.min(b))
    };
    let mut backoff = policy.initial_backoff;
    let mut attempt = 0u32;
    loop {
        attempt += 1;
        let (failure, wait) = match exchange(build(), attempt, backoff).await {
            Ok(reply) => return Ok(reply),
            Err(f) => f,
        };
        if !may_retry(policy, idempotency, &failure, attempt) {
            return failure.finish(attempt, false);
        }
        if Instant::now() + wait > budget_end {
            return failure.finish(attempt, true);
        }
        tracing::debug!(%url, attempt, wait_ms = wait.as_millis() as u64, error = %failure.describe(), "retrying request");
        tokio::time::sleep(wait).await;
        backoff = (backoff * 2).min(policy.max_backoff);
    }
}

/// One attempt: the answer, or what failed and how long to wait before the next.
async fn exchange(
    req: RequestBuilder,
    attempt: u32,
    backoff: Duration,
) -> Result<Reply, (Failure, Duration)> {
    let resp = req.send().await.map_err(|e| {
        let message = error_chain(&e);
        let kind = transport_kind(&e, &message);
        (Failure::Transport { kind, message }, backoff)
    })?;
    let status = resp.status();
    let headers = resp.headers().clone();
    let text = match resp.text().await {
        Ok(t) => t,
        Err(e) if status.is_success() => {
            let message = format!("response cut short: {}", error_chain(&e));
            let kind = Transport::Transient;
            return Err((Failure::Transport { kind, message }, backoff));
        }
        // An error status says what happened even when its body is lost.
        Err(_) => String::new(),
    };
    let reply = Reply {
        status,
        headers,
        text,
        attempts: attempt,
        gave_up: false,
    };
    match status.as_u16() {
        429 => {
            let wait = retry_after(&reply.headers).unwrap_or(backoff);
            Err((Failure::Busy(reply), wait))
        }
        502..=504 => Err((Failure::Busy(reply), backoff)),
        _ => Ok(reply),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn busy(status: u16) -> Failure {
        Failure::Busy(Reply {
            status: StatusCode::from_u16(status).unwrap(),
            headers: HeaderMap::new(),
            text: String::new(),
            attempts: 1,
            gave_up: false,
        })
    }

    fn transport(kind: Transport) -> Failure {
        Failure::Transport {
            kind,
            message: String::new(),
        }
    }

    #[test]
    fn what_is_sent_again() {
        use Idempotency::{Idempotent, Mutation};
        let policy = |mutations| Policy {
            initial_backoff: Duration::ZERO,
            max_backoff: Duration::ZERO,
            max_retry_time: Duration::ZERO,
            mutations,
        };
        let busy_too = policy(Mutations::BusyStatuses);
        let refused_only = policy(Mutations::RefusedOnly);
        for p in [&busy_too, &refused_only] {
            assert!(!may_retry(
                p,
                Idempotent,
                &transport(Transport::Permanent),
                1
            ));
            assert!(may_retry(p, Mutation, &transport(Transport::Connect), 3));
            assert!(!may_retry(p, Mutation, &transport(Transport::Connect), 4));
            assert!(may_retry(
                p,
                Idempotent,
                &transport(Transport::Transient),
                9
            ));
            assert!(!may_retry(p, Mutation, &transport(Transport::Transient), 1));
            for status in [429, 502, 503, 504] {
                assert!(may_retry(p, Idempotent, &busy(status), 9));
            }
        }
        for status in [429, 502, 503, 504] {
            assert!(may_retry(&busy_too, Mutation, &busy(status), 1));
            assert!(!may_retry(&refused_only, Mutation, &busy(status), 1));
        }
    }

    #[test]
    fn retry_after_forms() {
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(
            retry_after(&h),
            Some(Duration::ZERO),
            "a past date means now"
        );
        h.insert("retry-after", HeaderValue::from_static("soon"));
        assert_eq!(retry_after(&h), None);
        h.insert("retry-after", HeaderValue::from_static("86400"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(300)), "capped");
    }
}
