//! Authentication: HTTP basic on v1, a static bearer token, or a v2 login whose token is
//! renewed with the same credentials when the server refuses it.

use std::sync::Mutex;

use reqwest::{Method, RequestBuilder};
use secrecy::{ExposeSecret, SecretString};
use serde_json::{Value, json};

use super::client::AirflowClient;
use super::error::{AirflowError, body_message};
use super::http::{JSON, Payload, decode, join, status_error};
use super::model::ApiVersion;
use crate::config::AirflowSettings;

pub(super) enum AuthMode {
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
pub(super) struct TokenState {
    token: Option<SecretString>,
    /// Bumped by every login, so concurrent 401s log in once.
    generation: u64,
}

impl AuthMode {
    /// The static token when one is set; else with a user and a password, a v2 login or
    /// basic auth on v1; else none.
    pub(super) fn from_settings(settings: &AirflowSettings, api: ApiVersion) -> AuthMode {
        let user = settings.user.clone().filter(|u| !u.is_empty());
        match (&settings.token, &user, &settings.password) {
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
        }
    }

    pub(super) fn kind(&self) -> &'static str {
        match self {
            AuthMode::None => "none",
            AuthMode::Basic { .. } => "basic",
            AuthMode::Static { .. } => "bearer",
            AuthMode::Jwt { .. } => "jwt",
        }
    }
}

impl AirflowClient {
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

    pub(super) fn token_generation(&self) -> u64 {
        match &self.inner.auth {
            AuthMode::Jwt { state, .. } => state.lock().map(|s| s.generation).unwrap_or(0),
            _ => 0,
        }
    }

    pub(super) fn authorize(&self, req: RequestBuilder) -> RequestBuilder {
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
    pub(super) async fn relogin(&self, seen: u64) -> Result<(), AirflowError> {
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
            .exchange(
                Method::POST,
                &url,
                Payload::Json(&body),
                JSON,
                false,
                self.json_limit(),
            )
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
}
