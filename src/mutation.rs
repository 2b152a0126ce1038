//! What floe changes on a cluster, for the TUI and the command line alike: drafting a
//! maintenance plan (`draft`, one drafter for the TUI and `floe maintain`), running it
//! (`run`, shared by both), its audit log, commit failures and ETA, the Airflow
//! connection fix, and `floe maintain …` for scripts and cron (`maintain_cli`).

pub mod audit;
pub mod commit;
pub mod connection;
pub mod contention;
pub mod draft;
pub mod eta;
pub mod maintain_cli;
pub mod run;

use crate::config::Settings;
use audit::{AuditLog, RunContext};

pub fn context(s: &Settings) -> RunContext {
    RunContext {
        profile: s.profile.clone(),
        user: s.trino.user.clone(),
        target: s.trino.url.to_string(),
        readonly: s.readonly,
        audit: AuditLog::new(s.audit_log.clone()),
    }
}
