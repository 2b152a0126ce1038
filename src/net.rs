//! HTTP plumbing shared by the Trino and Airflow clients: TLS settings, error chains,
//! which transport failures are worth retrying, and `Retry-After`.

use std::time::Duration;

use reqwest::header::HeaderMap;

use crate::config::TlsSettings;

/// Build a reqwest client with the TLS settings (custom CA, or verification off when asked).
pub fn http_client(
    tls: &TlsSettings,
    connect: Duration,
    request: Duration,
) -> Result<reqwest::Client, String> {
    let mut b = reqwest::Client::builder()
        .connect_timeout(connect)
        .timeout(request)
        .user_agent(concat!("floe/", env!("CARGO_PKG_VERSION")))
        .tcp_nodelay(true);
    if let Some(ca) = &tls.ca_file {
        let pem =
            std::fs::read(ca).map_err(|e| format!("cannot read CA file {}: {e}", ca.display()))?;
        let certs = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| {
            format!(
                "CA file {} holds no usable PEM certificate: {e}",
                ca.display()
            )
        })?;
        if certs.is_empty() {
            return Err(format!("CA file {} holds no PEM certificate", ca.display()));
        }
        for c in certs {
            b = b.add_root_certificate(c);
        }
    }
    if tls.insecure_skip_verify {
        b = b.tls_danger_accept_invalid_certs(true);
    }
    b.build()
        .map_err(|e| format!("cannot build HTTP client: {}", error_chain(&e)))
}

/// An error and its sources in one line (reqwest hides the useful part in the chain).
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut src = e.source();
    while let Some(s) = src {
        let t = s.to_string();
        if !out.contains(&t) {
            out.push_str(": ");
            out.push_str(&t);
        }
        src = s.source();
    }
    out
}

/// How a transport failure should be treated.
pub enum Transport {
    /// A certificate, TLS or name-resolution failure: it will not fix itself in a second.
    Permanent,
    /// Connection refused: maybe a server restarting.
    Connect,
    /// Timeouts, resets, bodies cut short.
    Transient,
}

pub fn transport_kind(e: &reqwest::Error, chain: &str) -> Transport {
    let c = chain.to_ascii_lowercase();
    let permanent = [
        "certificate",
        "tls",
        "handshake",
        "dns error",
        "failed to lookup address",
        "name or service not known",
    ];
    if permanent.iter().any(|p| c.contains(p)) {
        Transport::Permanent
    } else if e.is_connect() {
        Transport::Connect
    } else {
        Transport::Transient
    }
}

/// `Retry-After` in seconds or as an HTTP date.
pub fn retry_after(h: &HeaderMap) -> Option<Duration> {
    let v = h.get("retry-after")?.to_str().ok()?.trim();
    if let Ok(secs) = v.parse::<f64>() {
        return Some(Duration::from_secs_f64(secs.clamp(0.0, 300.0)));
    }
    let when = chrono::DateTime::parse_from_rfc2822(v).ok()?;
    let delta = when.with_timezone(&chrono::Utc) - chrono::Utc::now();
    Some(delta.to_std().unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn retry_after_forms() {
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(
            retry_after(&h),
            Some(Duration::ZERO),
            "a past date means now"
        );
        h.insert("retry-after", HeaderValue::from_static("soon"));
        assert_eq!(retry_after(&h), None);
        h.insert("retry-after", HeaderValue::from_static("86400"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(300)), "capped");
    }
}
