//! Trino's OAuth2 external authentication, as Trino's own clients speak it: a `401` whose
//! `WWW-Authenticate` carries `Bearer x_redirect_server="…", x_token_server="…"` starts a
//! login; the operator opens the redirect URL in a browser (anywhere: a bastion has none);
//! floe polls the token server (`{"nextUri": …}` while pending, `{"token": …}` when done,
//! `{"error": …}` on failure) until it answers or the login deadline passes, then sends the
//! request again with `Authorization: Bearer <token>`.
//!
//! Tokens are cached (`$XDG_CACHE_HOME/floe/oauth2`, one 0600 file per coordinator and
//! user) with their expiry (the JWT `exp` claim, else `trino.oauth2_token_lifetime`), so the
//! next floe and `floe check` under cron reuse them. A token that expired or that the
//! coordinator refuses is dropped. Without a way to ask a human (`floe check`, `floe
//! maintain`) no login is started: the error says to run `floe login`. Tokens are never
//! logged, printed or audited.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue};
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};
use tokio::time::Instant;
use url::Url;

use super::client::Client;
use super::error::TrinoError;
use crate::config::OAuth2Settings;
use crate::net::{self, BodyLimit, Idempotency, Mutations, NetFailure};

/// What a login tells whoever can reach the operator (stderr, the TUI's status line).
/// Never carries the token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LoginEvent {
    /// Open `url` in a browser to log in; floe waits at most `timeout`.
    Open {
        url: Url,
        coordinator: Url,
        user: String,
        timeout: Duration,
    },
    /// The login is done; the token is valid until `expires_at`.
    Done { expires_at: DateTime<Utc> },
    /// The login failed (refused, timed out); the reason.
    Failed(String),
}

/// Where [`LoginEvent`]s go.
pub type LoginPrompt = Arc<dyn Fn(&LoginEvent) + Send + Sync>;

/// The result of `floe login`.
#[derive(Clone, Debug)]
pub struct LoginOutcome {
    pub cache_file: PathBuf,
    pub expires_at: DateTime<Utc>,
    /// The expiry was read from the JWT `exp` claim (else it is the configured lifetime).
    pub from_jwt: bool,
}

/// One challenge of a `WWW-Authenticate` header: its scheme and parameters (names
/// lower-cased, quoted values unescaped); a token68 is kept as a parameter named "".
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Challenge {
    pub scheme: String,
    pub params: Vec<(String, String)>,
}

impl Challenge {
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Every challenge of one or more `WWW-Authenticate` values (RFC 9110 §11.6.1: a value may
/// hold several challenges separated by commas, each `scheme [token68 | name=value, …]`,
/// values tokens or quoted strings). Unreadable rests are skipped, never an error.
pub fn parse_challenges<'a>(values: impl IntoIterator<Item = &'a str>) -> Vec<Challenge> {
    let mut out = Vec::new();
    for v in values {
        parse_one_value(v, &mut out);
    }
    out
}

fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

/// The comma-separated elements of a header value, commas inside quoted strings kept.
fn list_elements(v: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut start, mut quoted, mut escaped) = (0, false, false);
    for (i, c) in v.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            ',' if !quoted => {
                out.push(&v[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&v[start..]);
    out
}

/// The leading token of `s` and the rest.
fn leading_token(s: &str) -> (&str, &str) {
    let end = s.find(|c: char| !is_tchar(c)).unwrap_or(s.len());
    (&s[..end], &s[end..])
}

/// `name = (token | quoted-string)` filling all of `s`: the name (lower-cased) and the value.
fn auth_param(s: &str) -> Option<(String, String)> {
    let (name, rest) = leading_token(s.trim());
    if name.is_empty() {
        return None;
    }
    let rest = rest.trim_start().strip_prefix('=')?.trim_start();
    let value = if let Some(q) = rest.strip_prefix('"') {
        let mut v = String::new();
        let mut chars = q.chars();
        loop {
            match chars.next()? {
                '"' => break,
                '\\' => v.push(chars.next()?),
                c => v.push(c),
            }
        }
        if !chars.as_str().trim().is_empty() {
            return None;
        }
        v
    } else {
        let (t, after) = leading_token(rest);
        if t.is_empty() || !after.trim().is_empty() {
            return None;
        }
        t.to_string()
    };
    Some((name.to_ascii_lowercase(), value))
}

fn parse_one_value(v: &str, out: &mut Vec<Challenge>) {
    // Whether the last challenge pushed may still take parameters.
    let mut open = false;
    for element in list_elements(v) {
        let e = element.trim_matches([' ', '\t']);
        if e.is_empty() {
            continue;
        }
        if let Some(param) = auth_param(e) {
            if open && let Some(ch) = out.last_mut() {
                ch.params.push(param);
            }
            continue;
        }
        let (scheme, rest) = leading_token(e);
        if scheme.is_empty() || !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
            open = false;
            continue;
        }
        let rest = rest.trim();
        let mut ch = Challenge {
            scheme: scheme.to_string(),
            params: Vec::new(),
        };
        open = true;
        if !rest.is_empty() {
            match auth_param(rest) {
                Some(p) => ch.params.push(p),
                None => {
                    // token68: no more parameters follow.
                    ch.params.push((String::new(), rest.to_string()));
                    open = false;
                }
            }
        }
        out.push(ch);
    }
}

/// The external-authentication challenge of a 401: where to send the operator, where to
/// fetch the token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExternalChallenge {
    pub redirect: Option<Url>,
    pub token: Url,
}

