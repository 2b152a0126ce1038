//! The audit log: JSON lines appended under the XDG state dir. Every mutation leaves a
//! `started` record before it is sent (so a crash leaves a trace) and an outcome record
//! after (`succeeded`, `failed`, `cancelled`, `interrupted`, `may_have_run`,
//! `wrote_otherwise`, `not_run`), or one `refused` record; an Airflow connection's fix
//! also records what it replaced (`before`) and its test (`test_connection`: `passed`,
//! `failed`, `not_allowed`, `interrupted`, `error`). It holds statements and outcomes,
//! never secrets.

use std::io::Write;
use std::path::{Path, PathBuf};

use chrono::{SecondsFormat, Utc};
use serde::Serialize;

/// Who runs what, for the audit log and the read-only guard: what every audited write,
/// a plan's statement or an Airflow request, records with it.
#[derive(Clone, Debug)]
pub struct RunContext {
    pub profile: String,
    pub user: String,
    pub target: String,
    pub readonly: bool,
    pub audit: AuditLog,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Record {
    pub time: String,
    pub profile: String,
    /// The Trino (or Airflow) user the statement ran as.
    pub user: String,
    /// The operating-system user who ran floe.
    pub os_user: String,
    /// Where: the Trino or Airflow base URL (never with credentials).
    pub target: String,
    pub table: Option<String>,
    /// `optimize`, `expire_snapshots`, `trigger_dag`, …
    pub action: String,
    pub partition: Option<String>,
    /// The exact SQL (or the Airflow request) that was sent.
    pub statement: String,
    /// What the write replaced, as it was read just before it was sent (an Airflow
    /// connection's `host=H port=P`): what undoing it takes.
    pub before: Option<String>,
    pub query_id: Option<String>,
    /// `started`, then `succeeded`, `failed`, `cancelled` (the operator asked) or
    /// `interrupted` (floe was told to stop: SIGTERM, SIGHUP); or `refused`.
    pub outcome: String,
    pub error: Option<String>,
    pub rows: Option<i64>,
    pub metrics: std::collections::BTreeMap<String, i64>,
    pub files_before: Option<u64>,
    pub files_after: Option<u64>,
    /// What the statement was to rewrite (an optimize: its small files' bytes), the
    /// measure of later estimates.
    pub bytes_before: Option<u64>,
    pub duration_ms: u64,
}

impl Record {
    pub fn now(profile: &str, user: &str, target: &str, action: &str, statement: &str) -> Record {
        Record {
            time: Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true),
            profile: profile.to_string(),
            user: user.to_string(),
            os_user: os_user(),
            target: target.to_string(),
            table: None,
            action: action.to_string(),
            partition: None,
            statement: statement.to_string(),
            before: None,
            query_id: None,
            outcome: String::new(),
            error: None,
            rows: None,
            metrics: Default::default(),
            files_before: None,
            files_after: None,
            bytes_before: None,
            duration_ms: 0,
        }
    }
}

/// The login name, else `uid N` from /proc (cron and containers often set no $USER).
fn os_user() -> String {
    if let Ok(u) = std::env::var("USER").or_else(|_| std::env::var("LOGNAME"))
        && !u.is_empty()
    {
        return u;
    }
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .map(|u| format!("uid {u}"))
        })
        .unwrap_or_default()
}

/// The outcome of a record written before the statement is sent.
pub const STARTED: &str = "started";

/// The outcome of a write that was sent and whose answer does not say whether it was
/// carried out (a gateway's 502/504, a connection lost after sending, an answer that cannot
/// be read): never `failed`, which would invite sending it again.
pub const MAY_HAVE_RUN: &str = "may_have_run";

/// The outcome of the one record a plan cut short leaves: how many of its statements were
/// never sent (its `error`), and which (its `statement`).
pub const NOT_RUN: &str = "not_run";

/// The outcome of a write the server carried out otherwise than asked (it answered with
/// other values than the ones sent): what it wrote is the record's `error`.
pub const WROTE_OTHERWISE: &str = "wrote_otherwise";

/// Why an audited write did not succeed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WriteFailure {
    /// It was not carried out.
    Failed(String),
    /// It was sent and may have been carried out.
    MayHaveRun(String),
    /// It was carried out, but not as asked: what the server wrote.
    WroteOtherwise(String),
}

/// An Airflow error as the audit log records it: a write that may have been carried out
/// is never `failed`.
pub fn write_failure(e: crate::airflow::AirflowError) -> WriteFailure {
    match e {
        e @ crate::airflow::AirflowError::MayHaveRun { .. } => {
            WriteFailure::MayHaveRun(e.to_string())
        }
        e => WriteFailure::Failed(e.to_string()),
    }
}

#[derive(Clone, Debug)]
pub struct AuditLog {
    path: PathBuf,
}

