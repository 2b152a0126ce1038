//! The session a client carries from statement to statement: the request headers it sends
//! (user, catalog, schema, session properties, credentials) and the `X-Trino-Set-*` /
//! `Clear-*` answers that change it.

use std::collections::BTreeMap;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use secrecy::ExposeSecret;

use super::client::Client;
use crate::config::Auth;

const CAPABILITIES: &str = "PARAMETRIC_DATETIME";

#[derive(Clone, Debug, Default)]
pub(super) struct SessionState {
    pub(super) catalog: Option<String>,
    pub(super) schema: Option<String>,
    pub(super) properties: BTreeMap<String, String>,
}

impl Client {
    pub(super) fn headers(&self, extra_session: &[(String, String)]) -> HeaderMap {
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
}