/// Trino's `Bearer x_token_server="…"` challenge among the answer's `WWW-Authenticate`
/// headers; `None` when the coordinator asks for something else.
pub fn external_challenge(headers: &HeaderMap) -> Option<ExternalChallenge> {
    let values = headers
        .get_all(reqwest::header::WWW_AUTHENTICATE)
        .iter()
        .filter_map(|v| v.to_str().ok());
    parse_challenges(values)
        .into_iter()
        .filter(|c| c.scheme.eq_ignore_ascii_case("bearer"))
        .find_map(|c| {
            let token = Url::parse(c.param("x_token_server")?).ok()?;
            let redirect = c
                .param("x_redirect_server")
                .and_then(|r| Url::parse(r).ok());
            Some(ExternalChallenge { redirect, token })
        })
}

/// Whether the login may run against `coordinator`: over https, or plain http to a loopback
/// address (an SSH tunnel, the lab).
pub fn check_coordinator(coordinator: &Url) -> Result<(), String> {
    if coordinator.scheme() == "https" || is_loopback(coordinator) {
        Ok(())
    } else {
        Err(format!(
            "refusing an OAuth2 login over plain HTTP to {coordinator}: use https://, or an SSH tunnel to 127.0.0.1"
        ))
    }
}

/// Whether a login or token-server URL handed out by `coordinator` may be used: on the
/// coordinator's own origin, or https.
pub fn check_flow_url(coordinator: &Url, what: &str, u: &Url) -> Result<(), String> {
    let same_origin = u.scheme() == coordinator.scheme()
        && u.host_str() == coordinator.host_str()
        && u.port_or_known_default() == coordinator.port_or_known_default();
    if same_origin || u.scheme() == "https" {
        Ok(())
    } else {
        Err(format!(
            "refusing the OAuth2 {what} {u}: it is neither on the coordinator's origin ({}) nor https",
            coordinator.origin().ascii_serialization()
        ))
    }
}

fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// The `exp` claim of a JWT (not verified: only to know when to stop using it).
pub fn jwt_expiry(token: &str) -> Option<DateTime<Utc>> {
    let mut parts = token.split('.');
    let (_, payload, _) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let bytes = base64url_decode(payload)?;
    let v: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    let exp = v.get("exp")?.as_f64()?;
    if !exp.is_finite() || exp <= 0.0 {
        return None;
    }
    DateTime::from_timestamp(exp as i64, 0)
}

fn base64url_decode(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let mut acc: u32 = 0;
    let mut bits = 0;
    for c in s.trim_end_matches('=').bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'-' | b'+' => 62,
            b'_' | b'/' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

// ---------------------------------------------------------------------------- the cache

/// Tokens on disk: one file per coordinator (scheme, host, port) and user, readable by
/// its owner only, in a directory only its owner may enter.
#[derive(Clone, Debug)]
pub struct TokenCache {
    dir: PathBuf,
}

/// A token and when it stops being valid. Its Debug never shows the token.
#[derive(Clone)]
pub struct CachedToken {
    pub token: SecretString,
    pub expires_at: DateTime<Utc>,
}

impl std::fmt::Debug for CachedToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CachedToken")
            .field("token", &"***")
            .field("expires_at", &self.expires_at)
            .finish()
    }
}

