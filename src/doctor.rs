//! `floe doctor`: the setup checked step by step, each line a verdict (✓ passed, ✗ failed,
//! – skipped, ! a fallback floe works with), the figure measured and, on ✗, the fix.
//!
//! Order: the config; Trino (DNS, TCP, TLS, HTTP, auth, catalog, the metadata tables floe
//! prefers, one health statement); Airflow (reachable, API version, auth, DAG listing,
//! connection tests); the audit log; the terminal. A check whose prerequisite failed is
//! skipped, and a skip is no failure: exit 0 when nothing failed, 1 otherwise. Every string
//! a server sent is sanitised before it is printed.

use std::io::{IsTerminal, Write};
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use url::Url;

use crate::airflow::{AirflowClient, AirflowError, ClientOptions, ConnectionTest};
use crate::config::{Auth, ConfigError, Settings, TlsSettings};
use crate::lakehouse::model::TableRef;
use crate::lakehouse::queries::{ICEBERG_TABLES_SINCE, Lakehouse};
use crate::text::one_line;
use crate::trino::{Client, ClientConfig, RetryPolicy, TrinoError};

/// How long one network step may take before it is a failure.
const STEP_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Pass,
    Fail,
    /// Not run: not configured, or its prerequisite failed (said on the line).
    Skip,
    /// Works, through floe's slower fallback (said on the line).
    Fallback,
}

impl Status {
    pub fn symbol(self) -> &'static str {
        match self {
            Status::Pass => "✓",
            Status::Fail => "✗",
            Status::Skip => "–",
            Status::Fallback => "!",
        }
    }
}

/// One verdict.
#[derive(Clone, Debug)]
pub struct Check {
    pub name: &'static str,
    pub status: Status,
    /// What was measured or found.
    pub figure: String,
    /// What to do about a ✗ (or a !).
    pub fix: Option<String>,
}

impl Check {
    fn pass(name: &'static str, figure: impl Into<String>) -> Check {
        Check {
            name,
            status: Status::Pass,
            figure: figure.into(),
            fix: None,
        }
    }

    fn fail(name: &'static str, figure: impl Into<String>, fix: impl Into<String>) -> Check {
        Check {
            name,
            status: Status::Fail,
            figure: figure.into(),
            fix: Some(fix.into()),
        }
    }

    fn skip(name: &'static str, why: impl Into<String>) -> Check {
        Check {
            name,
            status: Status::Skip,
            figure: why.into(),
            fix: None,
        }
    }

    /// The printed line(s): the verdict, the name, the figure; the fix indented below.
    /// Server text is in the figure: it is made one sanitised line here.
    pub fn render(&self) -> String {
        let mut s = format!(
            "{} {:<24} {}\n",
            self.status.symbol(),
            self.name,
            crate::text::clip(&one_line(&self.figure), 400)
        );
        if let Some(fix) = &self.fix {
            s.push_str(&format!("  {:<24} fix: {}\n", "", one_line(fix)));
        }
        s
    }
}

/// Where verdicts go as they are reached (the operator sees a slow step as it happens).
pub struct Doctor<'a> {
    out: &'a mut dyn Write,
    pub checks: Vec<Check>,
}

