//! The login itself: tell the operator where to log in, then poll the token server until
//! it hands out the token, reports an error, or the login deadline passes.

use std::time::Duration;

use chrono::Utc;
use secrecy::SecretString;
use serde::Deserialize;
use tokio::time::Instant;
use url::Url;

use super::{
    CachedToken, ExternalChallenge, LoginEvent, OAuth2, TokenSlot, check_coordinator,
    check_flow_url, jwt_expiry,
};
use crate::net::{self, BodyLimit, Idempotency, Mutations, NetFailure};
use crate::trino::client::Client;
use crate::trino::error::TrinoError;

impl OAuth2 {
    pub(super) async fn run_login(
        &self,
        client: &Client,
        challenge: ExternalChallenge,
        deadline: Option<Instant>,
    ) -> Result<SecretString, TrinoError> {
        let refuse = |refused: super::Refused| TrinoError::Auth {
            status: 401,
            url: self.coordinator.to_string(),
            message: refused.to_string(),
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
            check_flow_url(&self.coordinator, "token server", &next)
                .map_err(|e| failed(e.to_string()))?;
            uri = next;
            // A server that does not long-poll is not asked more than twice a second.
            let min_gap = Duration::from_millis(500);
            if asked.elapsed() < min_gap {
                tokio::time::sleep_until((asked + min_gap).min(end)).await;
            }
        }
    }
}