#[derive(Serialize, Deserialize)]
struct CacheFile {
    coordinator: String,
    user: String,
    token: String,
    expires_at: DateTime<Utc>,
    obtained_at: DateTime<Utc>,
}

/// How long before its expiry a token is no longer used (a request must not race it).
const EXPIRY_MARGIN: Duration = Duration::from_secs(5);

impl TokenCache {
    pub fn new(dir: impl Into<PathBuf>) -> TokenCache {
        TokenCache { dir: dir.into() }
    }

    /// The file of `user` at `coordinator`: `<scheme>_<host>_<port>_<user>.json`, each part
    /// escaped so that two keys never share a file.
    pub fn path(&self, coordinator: &Url, user: &str) -> PathBuf {
        let port = coordinator
            .port_or_known_default()
            .map(|p| p.to_string())
            .unwrap_or_default();
        let parts = [
            coordinator.scheme(),
            coordinator.host_str().unwrap_or(""),
            &port,
            user,
        ];
        let name = parts.map(escape).join("_");
        self.dir.join(format!("{name}.json"))
    }

    /// The cached token of `user` at `coordinator` if it is still valid at `now`; an expired
    /// or unreadable one is removed.
    pub fn load(&self, coordinator: &Url, user: &str, now: DateTime<Utc>) -> Option<CachedToken> {
        let path = self.path(coordinator, user);
        let text = std::fs::read_to_string(&path).ok()?;
        let parsed: Option<CacheFile> = serde_json::from_str(&text).ok();
        match parsed {
            Some(f)
                if f.user == user
                    && f.coordinator == origin(coordinator)
                    && !f.token.is_empty()
                    && f.expires_at > now + chrono::Duration::from_std(EXPIRY_MARGIN).ok()? =>
            {
                Some(CachedToken {
                    token: SecretString::from(f.token),
                    expires_at: f.expires_at,
                })
            }
            Some(f) if f.expires_at <= now => {
                tracing::info!(file = %path.display(), expired_at = %f.expires_at, "the cached OAuth2 token expired; dropped");
                self.remove(coordinator, user);
                None
            }
            Some(_) => None,
            None => {
                tracing::warn!(file = %path.display(), "unreadable OAuth2 token cache file; dropped");
                self.remove(coordinator, user);
                None
            }
        }
    }

    /// Write the token (0600, atomically, in a 0700 directory); the file written.
    pub fn store(
        &self,
        coordinator: &Url,
        user: &str,
        token: &CachedToken,
    ) -> std::io::Result<PathBuf> {
        use std::io::Write;
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)?;
        std::fs::set_permissions(&self.dir, std::fs::Permissions::from_mode(0o700))?;
        let path = self.path(coordinator, user);
        let body = serde_json::to_string_pretty(&CacheFile {
            coordinator: origin(coordinator),
            user: user.to_string(),
            token: token.token.expose_secret().to_string(),
            expires_at: token.expires_at,
            obtained_at: Utc::now(),
        })
        .map_err(std::io::Error::other)?;
        let tmp = path.with_extension(format!("{}.tmp", std::process::id()));
        let _ = std::fs::remove_file(&tmp);
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(body.as_bytes())?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, &path)?;
        Ok(path)
    }

    pub fn remove(&self, coordinator: &Url, user: &str) {
        let _ = std::fs::remove_file(self.path(coordinator, user));
    }
}

/// `scheme://host:port` of a URL (the cache key's coordinator part).
fn origin(u: &Url) -> String {
    u.origin().ascii_serialization()
}

/// A file-name part: ASCII letters, digits, `-` and `.` kept, everything else `%XX`
/// (`_` too, which separates the parts).
fn escape(part: &str) -> String {
    let mut out = String::with_capacity(part.len());
    for b in part.bytes() {
        if b.is_ascii_alphanumeric() || b == b'-' || b == b'.' {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    if out.starts_with('.') {
        out.replace_range(..1, "%2E");
    }
    out
}

// ---------------------------------------------------------------------------- the client side

/// A client's OAuth2 state, shared by its clones: the token in use, the cache, and one
/// login at a time however many requests are refused at once.
pub struct OAuth2 {
    settings: OAuth2Settings,
    coordinator: Url,
    user: String,
    cache: TokenCache,
    current: Mutex<TokenSlot>,
    login: tokio::sync::Mutex<()>,
    prompt: Option<LoginPrompt>,
}

#[derive(Default)]
struct TokenSlot {
    /// The cache was read (or must not be: `floe login` wants a fresh token).
    loaded: bool,
    token: Option<CachedToken>,
    /// The expiry came from the JWT `exp` claim.
    from_jwt: bool,
}

impl std::fmt::Debug for OAuth2 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuth2")
            .field("coordinator", &self.coordinator.as_str())
            .field("user", &self.user)
            .field("interactive", &self.prompt.is_some())
            .finish()
    }
}

