use super::*;
use std::path::Path;

fn params(c: &Challenge) -> Vec<(&str, &str)> {
    c.params
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect()
}

#[test]
fn trinos_challenge_is_read() {
    let v = r#"Bearer x_redirect_server="https://trino.example:8443/oauth2/token/initiate/abc", x_token_server="https://trino.example:8443/oauth2/token/abc""#;
    let c = parse_challenges([v]);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].scheme, "Bearer");
    assert_eq!(
        c[0].param("x_redirect_server"),
        Some("https://trino.example:8443/oauth2/token/initiate/abc")
    );
    assert_eq!(
        c[0].param("X_TOKEN_SERVER"),
        Some("https://trino.example:8443/oauth2/token/abc")
    );
}

#[test]
fn quoted_parameters_keep_commas_escapes_and_spaces() {
    let c = parse_challenges([
        r#"Basic realm="a, \"quoted\" realm", charset=UTF-8 , Bearer  realm = "x""#,
    ]);
    assert_eq!(c.len(), 2, "{c:?}");
    assert_eq!(c[0].scheme, "Basic");
    assert_eq!(
        params(&c[0]),
        vec![("realm", r#"a, "quoted" realm"#), ("charset", "UTF-8")]
    );
    assert_eq!(c[1].scheme, "Bearer");
    assert_eq!(params(&c[1]), vec![("realm", "x")]);
}

#[test]
fn several_challenges_in_one_value_and_in_several_headers() {
    let c = parse_challenges([
        r#"Negotiate abc==, Basic realm="Trino""#,
        r#"Bearer realm="Trino", token_type="JWT", Bearer x_redirect_server="https://t/r", x_token_server="https://t/t""#,
        "",
        "Digest",
    ]);
    let schemes: Vec<&str> = c.iter().map(|c| c.scheme.as_str()).collect();
    assert_eq!(
        schemes,
        vec!["Negotiate", "Basic", "Bearer", "Bearer", "Digest"]
    );
    assert_eq!(params(&c[0]), vec![("", "abc==")]);
    assert_eq!(
        params(&c[2]),
        vec![("realm", "Trino"), ("token_type", "JWT")]
    );
    let mut h = HeaderMap::new();
    for v in [
        r#"Basic realm="Trino""#,
        r#"Bearer realm="Trino", token_type="JWT""#,
        r#"Bearer x_redirect_server="https://t/r", x_token_server="https://t/t""#,
    ] {
        h.append(
            reqwest::header::WWW_AUTHENTICATE,
            HeaderValue::from_str(v).unwrap(),
        );
    }
    let e = external_challenge(&h).expect("the external challenge among others");
    assert_eq!(e.token.as_str(), "https://t/t");
    assert_eq!(e.redirect.unwrap().as_str(), "https://t/r");
}

#[test]
fn no_external_challenge_without_a_token_server() {
    let mut h = HeaderMap::new();
    h.append(
        reqwest::header::WWW_AUTHENTICATE,
        HeaderValue::from_static(r#"Basic realm="Trino""#),
    );
    h.append(
        reqwest::header::WWW_AUTHENTICATE,
        HeaderValue::from_static(r#"Bearer x_redirect_server="https://t/r""#),
    );
    assert_eq!(external_challenge(&h), None);
    // Garbage is skipped, not an error.
    assert!(parse_challenges(["=,,=\"", ", ,"]).is_empty());
}

#[test]
fn flow_urls_must_be_on_the_coordinators_origin_or_https() {
    let coord: Url = "http://127.0.0.1:8080/".parse().unwrap();
    let ok = |u: &str| check_flow_url(&coord, "token server", &u.parse().unwrap());
    assert!(ok("http://127.0.0.1:8080/oauth2/token/x").is_ok());
    assert!(ok("https://idp.example/authorize").is_ok());
    let e = ok("http://127.0.0.2:8080/oauth2/token/x")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("neither on the coordinator's origin (http://127.0.0.1:8080) nor https"),
        "{e}"
    );
    assert!(ok("http://127.0.0.1:9090/x").is_err());
    assert!(check_coordinator(&coord).is_ok());
    assert!(check_coordinator(&"https://trino.example/".parse().unwrap()).is_ok());
    let e = check_coordinator(&"http://trino.example:8080/".parse().unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("plain HTTP"), "{e}");
}

fn jwt(payload: &str) -> String {
    let b64 = |s: &str| {
        super::super::session::base64_encode(s.as_bytes())
            .trim_end_matches('=')
            .replace('+', "-")
            .replace('/', "_")
    };
    format!("{}.{}.sig", b64(r#"{"alg":"HS256"}"#), b64(payload))
}

#[test]
fn the_expiry_is_the_jwt_exp_claim() {
    assert_eq!(
        jwt_expiry(&jwt(r#"{"sub":"carol","exp":1800000000}"#)),
        DateTime::from_timestamp(1_800_000_000, 0)
    );
    assert_eq!(jwt_expiry(&jwt(r#"{"sub":"carol"}"#)), None);
    assert_eq!(jwt_expiry("opaque-token"), None);
    assert_eq!(jwt_expiry("a.b"), None);
    assert_eq!(jwt_expiry("a.!!!.c"), None);
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("floe-oauth2-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

#[test]
fn the_cache_is_keyed_by_coordinator_and_user() {
    let dir = temp_dir("keys");
    let cache = TokenCache::new(&dir);
    let a: Url = "https://trino.example:8443/".parse().unwrap();
    let b: Url = "https://trino.example:9443/".parse().unwrap();
    let c: Url = "https://trino.example/".parse().unwrap();
    assert_eq!(
        cache.path(&a, "carol"),
        dir.join("https_trino.example_8443_carol.json")
    );
    assert_eq!(
        cache.path(&c, "carol"),
        dir.join("https_trino.example_443_carol.json")
    );
    // The path part of the URL does not matter; the port, the user and escaping do.
    assert_eq!(
        cache.path(&"https://trino.example:8443/x/".parse().unwrap(), "carol"),
        cache.path(&a, "carol")
    );
    assert_ne!(cache.path(&a, "a_b"), cache.path(&a, "a%5Fb"));
    assert!(cache.path(&a, "../../etc/passwd").starts_with(&dir));
    assert_eq!(
        cache
            .path(&a, "../x")
            .file_name()
            .unwrap()
            .to_str()
            .unwrap(),
        "https_trino.example_8443_%2E.%2Fx.json"
    );
    let now = Utc::now();
    let tok = |t: &str, secs: i64| CachedToken {
        token: SecretString::from(t.to_string()),
        expires_at: now + chrono::Duration::seconds(secs),
    };
    cache.store(&a, "carol", &tok("token-a", 3600)).unwrap();
    cache.store(&b, "carol", &tok("token-b", 3600)).unwrap();
    cache.store(&a, "dave", &tok("token-d", 3600)).unwrap();
    let got = |u: &Url, user: &str| {
        cache
            .load(u, user, now)
            .map(|t| t.token.expose_secret().to_string())
    };
    assert_eq!(got(&a, "carol").as_deref(), Some("token-a"));
    assert_eq!(got(&b, "carol").as_deref(), Some("token-b"));
    assert_eq!(got(&a, "dave").as_deref(), Some("token-d"));
    assert_eq!(got(&c, "carol"), None);
    // A file copied under another key is not used.
    std::fs::copy(cache.path(&a, "carol"), cache.path(&a, "erin")).unwrap();
    assert_eq!(got(&a, "erin"), None);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_cache_is_private_and_drops_expired_and_unreadable_tokens() {
    use std::os::unix::fs::PermissionsExt;
    let dir = temp_dir("perm");
    let cache = TokenCache::new(&dir);
    let a: Url = "https://trino.example:8443/".parse().unwrap();
    let now = Utc::now();
    let path = cache
        .store(
            &a,
            "carol",
            &CachedToken {
                token: SecretString::from("s3cret-token".to_string()),
                expires_at: now + chrono::Duration::seconds(60),
            },
        )
        .unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(&dir), 0o700);
    // Valid now, not a minute later (nor within the margin before).
    assert!(cache.load(&a, "carol", now).is_some());
    assert!(
        cache
            .load(&a, "carol", now + chrono::Duration::seconds(57))
            .is_none()
    );
    assert!(path.exists(), "within the margin the file stays");
    assert!(
        cache
            .load(&a, "carol", now + chrono::Duration::seconds(61))
            .is_none()
    );
    assert!(!path.exists(), "an expired token is dropped");
    std::fs::write(&path, "{not json").unwrap();
    assert!(cache.load(&a, "carol", now).is_none());
    assert!(!path.exists(), "an unreadable file is dropped");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_cached_token_is_never_shown_in_debug_output() {
    let t = CachedToken {
        token: SecretString::from("s3cret-token".to_string()),
        expires_at: Utc::now(),
    };
    assert!(!format!("{t:?}").contains("s3cret"));
}
