//! HTTP plumbing shared by the Trino and Airflow clients: TLS settings, error chains, and
//! the one retry loop ([`send`]) that decides what is sent again, how long to wait
//! (backoff, `Retry-After`) and when to give up.

use std::time::Duration;

use reqwest::header::HeaderMap;
use reqwest::{RequestBuilder, StatusCode};
use tokio::time::Instant;
use url::Url;

use crate::fmt::fmt_size;
use crate::tls::TlsSettings;

/// Why an HTTP client cannot be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ClientError {
    #[error(transparent)]
    Tls(#[from] crate::tls::TlsError),
    /// reqwest's error and its sources.
    #[error("cannot build HTTP client: {0}")]
    Build(String),
}

/// Install ring as the process' crypto provider, which every reqwest client's TLS takes
/// (reqwest is built without one of its own; see Cargo.toml). Call it before building a
/// reqwest client any other way than [`http_client`]; a second call changes nothing.
pub fn install_crypto() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Build a reqwest client with the TLS settings (custom CA, or verification off when asked).
pub fn http_client(
    tls: &TlsSettings,
    connect: Duration,
    request: Duration,
) -> Result<reqwest::Client, ClientError> {
    install_crypto();
    let mut b = reqwest::Client::builder()
        .connect_timeout(connect)
        .timeout(request)
        .user_agent(concat!("floe/", env!("CARGO_PKG_VERSION")))
        .tcp_nodelay(true)
        // `Content-Length`, not `content-length`: proxies that match header names by case
        // (and add their own) would otherwise send two lengths upstream.
        .http1_title_case_headers()
        .redirect(reqwest::redirect::Policy::custom(|attempt| {
            let from = attempt.previous().last().cloned();
            match from.map(|f| redirect_refusal(&f, attempt.url())) {
                _ if attempt.previous().len() > 5 => attempt.error("more than 5 redirects"),
                Some(Some(reason)) => attempt.error(reason),
                _ => attempt.follow(),
            }
        }));
    if tls.insecure_skip_verify {
        b = b.tls_danger_accept_invalid_certs(true);
    } else if let Some(ca) = &tls.ca_file {
        // The CA file is the trust: its CAs, and its certificates pinned (see crate::tls).
        b = b.tls_backend_preconfigured(crate::tls::client_config(ca)?);
    }
    b.build().map_err(|e| ClientError::Build(error_chain(&e)))
}