impl OAuth2 {
    pub fn new(
        settings: OAuth2Settings,
        coordinator: Url,
        user: String,
        prompt: Option<LoginPrompt>,
    ) -> OAuth2 {
        OAuth2 {
            cache: TokenCache::new(settings.cache_dir.clone()),
            settings,
            coordinator,
            user,
            current: Mutex::new(TokenSlot::default()),
            login: tokio::sync::Mutex::new(()),
            prompt,
        }
    }

    pub fn cache_file(&self) -> PathBuf {
        self.cache.path(&self.coordinator, &self.user)
    }

    /// The token to send, if a valid one is known (read from the cache the first time).
    pub fn token(&self) -> Option<SecretString> {
        let mut slot = self.current.lock().unwrap_or_else(|e| e.into_inner());
        let now = Utc::now();
        if !slot.loaded {
            slot.loaded = true;
            let cached = self.cache.load(&self.coordinator, &self.user, now);
            if let Some(t) = &cached {
                slot.from_jwt = jwt_expiry(t.token.expose_secret()) == Some(t.expires_at);
                tracing::info!(expires_at = %t.expires_at, "using the cached OAuth2 token");
            }
            slot.token = cached;
        }
        if slot
            .token
            .as_ref()
            .is_some_and(|t| t.expires_at <= now + chrono::Duration::seconds(5))
        {
            tracing::info!("the OAuth2 token expired; dropped");
            slot.token = None;
            self.cache.remove(&self.coordinator, &self.user);
        }
        slot.token.as_ref().map(|t| t.token.clone())
    }

    /// Forget the token in memory without touching the cache (`floe login` starts afresh;
    /// the file is replaced when the new token arrives).
    pub fn start_afresh(&self) {
        let mut slot = self.current.lock().unwrap_or_else(|e| e.into_inner());
        *slot = TokenSlot {
            loaded: true,
            ..TokenSlot::default()
        };
    }

    fn current(&self) -> Option<CachedToken> {
        self.current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .token
            .clone()
    }

    /// Drop `rejected` (the token the coordinator refused), in memory and on disk, unless a
    /// newer one replaced it meanwhile.
    fn drop_rejected(&self, rejected: &str) {
        let mut slot = self.current.lock().unwrap_or_else(|e| e.into_inner());
        if slot
            .token
            .as_ref()
            .is_some_and(|t| t.token.expose_secret() == rejected)
        {
            slot.token = None;
        }
        drop(slot);
        // The file may hold it too (this floe's, or another's); a newer one is kept.
        if self
            .cache
            .load(&self.coordinator, &self.user, Utc::now())
            .is_some_and(|t| t.token.expose_secret() == rejected)
        {
            self.cache.remove(&self.coordinator, &self.user);
        }
        tracing::info!(coordinator = %self.coordinator, "the coordinator refused the cached OAuth2 token; dropped");
    }

    fn login_needed(&self, url: &Url, why: &str) -> TrinoError {
        TrinoError::Auth {
            status: 401,
            url: url.to_string(),
            message: format!(
                "Trino asks for an OAuth2 login and {why} for {} at {}: run floe login",
                self.user,
                origin(&self.coordinator)
            ),
        }
    }

    fn emit(&self, event: LoginEvent) {
        if let Some(p) = &self.prompt {
            p(&event);
        }
    }

