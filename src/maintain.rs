//! Maintenance from the command line.

use std::process::ExitCode;

use crate::cli::MaintainCmd;
use crate::config::Settings;

pub async fn cli(_settings: &Settings, _cmd: MaintainCmd) -> ExitCode {
    eprintln!("floe: maintenance from the command line is not built yet");
    ExitCode::from(1)
}
