//! The Airflow REST client: server detection, authentication, reads and the few writes.
//!
//! One client speaks both stable APIs: `/api/v2` (Airflow 3; JWT from `POST /auth/token`,
//! sent as Bearer, renewed once on 401) and `/api/v1` (Airflow 2; HTTP basic auth). A static
//! bearer token (managed deployments) works with either. GETs are retried on 502/503/504,
//! 429 and transport failures; writes only when the connection was never made.
//!
//! The endpoints live in `endpoints/` (one module per resource), the login in `auth`, server
//! detection in `detect`, the helpers they all share (URLs, the retry policy, decoding
//! answers) in `http`; this module holds the handle: listings and authenticated calls.

use std::sync::Arc;
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde::de::DeserializeOwned;
use serde_json::Value;
use url::Url;

use super::auth::AuthMode;
use super::detect::detect;
use super::error::{AirflowError, body_message, snippet};
use super::http::{
    JSON, Payload, RetryPolicy, decode, encode_segment, join, status_error, with_slash,
};
use super::model::{ApiVersion, ServerVersion};
use crate::config::{AirflowSettings, TlsSettings};
use crate::net::{self, BodyLimit, Idempotency, Reply, http_client};

/// Never follow more pages than this in one listing (a server that ignores `offset`).
const MAX_PAGES: usize = 500;

/// Timeouts and retries; the defaults suit an operator's terminal.
#[derive(Clone, Debug)]
pub struct ClientOptions {
    pub connect_timeout: Duration,
    /// Timeout of one HTTP request.
    pub request_timeout: Duration,
    pub retry: RetryPolicy,
    /// Items asked for per page of a listing; servers clamp it to `[api] maximum_page_limit`
    /// (default 100), and the client follows `total_entries` either way.
    pub page_size: usize,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(30),
            retry: RetryPolicy::default(),
            page_size: 100,
        }
    }
}

pub(super) struct Inner {
    http: reqwest::Client,
    /// The base URL, ending in `/`.
    pub(super) base: Url,
    pub(super) api: ApiVersion,
    version: ServerVersion,
    pub(super) auth: AuthMode,
    retry: RetryPolicy,
    page_size: usize,
    /// `airflow.max_response_size`.
    max_response_size: u64,
    /// `airflow.max_log_size`.
    pub(super) max_log_size: u64,
    pub(super) runs_window: usize,
    pub(super) dag_tags: Vec<String>,
    pub(super) dag_ids: Vec<String>,
}

/// A cheap-to-clone handle on one Airflow server; clones share the HTTP pool and the token.
#[derive(Clone)]
pub struct AirflowClient {
    pub(super) inner: Arc<Inner>,
}

impl std::fmt::Debug for AirflowClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AirflowClient")
            .field("url", &self.inner.base.as_str())
            .field("api", &self.inner.api)
            .field("version", &self.inner.version.version)
            .field("auth", &self.inner.auth.kind())
            .finish()
    }
}

impl AirflowClient {
    /// Detect the server (`GET /api/v2/version`, then `/api/v1/version`; the major version
    /// decides unless `settings.api` forces one), then authenticate: a v2 login, basic auth
    /// on v1, or the static token. Credentials are checked before this returns.
    pub async fn connect(settings: &AirflowSettings) -> Result<AirflowClient, AirflowError> {
        AirflowClient::connect_with(settings, ClientOptions::default()).await
    }

    pub async fn connect_with(
        settings: &AirflowSettings,
        opts: ClientOptions,
    ) -> Result<AirflowClient, AirflowError> {
        check_sendable(settings)?;
        let http = build_http(&settings.tls, &opts)?;
        let base = with_slash(&settings.url);
        let (api, version) = detect(&http, &base, settings, &opts.retry).await?;
        let auth = AuthMode::from_settings(settings, api);
        let client = AirflowClient {
            inner: Arc::new(Inner {
                http,
                base,
                api,
                version,
                auth,
                retry: opts.retry,
                page_size: opts.page_size.clamp(1, 1000),
                max_response_size: settings.max_response_size,
                max_log_size: settings.max_log_size,
                runs_window: settings.runs.max(1),
                dag_tags: settings.dag_tags.clone(),
                dag_ids: settings.dag_ids.clone(),
            }),
        };
        match &client.inner.auth {
            AuthMode::Jwt { .. } => client.relogin(0).await?,
            _ => {
                // Check the credentials (or their absence) with the cheapest authenticated read.
                let url = client.url(&["dags"], &[("limit", "1".into())])?;
                client.call(Method::GET, &url, Payload::None, JSON).await?;
            }
        }
        tracing::info!(
            url = %client.inner.base,
            api = %api,
            version = %client.inner.version.version,
            auth = client.inner.auth.kind(),
            "connected to Airflow"
        );
        Ok(client)
    }