/// Why an HTTP redirect from `from` to `to` is not followed: credentials are sent to the
/// origin they were configured for only, so a redirect to another host or port, or from
/// https to http, is refused (reqwest would drop an Authorization header on the way and
/// turn a clear refusal into a misleading 401, or replay a write elsewhere).
pub fn redirect_refusal(from: &Url, to: &Url) -> Option<String> {
    let why = if from.scheme() == "https" && to.scheme() != "https" {
        "it downgrades https to http"
    } else if from.host_str() != to.host_str() {
        "it leaves the configured host"
    } else if from.scheme() == to.scheme()
        && from.port_or_known_default() != to.port_or_known_default()
    {
        "it leaves the configured port"
    } else {
        return None;
    };
    Some(format!("refusing the redirect from {from} to {to}: {why}"))
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

/// How a request that got no answer failed, by the error's kind, never by its text (which
/// holds the URL: a host or a DAG named `…tls…` must not make a sent write look unsent).
/// Only a failure to connect means nothing reached the server; everything after (a reset,
/// a timeout, a TLS close without close_notify) may have been acted on.
pub fn transport_kind(e: &reqwest::Error) -> Transport {
    use std::error::Error as _;
    // A request that could not be built (a header value that cannot be sent) or a refused
    // redirect will fail the same way every time.
    if e.is_builder() || e.is_redirect() {
        return Transport::Permanent;
    }
    if !e.is_connect() {
        return Transport::Transient;
    }
    // Not sent: a certificate or a name that does not resolve will not fix itself.
    if crate::tls::rustls_error(e).is_some() {
        return Transport::Permanent;
    }
    let mut src = e.source();
    while let Some(s) = src {
        // hyper-util's connector names a failed name resolution with this fixed message
        // (its own, not the host's: the URL is not in the sources).
        if s.to_string().starts_with("dns error") {
            return Transport::Permanent;
        }
        src = s.source();
    }
    Transport::Connect
}

/// The longest a `Retry-After` is waited for, whatever the server asks.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// `Retry-After` (RFC 9110 §10.2.3): delay seconds or an HTTP date, capped at
/// [`MAX_RETRY_AFTER`]; `None` when absent or unreadable (the caller backs off as usual).
pub fn retry_after(h: &HeaderMap) -> Option<Duration> {
    let v = h.get("retry-after")?.to_str().ok()?;
    parse_retry_after(v, chrono::Utc::now())
}

/// [`retry_after`] of one header value at `now`. Seconds may carry a fraction; NaN,
/// infinities and negative numbers are unreadable. A date in the past means now.
pub fn parse_retry_after(value: &str, now: chrono::DateTime<chrono::Utc>) -> Option<Duration> {
    let v = value.trim();
    if v.is_empty() {
        return None;
    }
    if v.bytes().all(|b| b.is_ascii_digit()) {
        // 1*DIGIT; more digits than a u64 holds is simply "long".
        let secs = v.parse::<u64>().unwrap_or(u64::MAX);
        return Some(Duration::from_secs(secs).min(MAX_RETRY_AFTER));
    }
    if v.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        let secs = v
            .parse::<f64>()
            .ok()
            .filter(|s| s.is_finite() && *s >= 0.0)?;
        return Some(Duration::from_secs_f64(
            secs.min(MAX_RETRY_AFTER.as_secs_f64()),
        ));
    }
    let when = http_date(v)?;
    let delta = when - now;
    Some(match delta.to_std() {
        Ok(d) => d.min(MAX_RETRY_AFTER),
        Err(_) => Duration::ZERO,
    })
}

/// An HTTP date in any of the three forms RFC 9110 §5.6.7 makes recipients accept:
/// IMF-fixdate, RFC 850 and asctime.
fn http_date(v: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    use chrono::{NaiveDateTime, TimeZone, Utc};
    if let Ok(d) = chrono::DateTime::parse_from_rfc2822(v) {
        return Some(d.with_timezone(&Utc));
    }
    let collapsed = v.split_whitespace().collect::<Vec<_>>().join(" ");
    for fmt in [
        "%A, %d-%b-%y %H:%M:%S GMT",
        "%a %b %e %H:%M:%S %Y",
        "%a %b %d %H:%M:%S %Y",
    ] {
        if let Ok(n) = NaiveDateTime::parse_from_str(&collapsed, fmt) {
            return Some(Utc.from_utc_datetime(&n));
        }
    }
    None
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
    /// Starts or changes something: sent again only after what proves that it never
    /// started (a refused connection, or what the policy's [`Mutations`] rule recognises).
    /// Any other failure after it was sent is [`NetFailure::MayHaveRun`].
    Mutation,
}

/// What, besides a refused connection, proves that a mutation never started.
#[derive(Clone, Copy, Debug)]
pub enum Mutations {
    /// Nothing else: an answer of any status, or an exchange broken half-way, may mean the
    /// work was done (a gateway's 502/504 may come after it forwarded the request).
    RefusedOnly,
    /// Also a busy answer (429, 502/503/504) this function recognises as the server's own
    /// refusal to start anything (Trino's 503 while it initialises).
    RefusedOr(fn(&Reply) -> bool),
}

/// How much of a body is read (after decoding: a gzip body counts what it inflates to).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyLimit {
    /// At most this many bytes; a longer successful body is [`NetFailure::TooLarge`].
    Whole(u64),
    /// The last this many bytes; what came before is counted in [`Reply::cut`] and dropped.
    Tail(u64),
}

/// The most of an error status's body that is read (its head: the reason is there).
pub const MAX_ERROR_BODY: u64 = 64 * 1024;

/// The default cap of a body.
pub const DEFAULT_MAX_BODY: u64 = 32 * 1024 * 1024;