    /// A 401 from `url` whose answer headers are `answer`, to a request that carried
    /// `sent`: the token to send again, or `None` when the coordinator does not ask for
    /// OAuth2 (the 401 stands).
    pub(super) async fn unauthorized(
        &self,
        client: &Client,
        url: &Url,
        answer: &HeaderMap,
        sent: Option<&HeaderValue>,
        deadline: Option<Instant>,
    ) -> Result<Option<SecretString>, TrinoError> {
        let Some(challenge) = external_challenge(answer) else {
            return Ok(None);
        };
        let sent_token = sent
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::to_string);
        let _one_login = self.login.lock().await;
        // Another request may have logged in meanwhile, or this one sent no token or an
        // older one than the one in use.
        if let Some(cur) = self.current()
            && sent_token.as_deref() != Some(cur.token.expose_secret())
            && cur.expires_at > Utc::now()
        {
            return Ok(Some(cur.token));
        }
        let had_token = sent_token.is_some();
        if let Some(rejected) = &sent_token {
            self.drop_rejected(rejected);
        }
        if self.prompt.is_none() {
            let why = if had_token {
                "it refused the cached token"
            } else {
                "no valid token is cached"
            };
            return Err(self.login_needed(url, why));
        }
        match self.run_login(client, challenge, deadline).await {
            Ok(t) => Ok(Some(t)),
            Err(e) => {
                self.emit(LoginEvent::Failed(e.to_string()));
                Err(e)
            }
        }
    }

    async fn run_login(
        &self,
        client: &Client,
        challenge: ExternalChallenge,
        deadline: Option<Instant>,
    ) -> Result<SecretString, TrinoError> {
        let refuse = |message: String| TrinoError::Auth {
            status: 401,
            url: self.coordinator.to_string(),
            message,
        };
        check_coordinator(&self.coordinator).map_err(refuse)?;
        check_flow_url(&self.coordinator, "token server", &challenge.token).map_err(refuse)?;
        if let Some(r) = &challenge.redirect {
            check_flow_url(&self.coordinator, "login URL", r).map_err(refuse)?;
        }
        let timeout = self.settings.login_timeout;
        let end = {
            let e = Instant::now() + timeout;
            deadline.map_or(e, |d| d.min(e))
        };
        tracing::info!(coordinator = %self.coordinator, user = %self.user, "OAuth2 login started");
        if let Some(r) = &challenge.redirect {
            self.emit(LoginEvent::Open {
                url: r.clone(),
                coordinator: self.coordinator.clone(),
                user: self.user.clone(),
                timeout,
            });
        }
        let token = self.poll(client, &challenge.token, end).await?;
        // The token server may forget the login now (best effort, as Trino's Java client).
        let _ = client
            .http()
            .delete(challenge.token.clone())
            .timeout(Duration::from_secs(3))
            .send()
            .await;
        let (expires_at, from_jwt) = match jwt_expiry(&token) {
            Some(exp) => (exp, true),
            None => (
                Utc::now()
                    + chrono::Duration::from_std(self.settings.token_lifetime)
                        .unwrap_or(chrono::Duration::hours(1)),
                false,
            ),
        };
        let fresh = CachedToken {
            token: SecretString::from(token),
            expires_at,
        };
        match self.cache.store(&self.coordinator, &self.user, &fresh) {
            Ok(path) => {
                tracing::info!(file = %path.display(), %expires_at, "OAuth2 login done; token cached")
            }
            Err(e) => {
                tracing::warn!(dir = %self.settings.cache_dir.display(), error = %e, "OAuth2 login done; cannot cache the token")
            }
        }
        {
            let mut slot = self.current.lock().unwrap_or_else(|e| e.into_inner());
            *slot = TokenSlot {
                loaded: true,
                token: Some(fresh.clone()),
                from_jwt,
            };
        }
        self.emit(LoginEvent::Done { expires_at });
        Ok(fresh.token)
    }

    /// Poll the token server until it hands out the token, reports an error, or `end`.
    async fn poll(&self, client: &Client, first: &Url, end: Instant) -> Result<String, TrinoError> {
        #[derive(Deserialize)]
        struct Answer {
            token: Option<String>,
            #[serde(rename = "nextUri")]
            next_uri: Option<String>,
            error: Option<serde_json::Value>,
        }
        let policy = net::Policy::new(
            Duration::from_millis(250),
            Duration::from_secs(5),
            self.settings.login_timeout,
            Mutations::RefusedOnly,
        )
        .with_body(BodyLimit::Whole(256 * 1024));
        let mut uri = first.clone();
        let failed = |message: String| TrinoError::Auth {
            status: 401,
            url: self.coordinator.to_string(),
            message,
        };
        let timed_out = || {
            failed(format!(
                "the OAuth2 login was not completed within {}: run floe login again and open the URL it prints",
                humantime::format_duration(self.settings.login_timeout)
            ))
        };
        loop {
            if Instant::now() >= end {
                return Err(timed_out());
            }
            let asked = Instant::now();
            let http = client.http();
            let sent = uri.clone();
            // A long poll may take a while, but not past the login's end.
            let wait = end
                .saturating_duration_since(Instant::now())
                .clamp(Duration::from_secs(1), Duration::from_secs(30));
            let reply = net::send(&policy, Idempotency::Idempotent, Some(end), &uri, || {
                http.get(sent.clone())
                    .header("accept", "application/json")
                    .timeout(wait)
            })
            .await
            .map_err(|f| {
                // A poll cut short by the login's end is the login timing out.
                if Instant::now() + Duration::from_millis(200) >= end {
                    return timed_out();
                }
                let m = match f {
                    NetFailure::Transport { message } | NetFailure::MayHaveRun { message } => {
                        message
                    }
                    NetFailure::TooLarge { limit } => format!("an answer over {limit} bytes"),
                };
                failed(format!("cannot reach the OAuth2 token server {uri}: {m}"))
            })?;
            let status = reply.status.as_u16();
            if status != 200 {
                return Err(failed(format!(
                    "the OAuth2 token server {uri} answered HTTP {status}{}",
                    net::detail(&net::text_reason(&reply.text))
                )));
            }
            // The body may hold the token: never quoted in an error.
            let answer: Answer = serde_json::from_str(&reply.text).map_err(|_| {
                failed(format!(
                    "the OAuth2 token server {uri} did not answer a token document"
                ))
            })?;
            if let Some(t) = answer.token.filter(|t| !t.trim().is_empty()) {
                return Ok(t.trim().to_string());
            }
            if let Some(e) = answer.error {
                let text = match e {
                    serde_json::Value::String(s) => s,
                    other => other.to_string(),
                };
                return Err(failed(format!(
                    "the OAuth2 login failed: {}",
                    crate::text::one_line(&text)
                )));
            }
            let Some(next) = answer.next_uri else {
                return Err(failed(format!(
                    "the OAuth2 token server {uri} answered neither a token, an error nor a nextUri"
                )));
            };
            let next = uri.join(&next).map_err(|e| {
                failed(format!(
                    "the OAuth2 token server {uri} answered an unreadable nextUri: {e}"
                ))
            })?;
            check_flow_url(&self.coordinator, "token server", &next).map_err(failed)?;
            uri = next;
            // A server that does not long-poll is not asked more than twice a second.
            let min_gap = Duration::from_millis(500);
            if asked.elapsed() < min_gap {
                tokio::time::sleep_until((asked + min_gap).min(end)).await;
            }
        }
    }

    /// The token in use and where it is cached, after a login.
    pub fn outcome(&self) -> Option<LoginOutcome> {
        let slot = self.current.lock().unwrap_or_else(|e| e.into_inner());
        slot.token.as_ref().map(|t| LoginOutcome {
            cache_file: self.cache_file(),
            expires_at: t.expires_at,
            from_jwt: slot.from_jwt,
        })
    }
}

