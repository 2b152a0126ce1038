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

mod cache;
mod challenge;
mod flow;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue};
use secrecy::{ExposeSecret, SecretString};
use tokio::time::Instant;
use url::Url;

use super::client::Client;
use super::error::TrinoError;
use crate::config::OAuth2Settings;
use cache::origin;
pub use cache::{CachedToken, TokenCache, jwt_expiry};
pub use challenge::{Challenge, ExternalChallenge, external_challenge, parse_challenges};

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

/// Whether the login may run against `coordinator`: over https, or plain http to a loopback
/// address (an SSH tunnel, the lab).
pub fn check_coordinator(coordinator: &Url) -> Result<(), Refused> {
    if coordinator.scheme() == "https" || crate::config::uri::is_loopback(coordinator) {
        Ok(())
    } else {
        Err(Refused::PlainHttp {
            coordinator: coordinator.to_string(),
        })
    }
}

/// Whether a login or token-server URL handed out by `coordinator` may be used: on the
/// coordinator's own origin, or https.
pub fn check_flow_url(coordinator: &Url, what: &'static str, u: &Url) -> Result<(), Refused> {
    let same_origin = u.scheme() == coordinator.scheme()
        && u.host_str() == coordinator.host_str()
        && u.port_or_known_default() == coordinator.port_or_known_default();
    if same_origin || u.scheme() == "https" {
        Ok(())
    } else {
        Err(Refused::Origin {
            what,
            url: u.to_string(),
            origin: coordinator.origin().ascii_serialization(),
        })
    }
}

/// Why a login is not run, or a URL of its flow not used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error(
        "refusing an OAuth2 login over plain HTTP to {coordinator}: use https://, or an SSH tunnel to 127.0.0.1"
    )]
    PlainHttp { coordinator: String },
    /// `what`: the login URL or the token server; `origin`: the coordinator's.
    #[error(
        "refusing the OAuth2 {what} {url}: it is neither on the coordinator's origin ({origin}) nor https"
    )]
    Origin {
        what: &'static str,
        url: String,
        origin: String,
    },
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