    /// Which API this client speaks.
    pub fn api(&self) -> ApiVersion {
        self.inner.api
    }

    /// The version the server reported when the client connected.
    pub fn server_version(&self) -> &ServerVersion {
        &self.inner.version
    }

    /// The server's base URL.
    pub fn base_url(&self) -> &Url {
        &self.inner.base
    }

    /// `{base}/api/vN/{segments…}?{query}`, every segment percent-encoded.
    /// Send `w` as it reads ([`WriteRequest::line`]): its URL and the server's answer.
    pub(super) async fn send_write(
        &self,
        w: &super::WriteRequest,
    ) -> Result<(Url, Reply), AirflowError> {
        let segments: Vec<&str> = w.segments.iter().map(String::as_str).collect();
        let url = self.url(&segments, &w.query)?;
        let r = self
            .call(
                w.method.clone(),
                &url,
                super::http::Payload::Json(&w.body),
                super::http::JSON,
            )
            .await?;
        Ok((url, r))
    }

    pub(super) fn url(
        &self,
        segments: &[&str],
        query: &[(&str, String)],
    ) -> Result<Url, AirflowError> {
        let mut rel = self.inner.api.prefix().to_string();
        for s in segments {
            rel.push('/');
            rel.push_str(&encode_segment(s));
        }
        let mut url = join(&self.inner.base, &rel)?;
        if !query.is_empty() {
            let mut q = url.query_pairs_mut();
            for (k, v) in query {
                q.append_pair(k, v);
            }
        }
        Ok(url)
    }

    pub(super) async fn get_json<T: DeserializeOwned>(&self, url: &Url) -> Result<T, AirflowError> {
        let r = self.call(Method::GET, url, Payload::None, JSON).await?;
        decode(url, &r.text)
    }

    /// A paginated collection `{"<key>": [...], "total_entries": n}`, up to `max` items.
    pub(super) async fn list<W: DeserializeOwned>(
        &self,
        segments: &[&str],
        query: &[(&str, String)],
        key: &str,
        max: Option<usize>,
    ) -> Result<Vec<W>, AirflowError> {
        let mut out: Vec<W> = Vec::new();
        let mut offset = 0usize;
        for _ in 0..MAX_PAGES {
            let page = self.inner.page_size;
            let want = max.map_or(page, |m| (m - out.len()).min(page));
            let mut q: Vec<(&str, String)> = query.to_vec();
            q.push(("limit", want.to_string()));
            q.push(("offset", offset.to_string()));
            let url = self.url(segments, &q)?;
            let mut v: Value = self.get_json(&url).await?;
            let total = v["total_entries"].as_u64().map(|n| n as usize);
            let items = match v.get_mut(key).map(Value::take) {
                Some(Value::Array(a)) => a,
                Some(Value::Null) | None => {
                    return Err(AirflowError::Malformed {
                        url: url.to_string(),
                        message: format!("no {key:?} list in the collection"),
                    });
                }
                Some(other) => {
                    return Err(AirflowError::Malformed {
                        url: url.to_string(),
                        message: format!("{key:?} is not a list: {}", snippet(&other.to_string())),
                    });
                }
            };
            let n = items.len();
            for (i, item) in items.into_iter().enumerate() {
                let w = serde_json::from_value(item).map_err(|e| AirflowError::Malformed {
                    url: url.to_string(),
                    message: format!("{key}[{i}]: {e}"),
                })?;
                out.push(w);
            }
            offset += n;
            let done =
                n == 0 || max.is_some_and(|m| out.len() >= m) || total.is_none_or(|t| offset >= t);
            if done {
                return Ok(out);
            }
        }
        tracing::warn!(key, pages = MAX_PAGES, "stopped following pages");
        Ok(out)
    }

    /// One authenticated exchange: non-2xx answers become errors; a refused v2 session
    /// token (401, or 403 "Invalid JWT token" after a secret rotation) is renewed once and
    /// the request replayed.
    pub(super) async fn call(
        &self,
        method: Method,
        url: &Url,
        body: Payload<'_>,
        accept: &str,
    ) -> Result<Reply, AirflowError> {
        let limit = BodyLimit::Whole(self.inner.max_response_size);
        self.call_reading(method, url, body, accept, limit).await
    }

