//! The client side of Trino's REST protocol: `POST /v1/statement`, follow `nextUri` to the
//! end, `DELETE nextUri` to cancel; retries for 502/503/504 and 429 within a deadline.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::{Method, StatusCode};
use secrecy::ExposeSecret;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use url::Url;

use super::error::TrinoError;
use super::types::TrinoType;
use super::value::{Column, Row, Value};
use super::wire::{Data, QueryResults, ServerInfo, StatementStats};
use crate::config::{Auth, TlsSettings, TrinoSettings};
use crate::net::{Transport, retry_after, transport_kind};
pub use crate::net::{error_chain, http_client};

const CAPABILITIES: &str = "PARAMETRIC_DATETIME";

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

/// Progress of a running query, from its `stats`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QueryProgress {
    pub query_id: String,
    pub state: String,
    pub scheduled: bool,
    /// Present once the query is scheduled (and the server computes it).
    pub percentage: Option<f64>,
    pub total_splits: u64,
    pub queued_splits: u64,
    pub running_splits: u64,
    pub completed_splits: u64,
    pub processed_rows: u64,
    pub processed_bytes: u64,
    pub physical_written_bytes: u64,
    pub elapsed_ms: u64,
    pub cpu_ms: u64,
    pub info_uri: Option<String>,
}

impl QueryProgress {
    fn from_stats(id: &str, info_uri: &Option<String>, s: &StatementStats) -> QueryProgress {
        QueryProgress {
            query_id: id.to_string(),
            state: s.state.clone(),
            scheduled: s.scheduled,
            percentage: s.progress_percentage,
            total_splits: s.total_splits,
            queued_splits: s.queued_splits,
            running_splits: s.running_splits,
            completed_splits: s.completed_splits,
            processed_rows: s.processed_rows,
            processed_bytes: s.processed_bytes,
            physical_written_bytes: s.physical_written_bytes,
            elapsed_ms: s.elapsed_time_millis,
            cpu_ms: s.cpu_time_millis,
            info_uri: info_uri.clone(),
        }
    }
}

/// The complete answer to a statement.
#[derive(Clone, Debug)]
pub struct QueryOutput {
    pub query_id: String,
    pub info_uri: Option<String>,
    pub columns: Arc<Vec<Column>>,
    pub rows: Vec<Row>,
    pub update_type: Option<String>,
    pub update_count: Option<i64>,
    pub warnings: Vec<String>,
    pub progress: QueryProgress,
    /// Requests answered 429/502/503/504 or failed in transit and replayed.
    pub retries: u32,
}

impl QueryOutput {
    /// `metric_name`/`metric_value` rows (what Trino 481+ returns for table procedures).
    pub fn metrics(&self) -> Option<BTreeMap<String, i64>> {
        let names: Vec<&str> = self.columns.iter().map(|c| c.name.as_str()).collect();
        if names != ["metric_name", "metric_value"] {
            return None;
        }
        Some(
            self.rows
                .iter()
                .filter_map(|r| Some((r.str("metric_name")?.to_string(), r.i64("metric_value")?)))
                .collect(),
        )
    }
}

/// Options of one call.
#[derive(Default)]
pub struct QueryOptions<'a> {
    pub progress: Option<&'a (dyn Fn(&QueryProgress) + Send + Sync)>,
    pub cancel: Option<CancellationToken>,
    /// Overrides the client's query timeout; `Some(None)` means no deadline at all.
    pub deadline: Option<Option<Duration>>,
    /// Extra session properties for this statement only.
    pub session: Vec<(String, String)>,
}

#[derive(Clone, Debug, Default)]
struct SessionState {
    catalog: Option<String>,
    schema: Option<String>,
    properties: BTreeMap<String, String>,
}