impl AuditLog {
    pub fn new(path: impl Into<PathBuf>) -> AuditLog {
        AuditLog { path: path.into() }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Append one record (created with mode 0600 when new). The file is opened with
    /// O_APPEND and the record (line and newline) goes out in one write(2), so records of
    /// two floe processes appending at once never interleave.
    pub fn append(&self, r: &Record) -> Result<(), String> {
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("audit log {}: {e}", self.path.display()))?;
        }
        let mut opts = std::fs::OpenOptions::new();
        opts.create(true).append(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.mode(0o600);
        }
        let mut f = opts
            .open(&self.path)
            .map_err(|e| format!("audit log {}: {e}", self.path.display()))?;
        let mut line = serde_json::to_string(r).map_err(|e| e.to_string())?;
        line.push('\n');
        // One write(2), never a loop of partial writes another process could slip between.
        let written = f
            .write(line.as_bytes())
            .map_err(|e| format!("audit log {}: {e}", self.path.display()))?;
        if written != line.len() {
            return Err(format!(
                "audit log {}: short write ({written} of {} bytes)",
                self.path.display(),
                line.len()
            ));
        }
        f.sync_data()
            .map_err(|e| format!("audit log {}: {e}", self.path.display()))
    }

    /// The outcome of every attempt (`started` records left out), oldest first.
    pub fn read(&self) -> Vec<Record> {
        self.read_all()
            .into_iter()
            .filter(|r| r.outcome != STARTED)
            .collect()
    }

    /// Every record, `started` ones included, oldest first.
    pub fn read_all(&self) -> Vec<Record> {
        std::fs::read_to_string(&self.path)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter_map(|v| {
                Some(Record {
                    time: v["time"].as_str()?.to_string(),
                    profile: v["profile"].as_str().unwrap_or("").to_string(),
                    user: v["user"].as_str().unwrap_or("").to_string(),
                    os_user: v["os_user"].as_str().unwrap_or("").to_string(),
                    target: v["target"].as_str().unwrap_or("").to_string(),
                    table: v["table"].as_str().map(str::to_string),
                    action: v["action"].as_str().unwrap_or("").to_string(),
                    partition: v["partition"].as_str().map(str::to_string),
                    statement: v["statement"].as_str().unwrap_or("").to_string(),
                    before: v["before"].as_str().map(str::to_string),
                    query_id: v["query_id"].as_str().map(str::to_string),
                    outcome: v["outcome"].as_str().unwrap_or("").to_string(),
                    error: v["error"].as_str().map(str::to_string),
                    rows: v["rows"].as_i64(),
                    metrics: serde_json::from_value(v["metrics"].clone()).unwrap_or_default(),
                    files_before: v["files_before"].as_u64(),
                    files_after: v["files_after"].as_u64(),
                    bytes_before: v["bytes_before"].as_u64(),
                    duration_ms: v["duration_ms"].as_u64().unwrap_or(0),
                })
            })
            .collect()
    }
}

/// Run one write that is not SQL (an Airflow request) under audit: refused and recorded
/// when read-only; otherwise a `started` record, the write, then its outcome. `user` and
/// `target` name the remote side (the Airflow user and URL). A write whose audit record
/// cannot be written is not sent; an outcome that cannot be recorded turns the result
/// into an error saying so.
pub async fn audited<F>(
    ctx: &RunContext,
    user: &str,
    target: &str,
    action: &str,
    statement: &str,
    write: F,
) -> Result<String, String>
where
    F: std::future::Future<Output = Result<String, WriteFailure>>,
{
    audited_from(ctx, user, target, action, statement, None, write).await
}