/// How one request is retried.
#[derive(Clone, Copy, Debug)]
pub struct Policy {
    /// First backoff; doubled after every retry up to `max_backoff`.
    pub initial_backoff: Duration,
    pub max_backoff: Duration,
    /// How long one request may keep retrying (an earlier deadline given to [`send`] wins).
    pub max_retry_time: Duration,
    pub mutations: Mutations,
    /// How much of a successful answer's body is read.
    pub body: BodyLimit,
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
            body: BodyLimit::Whole(DEFAULT_MAX_BODY),
        }
    }

    /// The same policy reading bodies as `body` says.
    pub fn with_body(self, body: BodyLimit) -> Policy {
        Policy { body, ..self }
    }
}

/// An answer: any status the loop did not retry, or a busy status it gave up on.
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    /// The body; empty when an error status's body was cut short, only its head (at most
    /// [`MAX_ERROR_BODY`]) for an error status, only its tail with [`BodyLimit::Tail`].
    pub text: String,
    /// Bytes dropped from the start of the body ([`BodyLimit::Tail`]).
    pub cut: u64,
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
    /// A mutation was sent and what came back does not say whether it was carried out:
    /// a 502/503/504 that is not the server's own refusal, a connection lost or a timeout
    /// after the request was sent. The message says which.
    MayHaveRun { message: String },
    /// A successful answer's body is longer than [`BodyLimit::Whole`] allows.
    TooLarge { limit: u64 },
}

/// What went wrong with one attempt.
enum Failure {
    Transport {
        kind: Transport,
        message: String,
    },
    /// 429 or 502/503/504.
    Busy(Reply),
    /// Over the body limit (the limit, and the status that answered): nothing a retry
    /// changes.
    TooLarge(u64, StatusCode),
}

impl Failure {
    fn describe(&self) -> String {
        match self {
            Failure::Transport { message, .. } => message.clone(),
            Failure::Busy(r) => format!("HTTP {}", r.status.as_u16()),
            Failure::TooLarge(limit, _) => format!("body over {limit} bytes"),
        }
    }

