//! The Airflow REST client: server detection, authentication, reads and the few writes.
//!
//! One client speaks both stable APIs: `/api/v2` (Airflow 3; JWT from `POST /auth/token`,
//! sent as Bearer, renewed once on 401) and `/api/v1` (Airflow 2; HTTP basic auth). A static
//! bearer token (managed deployments) works with either. GETs are retried on 502/503/504,
//! 429 and transport failures; writes only when the connection was never made.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::{Method, RequestBuilder, StatusCode};
use secrecy::{ExposeSecret, SecretString};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::time::Instant;
use url::Url;

use super::error::AirflowError;
use super::facts::{TaskFailure, dag_facts, failing_task, import_error_for, latest_failed};
use super::log::{TaskLog, parse_v1, parse_v2};
use super::model::{
    AirflowHealth, ApiVersion, ClearOutcome, ClearScope, ClearedTask, Connection, ConnectionTest,
    Dag, DagImportError, DagRun, ServerVersion, TaskInstance, WireConnection, WireDag,
    WireImportError, WireRun, WireTaskInstance, WireTaskRef, major_of,
};
use crate::config::{AirflowApi, AirflowSettings, TlsSettings};
use crate::health::DagFacts;
use crate::net::{Transport, error_chain, http_client, retry_after, transport_kind};

/// Never follow more pages than this in one listing (a server that ignores `offset`).
const MAX_PAGES: usize = 500;

/// Backoff for retried requests.
#[derive(Clone, Debug)]
pub struct RetryPolicy {
    pub initial_backoff: Duration,
    pub max_backoff: Duration,
    /// How long one request may keep retrying.
    pub max_retry_time: Duration,
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

enum AuthMode {
    None,
    Basic {
        user: String,
        password: SecretString,
    },
    /// A token from the settings: nothing to renew.
    Static {
        token: SecretString,
    },
    /// v2 login: the token is renewed with the same credentials when the server refuses it.
    Jwt {
        user: String,
        password: SecretString,
        state: Mutex<TokenState>,
        login_lock: tokio::sync::Mutex<()>,
    },
}

#[derive(Default)]
struct TokenState {
    token: Option<SecretString>,
    /// Bumped by every login, so concurrent 401s log in once.
    generation: u64,
}

impl AuthMode {
    fn kind(&self) -> &'static str {
        match self {
            AuthMode::None => "none",
            AuthMode::Basic { .. } => "basic",
            AuthMode::Static { .. } => "bearer",
            AuthMode::Jwt { .. } => "jwt",
        }
    }
}

struct Inner {
    http: reqwest::Client,
    /// The base URL, ending in `/`.
    base: Url,
    api: ApiVersion,
    version: ServerVersion,
    auth: AuthMode,
    retry: RetryPolicy,
    page_size: usize,
    runs_window: usize,
    dag_tags: Vec<String>,
    dag_ids: Vec<String>,
}

