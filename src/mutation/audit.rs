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

use crate::airflow::AirflowError;
use crate::spelled::spelled;

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
    /// What was written (`optimize`, `trigger_dag`, …).
    pub action: Action,
    pub partition: Option<String>,
    /// The exact SQL (or the Airflow request) that was sent.
    pub statement: String,
    /// What the write replaced, as it was read just before it was sent (an Airflow
    /// connection's `host=H port=P`): what undoing it takes.
    pub before: Option<String>,
    pub query_id: Option<String>,
    /// `started` before it is sent, then how it went (see [`Outcome`]).
    pub outcome: Outcome,
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
    /// A record of `action` now, its outcome `started` until it is known.
    pub fn now(profile: &str, user: &str, target: &str, action: Action, statement: &str) -> Record {
        Record {
            time: Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true),
            profile: profile.to_string(),
            user: user.to_string(),
            os_user: os_user(),
            target: target.to_string(),
            table: None,
            action,
            partition: None,
            statement: statement.to_string(),
            before: None,
            query_id: None,
            outcome: Outcome::Started,
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

spelled! {
    /// What was written: a maintenance procedure, or a write to Airflow. Spelled as the
    /// log has it; what another version of floe wrote is kept as it reads.
    Action else Other {
        Optimize = "optimize",
        ExpireSnapshots = "expire_snapshots",
        RemoveOrphanFiles = "remove_orphan_files",
        OptimizeManifests = "optimize_manifests",
        /// A Delta table's vacuum.
        Vacuum = "vacuum",
        TriggerDag = "trigger_dag",
        ClearDagRun = "clear_dag_run",
        PauseDag = "pause_dag",
        UnpauseDag = "unpause_dag",
        /// An Airflow connection's host and port.
        FixConnection = "fix_connection",
        /// The test of a connection just fixed.
        TestConnection = "test_connection",
    }
}

impl From<&crate::lakehouse::plan::Procedure> for Action {
    fn from(p: &crate::lakehouse::plan::Procedure) -> Action {
        use crate::lakehouse::plan::Procedure;
        match p {
            Procedure::Optimize { .. } => Action::Optimize,
            Procedure::ExpireSnapshots { .. } => Action::ExpireSnapshots,
            Procedure::RemoveOrphanFiles { .. } => Action::RemoveOrphanFiles,
            Procedure::OptimizeManifests => Action::OptimizeManifests,
            Procedure::Vacuum { .. } => Action::Vacuum,
        }
    }
}

spelled! {
    /// How a write went, spelled as the log has it.
    Outcome else Other {
        /// Written before the write is sent (a crash leaves this trace).
        Started = "started",
        Succeeded = "succeeded",
        /// It was not carried out (or a connection's test fails).
        Failed = "failed",
        /// The operator cancelled it.
        Cancelled = "cancelled",
        /// floe was told to stop (SIGTERM, SIGHUP) and cancelled it.
        Interrupted = "interrupted",
        /// It was sent and its answer does not say whether it was carried out (a
        /// gateway's 502/504, a connection lost after sending, an answer that cannot be
        /// read): never `failed`, which would invite sending it again.
        MayHaveRun = "may_have_run",
        /// The server carried it out otherwise than asked (it answered with other values
        /// than the ones sent): what it wrote is the record's `error`.
        WroteOtherwise = "wrote_otherwise",
        /// The one record a plan cut short leaves: how many of its statements were never
        /// sent (its `error`), and which (its `statement`).
        NotRun = "not_run",
        /// Read-only, or the table busy with another plan: nothing was sent.
        Refused = "refused",
        /// A connection's test passes.
        Passed = "passed",
        /// The server does not allow testing connections.
        NotAllowed = "not_allowed",
        /// The test ran without the secret floe never reads and failed for lack of it.
        NoVerdict = "no_verdict",
        /// A connection's test could not run.
        Error = "error",
    }
}

/// A record that could not be appended to the audit log.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AuditError {
    /// The log's directory or file could not be created, opened, written or synced.
    #[error("audit log {}: {reason}", path.display())]
    Io { path: PathBuf, reason: String },
    #[error("audit log {}: short write ({written} of {len} bytes)", path.display())]
    ShortWrite {
        path: PathBuf,
        written: usize,
        len: usize,
    },
    /// The record could not be encoded.
    #[error("{0}")]
    Encode(String),
}

/// Why an audited write did not succeed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WriteFailure {
    /// It was not carried out: Airflow's answer.
    #[error(transparent)]
    Failed(AirflowError),
    /// It was sent and may have been carried out: Airflow's answer does not say.
    #[error(transparent)]
    MayHaveRun(AirflowError),
    /// It was sent and floe stopped waiting for its answer (`0`: why, a signal).
    #[error("{0} while the write was in flight: Airflow may have applied it")]
    Abandoned(String),
    /// It was carried out, but not as asked: what the server wrote.
    #[error("{0}")]
    WroteOtherwise(String),
    /// A write that has its own way (`0`: what it is).
    #[error("{0}: not written through the DAG writes")]
    Misrouted(String),
}

impl WriteFailure {
    /// What the audit log records of it.
    pub fn outcome(&self) -> Outcome {
        match self {
            WriteFailure::Failed(_) | WriteFailure::Misrouted(_) => Outcome::Failed,
            WriteFailure::MayHaveRun(_) | WriteFailure::Abandoned(_) => Outcome::MayHaveRun,
            WriteFailure::WroteOtherwise(_) => Outcome::WroteOtherwise,
        }
    }
}