/// A cheap-to-clone handle; all clones share the HTTP pool and the session.
#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    cfg: Arc<ClientConfig>,
    session: Arc<Mutex<SessionState>>,
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
            .map_err(TrinoError::Config)?;
        let session = SessionState {
            catalog: cfg.catalog.clone(),
            schema: cfg.schema.clone(),
            properties: cfg.session.clone(),
        };
        Ok(Client {
            http,
            cfg: Arc::new(cfg),
            session: Arc::new(Mutex::new(session)),
        })
    }

    pub fn from_settings(s: &TrinoSettings, query_timeout: Duration) -> Result<Client, TrinoError> {
        Client::new(ClientConfig::from_settings(s, query_timeout))
    }

    pub fn config(&self) -> &ClientConfig {
        &self.cfg
    }

    pub fn url(&self) -> &Url {
        &self.cfg.url
    }

    /// `GET /v1/info`: version, uptime, starting.
    pub async fn info(&self) -> Result<ServerInfo, TrinoError> {
        let url = self.endpoint("v1/info")?;
        let deadline = Instant::now() + self.cfg.retry.max_retry_time;
        let (text, _) = self
            .request(Method::GET, &url, Body::None, Some(deadline), None, &mut 0)
            .await?;
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
    /// deadline (both cancel the query on the server).
    pub async fn execute(
        &self,
        sql: &str,
        opts: QueryOptions<'_>,
    ) -> Result<QueryOutput, TrinoError> {
        let started = Instant::now();
        let deadline_len = opts.deadline.unwrap_or(self.cfg.query_timeout);
        let deadline = deadline_len.map(|d| started + d);
        let cancel = opts.cancel.clone().unwrap_or_default();
        let mut retries = 0u32;
        let post_url = self.endpoint("v1/statement")?;
        let extra = opts.session.clone();

        let first = tokio::select! {
            r = self.request_json(Method::POST, &post_url, Body::Sql(sql), deadline, &extra, &mut retries) => r?,
            _ = cancel.cancelled() => return Err(TrinoError::Cancelled { query_id: String::new() }),
        };
        let query_id = first.id.clone();
        let mut guard = CancelGuard {
            http: self.http.clone(),
            headers: self.headers(&[]),
            url: None,
        };
        let mut page = first;
        let mut columns: Option<Arc<Vec<Column>>> = None;
        let mut rows: Vec<Row> = Vec::new();
        let mut update_type = None;
        let mut update_count = None;
        let mut warnings = Vec::new();
        let info_uri = page.info_uri.clone();
        loop {
            guard.url = page.next_uri.as_deref().and_then(|u| Url::parse(u).ok());
            if columns.is_none()
                && let Some(cols) = &page.columns
            {
                columns = Some(Arc::new(decode_columns(cols, &query_id)?));
            }
            if let Some(data) = page.data.take() {
                let cols = columns.clone().ok_or_else(|| TrinoError::Malformed {
                    url: post_url.to_string(),
                    message: format!("query {query_id}: data arrived before columns"),
                })?;
                match data {
                    Data::Rows(raw) => {
                        rows.reserve(raw.len());
                        for r in raw {
                            rows.push(decode_row(&cols, r, &query_id)?);
                        }
                    }
                    Data::Spooled => {
                        return Err(TrinoError::Malformed {
                            url: post_url.to_string(),
                            message: format!(
                                "query {query_id}: the server sent spooled data, which floe does not request"
                            ),
                        });
                    }
                }
            }
            if page.update_type.is_some() {
                update_type = page.update_type.clone();
            }
            if page.update_count.is_some() {
                update_count = page.update_count;
            }
            for w in page.warnings.drain(..) {
                let text = match &w.warning_code {
                    Some(c) if !c.name.is_empty() => format!("{}: {}", c.name, w.message),
                    _ => w.message,
                };
                if !warnings.contains(&text) {
                    warnings.push(text);
                }
            }
            let progress = QueryProgress::from_stats(&query_id, &info_uri, &page.stats);
            if let Some(cb) = opts.progress {
                cb(&progress);
            }
            if let Some(e) = page.error.take() {
                guard.url = None;
                return Err(TrinoError::Query {
                    query_id,
                    error_name: if e.error_name.is_empty() {
                        "UNKNOWN_ERROR".into()
                    } else {
                        e.error_name
                    },
                    error_code: e.error_code,
                    error_type: e.error_type,
                    message: e.message,
                    location: e.error_location.map(|l| (l.line_number, l.column_number)),
                });
            }
            let Some(next) = guard.url.clone() else {
                let columns = columns.unwrap_or_default();
                return Ok(QueryOutput {
                    query_id,
                    info_uri,
                    columns,
                    rows,
                    update_type,
                    update_count,
                    warnings,
                    progress,
                    retries,
                });
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
            let sleep_until =
                deadline.unwrap_or_else(|| Instant::now() + Duration::from_secs(86_400 * 365));
            page = tokio::select! {
                r = self.request_json(Method::GET, &next, Body::None, deadline, &[], &mut retries) => match r {
                    Ok(p) => p,
                    Err(TrinoError::Http { status: status @ (404 | 410), url, .. }) => {
                        guard.url = None;
                        return Err(TrinoError::Gone { query_id, status, url });
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

    fn headers(&self, extra_session: &[(String, String)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        let mut put = |name: &'static str, value: &str| {
            if let Ok(v) = HeaderValue::from_str(value) {
                h.append(HeaderName::from_static(name), v);
            }
        };
        put("x-trino-user", &self.cfg.user);
        put("x-trino-source", &self.cfg.source);
        put("x-trino-time-zone", "UTC");
        put("x-trino-client-capabilities", CAPABILITIES);
        put("x-trino-transaction-id", "NONE");
        if !self.cfg.client_tags.is_empty() {
            put("x-trino-client-tags", &self.cfg.client_tags.join(","));
        }
        let s = self.session.lock().map(|s| s.clone()).unwrap_or_default();
        if let Some(c) = &s.catalog {
            put("x-trino-catalog", c);
            if let Some(sc) = &s.schema {
                put("x-trino-schema", sc);
            }
        }
        let mut props = s.properties.clone();
        for (k, v) in extra_session {
            props.insert(k.clone(), v.clone());
        }
        if !props.is_empty() {
            let text = props
                .iter()
                .map(|(k, v)| {
                    format!(
                        "{k}={}",
                        url::form_urlencoded::byte_serialize(v.as_bytes()).collect::<String>()
                    )
                })
                .collect::<Vec<_>>()
                .join(",");
            put("x-trino-session", &text);
        }
        match &self.cfg.auth {
            Auth::None => {}
            Auth::Basic { password } => {
                let token = base64_encode(
                    format!("{}:{}", self.cfg.user, password.expose_secret()).as_bytes(),
                );
                put("authorization", &format!("Basic {token}"));
            }
            Auth::Bearer { token } => put(
                "authorization",
                &format!("Bearer {}", token.expose_secret()),
            ),
        }
        h
    }

    /// Apply `X-Trino-Set-*` / `Clear-*` response headers to the session.
    fn apply_response_headers(&self, h: &HeaderMap) {
        let Ok(mut s) = self.session.lock() else {
            return;
        };
        if let Some(v) = h.get("x-trino-set-catalog").and_then(|v| v.to_str().ok()) {
            s.catalog = Some(v.to_string());
        }
        if let Some(v) = h.get("x-trino-set-schema").and_then(|v| v.to_str().ok()) {
            s.schema = Some(v.to_string());
        }
        for v in h.get_all("x-trino-set-session") {
            if let Ok(text) = v.to_str()
                && let Some((k, val)) = text.split_once('=')
            {
                let decoded: String = url::form_urlencoded::parse(format!("v={val}").as_bytes())
                    .next()
                    .map(|(_, v)| v.into_owned())
                    .unwrap_or_default();
                s.properties.insert(k.trim().to_string(), decoded);
            }
        }
        for v in h.get_all("x-trino-clear-session") {
            if let Ok(k) = v.to_str() {
                s.properties.remove(k.trim());
            }
        }
    }

    async fn request_json(
        &self,
        method: Method,
        url: &Url,
        body: Body<'_>,
        deadline: Option<Instant>,
        session: &[(String, String)],
        retries: &mut u32,
    ) -> Result<QueryResults, TrinoError> {
        let replayable = method != Method::POST;
        let mut malformed = 0;
        loop {
            let (text, headers) = self
                .request(method.clone(), url, body, deadline, Some(session), retries)
                .await?;
            match serde_json::from_str::<QueryResults>(&text) {
                Ok(page) => {
                    self.apply_response_headers(&headers);
                    return Ok(page);
                }
                Err(e) => {
                    malformed += 1;
                    if replayable && malformed <= self.cfg.retry.max_malformed {
                        tracing::warn!(%url, error = %e, "malformed Trino page; fetching it again");
                        *retries += 1;
                        tokio::time::sleep(self.cfg.retry.initial_backoff).await;
                        continue;
                    }
                    let snippet: String = text.chars().take(120).collect();
                    return Err(TrinoError::Malformed {
                        url: url.to_string(),
                        message: format!("{e} (body starts {snippet:?})"),
                    });
                }
            }
        }
    }

    /// One HTTP exchange with retries: 502/503/504 with exponential backoff, 429 after
    /// Retry-After, transport errors on replayable requests (and connect errors on POST).
    async fn request(
        &self,
        method: Method,
        url: &Url,
        body: Body<'_>,
        deadline: Option<Instant>,
        session: Option<&[(String, String)]>,
        retries: &mut u32,
    ) -> Result<(String, HeaderMap), TrinoError> {
        let policy = &self.cfg.retry;
        let budget_end = {
            let b = Instant::now() + policy.max_retry_time;
            deadline.map_or(b, |d| d.min(b))
        };
        let replayable = method != Method::POST;
        let mut backoff = policy.initial_backoff;
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            let mut req = self
                .http
                .request(method.clone(), url.clone())
                .headers(self.headers(session.unwrap_or(&[])));
            if let Body::Sql(sql) = &body {
                req = req
                    .header("content-type", "text/plain; charset=utf-8")
                    .body(sql.to_string());
            }
            let wait: Duration;
            let failure: TrinoError;
            match req.send().await {
                Err(e) => {
                    let message = error_chain(&e);
                    let retryable = match transport_kind(&e, &message) {
                        // A certificate or a hostname will not fix itself in a second.
                        Transport::Permanent => false,
                        // Refused: maybe a coordinator restarting; a few quick tries only.
                        Transport::Connect => attempt < 4,
                        Transport::Transient => replayable,
                    };
                    failure = TrinoError::Transport {
                        url: url.to_string(),
                        message,
                    };
                    if !retryable {
                        return Err(failure);
                    }
                    wait = backoff;
                }
                Ok(resp) => {
                    let status = resp.status();
                    let headers = resp.headers().clone();
                    if status == StatusCode::OK || status == StatusCode::NO_CONTENT {
                        match resp.text().await {
                            Ok(text) => return Ok((text, headers)),
                            Err(e) => {
                                failure = TrinoError::Transport {
                                    url: url.to_string(),
                                    message: format!("response cut short: {}", error_chain(&e)),
                                };
                                if !replayable {
                                    return Err(failure);
                                }
                                wait = backoff;
                            }
                        }
                    } else {
                        let text = resp.text().await.unwrap_or_default();
                        let message = body_message(&text);
                        match status.as_u16() {
                            429 => {
                                wait = retry_after(&headers).unwrap_or(backoff);
                                failure = TrinoError::Http {
                                    status: 429,
                                    url: url.to_string(),
                                    message,
                                };
                            }
                            502..=504 => {
                                wait = backoff;
                                failure = TrinoError::Http {
                                    status: status.as_u16(),
                                    url: url.to_string(),
                                    message,
                                };
                            }
                            401 | 403 => {
                                return Err(TrinoError::Auth {
                                    status: status.as_u16(),
                                    url: url.to_string(),
                                    message,
                                });
                            }
                            404 | 410 if replayable => {
                                return Err(TrinoError::Http {
                                    status: status.as_u16(),
                                    url: url.to_string(),
                                    message,
                                });
                            }
                            s => {
                                return Err(TrinoError::Http {
                                    status: s,
                                    url: url.to_string(),
                                    message,
                                });
                            }
                        }
                    }
                }
            }
            let now = Instant::now();
            if now + wait > budget_end {
                return Err(match failure {
                    TrinoError::Http {
                        status,
                        url,
                        message,
                    } => TrinoError::Http {
                        status,
                        url,
                        message: format!("{message} (gave up after {attempt} attempts)")
                            .trim_start()
                            .to_string(),
                    },
                    TrinoError::Transport { url, message } => TrinoError::Transport {
                        url,
                        message: format!("{message} (gave up after {attempt} attempts)"),
                    },
                    other => other,
                });
            }
            tracing::debug!(%url, attempt, wait_ms = wait.as_millis() as u64, error = %failure, "retrying Trino request");
            *retries += 1;
            tokio::time::sleep(wait).await;
            backoff = (backoff * 2).min(policy.max_backoff);
        }
    }
}

/// Sends `DELETE nextUri` when a query is abandoned: on cancel, on deadline, and when the
/// future running it is dropped mid-way.
struct CancelGuard {
    http: reqwest::Client,
    headers: HeaderMap,
    url: Option<Url>,
}

impl CancelGuard {
    async fn cancel_now(&mut self) {
        if let Some(url) = self.url.take() {
            cancel_with_retries(self.http.clone(), self.headers.clone(), url).await;
        }
    }
}

impl Drop for CancelGuard {
    fn drop(&mut self) {
        if let Some(url) = self.url.take()
            && let Ok(handle) = tokio::runtime::Handle::try_current()
        {
            handle.spawn(cancel_with_retries(
                self.http.clone(),
                self.headers.clone(),
                url,
            ));
        }
    }
}

/// `DELETE nextUri`, retried briefly through the same transient failures as any request
/// (a proxy storm that made the client give up may be over a moment later).
async fn cancel_with_retries(http: reqwest::Client, headers: HeaderMap, url: Url) {
    let mut wait = Duration::from_millis(100);
    for attempt in 1..=5 {
        let r = http
            .delete(url.clone())
            .headers(headers.clone())
            .timeout(Duration::from_secs(5))
            .send()
            .await;
        match r {
            Ok(resp) if !matches!(resp.status().as_u16(), 429 | 502..=504) => {
                tracing::info!(%url, status = resp.status().as_u16(), "cancelled Trino query");
                return;
            }
            Ok(resp) => {
                tracing::debug!(%url, attempt, status = resp.status().as_u16(), "cancel not accepted yet")
            }
            Err(e) => tracing::debug!(%url, attempt, error = %error_chain(&e), "cancel failed"),
        }
        tokio::time::sleep(wait).await;
        wait *= 2;
    }
    tracing::warn!(%url, "could not cancel the Trino query; the coordinator abandons it when polling stops");
}

fn decode_columns(
    cols: &[super::wire::WireColumn],
    query_id: &str,
) -> Result<Vec<Column>, TrinoError> {
    cols.iter()
        .map(|c| {
            let ty = match &c.type_signature {
                Some(sig) => TrinoType::from_signature(sig),
                None => TrinoType::parse(&c.type_text),
            }
            .or_else(|_| TrinoType::parse(&c.type_text))
            .map_err(|e| TrinoError::Malformed {
                url: String::new(),
                message: format!(
                    "query {query_id}: column {:?} has an unreadable type {:?}: {e}",
                    c.name, c.type_text
                ),
            })?;
            Ok(Column {
                name: c.name.clone(),
                type_text: c.type_text.clone(),
                ty,
            })
        })
        .collect()
}

fn decode_row(
    cols: &Arc<Vec<Column>>,
    raw: Vec<serde_json::Value>,
    query_id: &str,
) -> Result<Row, TrinoError> {
    if raw.len() != cols.len() {
        return Err(TrinoError::Malformed {
            url: String::new(),
            message: format!(
                "query {query_id}: a row has {} values for {} columns",
                raw.len(),
                cols.len()
            ),
        });
    }
    let values = cols
        .iter()
        .zip(raw.iter())
        .map(|(c, v)| {
            Value::decode(&c.ty, v).map_err(|e| TrinoError::Malformed {
                url: String::new(),
                message: format!("query {query_id}: column {:?}: {e}", c.name),
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Row {
        columns: cols.clone(),
        values,
    })
}

/// A short message from an error body: JSON `message`/`detail`, else the text itself.
fn body_message(text: &str) -> String {
    let t = text.trim();
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(t) {
        for k in ["message", "detail", "error"] {
            if let Some(s) = v.get(k).and_then(|x| x.as_str()) {
                return s.to_string();
            }
        }
    }
    let one_line: String = t
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    if one_line.starts_with('<') {
        // An HTML error page from a proxy: its title is the useful part.
        if let Some(start) = one_line.find("<title>")
            && let Some(end) = one_line[start..].find("</title>")
        {
            return one_line[start + 7..start + end].to_string();
        }
        return String::new();
    }
    one_line.chars().take(300).collect()
}

fn base64_encode(input: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(input.len().div_ceil(3) * 4);
    for chunk in input.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        out.push(T[(n >> 18) as usize & 63] as char);
        out.push(T[(n >> 12) as usize & 63] as char);
        out.push(if chunk.len() > 1 {
            T[(n >> 6) as usize & 63] as char
        } else {
            '='
        });
        out.push(if chunk.len() > 2 {
            T[n as usize & 63] as char
        } else {
            '='
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc4648() {
        assert_eq!(base64_encode(b""), "");
        assert_eq!(base64_encode(b"f"), "Zg==");
        assert_eq!(base64_encode(b"fo"), "Zm8=");
        assert_eq!(base64_encode(b"foo"), "Zm9v");
        assert_eq!(
            base64_encode(b"alice:alice-secret"),
            "YWxpY2U6YWxpY2Utc2VjcmV0"
        );
    }

    #[test]
    fn error_bodies() {
        assert_eq!(
            body_message(r#"{"message":"Query not found"}"#),
            "Query not found"
        );
        assert_eq!(
            body_message("Error 503 Service Unavailable\n"),
            "Error 503 Service Unavailable"
        );
        assert_eq!(
            body_message("<html><head><title>502 Bad Gateway</title></head></html>"),
            "502 Bad Gateway"
        );
    }

    #[test]
    fn metrics_shape() {
        let cols = Arc::new(vec![
            Column {
                name: "metric_name".into(),
                type_text: "varchar".into(),
                ty: TrinoType::Varchar,
            },
            Column {
                name: "metric_value".into(),
                type_text: "bigint".into(),
                ty: TrinoType::BigInt,
            },
        ]);
        let out = QueryOutput {
            query_id: "q".into(),
            info_uri: None,
            columns: cols.clone(),
            rows: vec![Row {
                columns: cols,
                values: vec![
                    Value::Text("rewritten_data_files_count".into()),
                    Value::Int(12),
                ],
            }],
            update_type: Some("ALTER TABLE EXECUTE".into()),
            update_count: None,
            warnings: vec![],
            progress: QueryProgress::default(),
            retries: 0,
        };
        assert_eq!(out.metrics().unwrap()["rewritten_data_files_count"], 12);
    }
}