/// A cheap-to-clone handle on one Airflow server; clones share the HTTP pool and the token.
#[derive(Clone)]
pub struct AirflowClient {
    inner: Arc<Inner>,
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

/// A response: status, body, and how many attempts it took.
struct Reply {
    status: StatusCode,
    text: String,
    attempts: u32,
}

#[derive(Clone, Copy)]
enum Payload<'a> {
    None,
    Json(&'a Value),
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

fn with_slash(url: &Url) -> Url {
    let mut u = url.clone();
    u.set_query(None);
    u.set_fragment(None);
    if !u.path().ends_with('/') {
        let p = format!("{}/", u.path());
        u.set_path(&p);
    }
    u
}

fn join(base: &Url, rel: &str) -> Result<Url, AirflowError> {
    base.join(rel)
        .map_err(|e| AirflowError::Config(format!("bad Airflow URL {base}{rel}: {e}")))
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
        let http = build_http(&settings.tls, &opts)?;
        let base = with_slash(&settings.url);
        let (api, version) = detect(&http, &base, settings, &opts.retry).await?;
        let user = settings.user.clone().filter(|u| !u.is_empty());
        let auth = match (&settings.token, &user, &settings.password) {
            (Some(token), _, _) => AuthMode::Static {
                token: token.clone(),
            },
            (None, Some(user), Some(password)) => match api {
                ApiVersion::V2 => AuthMode::Jwt {
                    user: user.clone(),
                    password: password.clone(),
                    state: Mutex::new(TokenState::default()),
                    login_lock: tokio::sync::Mutex::new(()),
                },
                ApiVersion::V1 => AuthMode::Basic {
                    user: user.clone(),
                    password: password.clone(),
                },
            },
            _ => AuthMode::None,
        };
        let client = AirflowClient {
            inner: Arc::new(Inner {
                http,
                base,
                api,
                version,
                auth,
                retry: opts.retry,
                page_size: opts.page_size.clamp(1, 1000),
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

    /// Drop the session token so the next call logs in again (v2 login only; e.g. after a
    /// password rotation). Other modes are unaffected.
    pub fn forget_token(&self) {
        if let AuthMode::Jwt { state, .. } = &self.inner.auth
            && let Ok(mut s) = state.lock()
        {
            s.token = None;
        }
    }

    /// Replace the session token (v2 login only). For tests that check renewal against a
    /// server: a token the server refuses is renewed once with the configured credentials.
    #[doc(hidden)]
    pub fn set_session_token(&self, token: SecretString) {
        if let AuthMode::Jwt { state, .. } = &self.inner.auth
            && let Ok(mut s) = state.lock()
        {
            s.token = Some(token);
        }
    }

    // -----------------------------------------------------------------------------------
    // Reads
    // -----------------------------------------------------------------------------------

    /// `GET …/version`.
    pub async fn version(&self) -> Result<ServerVersion, AirflowError> {
        let url = self.url(&["version"], &[])?;
        self.get_json(&url).await
    }

    /// `GET /api/v2/monitor/health` or `/api/v1/health`.
    pub async fn health(&self) -> Result<AirflowHealth, AirflowError> {
        let url = match self.inner.api {
            ApiVersion::V2 => self.url(&["monitor", "health"], &[])?,
            ApiVersion::V1 => self.url(&["health"], &[])?,
        };
        let v: Value = self.get_json(&url).await?;
        if !v.is_object() {
            return Err(AirflowError::Malformed {
                url: url.to_string(),
                message: "the health document is not an object".into(),
            });
        }
        Ok(AirflowHealth::from_value(&v))
    }

    /// DAGs carrying any of `tags` (OR) plus those named in `ids`; every DAG when both are
    /// empty. Sorted by id. An id the server does not know is left out.
    pub async fn dags(&self, tags: &[String], ids: &[String]) -> Result<Vec<Dag>, AirflowError> {
        let mut out: Vec<Dag> = Vec::new();
        if !tags.is_empty() || ids.is_empty() {
            let mut q: Vec<(&str, String)> = tags.iter().map(|t| ("tags", t.clone())).collect();
            if !tags.is_empty() && self.inner.api == ApiVersion::V2 {
                q.push(("tags_match_mode", "any".into()));
            }
            let wire: Vec<WireDag> = self.list(&["dags"], &q, "dags", None).await?;
            out.extend(wire.into_iter().map(Dag::from));
        }
        for id in ids {
            if out.iter().any(|d| &d.dag_id == id) {
                continue;
            }
            match self.dag(id).await {
                Ok(d) => out.push(d),
                Err(e) if e.is_not_found() => {
                    tracing::warn!(dag_id = %id, "configured DAG not found on the Airflow server");
                }
                Err(e) => return Err(e),
            }
        }
        out.sort_by(|a, b| a.dag_id.cmp(&b.dag_id));
        out.dedup_by(|a, b| a.dag_id == b.dag_id);
        Ok(out)
    }

    /// The DAGs the settings name: `dag_tags` (OR) plus `dag_ids`.
    pub async fn configured_dags(&self) -> Result<Vec<Dag>, AirflowError> {
        self.dags(&self.inner.dag_tags, &self.inner.dag_ids).await
    }

    /// `GET …/dags/{dag_id}`.
    pub async fn dag(&self, dag_id: &str) -> Result<Dag, AirflowError> {
        let url = self.url(&["dags", dag_id], &[])?;
        let w: WireDag = self.get_json(&url).await?;
        Ok(Dag::from(w))
    }

    /// The newest `limit` runs of a DAG, newest first (`order_by=-run_after` on v2,
    /// `-execution_date` on v1).
    pub async fn runs(&self, dag_id: &str, limit: usize) -> Result<Vec<DagRun>, AirflowError> {
        let order = match self.inner.api {
            ApiVersion::V2 => "-run_after",
            ApiVersion::V1 => "-execution_date",
        };
        let wire: Vec<WireRun> = self
            .list(
                &["dags", dag_id, "dagRuns"],
                &[("order_by", order.into())],
                "dag_runs",
                Some(limit.max(1)),
            )
            .await?;
        Ok(wire.into_iter().map(DagRun::from).collect())
    }

    /// `GET …/dags/{dag_id}/dagRuns/{run_id}`.
    pub async fn run(&self, dag_id: &str, run_id: &str) -> Result<DagRun, AirflowError> {
        let url = self.url(&["dags", dag_id, "dagRuns", run_id], &[])?;
        let w: WireRun = self.get_json(&url).await?;
        Ok(DagRun::from(w))
    }

    /// The task instances of a run.
    pub async fn task_instances(
        &self,
        dag_id: &str,
        run_id: &str,
    ) -> Result<Vec<TaskInstance>, AirflowError> {
        let wire: Vec<WireTaskInstance> = self
            .list(
                &["dags", dag_id, "dagRuns", run_id, "taskInstances"],
                &[],
                "task_instances",
                None,
            )
            .await?;
        Ok(wire.into_iter().map(TaskInstance::from).collect())
    }

    /// The whole log of one try: v2 as JSON (rendering `event` and `error_detail`), v1 as
    /// `text/plain`. A try that does not exist is a 404 on v2; v1 answers 200 with a
    /// "Could not read served logs" text.
    pub async fn task_log(
        &self,
        dag_id: &str,
        run_id: &str,
        task_id: &str,
        try_number: u32,
    ) -> Result<TaskLog, AirflowError> {
        let try_text = try_number.to_string();
        let url = self.url(
            &[
                "dags",
                dag_id,
                "dagRuns",
                run_id,
                "taskInstances",
                task_id,
                "logs",
                &try_text,
            ],
            &[("full_content", "true".into())],
        )?;
        match self.inner.api {
            ApiVersion::V2 => {
                let v: Value = self.get_json(&url).await?;
                if !v.is_object() && !v.is_array() {
                    return Err(AirflowError::Malformed {
                        url: url.to_string(),
                        message: "the log document is neither an object nor a list".into(),
                    });
                }
                Ok(parse_v2(&v))
            }
            ApiVersion::V1 => {
                let r = self
                    .call(Method::GET, &url, Payload::None, "text/plain")
                    .await?;
                Ok(parse_v1(&r.text))
            }
        }
    }

    /// Files the DAG processor could not import.
    pub async fn import_errors(&self) -> Result<Vec<DagImportError>, AirflowError> {
        let wire: Vec<WireImportError> = self
            .list(&["importErrors"], &[], "import_errors", None)
            .await?;
        Ok(wire.into_iter().map(DagImportError::from).collect())
    }

    /// Every connection (passwords are never read).
    pub async fn connections(&self) -> Result<Vec<Connection>, AirflowError> {
        let wire: Vec<WireConnection> = self
            .list(&["connections"], &[], "connections", None)
            .await?;
        Ok(wire.into_iter().map(Connection::from).collect())
    }

    /// `POST …/connections/test` with the connection's fields. The server tests what it is
    /// sent, not the stored connection, and never reveals stored passwords: a connection that
    /// needs one fails the test. 403 (tests disabled by `[core] test_connection`, or not
    /// permitted) is [`ConnectionTest::NotAllowed`], not an error.
    pub async fn test_connection(&self, conn: &Connection) -> Result<ConnectionTest, AirflowError> {
        let url = self.url(&["connections", "test"], &[])?;
        let body = conn.test_body();
        match self
            .call(Method::POST, &url, Payload::Json(&body), JSON)
            .await
        {
            Ok(r) => {
                let v: Value = decode(&url, &r.text)?;
                let message = v["message"].as_str().unwrap_or("").to_string();
                match v["status"].as_bool() {
                    Some(true) => Ok(ConnectionTest::Passed(message)),
                    Some(false) => Ok(ConnectionTest::Failed(message)),
                    None => Err(AirflowError::Malformed {
                        url: url.to_string(),
                        message: "no boolean status in the connection test result".into(),
                    }),
                }
            }
            Err(AirflowError::Auth {
                status: 403,
                message,
                ..
            }) => Ok(ConnectionTest::NotAllowed(format!(
                "not allowed by the server{}",
                if message.is_empty() {
                    String::new()
                } else {
                    format!(": {message}")
                }
            ))),
            Err(e) => Err(e),
        }
    }

    // -----------------------------------------------------------------------------------
    // Writes: they return what the server says; confirmation, read-only checks and the
    // audit log are the caller's.
    // -----------------------------------------------------------------------------------

    /// Create a manual run now (`{"logical_date": null}` on v2, `{}` on v1). On a paused
    /// DAG the run is created `queued` and waits for the DAG to be unpaused.
    pub async fn trigger(&self, dag_id: &str) -> Result<DagRun, AirflowError> {
        let url = self.url(&["dags", dag_id, "dagRuns"], &[])?;
        let body = match self.inner.api {
            ApiVersion::V2 => json!({"logical_date": null}),
            ApiVersion::V1 => json!({}),
        };
        let r = self
            .call(Method::POST, &url, Payload::Json(&body), JSON)
            .await?;
        let w: WireRun = decode(&url, &r.text)?;
        Ok(DagRun::from(w))
    }

    /// Clear a run so its tasks run again (or, with `dry_run`, list what would be cleared).
    /// v2 honours `only_failed`; v1's run-clear endpoint has no such option and clears every
    /// task of the run, which the outcome's [`ClearScope::AllTasks`] says.
    pub async fn clear_run(
        &self,
        dag_id: &str,
        run_id: &str,
        dry_run: bool,
        only_failed: bool,
    ) -> Result<ClearOutcome, AirflowError> {
        let url = self.url(&["dags", dag_id, "dagRuns", run_id, "clear"], &[])?;
        let (body, scope) = match self.inner.api {
            ApiVersion::V2 => (
                json!({"dry_run": dry_run, "only_failed": only_failed}),
                if only_failed {
                    ClearScope::OnlyFailed
                } else {
                    ClearScope::AllTasks
                },
            ),
            ApiVersion::V1 => (json!({"dry_run": dry_run}), ClearScope::AllTasks),
        };
        let r = self
            .call(Method::POST, &url, Payload::Json(&body), JSON)
            .await?;
        let mut v: Value = decode(&url, &r.text)?;
        let mut outcome = ClearOutcome {
            dry_run,
            scope,
            tasks: Vec::new(),
            run: None,
        };
        if let Some(list) = v.get_mut("task_instances") {
            let refs: Vec<WireTaskRef> =
                serde_json::from_value(list.take()).map_err(|e| AirflowError::Malformed {
                    url: url.to_string(),
                    message: format!("task_instances: {e}"),
                })?;
            outcome.tasks = refs.into_iter().map(ClearedTask::from).collect();
        } else if v.get("dag_run_id").is_some() {
            let w: WireRun = serde_json::from_value(v).map_err(|e| AirflowError::Malformed {
                url: url.to_string(),
                message: format!("not a DAG run: {e}"),
            })?;
            outcome.run = Some(DagRun::from(w));
        } else {
            return Err(AirflowError::Malformed {
                url: url.to_string(),
                message: "neither task_instances nor a DAG run in the clear result".into(),
            });
        }
        Ok(outcome)
    }

    /// Pause or unpause a DAG; returns the DAG as the server now has it.
    pub async fn set_paused(&self, dag_id: &str, paused: bool) -> Result<Dag, AirflowError> {
        let url = self.url(&["dags", dag_id], &[("update_mask", "is_paused".into())])?;
        let body = json!({ "is_paused": paused });
        let r = self
            .call(Method::PATCH, &url, Payload::Json(&body), JSON)
            .await?;
        let w: WireDag = decode(&url, &r.text)?;
        Ok(Dag::from(w))
    }

    // -----------------------------------------------------------------------------------
    // Facts for the health rules
    // -----------------------------------------------------------------------------------

    /// The failing task of a failed run and the error line of its log. A log that cannot be
    /// read leaves `error_line` empty rather than failing.
    pub async fn failure(
        &self,
        dag_id: &str,
        run_id: &str,
    ) -> Result<Option<TaskFailure>, AirflowError> {
        let tasks = self.task_instances(dag_id, run_id).await?;
        let Some(t) = failing_task(&tasks) else {
            return Ok(None);
        };
        let error_line = if t.try_number == 0 {
            None
        } else {
            match self
                .task_log(dag_id, run_id, &t.task_id, t.try_number)
                .await
            {
                Ok(log) => log.error_line,
                Err(e) => {
                    tracing::warn!(dag_id, run_id, task_id = %t.task_id, error = %e, "cannot read the failing task's log");
                    None
                }
            }
        };
        Ok(Some(TaskFailure {
            run_id: run_id.to_string(),
            task_id: t.task_id.clone(),
            try_number: t.try_number,
            error_line,
        }))
    }

    /// Read what [`dag_facts`] needs for one DAG and build its facts: the runs in the window
    /// (`settings.runs`), the failing task of the newest failed run and its error line, and
    /// the DAG file's import error. Only the runs are required; the rest degrades to
    /// "unknown" when it cannot be read. `default_interval` applies when the schedule says
    /// nothing floe can read.
    pub async fn fetch_facts(
        &self,
        dag: &Dag,
        default_interval: Duration,
    ) -> Result<DagFacts, AirflowError> {
        let runs = self.runs(&dag.dag_id, self.inner.runs_window).await?;
        let failure = match latest_failed(&runs) {
            Some(run) => match self.failure(&dag.dag_id, &run.run_id).await {
                Ok(f) => f,
                Err(e) => {
                    tracing::warn!(dag_id = %dag.dag_id, run_id = %run.run_id, error = %e, "cannot read the failed run's tasks");
                    None
                }
            },
            None => None,
        };
        let import_error = if dag.has_import_errors {
            match self.import_errors().await {
                Ok(errors) => import_error_for(dag, &errors).map(|e| e.summary()),
                Err(e) => {
                    tracing::warn!(dag_id = %dag.dag_id, error = %e, "cannot read import errors");
                    None
                }
            }
        } else {
            None
        };
        Ok(dag_facts(
            dag,
            &runs,
            failure.as_ref(),
            import_error.as_deref(),
            default_interval,
        ))
    }

    // -----------------------------------------------------------------------------------
    // Plumbing
    // -----------------------------------------------------------------------------------

    /// `{base}/api/vN/{segments…}?{query}`, every segment percent-encoded.
    fn url(&self, segments: &[&str], query: &[(&str, String)]) -> Result<Url, AirflowError> {
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

    async fn get_json<T: DeserializeOwned>(&self, url: &Url) -> Result<T, AirflowError> {
        let r = self.call(Method::GET, url, Payload::None, JSON).await?;
        decode(url, &r.text)
    }

    /// A paginated collection `{"<key>": [...], "total_entries": n}`, up to `max` items.
    async fn list<W: DeserializeOwned>(
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
    async fn call(
        &self,
        method: Method,
        url: &Url,
        body: Payload<'_>,
        accept: &str,
    ) -> Result<Reply, AirflowError> {
        let mut renewed = false;
        loop {
            let generation = self.token_generation();
            let r = self
                .exchange(method.clone(), url, body, accept, true)
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

    fn token_generation(&self) -> u64 {
        match &self.inner.auth {
            AuthMode::Jwt { state, .. } => state.lock().map(|s| s.generation).unwrap_or(0),
            _ => 0,
        }
    }

    fn authorize(&self, req: RequestBuilder) -> RequestBuilder {
        match &self.inner.auth {
            AuthMode::None => req,
            AuthMode::Basic { user, password } => {
                req.basic_auth(user, Some(password.expose_secret()))
            }
            AuthMode::Static { token } => req.bearer_auth(token.expose_secret()),
            AuthMode::Jwt { state, .. } => {
                let token = state.lock().ok().and_then(|s| s.token.clone());
                match token {
                    Some(t) => req.bearer_auth(t.expose_secret()),
                    None => req,
                }
            }
        }
    }

    /// `POST /auth/token` unless another task already renewed the token since `seen`.
    async fn relogin(&self, seen: u64) -> Result<(), AirflowError> {
        let AuthMode::Jwt {
            user,
            password,
            state,
            login_lock,
        } = &self.inner.auth
        else {
            return Ok(());
        };
        let _one_at_a_time = login_lock.lock().await;
        if state.lock().map(|s| s.generation).unwrap_or(0) != seen {
            return Ok(());
        }
        let url = join(&self.inner.base, "auth/token")?;
        let body = json!({"username": user, "password": password.expose_secret()});
        let r = self
            .exchange(Method::POST, &url, Payload::Json(&body), JSON, false)
            .await?;
        drop(body);
        if !r.status.is_success() {
            let message = body_message(&r.text);
            return Err(status_error(&r, &url, message));
        }
        let v: Value = decode(&url, &r.text)?;
        let Some(token) = v["access_token"].as_str().filter(|t| !t.is_empty()) else {
            return Err(AirflowError::Malformed {
                url: url.to_string(),
                message: "no access_token in the login answer".into(),
            });
        };
        if let Ok(mut s) = state.lock() {
            s.token = Some(SecretString::from(token.to_string()));
            s.generation += 1;
        }
        tracing::debug!(%url, "logged in to Airflow");
        Ok(())
    }

    /// One HTTP exchange with retries: GETs (and the login) through 502/503/504, 429 and
    /// transport failures; other writes only through connection failures, when nothing
    /// reached the server.
    async fn exchange(
        &self,
        method: Method,
        url: &Url,
        body: Payload<'_>,
        accept: &str,
        authorize: bool,
    ) -> Result<Reply, AirflowError> {
        let replayable = method == Method::GET || !authorize;
        send_with_retries(&self.inner.retry, url, replayable, || {
            let mut req = self
                .inner
                .http
                .request(method.clone(), url.clone())
                .header("accept", accept);
            if let Payload::Json(v) = body {
                req = req.json(v);
            }
            if authorize {
                req = self.authorize(req);
            }
            req
        })
        .await
    }
}

const JSON: &str = "application/json";

fn build_http(tls: &TlsSettings, opts: &ClientOptions) -> Result<reqwest::Client, AirflowError> {
    http_client(tls, opts.connect_timeout, opts.request_timeout).map_err(AirflowError::Config)
}

/// Send what `build` makes, retrying as the policy allows.
async fn send_with_retries(
    policy: &RetryPolicy,
    url: &Url,
    replayable: bool,
    build: impl Fn() -> RequestBuilder,
) -> Result<Reply, AirflowError> {
    let budget_end = Instant::now() + policy.max_retry_time;
    let mut backoff = policy.initial_backoff;
    let mut attempt = 0u32;
    loop {
        attempt += 1;
        let (wait, failure) = match build().send().await {
            Err(e) => {
                let message = error_chain(&e);
                let retryable = match transport_kind(&e, &message) {
                    Transport::Permanent => false,
                    Transport::Connect => attempt < 4,
                    Transport::Transient => replayable,
                };
                let failure = AirflowError::Transport {
                    url: url.to_string(),
                    message,
                };
                if !retryable {
                    return Err(failure);
                }
                (backoff, failure)
            }
            Ok(resp) => {
                let status = resp.status();
                let headers = resp.headers().clone();
                let text = match resp.text().await {
                    Ok(t) => t,
                    Err(e) => {
                        let failure = AirflowError::Transport {
                            url: url.to_string(),
                            message: format!("response cut short: {}", error_chain(&e)),
                        };
                        if !replayable {
                            return Err(failure);
                        }
                        wait_or_give_up(budget_end, backoff, attempt, failure)?;
                        tokio::time::sleep(backoff).await;
                        backoff = (backoff * 2).min(policy.max_backoff);
                        continue;
                    }
                };
                let retry_status = matches!(status.as_u16(), 429 | 502..=504);
                if !(retry_status && replayable) {
                    return Ok(Reply {
                        status,
                        text,
                        attempts: attempt,
                    });
                }
                let wait = if status.as_u16() == 429 {
                    retry_after(&headers).unwrap_or(backoff)
                } else {
                    backoff
                };
                if Instant::now() + wait > budget_end {
                    return Ok(Reply {
                        status,
                        text,
                        attempts: attempt,
                    });
                }
                let failure = AirflowError::Http {
                    status: status.as_u16(),
                    url: url.to_string(),
                    message: body_message(&text),
                };
                (wait, failure)
            }
        };
        wait_or_give_up(budget_end, wait, attempt, failure)?;
        tokio::time::sleep(wait).await;
        backoff = (backoff * 2).min(policy.max_backoff);
    }
}

fn wait_or_give_up(
    budget_end: Instant,
    wait: Duration,
    attempt: u32,
    failure: AirflowError,
) -> Result<(), AirflowError> {
    if Instant::now() + wait <= budget_end {
        tracing::debug!(attempt, wait_ms = wait.as_millis() as u64, error = %failure, "retrying Airflow request");
        return Ok(());
    }
    Err(match failure {
        AirflowError::Transport { url, message } => AirflowError::Transport {
            url,
            message: format!("{message} (gave up after {attempt} attempts)"),
        },
        other => other,
    })
}

fn status_error(r: &Reply, url: &Url, message: String) -> AirflowError {
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

fn decode<T: DeserializeOwned>(url: &Url, text: &str) -> Result<T, AirflowError> {
    serde_json::from_str(text).map_err(|e| AirflowError::Malformed {
        url: url.to_string(),
        message: format!("{e} (body starts {:?})", snippet(text)),
    })
}

fn snippet(text: &str) -> String {
    text.chars().take(120).collect()
}

/// Find the server and its major version. Version endpoints need no auth on 2.10 and 3.x;
/// credentials are sent to v1's only if it asks for them.
async fn detect(
    http: &reqwest::Client,
    base: &Url,
    settings: &AirflowSettings,
    retry: &RetryPolicy,
) -> Result<(ApiVersion, ServerVersion), AirflowError> {
    let candidates: &[ApiVersion] = match settings.api {
        AirflowApi::Auto => &[ApiVersion::V2, ApiVersion::V1],
        AirflowApi::V2 => &[ApiVersion::V2],
        AirflowApi::V1 => &[ApiVersion::V1],
    };
    let mut tried = Vec::new();
    for &api in candidates {
        let url = join(base, &format!("{}/version", api.prefix()))?;
        let mut r = get_version(http, &url, settings, retry, false).await?;
        if matches!(r.status.as_u16(), 401 | 403) && api == ApiVersion::V1 {
            r = get_version(http, &url, settings, retry, true).await?;
        }
        let version = if r.status.is_success() {
            serde_json::from_str::<ServerVersion>(&r.text).ok()
        } else {
            None
        };
        let Some(version) = version else {
            let what = if r.status.is_success() {
                format!(
                    "HTTP 200 without a version document ({:?})",
                    snippet(&r.text)
                )
            } else {
                let m = body_message(&r.text);
                format!(
                    "HTTP {}{}",
                    r.status.as_u16(),
                    if m.is_empty() {
                        String::new()
                    } else {
                        format!(" ({m})")
                    }
                )
            };
            tried.push(format!("GET {url}: {what}"));
            continue;
        };
        let chosen = match major_of(&version.version) {
            Some(m) if m >= 3 => ApiVersion::V2,
            Some(2) => ApiVersion::V1,
            _ => {
                return Err(AirflowError::Unsupported {
                    url: base.to_string(),
                    version: version.version,
                    message: "floe speaks the REST APIs of Airflow 2 (v1) and 3 (v2)".into(),
                });
            }
        };
        if settings.api != AirflowApi::Auto && chosen != api {
            return Err(AirflowError::Unsupported {
                url: base.to_string(),
                version: version.version,
                message: format!(
                    "the settings force API {api}, which this major version does not serve"
                ),
            });
        }
        return Ok((chosen, version));
    }
    Err(AirflowError::NotAirflow {
        url: base.to_string(),
        message: tried.join("; "),
    })
}

async fn get_version(
    http: &reqwest::Client,
    url: &Url,
    settings: &AirflowSettings,
    retry: &RetryPolicy,
    auth: bool,
) -> Result<Reply, AirflowError> {
    send_with_retries(retry, url, true, || {
        let req = http.get(url.clone()).header("accept", JSON);
        match (&settings.token, &settings.user, &settings.password, auth) {
            (Some(t), _, _, true) => req.bearer_auth(t.expose_secret()),
            (None, Some(u), Some(p), true) => req.basic_auth(u, Some(p.expose_secret())),
            _ => req,
        }
    })
    .await
}

/// The server's reason from an error body: v2 `{"detail": "…"}` (or a validation list, or
/// an object with `message`), v1 problem+json (`detail`, else `title`), Airflow 3's answer
/// on `/api/v1` (`error`), an HTML page's title, else the text.
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
    let one_line = t
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