impl<'a> Doctor<'a> {
    pub fn new(out: &'a mut dyn Write) -> Doctor<'a> {
        Doctor {
            out,
            checks: Vec::new(),
        }
    }

    fn report(&mut self, c: Check) -> Status {
        let _ = self.out.write_all(c.render().as_bytes());
        let _ = self.out.flush();
        let status = c.status;
        self.checks.push(c);
        status
    }

    fn heading(&mut self, title: &str) {
        let _ = writeln!(self.out, "{title}");
    }

    pub fn failed(&self) -> usize {
        self.checks
            .iter()
            .filter(|c| c.status == Status::Fail)
            .count()
    }

    /// Every check, in order. `settings` is what loading the configuration gave.
    pub async fn run(&mut self, settings: Result<Settings, ConfigError>) {
        self.heading("config");
        let settings = match settings {
            Ok(s) => {
                let file = s
                    .file
                    .as_ref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_else(|| "no config file (flags and FLOE_* only)".into());
                let profiles = if s.profiles.is_empty() {
                    String::new()
                } else {
                    format!("; defined: {}", s.profiles.join(", "))
                };
                self.report(Check::pass(
                    "config and profile",
                    format!("{file}, profile {}{profiles}", s.profile),
                ));
                s
            }
            Err(e) => {
                self.report(Check::fail(
                    "config and profile",
                    e.to_string(),
                    "correct the file or the flag named (config.example.toml and `floe config schema` describe every key)",
                ));
                self.heading("(nothing else can be checked without a configuration)");
                return;
            }
        };
        self.heading(&format!("trino {}", settings.trino.url));
        self.trino(&settings).await;
        match &settings.airflow {
            Some(a) => {
                self.heading(&format!("airflow {}", a.url));
                self.airflow(&settings, a).await;
            }
            None => {
                self.heading("airflow");
                self.report(Check::skip(
                    "airflow",
                    "not configured: the DAGs tab and DAG findings are off (airflow.url, --airflow)",
                ));
            }
        }
        self.heading("local");
        self.audit_log(&settings.audit_log);
        self.terminal();
    }

    async fn trino(&mut self, s: &Settings) {
        let url = &s.trino.url;
        if self
            .reach("trino", url, "trino.url (--trino)")
            .await
            .is_none()
        {
            self.report(Check::skip("trino", "not reachable: nothing else asked"));
            return;
        }
        let mut cfg = ClientConfig::from_settings(&s.trino, s.query_timeout);
        cfg.connect_timeout = STEP_TIMEOUT;
        cfg.request_timeout = Duration::from_secs(30);
        cfg.retry = RetryPolicy {
            max_retry_time: STEP_TIMEOUT,
            ..RetryPolicy::default()
        };
        let client = match Client::new(cfg) {
            Ok(c) => c.with_max_response_size(s.trino.max_response_size),
            Err(e) => {
                self.report(Check::fail(
                    "trino client",
                    e.to_string(),
                    tls_fix(&s.trino.tls, "trino.ca_file (--ca-file)"),
                ));
                return;
            }
        };
        // TLS: the first request opens the connection (handshake included); the second
        // reuses it, so the difference is the handshake's share.
        let t = Instant::now();
        let first = client.info().await;
        let first_time = t.elapsed();
        let https = url.scheme() == "https";
        match &first {
            Err(TrinoError::Transport { message, .. }) if https && is_tls(message) => {
                self.report(Check::fail(
                    "trino TLS",
                    format!("handshake failed: {message}"),
                    tls_fix(&s.trino.tls, "trino.ca_file (--ca-file)"),
                ));
                return;
            }
            _ if https => {
                let t = Instant::now();
                let second = client.info().await;
                let reused = t.elapsed();
                let verified = tls_source(&s.trino.tls);
                self.report(Check::pass(
                    "trino TLS",
                    format!(
                        "certificate verified ({verified}); handshake ≈ {}",
                        ms(first_time.saturating_sub(if second.is_ok() {
                            reused
                        } else {
                            Duration::ZERO
                        }))
                    ),
                ));
            }
            _ => {
                self.report(Check::skip("trino TLS", "plain http: nothing encrypted"));
            }
        }
        let t = Instant::now();
        let info = match client.info().await {
            Ok(i) => i,
            Err(e) => {
                self.report(Check::fail(
                    "trino /v1/info",
                    e.to_string(),
                    "the address answers but not as a Trino coordinator: check the scheme, port and any proxy path in trino.url",
                ));
                return;
            }
        };
        let took = t.elapsed();
        let figure = format!(
            "Trino {}{} up {}, in {}",
            info.node_version.version,
            info.environment
                .as_deref()
                .map(|e| format!(" (environment {e}),"))
                .unwrap_or_else(|| ",".into()),
            info.uptime.as_deref().unwrap_or("?"),
            ms(took)
        );
        if info.starting {
            self.report(Check::fail(
                "trino /v1/info",
                format!("{figure}: still starting"),
                "wait until the coordinator has started, then run floe doctor again",
            ));
        } else {
            self.report(Check::pass("trino /v1/info", figure));
        }

        let t = Instant::now();
        match client.query("SELECT 1").await {
            Ok(_) => {
                self.report(Check::pass(
                    "trino auth",
                    format!(
                        "SELECT 1 as {} ({}) in {}",
                        s.trino.user,
                        auth_kind(&s.trino.auth),
                        ms(t.elapsed())
                    ),
                ));
            }
            Err(e) => {
                let fix = match (&e, &s.trino.auth) {
                    (TrinoError::Auth { .. }, Auth::Basic { .. }) => format!(
                        "the password of {} is refused: FLOE_TRINO_PASSWORD, trino.password_env or trino.password_command",
                        s.trino.user
                    ),
                    (TrinoError::Auth { .. }, Auth::Bearer { .. }) => "the token is refused or expired: FLOE_TRINO_TOKEN, trino.token_env or trino.token_command".into(),
                    (TrinoError::Auth { .. }, Auth::None) => "the coordinator wants credentials: set trino.auth and a password or token".into(),
                    _ => "run SELECT 1 as this user with the Trino CLI: the error above is Trino's".into(),
                };
                self.report(Check::fail("trino auth", e.to_string(), fix));
                return;
            }
        }

        let catalog = &s.trino.catalog;
        match client
            .query("SELECT catalog_name FROM system.metadata.catalogs")
            .await
        {
            Ok(out) => {
                let names: Vec<&str> = out
                    .rows
                    .iter()
                    .filter_map(|r| r.str("catalog_name"))
                    .collect();
                if names.contains(&catalog.as_str()) {
                    self.report(Check::pass("catalog", format!("{catalog} exists")));
                } else {
                    self.report(Check::fail(
                        "catalog",
                        format!("no catalog {catalog} (there are: {})", names.join(", ")),
                        "set trino.catalog (--catalog) to the catalog of the Iceberg tables",
                    ));
                    return;
                }
            }
            Err(e) => {
                self.report(Check::fail(
                    "catalog",
                    e.to_string(),
                    format!(
                        "the user {} may need access to system.metadata",
                        s.trino.user
                    ),
                ));
                return;
            }
        }

        let lake = Lakehouse::new(client.clone(), catalog.clone(), s.health.clone());
        let _ = lake.connect().await;
        let version = lake.server_version();
        let listing = format!(
            "SELECT count(*) AS n FROM {}.system.iceberg_tables",
            crate::lakehouse::sql::quote_ident(catalog)
        );
        let fallback =
            "floe lists tables through information_schema.tables instead (slower on big catalogs)";
        if version.is_some_and(|v| v < ICEBERG_TABLES_SINCE) {
            self.report(Check {
                name: "system.iceberg_tables",
                status: Status::Fallback,
                figure: format!(
                    "not in Trino {} (since {ICEBERG_TABLES_SINCE})",
                    version.unwrap_or(0)
                ),
                fix: Some(fallback.into()),
            });
        } else {
            let t = Instant::now();
            match client.query(&listing).await {
                Ok(out) => {
                    let n = out.rows.first().and_then(|r| r.u64("n")).unwrap_or(0);
                    self.report(Check::pass(
                        "system.iceberg_tables",
                        format!("{n} Iceberg tables listed in {}", ms(t.elapsed())),
                    ));
                }
                Err(e) => {
                    self.report(Check {
                        name: "system.iceberg_tables",
                        status: Status::Fallback,
                        figure: e.to_string(),
                        fix: Some(fallback.into()),
                    });
                }
            }
        }

        let tables = match lake.discover(&s.trino.schemas, &s.trino.tables).await {
            Ok(t) => t,
            Err(e) => {
                self.report(Check::fail(
                    "tables",
                    e.to_string(),
                    "the user needs to list the catalog's tables",
                ));
                return;
            }
        };
        let Some(table) = tables.first().cloned() else {
            self.report(Check::fail(
                "tables",
                format!(
                    "no Iceberg table in {catalog}{}",
                    if s.trino.schemas.is_empty() {
                        String::new()
                    } else {
                        format!(" schemas {}", s.trino.schemas.join(", "))
                    }
                ),
                "check trino.schemas and trino.tables (--schema), and the user's access",
            ));
            return;
        };
        self.report(Check::pass(
            "tables",
            format!("{} watched, e.g. {table}", tables.len()),
        ));
        self.entries(&client, &table).await;

        let t = Instant::now();
        match lake.table_stats(&table).await {
            Ok(st) => {
                self.report(Check::pass(
                    "health statement",
                    format!(
                        "{table}: {} data files, {} snapshots, in {}",
                        st.data_files,
                        st.snapshots,
                        ms(t.elapsed())
                    ),
                ));
            }
            Err(e) => {
                self.report(Check::fail(
                    "health statement",
                    format!("{table}: {e}"),
                    "the user needs SELECT on the table's metadata tables ($files, $snapshots, $properties)",
                ));
            }
        }
    }

    async fn entries(&mut self, client: &Client, table: &TableRef) {
        let sql = format!("SELECT status FROM {} LIMIT 1", table.meta("entries"));
        let t = Instant::now();
        match client.query(&sql).await {
            Ok(_) => {
                self.report(Check::pass(
                    "$entries",
                    format!("readable on {table} in {}", ms(t.elapsed())),
                ));
            }
            Err(e) => {
                self.report(Check {
                    name: "$entries",
                    status: Status::Fallback,
                    figure: e.to_string(),
                    fix: Some(
                        "floe dates compaction by the newest replace snapshot instead of each file's commit"
                            .into(),
                    ),
                });
            }
        }
    }

    /// DNS and TCP of `url`'s host: the addresses, or `None` after a ✗.
    async fn reach(&mut self, what: &'static str, url: &Url, key: &str) -> Option<Vec<SocketAddr>> {
        let (dns_name, tcp_name) = match what {
            "trino" => ("trino DNS", "trino TCP"),
            _ => ("airflow DNS", "airflow TCP"),
        };
        let host = url
            .host_str()
            .unwrap_or("")
            .trim_matches(['[', ']'])
            .to_string();
        let Some(port) = url.port_or_known_default() else {
            self.report(Check::fail(
                dns_name,
                format!("{url} names no port"),
                format!("give {key} a port"),
            ));
            return None;
        };
        let t = Instant::now();
        let addrs: Vec<SocketAddr> = match tokio::time::timeout(
            STEP_TIMEOUT,
            tokio::net::lookup_host((host.as_str(), port)),
        )
        .await
        {
            Ok(Ok(a)) => a.collect(),
            Ok(Err(e)) => {
                self.report(Check::fail(
                    dns_name,
                    format!("{host}: {e}"),
                    format!("check the host name in {key}, and the resolver (/etc/resolv.conf, /etc/hosts)"),
                ));
                return None;
            }
            Err(_) => {
                self.report(Check::fail(
                    dns_name,
                    format!("{host}: no answer within {}", ms(STEP_TIMEOUT)),
                    "check the resolver (/etc/resolv.conf): it does not answer",
                ));
                return None;
            }
        };
        let list = addrs
            .iter()
            .map(|a| a.ip().to_string())
            .collect::<Vec<_>>()
            .join(", ");
        self.report(Check::pass(
            dns_name,
            format!("{host} → {list} in {}", ms(t.elapsed())),
        ));
        let mut errors = Vec::new();
        for addr in &addrs {
            let t = Instant::now();
            match tokio::time::timeout(STEP_TIMEOUT, tokio::net::TcpStream::connect(addr)).await {
                Ok(Ok(_)) => {
                    self.report(Check::pass(
                        tcp_name,
                        format!("connected to {addr} in {}", ms(t.elapsed())),
                    ));
                    return Some(addrs);
                }
                Ok(Err(e)) => errors.push(format!("{addr}: {e}")),
                Err(_) => errors.push(format!("{addr}: no answer within {}", ms(STEP_TIMEOUT))),
            }
        }
        self.report(Check::fail(
            tcp_name,
            format!("{url}: {}", errors.join("; ")),
            format!(
                "is the server running and listening on port {port}? If so, a firewall or a missing tunnel is in the way; else correct {key}"
            ),
        ));
        None
    }

    async fn airflow(&mut self, s: &Settings, a: &crate::config::AirflowSettings) {
        if self
            .reach("airflow", &a.url, "airflow.url (--airflow)")
            .await
            .is_none()
        {
            self.report(Check::skip("airflow", "not reachable: nothing else asked"));
            return;
        }
        let opts = ClientOptions {
            connect_timeout: STEP_TIMEOUT,
            request_timeout: Duration::from_secs(30),
            retry: crate::airflow::RetryPolicy {
                max_retry_time: STEP_TIMEOUT,
                ..crate::airflow::RetryPolicy::default()
            },
            ..ClientOptions::default()
        };
        let t = Instant::now();
        let client = match AirflowClient::connect_with(a, opts).await {
            Ok(c) => c,
            Err(e) => {
                let (name, fix) = match &e {
                    AirflowError::Transport { message, .. } if is_tls(message) => {
                        ("airflow TLS", tls_fix(&a.tls, "airflow.ca_file"))
                    }
                    AirflowError::Transport { .. } | AirflowError::Http { .. } => (
                        "airflow HTTP",
                        "check airflow.url: the base URL of the webserver / API server".into(),
                    ),
                    AirflowError::NotAirflow { .. }
                    | AirflowError::Unsupported { .. }
                    | AirflowError::Malformed { .. } => (
                        "airflow API version",
                        "airflow.url must be Airflow's base URL (2.x: /api/v1, 3.x: /api/v2); airflow.api forces one"
                            .into(),
                    ),
                    AirflowError::Auth { status: 403, .. } => (
                        "airflow auth",
                        format!(
                            "the user {} may not read DAGs: give it a role that can",
                            a.user.as_deref().unwrap_or("(none)")
                        ),
                    ),
                    AirflowError::Auth { .. } => (
                        "airflow auth",
                        format!(
                            "the credentials of {} are refused: FLOE_AIRFLOW_PASSWORD, airflow.password_env or airflow.password_command (FLOE_AIRFLOW_TOKEN or airflow.token_env for a token)",
                            a.user.as_deref().unwrap_or("(no user)")
                        ),
                    ),
                    _ => ("airflow", "see the error above".into()),
                };
                self.report(Check::fail(name, e.to_string(), fix));
                return;
            }
        };
        let took = t.elapsed();
        self.report(Check::pass(
            "airflow API version",
            format!(
                "Airflow {}, REST API {}",
                client.server_version().version,
                client.api()
            ),
        ));
        self.report(Check::pass(
            "airflow auth",
            format!(
                "{} accepted (detect and log in: {})",
                a.user.as_deref().unwrap_or("the token"),
                ms(took)
            ),
        ));
        let t = Instant::now();
        match client.configured_dags().await {
            Ok(dags) => {
                self.report(Check::pass(
                    "airflow DAG listing",
                    format!(
                        "{} maintenance DAGs (tags {}; ids {}) in {}",
                        dags.len(),
                        list_or_none(&a.dag_tags),
                        list_or_none(&a.dag_ids),
                        ms(t.elapsed())
                    ),
                ));
            }
            Err(e) => {
                self.report(Check::fail(
                    "airflow DAG listing",
                    e.to_string(),
                    "the user needs to read DAGs (Viewer role at least)",
                ));
                return;
            }
        }
        if !a.test_connections {
            self.report(Check::skip(
                "airflow connection test",
                "airflow.test_connections = false",
            ));
            return;
        }
        let conns = match client.connections().await {
            Ok(c) => c,
            Err(e) => {
                self.report(Check::fail(
                    "airflow connection test",
                    format!("cannot list connections: {e}"),
                    "give the user read access to connections, or set airflow.test_connections = false",
                ));
                return;
            }
        };
        // The connection pointing at floe's own Trino, else any Trino connection.
        let ours = (
            s.trino.url.host_str().unwrap_or("").to_string(),
            s.trino.url.port_or_known_default(),
        );
        let trino_conns: Vec<_> = conns
            .iter()
            .filter(|c| c.conn_type.eq_ignore_ascii_case("trino"))
            .collect();
        let Some(conn) = trino_conns
            .iter()
            .find(|c| (c.host.clone().unwrap_or_default(), c.port) == (ours.0.clone(), ours.1))
            .or(trino_conns.first())
        else {
            self.report(Check::skip(
                "airflow connection test",
                "no Trino connection in Airflow to test",
            ));
            return;
        };
        let t = Instant::now();
        match client.test_connection(conn).await {
            Ok(ConnectionTest::Passed(_)) => {
                self.report(Check::pass(
                    "airflow connection test",
                    format!(
                        "allowed: {} passed in {}",
                        conn.connection_id,
                        ms(t.elapsed())
                    ),
                ));
            }
            Ok(ConnectionTest::Failed(m)) => {
                self.report(Check::pass(
                    "airflow connection test",
                    format!(
                        "allowed: {} was tested and fails ({}): floe check reports it",
                        conn.connection_id,
                        m.lines().next().unwrap_or("")
                    ),
                ));
            }
            Ok(ConnectionTest::NotAllowed(m)) => {
                self.report(Check::fail(
                    "airflow connection test",
                    m,
                    "enable it in airflow.cfg ([core] test_connection = Enabled) for a user that may edit connections, or set airflow.test_connections = false",
                ));
            }
            Err(e) => {
                self.report(Check::fail(
                    "airflow connection test",
                    e.to_string(),
                    "or set airflow.test_connections = false",
                ));
            }
        }
    }

    /// The audit log can take a record: its directory exists or can be made, the file
    /// opens for appending and is private. Nothing is written.
    fn audit_log(&mut self, path: &Path) {
        let name = "audit log";
        if path.exists() {
            match std::fs::OpenOptions::new().append(true).open(path) {
                Ok(f) => {
                    use std::os::unix::fs::PermissionsExt;
                    let mode = f
                        .metadata()
                        .map(|m| m.permissions().mode() & 0o777)
                        .unwrap_or(0);
                    if mode & 0o077 != 0 {
                        self.report(Check::fail(
                            name,
                            format!("{} is appendable but mode {mode:03o}", path.display()),
                            format!("chmod 600 {}: it records who changed what", path.display()),
                        ));
                    } else {
                        self.report(Check::pass(
                            name,
                            format!("{} appendable, mode {mode:03o}", path.display()),
                        ));
                    }
                }
                Err(e) => {
                    self.report(Check::fail(
                        name,
                        format!("{}: {e}", path.display()),
                        "make it writable by this user, or point audit_log elsewhere",
                    ));
                }
            }
            return;
        }
        // The nearest existing directory decides whether floe can create the rest.
        let mut dir = path.parent();
        while let Some(d) = dir {
            if d.as_os_str().is_empty() {
                dir = Some(Path::new("."));
                break;
            }
            if d.exists() {
                break;
            }
            dir = d.parent();
        }
        let dir = dir.unwrap_or(Path::new("/"));
        if writable(dir) {
            self.report(Check::pass(
                name,
                format!(
                    "{} will be created (mode 600) on the first mutation",
                    path.display()
                ),
            ));
        } else {
            self.report(Check::fail(
                name,
                format!(
                    "{} cannot be created: {} is not writable",
                    path.display(),
                    dir.display()
                ),
                "create the directory for this user, or point audit_log elsewhere",
            ));
        }
    }

    fn terminal(&mut self) {
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let tty = std::io::stdout().is_terminal();
        match crossterm::terminal::size() {
            Ok((w, h)) if tty => {
                if w < 80 || h < 20 {
                    self.report(Check::fail(
                        "terminal size",
                        format!("{w}x{h}"),
                        "floe needs at least 80x20: enlarge the window",
                    ));
                } else {
                    self.report(Check::pass("terminal size", format!("{w}x{h}")));
                }
            }
            _ => {
                self.report(Check::skip("terminal size", "stdout is not a terminal"));
            }
        }
        let term = env("TERM");
        let colours = if env("NO_COLOR").is_some() {
            "NO_COLOR is set: no colours, severity shown as text".to_string()
        } else if env("COLORTERM").is_some_and(|c| c == "truecolor" || c == "24bit") {
            "24-bit (COLORTERM)".to_string()
        } else if term.as_deref().is_some_and(|t| t.contains("256")) {
            "256 colours".to_string()
        } else {
            "16 colours".to_string()
        };
        let figure = format!("TERM={}, {colours}", term.as_deref().unwrap_or("(unset)"));
        match term.as_deref() {
            None | Some("dumb") if tty => {
                self.report(Check::fail(
                    "terminal colours",
                    figure,
                    "set TERM to your terminal's type (e.g. export TERM=xterm-256color)",
                ));
            }
            _ => {
                self.report(Check::pass("terminal colours", figure));
            }
        }
        if env("TMUX").is_none() {
            self.report(Check::skip("tmux clipboard", "not inside tmux"));
            return;
        }
        match std::process::Command::new("tmux")
            .args(["show", "-s", "set-clipboard"])
            .output()
        {
            Ok(o) if o.status.success() => {
                let text = String::from_utf8_lossy(&o.stdout);
                let value = text.split_whitespace().nth(1).unwrap_or("").to_string();
                if value == "off" || value.is_empty() {
                    self.report(Check::fail(
                        "tmux clipboard",
                        format!("set-clipboard {}", if value.is_empty() { "?" } else { &value }),
                        "tmux set -s set-clipboard on (in ~/.tmux.conf): floe copies through the terminal (OSC 52)",
                    ));
                } else {
                    self.report(Check::pass(
                        "tmux clipboard",
                        format!("set-clipboard {value}"),
                    ));
                }
            }
            Ok(o) => {
                self.report(Check::skip(
                    "tmux clipboard",
                    format!(
                        "tmux show -s set-clipboard: {}",
                        String::from_utf8_lossy(&o.stderr).trim()
                    ),
                ));
            }
            Err(e) => {
                self.report(Check::skip(
                    "tmux clipboard",
                    format!("cannot run tmux: {e}"),
                ));
            }
        }
    }
}

fn list_or_none(v: &[String]) -> String {
    if v.is_empty() {
        "-".into()
    } else {
        v.join(",")
    }
}

fn auth_kind(a: &Auth) -> &'static str {
    match a {
        Auth::None => "no password",
        Auth::Basic { .. } => "basic auth",
        Auth::Bearer { .. } => "bearer token",
        Auth::OAuth2(_) => "OAuth2 (token from floe login)",
    }
}