impl Client {
    /// `floe login`: a fresh OAuth2 login (the cached token, if any, is not used), checked
    /// with `HEAD /v1/statement` (Trino's credentials check); where the token is cached and
    /// until when.
    pub async fn oauth2_login(&self) -> Result<LoginOutcome, TrinoError> {
        let o = self.oauth2().ok_or_else(|| {
            TrinoError::Config(
                "floe login is for Trino's OAuth2 authentication: set trino.auth = \"oauth2\" or pass --auth oauth2".into(),
            )
        })?;
        o.start_afresh();
        self.check_credentials(o.settings.login_timeout + Duration::from_secs(60))
            .await?;
        o.outcome().ok_or_else(|| {
            TrinoError::Config(format!(
                "Trino at {} accepted floe without an OAuth2 login: it does not ask for OAuth2 (check trino.auth)",
                self.url()
            ))
        })
    }
}

/// `h` with `Authorization: Bearer <token>` (the request sent again after a login).
pub(super) fn with_token(h: &HeaderMap, token: &SecretString) -> Result<HeaderMap, TrinoError> {
    let mut h = h.clone();
    let mut v =
        HeaderValue::from_str(&format!("Bearer {}", token.expose_secret())).map_err(|_| {
            TrinoError::Config(
            "the OAuth2 token cannot be sent in an HTTP header: it contains a control character"
                .into(),
        )
        })?;
    v.set_sensitive(true);
    h.insert(AUTHORIZATION, v);
    Ok(h)
}

#[cfg(test)]
mod tests;
