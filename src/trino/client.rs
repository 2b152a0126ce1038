//! The client side of Trino's REST protocol: `POST /v1/statement`, follow `nextUri` to the
//! end, `DELETE nextUri` to cancel; retries for 502/503/504 and 429 within a deadline.

mod answer;
#[cfg(test)]
pub(crate) mod captures;
mod decode;
pub mod query_info;
pub mod query_list;
mod send;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::Method;
use reqwest::header::HeaderMap;
use tokio::time::Instant;
use url::Url;

use super::cancel::{self, CancelGuard};
use super::error::{TrinoError, Unfollowable};
use super::oauth2::{LoginPrompt, OAuth2};
use super::output::{QueryOptions, QueryOutput, QueryProgress};
use super::session::SessionState;
use super::wire::ServerInfo;
use crate::config::{Auth, TlsSettings, TrinoSettings};
use crate::net::{self, Mutations};
pub use crate::net::{error_chain, http_client};
use answer::{Answer, query_error};
#[doc(hidden)]
pub use decode::decode_page;

#[derive(Clone, Debug)]
pub struct RetryPolicy {
    /// First backoff for 502/503/504 and transport errors (Trino asks for 50-100 ms).
    pub initial_backoff: Duration,
    pub max_backoff: Duration,
    /// How long one request may keep retrying when the query has no earlier deadline.
    pub max_retry_time: Duration,
    /// Malformed bodies tolerated on replayable requests before giving up.
    pub max_malformed: u32,
}

impl RetryPolicy {
    /// The retry loop's policy: reads are sent again through 429, 502/503/504 and transport
    /// failures; a statement that changes data only when refused or answered by Trino's
    /// own 503 (see [`never_started`]).
    pub fn policy(&self) -> net::Policy {
        let (first, max, time) = (self.initial_backoff, self.max_backoff, self.max_retry_time);
        net::Policy::new(first, max, time, Mutations::RefusedOr(never_started))
    }
}

/// Whether a busy answer to `POST /v1/statement` proves that the statement never started:
/// only the coordinator's own refusal while it initialises, a 503 whose plain-text body is
/// "Trino server is still initializing" (`QueuedStatementResource`, and the internal
/// authentication filter, answer it before a query exists). A gateway's 502/504, or a 503
/// with any other body (a proxy whose upstream reset the connection after it forwarded the
/// request), may come after the statement was forwarded: not retried.
pub fn never_started(reply: &net::Reply) -> bool {
    reply.status.as_u16() == 503
        && reply
            .text
            .to_ascii_lowercase()
            .contains("server is still initializing")
}

/// The default of `trino.max_response_size`.
pub const DEFAULT_MAX_RESPONSE_SIZE: u64 = 32 * 1024 * 1024;

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(5),
            max_retry_time: Duration::from_secs(60),
            max_malformed: 3,
        }
    }
}

/// Everything the client needs; built from [`TrinoSettings`] or by hand in tests.
#[derive(Clone, Debug)]
pub struct ClientConfig {
    pub url: Url,
    pub user: String,
    pub source: String,
    pub catalog: Option<String>,
    pub schema: Option<String>,
    pub auth: Auth,
    pub tls: TlsSettings,
    pub session: BTreeMap<String, String>,
    pub client_tags: Vec<String>,
    pub retry: RetryPolicy,
    /// Timeout of one HTTP request (each poll long-waits at most ~1 s on the server).
    pub request_timeout: Duration,
    pub connect_timeout: Duration,
    /// Deadline of a whole query unless the call sets its own.
    pub query_timeout: Option<Duration>,
}

impl ClientConfig {
    pub fn from_settings(s: &TrinoSettings, query_timeout: Duration) -> ClientConfig {
        ClientConfig {
            url: s.url.clone(),
            user: s.user.clone(),
            source: s.source.clone(),
            catalog: Some(s.catalog.clone()),
            schema: None,
            auth: s.auth.clone(),
            tls: s.tls.clone(),
            session: s.session.clone(),
            client_tags: s.client_tags.clone(),
            retry: RetryPolicy::default(),
            request_timeout: Duration::from_secs(60),
            connect_timeout: Duration::from_secs(10),
            query_timeout: Some(query_timeout),
        }
    }
}

