//! The audit log: one JSON line per mutation attempt (run, failed, cancelled or refused),
//! appended under the XDG state dir. It holds statements and outcomes, never secrets.

use std::io::Write;
use std::path::{Path, PathBuf};

use chrono::{SecondsFormat, Utc};
use serde::Serialize;

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
    pub query_id: Option<String>,
    /// `success`, `failed`, `cancelled` or `refused`.
    pub outcome: String,
    pub error: Option<String>,
    pub rows: Option<i64>,
    pub metrics: std::collections::BTreeMap<String, i64>,
    pub files_before: Option<u64>,
    pub files_after: Option<u64>,
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
            query_id: None,
            outcome: String::new(),
            error: None,
            rows: None,
            metrics: Default::default(),
            files_before: None,
            files_after: None,
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

    /// Append one record (created with mode 0600 when new).
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
        // One write per record keeps lines whole even with two floe instances appending.
        f.write_all(line.as_bytes())
            .map_err(|e| format!("audit log {}: {e}", self.path.display()))?;
        f.sync_data()
            .map_err(|e| format!("audit log {}: {e}", self.path.display()))
    }

    /// Every record, oldest first (for tests and `floe maintain` summaries).
    pub fn read(&self) -> Vec<Record> {
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
                    query_id: v["query_id"].as_str().map(str::to_string),
                    outcome: v["outcome"].as_str().unwrap_or("").to_string(),
                    error: v["error"].as_str().map(str::to_string),
                    rows: v["rows"].as_i64(),
                    metrics: serde_json::from_value(v["metrics"].clone()).unwrap_or_default(),
                    files_before: v["files_before"].as_u64(),
                    files_after: v["files_after"].as_u64(),
                    duration_ms: v["duration_ms"].as_u64().unwrap_or(0),
                })
            })
            .collect()
    }
}

/// Run one write that is not SQL (an Airflow request) under audit: refused and recorded
/// when read-only; otherwise timed and recorded with its outcome. `user` and `target`
/// name the remote side (the Airflow user and URL).
pub async fn audited<F>(
    ctx: &super::run::RunContext,
    user: &str,
    target: &str,
    action: &str,
    statement: &str,
    write: F,
) -> Result<String, String>
where
    F: std::future::Future<Output = Result<String, String>>,
{
    let mut rec = Record::now(&ctx.profile, user, target, action, statement);
    if ctx.readonly {
        rec.outcome = "refused".into();
        rec.error = Some("read-only".into());
        let _ = ctx.audit.append(&rec);
        return Err("read-only: Airflow writes are disabled".into());
    }
    let started = std::time::Instant::now();
    let r = write.await;
    rec.duration_ms = started.elapsed().as_millis() as u64;
    match &r {
        Ok(_) => rec.outcome = "success".into(),
        Err(e) => {
            rec.outcome = "failed".into();
            rec.error = Some(e.clone());
        }
    }
    if let Err(e) = ctx.audit.append(&rec) {
        tracing::error!(error = %e, "cannot write the audit log");
    }
    r
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
        r.outcome = "success".into();
        r.metrics.insert("rewritten_data_files_count".into(), 24);
        log.append(&r).unwrap();
        r.outcome = "failed".into();
        log.append(&r).unwrap();
        let back = log.read();
        assert_eq!(back.len(), 2);
        assert_eq!(back[0].outcome, "success");
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
}