    /// [`call`](Self::call), reading the body as `limit` says.
    pub(super) async fn call_reading(
        &self,
        method: Method,
        url: &Url,
        body: Payload<'_>,
        accept: &str,
        limit: BodyLimit,
    ) -> Result<Reply, AirflowError> {
        let mut renewed = false;
        loop {
            let generation = self.token_generation();
            let r = self
                .exchange(method.clone(), url, body, accept, true, limit)
                .await?;
            if r.status.is_success() {
                return Ok(r);
            }
            let message = body_message(&r.text);
            let refused = r.status == StatusCode::UNAUTHORIZED
                || (r.status == StatusCode::FORBIDDEN && message.contains("Invalid JWT"));
            if refused && !renewed && matches!(self.inner.auth, AuthMode::Jwt { .. }) {
                tracing::info!(%url, status = r.status.as_u16(), reason = %message, "Airflow refused the session token; logging in again");
                renewed = true;
                self.relogin(generation).await?;
                continue;
            }
            return Err(status_error(&r, url, message));
        }
    }

    /// One HTTP exchange with retries: GETs (and the login) through 502/503/504, 429 and
    /// transport failures; other writes only through connection failures, when nothing
    /// reached the server. A write answered 502/503/504, or whose connection was lost or
    /// timed out after it was sent, is [`AirflowError::MayHaveRun`]: a trigger sent again
    /// would be a second run.
    pub(super) async fn exchange(
        &self,
        method: Method,
        url: &Url,
        body: Payload<'_>,
        accept: &str,
        authorize: bool,
        limit: BodyLimit,
    ) -> Result<Reply, AirflowError> {
        let idempotency = if method == Method::GET || !authorize {
            Idempotency::Idempotent
        } else {
            Idempotency::Mutation
        };
        let build = || {
            let mut req = self
                .inner
                .http
                .request(method.clone(), url.clone())
                .header("accept", accept);
            match body {
                Payload::Json(v) => req = req.json(v),
                Payload::Header(k, v) => req = req.header(k, v),
                Payload::None => {}
            }
            if authorize {
                req = self.authorize(req);
            }
            req
        };
        let policy = self.inner.retry.policy().with_body(limit);
        net::send(&policy, idempotency, None, url, build)
            .await
            .map_err(|f| AirflowError::from_net(&method, url, f))
    }

    /// The default body limit of this client.
    pub(super) fn json_limit(&self) -> BodyLimit {
        BodyLimit::Whole(self.inner.max_response_size)
    }
}

/// A static token that cannot travel in an HTTP header (a newline from a file or a
/// command) is an error naming its setting, before anything is sent: left out, it would
/// turn into a misleading 401.
fn check_sendable(settings: &AirflowSettings) -> Result<(), AirflowError> {
    use secrecy::ExposeSecret;
    if let Some(token) = &settings.token
        && reqwest::header::HeaderValue::from_str(&format!("Bearer {}", token.expose_secret()))
            .is_err()
    {
        return Err(AirflowError::Config(
            "the Airflow token (FLOE_AIRFLOW_TOKEN, airflow.token_env or airflow.token_command) cannot be sent in an HTTP header: it contains a line break or another control character".into(),
        ));
    }
    Ok(())
}

fn build_http(tls: &TlsSettings, opts: &ClientOptions) -> Result<reqwest::Client, AirflowError> {
    http_client(tls, opts.connect_timeout, opts.request_timeout)
        .map_err(|e| AirflowError::Config(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_that_cannot_be_sent_is_an_error_naming_its_setting() {
        let mut s = AirflowSettings {
            url: "http://127.0.0.1:1".parse().unwrap(),
            user: None,
            password: None,
            token: Some(secrecy::SecretString::from("abc.def\n".to_string())),
            api: crate::config::AirflowApi::Auto,
            tls: TlsSettings {
                ca_file: None,
                insecure_skip_verify: false,
            },
            dag_tags: vec![],
            dag_ids: vec![],
            runs: 1,
            test_connections: false,
            max_response_size: 1 << 20,
            max_log_size: 1 << 20,
        };
        let m = check_sendable(&s).unwrap_err().to_string();
        assert!(
            m.contains("FLOE_AIRFLOW_TOKEN") && !m.contains("abc.def"),
            "{m}"
        );
        s.token = Some(secrecy::SecretString::from("abc.def".to_string()));
        assert!(check_sendable(&s).is_ok());
    }
}