/// A cheap-to-clone handle; all clones share the HTTP pool and the session.
#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    /// The longest answer read (`trino.max_response_size`).
    max_response_size: u64,
    pub(super) cfg: Arc<ClientConfig>,
    pub(super) session: Arc<Mutex<SessionState>>,
    /// `auth = "oauth2"`: the token in use, its cache, the login.
    oauth: Option<Arc<OAuth2>>,
    /// What this client's statements cost the coordinator, shared by its clones.
    cost: Arc<super::cost::CostMeter>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("url", &self.cfg.url.as_str())
            .field("user", &self.cfg.user)
            .finish()
    }
}

#[derive(Clone, Copy)]
enum Body<'a> {
    None,
    Sql(&'a str),
}

impl Client {
    pub fn new(cfg: ClientConfig) -> Result<Client, TrinoError> {
        let http = http_client(&cfg.tls, cfg.connect_timeout, cfg.request_timeout)
            .map_err(|e| TrinoError::Config(e.to_string()))?;
        let session = SessionState {
            catalog: cfg.catalog.clone(),
            schema: cfg.schema.clone(),
            properties: cfg.session.clone(),
        };
        let oauth = match &cfg.auth {
            Auth::OAuth2(s) => Some(Arc::new(OAuth2::new(
                s.clone(),
                cfg.url.clone(),
                cfg.user.clone(),
                None,
            ))),
            _ => None,
        };
        Ok(Client {
            http,
            max_response_size: DEFAULT_MAX_RESPONSE_SIZE,
            cfg: Arc::new(cfg),
            session: Arc::new(Mutex::new(session)),
            oauth,
            cost: Default::default(),
        })
    }

    /// The same client allowed to start an OAuth2 login when Trino asks for one (the TUI,
    /// `floe login`): `prompt` tells the operator which URL to open. Without it a client
    /// never waits for a human: a missing or refused token is an error saying to run
    /// `floe login`. No effect unless `auth = "oauth2"`.
    pub fn with_oauth2_prompt(mut self, prompt: LoginPrompt) -> Client {
        if let Auth::OAuth2(s) = &self.cfg.auth {
            self.oauth = Some(Arc::new(OAuth2::new(
                s.clone(),
                self.cfg.url.clone(),
                self.cfg.user.clone(),
                Some(prompt),
            )));
        }
        self
    }

    pub(super) fn http(&self) -> &reqwest::Client {
        &self.http
    }

    pub(super) fn oauth2(&self) -> Option<&OAuth2> {
        self.oauth.as_deref()
    }

    /// `HEAD /v1/statement`: whether the coordinator accepts floe's credentials (Trino's
    /// own check, which runs no query), within `within`.
    pub async fn check_credentials(&self, within: Duration) -> Result<(), TrinoError> {
        let url = self.endpoint("v1/statement")?;
        let headers = self.headers(&[])?;
        let deadline = Instant::now() + within;
        self.request(
            Method::HEAD,
            &url,
            Body::None,
            Some(deadline),
            &headers,
            false,
            &mut 0,
        )
        .await
        .map(|_| ())
    }

    pub fn from_settings(s: &TrinoSettings, query_timeout: Duration) -> Result<Client, TrinoError> {
        Ok(Client::new(ClientConfig::from_settings(s, query_timeout))?
            .with_max_response_size(s.max_response_size))
    }

    /// The same client reading answers of at most `bytes` (decoded); a longer one is
    /// [`TrinoError::TooLarge`].
    pub fn with_max_response_size(mut self, bytes: u64) -> Client {
        self.max_response_size = bytes.max(1);
        self
    }

    pub fn config(&self) -> &ClientConfig {
        &self.cfg
    }

    pub fn url(&self) -> &Url {
        &self.cfg.url
    }

    /// The same client counting what its statements cost on a meter of its own: floe's
    /// maintenance statements are not what its refresh spends of the coordinator budget
    /// (an optimize's task CPU would leave the refresh no probe for minutes).
    pub fn with_own_meter(&self) -> Client {
        Client {
            cost: Default::default(),
            ..self.clone()
        }
    }