/// [`audited`], recording `before`: what the write replaces, as read just before it.
pub async fn audited_from<F>(
    ctx: &RunContext,
    user: &str,
    target: &str,
    action: &str,
    statement: &str,
    before: Option<String>,
    write: F,
) -> Result<String, String>
where
    F: std::future::Future<Output = Result<String, WriteFailure>>,
{
    let mut rec = Record::now(&ctx.profile, user, target, action, statement);
    rec.before = before;
    if ctx.readonly {
        rec.outcome = "refused".into();
        rec.error = Some("read-only".into());
        let _ = ctx.audit.append(&rec);
        return Err("read-only: Airflow writes are disabled".into());
    }
    rec.outcome = STARTED.into();
    if let Err(e) = ctx.audit.append(&rec) {
        return Err(format!("not sent: cannot write the {e}"));
    }
    let started = std::time::Instant::now();
    let r = write.await;
    rec.time = Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true);
    rec.duration_ms = started.elapsed().as_millis() as u64;
    let r = match r {
        Ok(m) => {
            rec.outcome = "succeeded".into();
            Ok(m)
        }
        Err(WriteFailure::Failed(e)) => {
            rec.outcome = "failed".into();
            rec.error = Some(e.clone());
            Err(e)
        }
        Err(WriteFailure::MayHaveRun(e)) => {
            rec.outcome = MAY_HAVE_RUN.into();
            rec.error = Some(e.clone());
            Err(e)
        }
        Err(WriteFailure::WroteOtherwise(e)) => {
            rec.outcome = WROTE_OTHERWISE.into();
            rec.error = Some(e.clone());
            Err(e)
        }
    };
    match ctx.audit.append(&rec) {
        Ok(()) => r,
        Err(e) => {
            tracing::error!(error = %e, "cannot write the audit log");
            Err(match r {
                Ok(msg) => format!("{msg}, but its outcome is not in the {e}"),
                Err(err) => format!("{err}; and its outcome is not in the {e}"),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appends_json_lines_and_reads_them_back() {
        let dir = std::env::temp_dir().join(format!("floe-audit-{}", std::process::id()));
        let log = AuditLog::new(dir.join("sub/audit.jsonl"));
        let mut r = Record::now(
            "lab",
            "floe",
            "http://127.0.0.1:1/",
            "optimize",
            "ALTER TABLE \"t\" EXECUTE optimize",
        );
        r.outcome = "succeeded".into();
        r.metrics.insert("rewritten_data_files_count".into(), 24);
        log.append(&r).unwrap();
        r.outcome = "failed".into();
        log.append(&r).unwrap();
        let back = log.read();
        assert_eq!(back.len(), 2);
        assert_eq!(back[0].outcome, "succeeded");
        assert_eq!(back[0].metrics["rewritten_data_files_count"], 24);
        assert_eq!(back[1].statement, r.statement);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(
                std::fs::metadata(log.path()).unwrap().permissions().mode() & 0o777,
                0o600
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn started_records_are_kept_apart_from_outcomes() {
        let dir = std::env::temp_dir().join(format!("floe-audit-started-{}", std::process::id()));
        let log = AuditLog::new(dir.join("audit.jsonl"));
        let mut r = Record::now("lab", "floe", "http://h/", "optimize", "ALTER …");
        r.outcome = STARTED.into();
        log.append(&r).unwrap();
        r.outcome = "interrupted".into();
        r.query_id = Some("q1".into());
        log.append(&r).unwrap();
        assert_eq!(log.read_all().len(), 2);
        let outcomes = log.read();
        assert_eq!(outcomes.len(), 1);
        assert_eq!(outcomes[0].outcome, "interrupted");
        assert_eq!(outcomes[0].query_id.as_deref(), Some("q1"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Two writers (threads here; `tests/it/audit_append.rs` uses two processes) appending
    /// many long records: every line is a whole record.
    #[test]
    fn concurrent_appends_never_interleave_a_line() {
        let dir = std::env::temp_dir().join(format!("floe-audit-race-{}", std::process::id()));
        let log = AuditLog::new(dir.join("audit.jsonl"));
        let big = "x".repeat(6000);
        std::thread::scope(|sc| {
            for w in 0..4 {
                let (log, big) = (log.clone(), big.clone());
                sc.spawn(move || {
                    for i in 0..200 {
                        let mut r = Record::now("lab", "floe", "h", "optimize", &big);
                        r.outcome = format!("w{w}-{i}");
                        log.append(&r).unwrap();
                    }
                });
            }
        });
        let text = std::fs::read_to_string(log.path()).unwrap();
        assert_eq!(text.lines().count(), 800);
        for l in text.lines() {
            let v: serde_json::Value = serde_json::from_str(l).expect("a whole record");
            assert_eq!(v["statement"].as_str().unwrap().len(), 6000);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn an_airflow_write_is_not_sent_when_its_started_record_cannot_be_written() {
        let dir = std::env::temp_dir().join(format!("floe-audit-ro-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // A directory where the file should be: every append fails.
        std::fs::create_dir_all(dir.join("audit.jsonl")).unwrap();
        let ctx = super::super::audit::RunContext {
            profile: "lab".into(),
            user: "floe".into(),
            target: "h".into(),
            readonly: false,
            audit: AuditLog::new(dir.join("audit.jsonl")),
        };
        let sent = std::sync::atomic::AtomicBool::new(false);
        let r = audited(&ctx, "u", "h", "trigger_dag", "trigger d", async {
            sent.store(true, std::sync::atomic::Ordering::SeqCst);
            Ok::<_, WriteFailure>("triggered".to_string())
        })
        .await;
        assert!(!sent.load(std::sync::atomic::Ordering::SeqCst));
        assert!(r.unwrap_err().contains("audit log"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn a_write_that_may_have_run_is_audited_so_never_as_failed() {
        let dir = std::env::temp_dir().join(format!("floe-audit-mhr-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let ctx = super::super::audit::RunContext {
            profile: "lab".into(),
            user: "floe".into(),
            target: "h".into(),
            readonly: false,
            audit: AuditLog::new(dir.join("audit.jsonl")),
        };
        let r = audited(&ctx, "u", "h", "trigger_dag", "trigger d", async {
            Err(WriteFailure::MayHaveRun("HTTP 504".into()))
        })
        .await;
        assert_eq!(r.unwrap_err(), "HTTP 504");
        let back = ctx.audit.read();
        assert_eq!(back.len(), 1);
        assert_eq!(back[0].outcome, MAY_HAVE_RUN);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
