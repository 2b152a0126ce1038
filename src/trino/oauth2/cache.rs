//! The token cache: one 0600 file per coordinator and user, each token with its expiry
//! (the JWT `exp` claim when there is one).

use std::path::PathBuf;
use std::time::Duration;

use chrono::{DateTime, Utc};
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};
use url::Url;

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
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
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
        crate::files::write_atomic(&path, body.as_bytes(), 0o600)?;
        Ok(path)
    }

    pub fn remove(&self, coordinator: &Url, user: &str) {
        let _ = std::fs::remove_file(self.path(coordinator, user));
    }
}

/// `scheme://host:port` of a URL (the cache key's coordinator part).
pub(super) fn origin(u: &Url) -> String {
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