/// An Airflow error as the audit log records it: a write that may have been carried out
/// is never `failed`.
pub fn write_failure(e: AirflowError) -> WriteFailure {
    match e {
        e @ AirflowError::MayHaveRun { .. } => WriteFailure::MayHaveRun(e),
        e => WriteFailure::Failed(e),
    }
}

/// Why an audited Airflow write did not succeed, or is not in the audit log.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WriteError {
    /// Refused, and recorded so: nothing was sent.
    #[error("read-only: Airflow writes are disabled")]
    ReadOnly,
    /// Its `started` record could not be written, so it was not sent.
    #[error("not sent: cannot write the {0}")]
    NotSent(AuditError),
    /// No Airflow client to send it with.
    #[error("not sent: {0}")]
    NoClient(AirflowError),
    #[error(transparent)]
    Failed(WriteFailure),
    /// It succeeded (`done` says what it did), but its outcome record could not be
    /// written.
    #[error("{done}, but its outcome is not in the {audit}")]
    Unrecorded { done: String, audit: AuditError },
    #[error("{failure}; and its outcome is not in the {audit}")]
    FailedUnrecorded {
        failure: Box<WriteFailure>,
        audit: AuditError,
    },
    /// A connection's fix: the connection could not be read before the write.
    #[error("Airflow connection {id} at {airflow}: {source}")]
    ReadBefore {
        id: String,
        airflow: String,
        source: Box<AirflowError>,
    },
    /// A connection's fix stopped (a signal, `0` says which) before anything was sent.
    #[error("{0}: nothing was written")]
    Stopped(String),
    /// A connection's fix was written, and its answer is gone.
    #[error("connection {0}: the write's answer was lost")]
    AnswerLost(String),
    /// A connection's fix was written (`done`) and its test's record could not be.
    #[error("{done}, but its test is not in the {audit}")]
    TestUnrecorded { done: String, audit: AuditError },
    /// floe itself failed while writing (a panic: a bug); whether it was sent is unknown.
    #[error("internal error: {0} (a bug in floe; details in floe.log)")]
    Internal(String),
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
    pub fn append(&self, r: &Record) -> Result<(), AuditError> {
        let io = |e: std::io::Error| AuditError::Io {
            path: self.path.clone(),
            reason: e.to_string(),
        };
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let mut opts = std::fs::OpenOptions::new();
        opts.create(true).append(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.mode(0o600);
        }
        let mut f = opts.open(&self.path).map_err(io)?;
        let mut line = serde_json::to_string(r).map_err(|e| AuditError::Encode(e.to_string()))?;
        line.push('\n');
        // One write(2), never a loop of partial writes another process could slip between.
        let written = f.write(line.as_bytes()).map_err(io)?;
        if written != line.len() {
            return Err(AuditError::ShortWrite {
                path: self.path.clone(),
                written,
                len: line.len(),
            });
        }
        f.sync_data().map_err(io)
    }

    /// The outcome of every attempt (`started` records left out), oldest first.
    pub fn read(&self) -> Vec<Record> {
        self.read_all()
            .into_iter()
            .filter(|r| r.outcome != Outcome::Started)
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
                    action: Action::parse(v["action"].as_str().unwrap_or("")),
                    partition: v["partition"].as_str().map(str::to_string),
                    statement: v["statement"].as_str().unwrap_or("").to_string(),
                    before: v["before"].as_str().map(str::to_string),
                    query_id: v["query_id"].as_str().map(str::to_string),
                    outcome: Outcome::parse(v["outcome"].as_str().unwrap_or("")),
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
    action: Action,
    statement: &str,
    write: F,
) -> Result<String, WriteError>
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
    action: Action,
    statement: &str,
    before: Option<String>,
    write: F,
) -> Result<String, WriteError>
where
    F: std::future::Future<Output = Result<String, WriteFailure>>,
{
    let mut rec = Record::now(&ctx.profile, user, target, action, statement);
    rec.before = before;
    if ctx.readonly {
        rec.outcome = Outcome::Refused;
        rec.error = Some("read-only".into());
        let _ = ctx.audit.append(&rec);
        return Err(WriteError::ReadOnly);
    }
    rec.outcome = Outcome::Started;
    if let Err(e) = ctx.audit.append(&rec) {
        return Err(WriteError::NotSent(e));
    }
    let started = std::time::Instant::now();
    let r = write.await;
    rec.time = Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true);
    rec.duration_ms = started.elapsed().as_millis() as u64;
    match &r {
        Ok(_) => rec.outcome = Outcome::Succeeded,
        Err(failure) => {
            rec.outcome = failure.outcome();
            rec.error = Some(failure.to_string());
        }
    }
    match (ctx.audit.append(&rec), r) {
        (Ok(()), r) => r.map_err(WriteError::Failed),
        (Err(audit), r) => {
            tracing::error!(error = %audit, "cannot write the audit log");
            Err(match r {
                Ok(done) => WriteError::Unrecorded { done, audit },
                Err(failure) => WriteError::FailedUnrecorded {
                    failure: Box::new(failure),
                    audit,
                },
            })
        }
    }
}

#[cfg(test)]
mod tests;