    /// What every statement this client (and its clones) finished cost the coordinator.
    pub fn cost(&self) -> super::cost::Cost {
        self.cost.read()
    }

    /// `GET` a document of the coordinator's REST API (not a statement), retried like
    /// any request until `retry.max_retry_time`: its body.
    pub(crate) async fn get_document(&self, url: &Url) -> Result<String, TrinoError> {
        let deadline = Instant::now() + self.cfg.retry.max_retry_time;
        let headers = self.headers(&[])?;
        let (text, _) = self
            .request(
                Method::GET,
                url,
                Body::None,
                Some(deadline),
                &headers,
                false,
                &mut 0,
            )
            .await?;
        Ok(text)
    }

    /// `GET /v1/info`: version, uptime, starting.
    pub async fn info(&self) -> Result<ServerInfo, TrinoError> {
        let url = self.endpoint("v1/info")?;
        let text = self.get_document(&url).await?;
        serde_json::from_str(&text).map_err(|e| TrinoError::Malformed {
            url: url.to_string(),
            message: format!("not a Trino server info document: {e}"),
        })
    }

    /// Run a statement to the end with default options.
    pub async fn query(&self, sql: &str) -> Result<QueryOutput, TrinoError> {
        self.execute(sql, QueryOptions::default()).await
    }

    /// Run a statement to the end: drain every page, report progress, honour cancel and
    /// deadline (both cancel the query on the server). A statement that names a metadata
    /// table floe never reads ([`NEVER_READ`]) is not sent.
    pub async fn execute(
        &self,
        sql: &str,
        opts: QueryOptions<'_>,
    ) -> Result<QueryOutput, TrinoError> {
        if let Some(table) = never_read(sql) {
            return Err(TrinoError::Internal(format!(
                "refusing to send a statement that reads {table}, which can crash a coordinator with a long snapshot history (trinodb/trino#29701)"
            )));
        }
        let started = Instant::now();
        let deadline_len = opts.deadline.unwrap_or(self.cfg.query_timeout);
        let deadline = deadline_len.map(|d| started + d);
        let cancel = opts.cancel.clone().unwrap_or_default();
        let mut retries = 0u32;
        let post_url = self.endpoint("v1/statement")?;
        let post_headers = self.headers(&opts.session)?;

        let far = || Instant::now() + Duration::from_secs(86_400 * 365);
        let first = tokio::select! {
            r = self.request_json(Method::POST, &post_url, Body::Sql(sql), deadline, &post_headers, opts.mutation, &mut retries) => r?,
            _ = cancel.cancelled() => return Err(TrinoError::Cancelled { query_id: String::new() }),
            _ = tokio::time::sleep_until(deadline.unwrap_or_else(far)) => {
                if opts.mutation {
                    return Err(TrinoError::MayHaveRun {
                        url: post_url.to_string(),
                        message: format!(
                            "no answer within the {} deadline",
                            humantime::format_duration(deadline_len.unwrap_or_default())
                        ),
                    });
                }
                return Err(TrinoError::Deadline { query_id: String::new(), deadline: deadline_len.unwrap_or_default() });
            }
        };
        let query_id = first.id.clone();
        // Built after the POST: an OAuth2 login it needed gave the token the rest carry.
        let headers = self.headers(&[])?;
        let mut guard = CancelGuard {
            http: self.http.clone(),
            headers: headers.clone(),
            url: None,
        };
        let mut page = first;
        let mut answer = Answer::new(&query_id, &post_url);
        let info_uri = page.info_uri.clone();
        loop {
            guard.url = page.next_uri.as_deref().and_then(|u| Url::parse(u).ok());
            if let Some(next) = &guard.url
                && let Err(reason) = self.may_follow(&post_url, next)
            {
                let to = next.to_string();
                guard.url = None;
                self.kill(&query_id, &headers).await;
                return Err(TrinoError::UnsafeRedirect {
                    from: post_url.to_string(),
                    to,
                    reason,
                });
            }
            answer.take(&mut page)?;
            let progress = QueryProgress::from_stats(&query_id, &info_uri, &page.stats);
            if let Some(cb) = opts.progress {
                cb(&progress);
            }
            if let Some(e) = page.error.take() {
                guard.url = None;
                self.cost.record(&page.stats);
                return Err(query_error(query_id, e));
            }
            let Some(next) = guard.url.clone() else {
                self.cost.record(&page.stats);
                return Ok(answer.finish(info_uri, progress, retries));
            };
            if cancel.is_cancelled() {
                guard.cancel_now().await;
                return Err(TrinoError::Cancelled { query_id });
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                guard.cancel_now().await;
                return Err(TrinoError::Deadline {
                    query_id,
                    deadline: deadline_len.unwrap_or_default(),
                });
            }
            let sleep_until = deadline.unwrap_or_else(far);
            page = tokio::select! {
                r = self.request_json(Method::GET, &next, Body::None, deadline, &headers, false, &mut retries) => match r {
                    Ok(p) => p,
                    Err(TrinoError::Http { status: status @ (404 | 410), url, .. }) => {
                        guard.url = None;
                        return Err(TrinoError::Gone { query_id, status, url });
                    }
                    Err(e @ TrinoError::TooLarge { .. }) => {
                        guard.cancel_now().await;
                        return Err(e);
                    }
                    Err(e) => return Err(e),
                },
                _ = cancel.cancelled() => {
                    guard.cancel_now().await;
                    return Err(TrinoError::Cancelled { query_id });
                }
                _ = tokio::time::sleep_until(sleep_until) => {
                    guard.cancel_now().await;
                    return Err(TrinoError::Deadline { query_id, deadline: deadline_len.unwrap_or_default() });
                }
            };
        }
    }

