//! Fix an Airflow connection: point it at another host and port (typed, or taken from a
//! pasted `trino://` URI), shown as a diff, written as those two fields only, then tested
//! again. The password is never read, shown, sent or touched. Shared by the TUI and
//! `floe connection`.

use crate::airflow::{AirflowClient, AirflowError, ApiVersion, Connection, ConnectionTest};
use crate::config::uri::parse_trino_uri;

/// Where the connection is to point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub host: String,
    pub port: u16,
    /// What a pasted URI held that is not written (user, catalog, schema).
    pub ignored: Vec<String>,
}

/// `host:port`, `[v6]:port` or a `trino://user@host:port/catalog` URI (its host and port;
/// the rest is named and left alone).
pub fn parse_target(text: &str) -> Result<Target, String> {
    let t = text.trim();
    if t.contains("://") {
        let ep = parse_trino_uri(t)?;
        let url = ep.url.ok_or_else(|| format!("no host in {t:?}"))?;
        let host = url
            .host_str()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| format!("no host in {t:?}"))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        // floe's reading of a trino:// URI: without a port, Trino's default for its scheme.
        let port = url
            .port_or_known_default()
            .ok_or_else(|| format!("no port in {t:?}: name it (host:port)"))?;
        let mut ignored = Vec::new();
        if let Some(u) = ep.user {
            ignored.push(format!("user {u}"));
        }
        if let Some(c) = ep.catalog {
            ignored.push(format!("catalog {c}"));
        }
        if let Some(s) = ep.schema {
            ignored.push(format!("schema {s}"));
        }
        return Ok(Target {
            host,
            port,
            ignored,
        });
    }
    let (host, port) = t
        .rsplit_once(':')
        .ok_or_else(|| format!("{t:?}: expected host:port or a trino:// URI"))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty()
        || host
            .chars()
            .any(|c| c.is_whitespace() || c == '/' || c == '@')
    {
        return Err(format!("{t:?}: not a host name"));
    }
    let port: u16 = port
        .parse()
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| format!("{t:?}: the port must be a number from 1 to 65535"))?;
    Ok(Target {
        host: host.to_string(),
        port,
        ignored: Vec::new(),
    })
}

/// The request the change sends, as the diff shows it.
pub fn request_line(api: ApiVersion, id: &str) -> String {
    let v = match api {
        ApiVersion::V2 => "v2",
        ApiVersion::V1 => "v1",
    };
    let mask: Vec<String> = crate::airflow::endpoints::connections::endpoint_mask(api)
        .into_iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    format!(
        "PATCH /api/{v}/connections/{}?{}",
        crate::airflow::client::encode_segment(id),
        mask.join("&")
    )
}

/// The change as a diff: the two fields before and after, the request, what is not sent.
pub fn diff_lines(c: &Connection, t: &Target, api: ApiVersion) -> Vec<String> {
    let mut out = vec![format!(
        "Airflow connection {} ({})",
        c.connection_id, c.conn_type
    )];
    let host = c.host.as_deref().unwrap_or("(none)");
    let port = c
        .port
        .map(|p| p.to_string())
        .unwrap_or_else(|| "(none)".into());
    if host == t.host {
        out.push(format!("  host: {host} (unchanged)"));
    } else {
        out.push(format!("- host: {host}"));
        out.push(format!("+ host: {}", t.host));
    }
    if c.port == Some(t.port) {
        out.push(format!("  port: {port} (unchanged)"));
    } else {
        out.push(format!("- port: {port}"));
        out.push(format!("+ port: {}", t.port));
    }
    out.push(request_line(api, &c.connection_id));
    out.push("only host and port are written: the password, login, schema and extra are not read, sent or changed".into());
    if !t.ignored.is_empty() {
        out.push(format!(
            "from the URI, not written: {}",
            t.ignored.join(", ")
        ));
    }
    out.push("then the connection is tested again".into());
    out
}

/// How the change reads in the audit log.
pub fn statement(id: &str, t: &Target) -> String {
    format!("set connection {id} host={} port={}", t.host, t.port)
}

/// What a fix did: the connection as the server now has it, and its new test.
#[derive(Clone, Debug, PartialEq)]
pub struct Fixed {
    pub connection: Connection,
    pub test: Result<ConnectionTest, String>,
}

impl Fixed {
    /// `connection trino_documents → 127.0.0.1:35019; its test passes: …`.
    pub fn line(&self) -> String {
        let c = &self.connection;
        let at = format!(
            "{}:{}",
            c.host.as_deref().unwrap_or(""),
            c.port.map(|p| p.to_string()).unwrap_or_default()
        );
        let test = match &self.test {
            Ok(ConnectionTest::Passed(m)) => format!("its test passes{}", said(m)),
            Ok(ConnectionTest::Failed(m)) => format!("its test still fails{}", said(m)),
            Ok(ConnectionTest::NotAllowed(m)) => format!("not tested: {m}"),
            Err(e) => format!("its test could not run: {e}"),
        };
        format!("connection {} → {at}; {test}", c.connection_id)
    }
}

