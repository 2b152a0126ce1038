use super::*;
use secrecy::SecretString;

/// A statement that names `$all_entries` or `$all_manifests` is refused before anything
/// is sent: no connection reaches the server.
#[tokio::test]
async fn a_statement_reading_all_entries_or_all_manifests_is_never_sent() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let c = client(
        &format!("http://{}", listener.local_addr().unwrap()),
        Auth::None,
    );
    for sql in [
        "SELECT count(*) FROM \"iceberg\".\"zoning\".\"documents$all_entries\"",
        "select * from zoning.\"documents$ALL_MANIFESTS\"",
    ] {
        let e = c.query(sql).await.unwrap_err();
        assert!(
            matches!(&e, TrinoError::Internal(m) if m.contains("refusing to send")),
            "{sql}: {e:?}"
        );
    }
    assert!(listener.accept().is_err(), "nothing may reach the server");
}

/// No statement floe can send names them: no source file spells either name, and every
/// metadata table is named through `TableRef::meta` with a literal suffix of the ones
/// floe reads.
#[test]
fn no_statement_floe_builds_names_all_entries_or_all_manifests() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    // The guard itself names what it refuses.
    let this = root.join("trino").join("client.rs");
    let tests = root.join("trino").join("client").join("tests.rs");
    let mut files = vec![root.clone()];
    let mut sources = Vec::new();
    while let Some(p) = files.pop() {
        if p.is_dir() {
            files.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
        } else if p.extension().is_some_and(|x| x == "rs") && p != this && p != tests {
            sources.push(p);
        }
    }
    assert!(
        sources.len() > 100,
        "{} files under {}",
        sources.len(),
        root.display()
    );
    let read = [
        "files",
        "entries",
        "snapshots",
        "manifests",
        "properties",
        "metadata_log_entries",
        "partitions",
        "history",
        "refs",
        "transactions",
    ];
    for p in sources {
        let text = std::fs::read_to_string(&p).unwrap().to_lowercase();
        for t in NEVER_READ {
            // As a word (`max_small_manifests` is not one).
            let bare = &t[1..];
            let named = text.match_indices(bare).any(|(i, _)| {
                !text[..i]
                    .chars()
                    .next_back()
                    .is_some_and(|c| c.is_alphanumeric() || c == '_')
            });
            assert!(!named, "{} names {bare}", p.display());
        }
        for (i, _) in text.match_indices(".meta(") {
            let arg = &text[i + ".meta(".len()..];
            let lit = arg
                .strip_prefix('"')
                .and_then(|a| a.split_once('"'))
                .map(|(l, _)| l)
                .unwrap_or_else(|| panic!("{}: .meta( without a literal suffix", p.display()));
            assert!(read.contains(&lit), "{}: .meta(\"{lit}\")", p.display());
        }
    }
}

fn client(url: &str, auth: Auth) -> Client {
    let mut cfg = ClientConfig::from_settings(
        &TrinoSettings {
            url: url.parse().unwrap(),
            user: "oncall".into(),
            catalog: "iceberg".into(),
            more_catalogs: Vec::new(),
            catalogs_by_default: false,
            schemas: vec![],
            tables: vec![],
            auth: Auth::None,
            tls: TlsSettings {
                ca_file: None,
                insecure_skip_verify: false,
            },
            session: Default::default(),
            source: "floe".into(),
            client_tags: vec![],
            max_response_size: DEFAULT_MAX_RESPONSE_SIZE,
        },
        Duration::from_secs(1),
    );
    cfg.auth = auth;
    Client::new(cfg).unwrap()
}

#[test]
fn next_uri_stays_on_the_origin() {
    let basic = Auth::Basic {
        password: SecretString::from("pw".to_string()),
    };
    let c = client("https://trino.example:8443", basic);
    let origin: Url = "https://trino.example:8443/v1/statement".parse().unwrap();
    let ok = |u: &str| c.may_follow(&origin, &u.parse().unwrap());
    assert!(ok("https://trino.example:8443/v1/statement/queued/q/s/1").is_ok());
    let e = ok("http://trino.example:8443/v1/statement/queued/q/s/1")
        .unwrap_err()
        .to_string();
    assert!(e.contains("downgrades https to http"), "{e}");
    let e = ok("https://evil.example:8443/v1/statement/queued/q/s/1")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("another host (evil.example instead of trino.example)"),
        "{e}"
    );
    let e = ok("https://trino.example:9443/v1/statement/queued/q/s/1").unwrap_err();
    assert!(e.to_string().contains("another port"), "{e}");
    assert!(ok("file:///etc/passwd").is_err());
    // Without credentials the bastion's requests stay on the coordinator all the same.
    let anon = client("http://trino.example:8080", Auth::None);
    let origin: Url = "http://trino.example:8080/v1/statement".parse().unwrap();
    assert!(
        anon.may_follow(
            &origin,
            &"http://metadata.internal:80/latest/".parse().unwrap()
        )
        .is_err()
    );
}

#[test]
fn trinos_own_503_is_the_only_busy_answer_that_proves_nothing_started() {
    let reply = |status: u16, text: &str| net::Reply {
        status: reqwest::StatusCode::from_u16(status).unwrap(),
        headers: HeaderMap::new(),
        text: text.into(),
        cut: 0,
        attempts: 1,
        gave_up: false,
    };
    assert!(never_started(&reply(
        503,
        "Trino server is still initializing"
    )));
    assert!(!never_started(&reply(503, "Service Unavailable")));
    assert!(!never_started(&reply(
        503,
        "upstream connect error or disconnect/reset before headers"
    )));
    assert!(!never_started(&reply(
        502,
        "Trino server is still initializing"
    )));
    assert!(!never_started(&reply(504, "")));
}