fn is_tls(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    ["certificate", "tls", "handshake", "unknownissuer", "ssl"]
        .iter()
        .any(|k| m.contains(k))
}

fn tls_source(tls: &TlsSettings) -> String {
    match (&tls.ca_file, tls.insecure_skip_verify) {
        (_, true) => "NOT verified: insecure_skip_verify".into(),
        (Some(ca), _) => format!("CA file {}", ca.display()),
        (None, _) => "system roots".into(),
    }
}

fn tls_fix(tls: &TlsSettings, key: &str) -> String {
    match &tls.ca_file {
        Some(ca) => format!(
            "{key} = {} did not sign the server's certificate: name the CA that did (openssl s_client -showcerts shows the chain)",
            ca.display()
        ),
        None => format!(
            "the server's certificate is not signed by a CA this system trusts: set {key} to your CA's PEM file"
        ),
    }
}

fn writable(dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: a valid NUL-terminated path; access(2) only reads it.
    unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) == 0 }
}

fn ms(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{} ms", d.as_millis())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

/// `floe doctor`: print every check; true when none failed.
pub async fn run(settings: Result<Settings, ConfigError>, out: &mut dyn Write) -> bool {
    let mut d = Doctor::new(out);
    d.run(settings).await;
    let failed = d.failed();
    let _ = if failed == 0 {
        writeln!(d.out, "all checks passed")
    } else {
        writeln!(
            d.out,
            "{failed} check{} failed",
            if failed == 1 { "" } else { "s" }
        )
    };
    failed == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_sanitised_and_carries_its_fix() {
        let c = Check::fail(
            "trino /v1/info",
            "evil \x1b]52;c;aGk=\x07 text\nsecond",
            "do this",
        );
        let r = c.render();
        assert!(!r.contains('\x1b') && !r.contains('\x07'), "{r:?}");
        assert!(r.starts_with("✗ trino /v1/info"), "{r}");
        assert!(r.contains("evil \\x1b]52;c;aGk=\\x07 text second"), "{r}");
        assert!(
            r.lines()
                .nth(1)
                .unwrap()
                .trim_start()
                .starts_with("fix: do this"),
            "{r}"
        );
        assert_eq!(r.lines().count(), 2);
    }

    #[test]
    fn durations_read_as_ms_then_seconds() {
        assert_eq!(ms(Duration::from_millis(42)), "42 ms");
        assert_eq!(ms(Duration::from_millis(1500)), "1.5 s");
    }

    #[test]
    fn the_audit_log_check_writes_nothing() {
        let dir = std::env::temp_dir().join(format!("floe-doctor-audit-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut sink = Vec::new();
        let mut d = Doctor::new(&mut sink);
        let missing = dir.join("sub/audit.jsonl");
        d.audit_log(&missing);
        assert_eq!(d.checks[0].status, Status::Pass);
        assert!(
            !missing.exists() && !dir.join("sub").exists(),
            "nothing created"
        );
        let open = dir.join("open.jsonl");
        std::fs::write(&open, "x\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o644)).unwrap();
        d.audit_log(&open);
        assert_eq!(d.checks[1].status, Status::Fail);
        assert!(d.checks[1].fix.as_deref().unwrap().contains("chmod 600"));
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o600)).unwrap();
        d.audit_log(&open);
        assert_eq!(d.checks[2].status, Status::Pass);
        assert_eq!(std::fs::read_to_string(&open).unwrap(), "x\n", "untouched");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
