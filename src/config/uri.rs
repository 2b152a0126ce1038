//! Trino endpoints as operators paste them: `http(s)://host:port`, or the URI form Airflow
//! connections and SQLAlchemy use, `trino://user@host:port/catalog[/schema]?protocol=https`.

use url::Url;

#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct TrinoEndpoint {
    /// Base URL of the coordinator (scheme, host, port; no path).
    pub url: Option<Url>,
    pub user: Option<String>,
    pub catalog: Option<String>,
    pub schema: Option<String>,
    /// `verify=false` in the URI: skip TLS verification (only honoured when named so).
    pub insecure_skip_verify: bool,
}

/// A Trino URL that does not read: what is wrong, with the URL as written (a password in
/// it is never repeated).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum UriError {
    #[error("invalid Trino URL {text:?}: {reason}")]
    Invalid {
        text: String,
        reason: url::ParseError,
    },
    /// `redacted`: the URL with its password replaced.
    #[error(
        "Trino URL {redacted} contains a password: pass it through FLOE_TRINO_PASSWORD, password_env or password_command instead"
    )]
    Password { redacted: String },
    #[error("invalid Trino URL {text:?}: no host")]
    NoHost { text: String },
    #[error(
        "invalid Trino URL {text:?}: unsupported scheme {scheme:?} (use http://, https:// or trino://)"
    )]
    Scheme { text: String, scheme: String },
    #[error("invalid Trino URL {text:?}: protocol={protocol} (expected http or https)")]
    Protocol { text: String, protocol: String },
    #[error(
        "invalid Trino URL {text:?}: an http(s) URL is the coordinator's base URL and takes no path; set the catalog with --catalog"
    )]
    Path { text: String },
}

pub fn parse_trino_uri(text: &str) -> Result<TrinoEndpoint, UriError> {
    let raw = text.trim();
    let invalid = |reason| UriError::Invalid {
        text: raw.to_string(),
        reason,
    };
    let parsed = Url::parse(raw).map_err(invalid)?;
    let mut ep = TrinoEndpoint::default();
    if !parsed.password().unwrap_or("").is_empty() {
        return Err(UriError::Password {
            redacted: redact(&parsed),
        });
    }
    if !parsed.username().is_empty() {
        ep.user = Some(percent_decode(parsed.username()));
    }
    let host = parsed
        .host_str()
        .filter(|h| !h.is_empty())
        .ok_or_else(|| UriError::NoHost {
            text: raw.to_string(),
        })?;
    let mut scheme = match parsed.scheme() {
        "http" => "http",
        "https" => "https",
        "trino" | "presto" => "",
        other => {
            return Err(UriError::Scheme {
                text: raw.to_string(),
                scheme: other.to_string(),
            });
        }
    };
    for (k, v) in parsed.query_pairs() {
        match k.as_ref() {
            "protocol" | "http_scheme" => match v.as_ref() {
                "http" => scheme = if scheme.is_empty() { "http" } else { scheme },
                "https" => scheme = if scheme.is_empty() { "https" } else { scheme },
                other => {
                    return Err(UriError::Protocol {
                        text: raw.to_string(),
                        protocol: other.to_string(),
                    });
                }
            },
            "catalog" => ep.catalog = Some(v.into_owned()),
            "schema" => ep.schema = Some(v.into_owned()),
            "user" => ep.user = Some(v.into_owned()),
            "verify" => ep.insecure_skip_verify = matches!(v.as_ref(), "false" | "False" | "0"),
            // Other Airflow extras (source, session_properties, client_tags, timezone…)
            // have floe settings of their own; ignoring them keeps a pasted URI usable.
            _ => {}
        }
    }
    let port = parsed.port();
    if scheme.is_empty() {
        // trino:// without protocol: Trino's clients default to https on 443/8443.
        scheme = match port {
            Some(443) | Some(8443) => "https",
            _ => "http",
        };
    }
    let default_port = if scheme == "https" { 443 } else { 8080 };
    let port = port.unwrap_or(
        if parsed.scheme() == "trino" || parsed.scheme() == "presto" {
            default_port
        } else if scheme == "https" {
            443
        } else {
            80
        },
    );
    let host_part = if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]")
    } else {
        host.to_string()
    };
    ep.url = Some(Url::parse(&format!("{scheme}://{host_part}:{port}/")).map_err(invalid)?);
    let mut segments = parsed.path().split('/').filter(|s| !s.is_empty());
    if let Some(c) = segments.next() {
        if parsed.scheme() == "trino" || parsed.scheme() == "presto" {
            ep.catalog = Some(percent_decode(c));
            if let Some(s) = segments.next() {
                ep.schema = Some(percent_decode(s));
            }
        } else {
            return Err(UriError::Path {
                text: raw.to_string(),
            });
        }
    }
    Ok(ep)
}

