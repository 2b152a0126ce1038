//! `floe doctor`: the setup checked step by step, each line a verdict (✓ passed, ✗ failed,
//! – skipped, ! a fallback floe works with), the figure measured and, on ✗, the fix.
//!
//! Order: the build (`floe --version`); the config; Trino (DNS, TCP, TLS, HTTP, auth, catalog, the metadata tables floe
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
mod airflow;
mod catalogs;
mod local;
mod trino;

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
        // What is running, before anything it checks: a report pasted from a bastion says
        // which build (and which glibc it was linked for) gave it.
        self.heading(&format!("floe {}", crate::cli::VERSION));
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
