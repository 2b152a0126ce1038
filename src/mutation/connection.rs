//! Fix an Airflow connection: point it at another host and port (typed, or taken from a
//! pasted `trino://` URI), shown as a diff, written as those two fields only, then tested
//! again. The password is never read, shown, sent or touched. Shared by the TUI and
//! `floe connection`.

use super::audit::{Action, Outcome, WriteError};
use crate::airflow::{
    AirflowClient, AirflowError, ApiVersion, Connection, ConnectionTest, TestSite, Tested,
};
use crate::config::uri::{UriError, parse_trino_uri};

/// Where the connection is to point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub host: String,
    pub port: u16,
    /// What a pasted URI held that is not written (user, catalog, schema, and its
    /// parameters: protocol, verify, …, which live in the connection's extra).
    pub ignored: Vec<String>,
}

/// A target that does not read, as typed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    #[error(transparent)]
    Uri(#[from] UriError),
    #[error("no host in {0:?}")]
    NoHost(String),
    #[error("no port in {0:?}: name it (host:port)")]
    NoPort(String),
    #[error("{0:?}: expected host:port or a trino:// URI")]
    NotHostPort(String),
    #[error("{0:?}: not a host name")]
    BadHost(String),
    #[error("{0:?}: the port must be a number from 1 to 65535")]
    BadPort(String),
}

/// `host:port`, `[v6]:port` or a `trino://user@host:port/catalog` URI (its host and port;
/// the rest is named and left alone).
pub fn parse_target(text: &str) -> Result<Target, TargetError> {
    let t = text.trim();
    if t.contains("://") {
        let ep = parse_trino_uri(t)?;
        let url = ep.url.ok_or_else(|| TargetError::NoHost(t.into()))?;
        let host = url
            .host_str()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| TargetError::NoHost(t.into()))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        // floe's reading of a trino:// URI: without a port, Trino's default for its scheme.
        let port = url
            .port_or_known_default()
            .ok_or_else(|| TargetError::NoPort(t.into()))?;
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
        // The URI's parameters (protocol, verify, source, …) are the connection's extra,
        // which the fix never writes: each one named, none dropped unsaid.
        if let Ok(u) = url::Url::parse(t) {
            for (k, v) in u.query_pairs() {
                if !matches!(k.as_ref(), "catalog" | "schema" | "user") {
                    ignored.push(format!("{k}={v}"));
                }
            }
        }
        return Ok(Target {
            host,
            port,
            ignored,
        });
    }
    let (host, port) = t
        .rsplit_once(':')
        .ok_or_else(|| TargetError::NotHostPort(t.into()))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty()
        || host
            .chars()
            .any(|c| c.is_whitespace() || c == '/' || c == '@')
    {
        return Err(TargetError::BadHost(t.into()));
    }
    let port: u16 = port
        .parse()
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| TargetError::BadPort(t.into()))?;
    Ok(Target {
        host: host.to_string(),
        port,
        ignored: Vec::new(),
    })
}

/// The change as a diff: the Airflow it goes to, the two fields before and after, the
/// request, what is not sent.
pub fn diff_lines(c: &Connection, t: &Target, api: ApiVersion, airflow: &str) -> Vec<String> {
    let mut out = vec![format!(
        "Airflow connection {} ({}) on {airflow}",
        c.connection_id, c.conn_type
    )];
    if crate::config::uri::is_local_host(&t.host) {
        out.push(format!(
            "! {} is a loopback or link-local address: to Airflow's workers it is their own machine, not this one — write it only if Trino runs beside every worker",
            t.host
        ));
    }
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
    // The request as it is sent (the server's own conn_type, which v2 requires).
    out.push(
        crate::airflow::WriteRequest::connection_endpoint(
            api,
            &c.connection_id,
            &c.conn_type,
            &t.host,
            t.port,
        )
        .line(api),
    );
    out.push("only host and port are written: the password, login, schema and extra are not read, sent or changed".into());
    if !t.ignored.is_empty() {
        out.push(format!(
            "from the URI, not written: {}",
            t.ignored.join(", ")
        ));
    }
    out.push("then the connection is tested again; the tasks use this stored connection only if no AIRFLOW_CONN_ variable or secrets backend defines the same id".into());
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
    pub test: Result<Tested, TestError>,
}

