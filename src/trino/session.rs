//! The session a client carries from statement to statement: the request headers it sends
//! (user, catalog, schema, session properties, credentials) and the `X-Trino-Set-*` /
//! `Clear-*` answers that change it.

use std::collections::BTreeMap;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use secrecy::ExposeSecret;

use super::client::Client;
use super::error::TrinoError;
use crate::config::Auth;

const CAPABILITIES: &str = "PARAMETRIC_DATETIME";

#[derive(Clone, Debug, Default)]
pub(super) struct SessionState {
    pub(super) catalog: Option<String>,
    pub(super) schema: Option<String>,
    pub(super) properties: BTreeMap<String, String>,
}

impl Client {
    /// The request headers. A value that cannot be sent (a newline or another control
    /// character, say in a token read from a file) is an error naming its setting: a
    /// header silently left out would make the server's answer misleading (a 401).
    pub(super) fn headers(
        &self,
        extra_session: &[(String, String)],
    ) -> Result<HeaderMap, TrinoError> {
        let mut h = HeaderMap::new();
        let mut put = |name: &'static str, value: &str, setting: &str| {
            let v = HeaderValue::from_str(value).map_err(|_| unsendable(setting, value))?;
            h.append(HeaderName::from_static(name), v);
            Ok::<(), TrinoError>(())
        };
        put(
            "x-trino-user",
            &self.cfg.user,
            "the Trino user (trino.user)",
        )?;
        put("x-trino-source", &self.cfg.source, "trino.source")?;
        put("x-trino-time-zone", "UTC", "the time zone")?;
        put(
            "x-trino-client-capabilities",
            CAPABILITIES,
            "the client capabilities",
        )?;
        put("x-trino-transaction-id", "NONE", "the transaction id")?;
        if !self.cfg.client_tags.is_empty() {
            put(
                "x-trino-client-tags",
                &self.cfg.client_tags.join(","),
                "trino.client_tags",
            )?;
        }
        let s = self.session.lock().map(|s| s.clone()).unwrap_or_default();
        if let Some(c) = &s.catalog {
            put("x-trino-catalog", c, "the catalog (trino.catalog)")?;
            if let Some(sc) = &s.schema {
                put("x-trino-schema", sc, "the schema")?;
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
            put(
                "x-trino-session",
                &text,
                "a session property name (trino.session)",
            )?;
        }
        let auth = match &self.cfg.auth {
            Auth::None => None,
            Auth::Basic { password } => {
                if HeaderValue::from_str(password.expose_secret()).is_err() {
                    return Err(unsendable_secret(
                        "the Trino password (FLOE_TRINO_PASSWORD, trino.password_env or trino.password_command)",
                    ));
                }
                let token = base64_encode(
                    format!("{}:{}", self.cfg.user, password.expose_secret()).as_bytes(),
                );
                Some(format!("Basic {token}"))
            }
            Auth::Bearer { token } => {
                if HeaderValue::from_str(token.expose_secret()).is_err() {
                    return Err(unsendable_secret(
                        "the Trino token (FLOE_TRINO_TOKEN, trino.token_env or trino.token_command)",
                    ));
                }
                Some(format!("Bearer {}", token.expose_secret()))
            }
            // No token yet (or an expired one): the request goes without, and the 401's
            // challenge starts the login (or says to run `floe login`).
            Auth::OAuth2(_) => match self.oauth2().and_then(|o| o.token()) {
                Some(token) => {
                    if HeaderValue::from_str(token.expose_secret()).is_err() {
                        return Err(unsendable_secret(
                            "the cached OAuth2 token (run floe login again)",
                        ));
                    }
                    Some(format!("Bearer {}", token.expose_secret()))
                }
                None => None,
            },
        };
        if let Some(a) = auth {
            let mut v = HeaderValue::from_str(&a).map_err(|_| {
                unsendable_secret("the Trino credentials (trino.user with a password)")
            })?;
            v.set_sensitive(true);
            h.append(reqwest::header::AUTHORIZATION, v);
        }
        Ok(h)
    }

    /// Apply `X-Trino-Set-*` / `Clear-*` response headers to the session.
    pub(super) fn apply_response_headers(&self, h: &HeaderMap) {
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
}

/// A setting whose value cannot travel in an HTTP header.
fn unsendable(setting: &str, value: &str) -> TrinoError {
    TrinoError::Config(format!(
        "{setting} cannot be sent in an HTTP header: {:?} {}",
        value,
        why_unsendable(value)
    ))
}

/// The same for a secret, whose value is never shown.
fn unsendable_secret(setting: &str) -> TrinoError {
    TrinoError::Config(format!(
        "{setting} cannot be sent in an HTTP header: it contains a line break or another control character (a trailing newline from a file or a command?)"
    ))
}

fn why_unsendable(value: &str) -> &'static str {
    if value.contains(['\n', '\r']) {
        "contains a line break"
    } else if value.chars().any(|c| c.is_control()) {
        "contains a control character"
    } else {
        "contains a character HTTP headers cannot carry"
    }
}

pub(super) fn base64_encode(input: &[u8]) -> String {
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

    fn client(auth: Auth, user: &str) -> Client {
        let mut cfg = crate::trino::ClientConfig {
            url: "https://trino.example:8443".parse().unwrap(),
            user: user.into(),
            source: "floe".into(),
            catalog: Some("iceberg".into()),
            schema: None,
            auth,
            tls: crate::config::TlsSettings {
                ca_file: None,
                insecure_skip_verify: false,
            },
            session: Default::default(),
            client_tags: vec![],
            retry: Default::default(),
            request_timeout: std::time::Duration::from_secs(1),
            connect_timeout: std::time::Duration::from_secs(1),
            query_timeout: None,
        };
        cfg.session.insert("query_max_run_time".into(), "2h".into());
        Client::new(cfg).unwrap()
    }

    #[test]
    fn a_value_that_cannot_be_sent_is_an_error_naming_its_setting() {
        use secrecy::SecretString;
        let token = |t: &str| Auth::Bearer {
            token: SecretString::from(t.to_string()),
        };
        let h = client(token("eyJ.abc.def"), "floe").headers(&[]).unwrap();
        assert_eq!(h["authorization"], "Bearer eyJ.abc.def");
        assert!(h["authorization"].is_sensitive());
        for bad in ["eyJ.abc.def\n", "eyJ\r\n.abc", "a\u{7}b"] {
            let e = client(token(bad), "floe").headers(&[]).unwrap_err();
            let m = e.to_string();
            assert!(m.contains("FLOE_TRINO_TOKEN"), "{m}");
            assert!(!m.contains("eyJ"), "the secret is never shown: {m}");
        }
        let password = Auth::Basic {
            password: SecretString::from("s3cret\n".to_string()),
        };
        let m = client(password, "floe")
            .headers(&[])
            .unwrap_err()
            .to_string();
        assert!(
            m.contains("FLOE_TRINO_PASSWORD") && !m.contains("s3cret"),
            "{m}"
        );
        let m = client(Auth::None, "on\ncall")
            .headers(&[])
            .unwrap_err()
            .to_string();
        assert!(m.contains("trino.user") && m.contains("line break"), "{m}");
    }
}