fn said(m: &str) -> String {
    if m.is_empty() {
        String::new()
    } else {
        format!(": {}", crate::text::clip(m, 200))
    }
}

/// Write the two fields (the connection's type read first: v2 needs it), then test the
/// connection as the server now has it.
pub async fn fix(c: &AirflowClient, id: &str, t: &Target) -> Result<Fixed, AirflowError> {
    let before = c.connection(id).await?;
    let connection = c
        .set_connection_endpoint(id, &before.conn_type, &t.host, t.port)
        .await?;
    let test = c
        .test_connection(&connection)
        .await
        .map_err(|e| e.to_string());
    Ok(Fixed { connection, test })
}

/// `floe connection ID TARGET [--yes]`: the diff; with `--yes` the audited write and the
/// new test. 0 when written and its test passes (or the diff was printed), 1 otherwise.
pub async fn cli(
    settings: &crate::config::Settings,
    id: &str,
    target: &str,
    yes: bool,
) -> std::process::ExitCode {
    use crate::text::sanitize;
    use std::process::ExitCode;
    let fail = |e: String| {
        eprintln!("floe: {}", sanitize(&e));
        ExitCode::from(1)
    };
    let Some(a) = settings.airflow.as_ref() else {
        return fail("Airflow is not configured (--airflow URL)".into());
    };
    let t = match parse_target(target) {
        Ok(t) => t,
        Err(e) => return fail(e),
    };
    let c = match AirflowClient::connect(a).await {
        Ok(c) => c,
        Err(e) => return fail(format!("Airflow at {}: {e}", a.url)),
    };
    let before = match c.connection(id).await {
        Ok(b) => b,
        Err(e) => return fail(format!("Airflow connection {id} at {}: {e}", a.url)),
    };
    for l in diff_lines(&before, &t, c.api()) {
        println!("{}", sanitize(&l));
    }
    if !yes {
        println!(
            "-- not written: add --yes to write it{}",
            if settings.readonly {
                " (and leave read-only mode)"
            } else {
                ""
            }
        );
        return ExitCode::SUCCESS;
    }
    let ctx = super::context(settings);
    let user = a.user.clone().unwrap_or_default();
    let fixed = std::sync::Mutex::new(None);
    let r = super::audit::audited(
        &ctx,
        &user,
        a.url.as_str(),
        "fix_connection",
        &statement(id, &t),
        async {
            let f = fix(&c, id, &t).await.map_err(super::audit::write_failure)?;
            let line = f.line();
            if let Ok(mut g) = fixed.lock() {
                *g = Some(f);
            }
            Ok(line)
        },
    )
    .await;
    match r {
        Ok(line) => {
            println!("{}", sanitize(&line));
            let passed = fixed
                .lock()
                .ok()
                .and_then(|g| {
                    g.as_ref()
                        .map(|f| matches!(f.test, Ok(ConnectionTest::Passed(_))))
                })
                .unwrap_or(false);
            if passed {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(e) => fail(format!("connection {id}: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn() -> Connection {
        Connection {
            connection_id: "trino_documents".into(),
            conn_type: "trino".into(),
            description: None,
            host: Some("trino-old.internal".into()),
            login: Some("etl".into()),
            schema: Some("zoning".into()),
            port: Some(8080),
            extra: None,
        }
    }

    #[test]
    fn targets_typed_or_pasted() {
        let t = parse_target("trino.internal:8443").unwrap();
        assert_eq!((t.host.as_str(), t.port), ("trino.internal", 8443));
        let t = parse_target("trino://etl@127.0.0.1:35019/iceberg?protocol=http").unwrap();
        assert_eq!((t.host.as_str(), t.port), ("127.0.0.1", 35019));
        assert_eq!(t.ignored, vec!["user etl", "catalog iceberg"]);
        assert_eq!(parse_target("trino://etl@host/iceberg").unwrap().port, 8080);
        assert!(parse_target("host").is_err());
        assert!(parse_target("host:0").is_err());
        assert!(parse_target("host:99999").is_err());
        assert!(parse_target("a b:80").is_err());
        assert!(
            parse_target("trino://u:pw@h:1")
                .unwrap_err()
                .contains("password")
        );
    }

    #[test]
    fn the_diff_names_the_two_fields_and_what_is_left_alone() {
        let t = parse_target("127.0.0.1:35019").unwrap();
        let d = diff_lines(&conn(), &t, ApiVersion::V2);
        assert_eq!(
            d,
            vec![
                "Airflow connection trino_documents (trino)",
                "- host: trino-old.internal",
                "+ host: 127.0.0.1",
                "- port: 8080",
                "+ port: 35019",
                "PATCH /api/v2/connections/trino_documents?update_mask=host&update_mask=port",
                "only host and port are written: the password, login, schema and extra are not read, sent or changed",
                "then the connection is tested again",
            ]
        );
        let same = parse_target("trino-old.internal:9090").unwrap();
        let d = diff_lines(&conn(), &same, ApiVersion::V1);
        assert_eq!(d[1], "  host: trino-old.internal (unchanged)");
        assert_eq!(
            d[4],
            "PATCH /api/v1/connections/trino_documents?update_mask=host,port"
        );
    }
}