    fn endpoint(&self, path: &str) -> Result<Url, TrinoError> {
        self.cfg
            .url
            .join(path)
            .map_err(|e| TrinoError::Config(format!("bad Trino URL {}: {e}", self.cfg.url)))
    }

    /// Whether the client may follow `next`, handed out in answer to `origin`: with
    /// credentials attached to every request, only on the same origin (scheme, host, port),
    /// or from http to https on the same host. The error says why not.
    fn may_follow(&self, origin: &Url, next: &Url) -> Result<(), Unfollowable> {
        if !matches!(next.scheme(), "http" | "https") {
            return Err(Unfollowable::NotHttp(next.scheme().to_string()));
        }
        // Credentials or not: the bastion sends requests to the coordinator only.
        if origin.scheme() == "https" && next.scheme() == "http" {
            return Err(Unfollowable::Downgrade);
        }
        if origin.host_str() != next.host_str() {
            return Err(Unfollowable::Host {
                next: next.host_str().unwrap_or("").to_string(),
                origin: origin.host_str().unwrap_or("").to_string(),
            });
        }
        if origin.scheme() == next.scheme()
            && origin.port_or_known_default() != next.port_or_known_default()
        {
            return Err(Unfollowable::Port {
                next: next.port_or_known_default().unwrap_or(0),
                origin: origin.port_or_known_default().unwrap_or(0),
            });
        }
        Ok(())
    }

    /// `DELETE /v1/query/{id}` on the configured coordinator: cancels a query whose nextUri
    /// is not followed (retried through transient failures, as any cancel).
    async fn kill(&self, query_id: &str, headers: &HeaderMap) {
        if let Ok(url) = self.endpoint(&format!("v1/query/{query_id}")) {
            cancel::cancel_with_retries(self.http.clone(), headers.clone(), url).await;
        }
    }
}

/// Metadata tables floe never reads: a `count(*)` on `$all_entries` crashes a coordinator
/// with a long snapshot history (trinodb/trino#29701), and `$all_manifests` walks every
/// snapshot's manifests the same way.
pub const NEVER_READ: [&str; 2] = ["$all_entries", "$all_manifests"];

/// The table of [`NEVER_READ`] a statement names, if any (names are case-insensitive).
pub fn never_read(sql: &str) -> Option<&'static str> {
    let lower = sql.to_lowercase();
    NEVER_READ.into_iter().find(|t| lower.contains(t))
}

#[cfg(test)]
mod tests;