/// The URL names this machine (`localhost`, 127.0.0.0/8, ::1): plain HTTP to it stays
/// here, or goes down an SSH tunnel.
pub fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// `host` is this machine or its link (`localhost`, 127.0.0.0/8, ::1, 169.254.0.0/16,
/// fe80::/10): an address that means another machine to each host that reads it, so a
/// tunnel's end on a bastion and never where a cluster's workers reach a service.
pub fn is_local_host(host: &str) -> bool {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    if h.eq_ignore_ascii_case("localhost") || h.to_ascii_lowercase().ends_with(".localhost") {
        return true;
    }
    match h.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(ip)) => {
            ip.is_loopback() || ip.is_link_local() || ip.is_unspecified()
        }
        Ok(std::net::IpAddr::V6(ip)) => {
            ip.is_loopback()
                || ip.is_unspecified()
                || (ip.segments()[0] & 0xffc0) == 0xfe80
                || ip
                    .to_ipv4_mapped()
                    .is_some_and(|v4| v4.is_loopback() || v4.is_link_local())
        }
        Err(_) => false,
    }
}

/// The URL with any password replaced, safe to print and log.
pub fn redact(url: &Url) -> String {
    let mut u = url.clone();
    if u.password().is_some() {
        let _ = u.set_password(Some("***"));
    }
    u.to_string()
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(b) = u8::from_str_radix(&s[i + 1..i + 3], 16)
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_and_link_local_hosts_are_local() {
        for h in [
            "localhost",
            "LOCALHOST",
            "app.localhost",
            "127.0.0.1",
            "127.1.2.3",
            "::1",
            "[::1]",
            "169.254.10.1",
            "fe80::1",
            "0.0.0.0",
            "::ffff:127.0.0.1",
        ] {
            assert!(is_local_host(h), "{h}");
        }
        for h in [
            "trino.internal",
            "10.0.0.5",
            "192.168.1.2",
            "2001:db8::1",
            "localhost.corp",
        ] {
            assert!(!is_local_host(h), "{h}");
        }
    }

    #[test]
    fn airflow_style_uri() {
        let ep =
            parse_trino_uri("trino://oncall@trino.internal:8443/iceberg?protocol=https").unwrap();
        assert_eq!(ep.url.unwrap().as_str(), "https://trino.internal:8443/");
        assert_eq!(ep.user.as_deref(), Some("oncall"));
        assert_eq!(ep.catalog.as_deref(), Some("iceberg"));
        assert_eq!(ep.schema, None);
    }

    #[test]
    fn sqlalchemy_style_with_schema_and_defaults() {
        let ep = parse_trino_uri("trino://etl@trino-old.internal/iceberg/zoning").unwrap();
        assert_eq!(ep.url.unwrap().as_str(), "http://trino-old.internal:8080/");
        assert_eq!(ep.catalog.as_deref(), Some("iceberg"));
        assert_eq!(ep.schema.as_deref(), Some("zoning"));
        let ep = parse_trino_uri("trino://t.example:8443").unwrap();
        assert_eq!(ep.url.unwrap().scheme(), "https");
    }

    #[test]
    fn http_urls() {
        let ep = parse_trino_uri("http://127.0.0.1:8080").unwrap();
        assert_eq!(ep.url.unwrap().as_str(), "http://127.0.0.1:8080/");
        let ep = parse_trino_uri("https://trino.example.com").unwrap();
        assert_eq!(ep.url.unwrap().as_str(), "https://trino.example.com/");
        assert!(
            parse_trino_uri("http://h:1/iceberg")
                .unwrap_err()
                .to_string()
                .contains("takes no path")
        );
    }

    #[test]
    fn passwords_and_bad_input_are_refused() {
        let e = parse_trino_uri("trino://u:hunter2@h:8443/iceberg")
            .unwrap_err()
            .to_string();
        assert!(e.contains("FLOE_TRINO_PASSWORD"), "{e}");
        assert!(!e.contains("hunter2"), "{e}");
        assert!(
            parse_trino_uri("ftp://h")
                .unwrap_err()
                .to_string()
                .contains("unsupported scheme")
        );
        assert!(parse_trino_uri("trino://u@h/c?protocol=gopher").is_err());
        assert!(parse_trino_uri("not a url").is_err());
    }

    #[test]
    fn verify_false_and_encoded_user() {
        let ep = parse_trino_uri("trino://svc%40corp@h:8443/iceberg?protocol=https&verify=false")
            .unwrap();
        assert!(ep.insecure_skip_verify);
        assert_eq!(ep.user.as_deref(), Some("svc@corp"));
    }
}