/// Why a fixed connection's test did not run to an answer.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TestError {
    #[error(transparent)]
    Airflow(#[from] AirflowError),
    /// floe was told to stop (`0`: how) while it waited for the test.
    #[error("{0} during the test")]
    Interrupted(String),
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
        let on = |site: &TestSite| match site {
            TestSite::ApiServer => "",
            TestSite::Worker => " on a worker",
        };
        let test = match &self.test {
            Ok(Tested {
                test: ConnectionTest::Passed(m),
                site,
            }) => format!("its test passes{}{}", on(site), said(m)),
            Ok(Tested {
                test: ConnectionTest::Failed(m),
                site,
            }) => format!("its test still fails{}{}", on(site), said(m)),
            Ok(Tested {
                test: ConnectionTest::NotAllowed(m),
                ..
            }) => format!("not tested ({m}): the DAG's next run proves it (t trigger)"),
            Ok(Tested {
                test: ConnectionTest::NoVerdict(m),
                ..
            }) => format!("its test is no verdict ({m}): the DAG's next run proves it (t trigger)"),
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

/// `host=H port=P` of a connection, as the audit records what a fix replaced.
pub fn endpoint_text(c: &Connection) -> String {
    format!(
        "host={} port={}",
        c.host.as_deref().unwrap_or(""),
        c.port.map(|p| p.to_string()).unwrap_or_default()
    )
}

/// What the server answered differs from what was sent: what it stored, or `None` when it
/// stored the target.
pub fn wrote_otherwise(answer: &Connection, t: &Target) -> Option<String> {
    if answer.host.as_deref() == Some(t.host.as_str()) && answer.port == Some(t.port) {
        return None;
    }
    Some(format!(
        "Airflow answered the write of connection {} with {}, not the host={} port={} sent: that is what it stored",
        answer.connection_id,
        endpoint_text(answer),
        t.host,
        t.port
    ))
}

/// A fix as the audit records it: who writes, to which Airflow, what.
pub struct FixRequest<'a> {
    pub ctx: &'a super::audit::RunContext,
    /// The Airflow user and base URL the write goes to.
    pub user: &'a str,
    pub airflow: &'a str,
    pub id: &'a str,
    pub target: &'a Target,
}

/// Write the two fields and test the connection as the server then has it, each step in
/// the audit log as soon as it is known: the connection is read first (what the record
/// says it replaced; v2 needs its type), the write is `started` then its outcome the
/// moment Airflow answers (the answer compared with what was sent), and the test is its
/// own record. `stop` ends the wait (a signal): a write in flight is then recorded
/// `may_have_run` and a test in flight `interrupted`.
pub async fn fix_audited<S>(
    c: &AirflowClient,
    r: &FixRequest<'_>,
    mut stop: std::pin::Pin<&mut S>,
) -> Result<Fixed, WriteError>
where
    S: std::future::Future<Output = String>,
{
    use super::audit::{WriteFailure, audited_from, write_failure};
    let (id, t) = (r.id, r.target);
    let before = tokio::select! {
        b = c.connection(id) => b.map_err(|source| WriteError::ReadBefore {
            id: id.to_string(),
            airflow: r.airflow.to_string(),
            source: Box::new(source),
        })?,
        why = stop.as_mut() => return Err(WriteError::Stopped(why)),
    };
    let answer = std::sync::Mutex::new(None);
    let write = async {
        let sent = c.set_connection_endpoint(id, &before.conn_type, &t.host, t.port);
        let a = tokio::select! {
            a = sent => a.map_err(write_failure)?,
            why = stop.as_mut() => return Err(WriteFailure::Abandoned(why)),
        };
        let otherwise = wrote_otherwise(&a, t);
        let line = format!("connection {id} → {}:{}", t.host, t.port);
        if let Ok(mut g) = answer.lock() {
            *g = Some(a);
        }
        match otherwise {
            Some(e) => Err(WriteFailure::WroteOtherwise(e)),
            None => Ok(line),
        }
    };
    audited_from(
        r.ctx,
        r.user,
        r.airflow,
        Action::FixConnection,
        &statement(id, t),
        Some(endpoint_text(&before)),
        write,
    )
    .await?;
    let connection = answer
        .lock()
        .ok()
        .and_then(|mut g| g.take())
        .ok_or_else(|| WriteError::AnswerLost(id.to_string()))?;
    let test = tokio::select! {
        x = c.check_connection(&connection) => x.map_err(TestError::Airflow),
        why = stop.as_mut() => Err(TestError::Interrupted(why)),
    };
    let fixed = Fixed { connection, test };
    record_test(r, &fixed)?;
    Ok(fixed)
}

/// The connection's test after a fix, its own audit record.
fn record_test(r: &FixRequest<'_>, f: &Fixed) -> Result<(), WriteError> {
    let mut rec = super::audit::Record::now(
        &r.ctx.profile,
        r.user,
        r.airflow,
        Action::TestConnection,
        &format!("test connection {} {}", r.id, endpoint_text(&f.connection)),
    );
    let (outcome, error) = match f.test.as_ref().map(|t| &t.test) {
        Ok(ConnectionTest::Passed(_)) => (Outcome::Passed, None),
        Ok(ConnectionTest::Failed(m)) => (Outcome::Failed, Some(m.clone())),
        Ok(ConnectionTest::NotAllowed(m)) => (Outcome::NotAllowed, Some(m.clone())),
        Ok(ConnectionTest::NoVerdict(m)) => (Outcome::NoVerdict, Some(m.clone())),
        Err(e @ TestError::Interrupted(_)) => (Outcome::Interrupted, Some(e.to_string())),
        Err(e @ TestError::Airflow(_)) => (Outcome::Error, Some(e.to_string())),
    };
    rec.outcome = outcome;
    rec.error = error;
    r.ctx
        .audit
        .append(&rec)
        .map_err(|audit| WriteError::TestUnrecorded {
            done: f.line(),
            audit,
        })
}

/// `floe connection ID TARGET [--yes]`: the diff; with `--yes` the audited write and the
/// new test. 0 when written and its test passes, or cannot tell (Airflow tests nothing,
/// or not the stored connection: the DAG's next run proves it), or the diff was printed;
/// 1 otherwise.
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
        Err(e) => return fail(e.to_string()),
    };
    let c = match AirflowClient::connect(a).await {
        Ok(c) => c,
        Err(e) => return fail(format!("Airflow at {}: {e}", a.url)),
    };
    let before = match c.connection(id).await {
        Ok(b) => b,
        Err(e) => return fail(format!("Airflow connection {id} at {}: {e}", a.url)),
    };
    for l in diff_lines(&before, &t, c.api(), a.url.as_str()) {
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
    let req = FixRequest {
        ctx: &ctx,
        user: &user,
        airflow: a.url.as_str(),
        id,
        target: &t,
    };
    let signalled = std::sync::atomic::AtomicU8::new(0);
    let stop = std::pin::pin!(async {
        let (code, name) = signals().await;
        signalled.store(code, std::sync::atomic::Ordering::SeqCst);
        name.to_string()
    });
    let r = fix_audited(&c, &req, stop).await;
    let code = signalled.load(std::sync::atomic::Ordering::SeqCst);
    match r {
        Ok(f) => {
            println!("{}", sanitize(&f.line()));
            if code != 0 {
                ExitCode::from(code)
            } else if matches!(
                &f.test,
                Ok(Tested {
                    test: ConnectionTest::Passed(_)
                        | ConnectionTest::NotAllowed(_)
                        | ConnectionTest::NoVerdict(_),
                    ..
                })
            ) {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(e) => {
            let out = fail(format!("connection {id}: {e}"));
            if code != 0 { ExitCode::from(code) } else { out }
        }
    }
}

/// SIGINT, SIGTERM or SIGHUP: the exit code (130, 143, 129) and what stopped the fix. A
/// handler that cannot be installed waits forever (the default disposition stays).
async fn signals() -> (u8, &'static str) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term), Ok(mut hup)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = int.recv() => (130, "interrupted (SIGINT)"),
        _ = term.recv() => (143, "interrupted (SIGTERM)"),
        _ = hup.recv() => (129, "interrupted (SIGHUP)"),
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
            secret: Some(false),
        }
    }

    #[test]
    fn targets_typed_or_pasted() {
        let t = parse_target("trino.internal:8443").unwrap();
        assert_eq!((t.host.as_str(), t.port), ("trino.internal", 8443));
        let t = parse_target("trino://etl@127.0.0.1:35019/iceberg?protocol=http").unwrap();
        assert_eq!((t.host.as_str(), t.port), ("127.0.0.1", 35019));
        assert_eq!(
            t.ignored,
            vec!["user etl", "catalog iceberg", "protocol=http"]
        );
        // The URI's TLS parameters live in the connection's extra: named, never dropped.
        let t = parse_target("trino://etl@trino.prod:8443/iceberg?protocol=https&verify=false")
            .unwrap();
        assert_eq!(
            t.ignored,
            vec![
                "user etl",
                "catalog iceberg",
                "protocol=https",
                "verify=false"
            ]
        );
        assert_eq!(parse_target("trino://etl@host/iceberg").unwrap().port, 8080);
        assert!(parse_target("host").is_err());
        assert!(parse_target("host:0").is_err());
        assert!(parse_target("host:99999").is_err());
        assert!(parse_target("a b:80").is_err());
        assert!(
            parse_target("trino://u:pw@h:1")
                .unwrap_err()
                .to_string()
                .contains("password")
        );
    }

    #[test]
    fn the_diff_names_the_two_fields_and_what_is_left_alone() {
        let t = parse_target("trino.prod.internal:8443").unwrap();
        let d = diff_lines(&conn(), &t, ApiVersion::V2, "https://airflow.prod/");
        assert_eq!(
            d,
            vec![
                "Airflow connection trino_documents (trino) on https://airflow.prod/",
                "- host: trino-old.internal",
                "+ host: trino.prod.internal",
                "- port: 8080",
                "+ port: 8443",
                r#"PATCH /api/v2/connections/trino_documents?update_mask=host&update_mask=port {"conn_type":"trino","connection_id":"trino_documents","host":"trino.prod.internal","port":8443}"#,
                "only host and port are written: the password, login, schema and extra are not read, sent or changed",
                "then the connection is tested again; the tasks use this stored connection only if no AIRFLOW_CONN_ variable or secrets backend defines the same id",
            ]
        );
        let same = parse_target("trino-old.internal:9090").unwrap();
        let d = diff_lines(&conn(), &same, ApiVersion::V1, "http://a/");
        assert_eq!(d[1], "  host: trino-old.internal (unchanged)");
        assert_eq!(
            d[4],
            r#"PATCH /api/v1/connections/trino_documents?update_mask=host,port {"connection_id":"trino_documents","host":"trino-old.internal","port":9090}"#
        );
    }

    #[test]
    fn a_loopback_target_is_said_before_it_is_written() {
        for host in [
            "127.0.0.1:35019",
            "localhost:8080",
            "[::1]:8080",
            "169.254.1.1:80",
        ] {
            let t = parse_target(host).unwrap();
            let d = diff_lines(&conn(), &t, ApiVersion::V2, "http://a/");
            assert!(
                d[1].starts_with("! ") && d[1].contains("loopback or link-local"),
                "{host}: {d:?}"
            );
        }
    }
}