    /// The end of the loop: the answer or the failure, marked when the retry time ran out.
    fn finish(
        self,
        idempotency: Idempotency,
        attempts: u32,
        gave_up: bool,
    ) -> Result<Reply, NetFailure> {
        let mutation = idempotency == Idempotency::Mutation;
        match self {
            // A write the server accepted happened, whatever its answer's size.
            Failure::TooLarge(limit, status) if mutation && status.is_success() => {
                Err(NetFailure::MayHaveRun {
                    message: format!(
                        "HTTP {} answered, but the answer is larger than {} and was not read",
                        status.as_u16(),
                        fmt_size(limit)
                    ),
                })
            }
            Failure::TooLarge(limit, _) => Err(NetFailure::TooLarge { limit }),
            Failure::Busy(reply)
                if mutation && !gave_up && matches!(reply.status.as_u16(), 502..=504) =>
            {
                let reason = text_reason(&reply.text);
                Err(NetFailure::MayHaveRun {
                    message: format!("HTTP {}{}", reply.status.as_u16(), detail(&reason)),
                })
            }
            Failure::Busy(reply) => Ok(Reply { gave_up, ..reply }),
            Failure::Transport {
                kind: Transport::Transient,
                message,
            } if mutation => Err(NetFailure::MayHaveRun { message }),
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
        Failure::TooLarge(..) => false,
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
        Failure::Busy(reply) => {
            idempotent
                || match policy.mutations {
                    Mutations::RefusedOnly => false,
                    Mutations::RefusedOr(never_started) => never_started(reply),
                }
        }
    }
}

/// Send what `build` makes until it is answered, retrying as `policy` allows for a request
/// of this `idempotency`: with exponential backoff, after `Retry-After` when the answer
/// has one (429, 502/503/504), and never
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
        let (failure, wait) = match exchange(build(), attempt, backoff, policy.body).await {
            Ok(reply) => return Ok(reply),
            Err(f) => f,
        };
        if !may_retry(policy, idempotency, &failure, attempt) {
            return failure.finish(idempotency, attempt, false);
        }
        if Instant::now() + wait > budget_end {
            return failure.finish(idempotency, attempt, true);
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
    limit: BodyLimit,
) -> Result<Reply, (Failure, Duration)> {
    let mut resp = req.send().await.map_err(|e| {
        let mut message = error_chain(&e);
        if let Some(words) = crate::tls::advice(&e) {
            message = format!("{message} ({words})");
        }
        let kind = transport_kind(&e);
        (Failure::Transport { kind, message }, backoff)
    })?;
    let status = resp.status();
    let headers = resp.headers().clone();
    let read = if status.is_success() {
        limit
    } else {
        BodyLimit::Whole(MAX_ERROR_BODY)
    };
    let (text, cut) = match read_body(&mut resp, read, !status.is_success()).await {
        Ok(body) => body,
        Err(BodyError::TooLarge(limit)) => {
            return Err((Failure::TooLarge(limit, status), backoff));
        }
        Err(BodyError::Cut(e)) if status.is_success() => {
            let message = format!("response cut short: {}", error_chain(&e));
            let kind = Transport::Transient;
            return Err((Failure::Transport { kind, message }, backoff));
        }
        // An error status says what happened even when its body is lost.
        Err(BodyError::Cut(_)) => (String::new(), 0),
    };
    let reply = Reply {
        status,
        headers,
        text,
        cut,
        attempts: attempt,
        gave_up: false,
    };
    match status.as_u16() {
        // A 503 may say when to come back too (RFC 9110 §10.2.3).
        // Retry-After lengthens the wait, never shortens it: `0` or a date gone by
        // would otherwise turn the backoff into a hot loop against the server.
        429 | 502..=504 => {
            let wait = retry_after(&reply.headers).map_or(backoff, |w| w.max(backoff));
            Err((Failure::Busy(reply), wait))
        }
        _ => Ok(reply),
    }
}

enum BodyError {
    TooLarge(u64),
    Cut(reqwest::Error),
}

/// Read a body chunk by chunk (decoded as it streams), never holding more than the limit:
/// with [`BodyLimit::Whole`] stop past it (an error, or with `head_only` the head kept),
/// with [`BodyLimit::Tail`] keep its last bytes. The text and the bytes dropped before it.
async fn read_body(
    resp: &mut reqwest::Response,
    limit: BodyLimit,
    head_only: bool,
) -> Result<(String, u64), BodyError> {
    let mut buf: Vec<u8> = Vec::new();
    let mut dropped: u64 = 0;
    while let Some(chunk) = resp.chunk().await.map_err(BodyError::Cut)? {
        let after = (buf.len() + chunk.len()) as u64;
        match limit {
            BodyLimit::Whole(max) if after > max => {
                if head_only {
                    let room = max as usize - buf.len();
                    buf.extend_from_slice(&chunk[..room]);
                    break;
                }
                return Err(BodyError::TooLarge(max));
            }
            // Keep between `max` and `2 * max` bytes, so the buffer never grows past that.
            BodyLimit::Tail(max) if after > max.saturating_mul(2) => {
                let excess = (after - max).min(buf.len() as u64) as usize;
                buf.drain(..excess);
                dropped += excess as u64;
                if buf.capacity() == 0 {
                    buf.reserve_exact((max.saturating_mul(2) as usize).min(1 << 30));
                }
            }
            BodyLimit::Tail(max) if buf.capacity() == 0 => {
                buf.reserve_exact((max.saturating_mul(2) as usize).min(1 << 30));
            }
            _ => {}
        }
        buf.extend_from_slice(&chunk);
    }
    if let BodyLimit::Tail(max) = limit
        && buf.len() as u64 > max
    {
        let excess = buf.len() - max as usize;
        buf.drain(..excess);
        dropped += excess as u64;
    }
    let mut start = 0;
    if dropped > 0 {
        // Do not begin inside a UTF-8 sequence.
        while start < buf.len() && start < 3 && (buf[start] & 0xC0) == 0x80 {
            start += 1;
        }
        dropped += start as u64;
    }
    let text = match String::from_utf8(buf.split_off(start)) {
        Ok(t) => t,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    };
    Ok((text, dropped))
}

#[cfg(test)]
mod tests;
