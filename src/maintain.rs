//! Maintenance: drafting a plan (`plan`, one drafter for the TUI and `floe maintain`),
//! running it (`run`, shared by both), its audit log and ETA, and `floe maintain …` for
//! scripts and cron (`cli`).

pub mod audit;
pub mod cli;
pub mod commit;
pub mod connection;
pub mod eta;
pub mod plan;
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
