//! Secrets and plain values from the environment: secrets never live in the file.

use std::process::Command;

use secrecy::SecretString;

use super::units::Dur;
use super::{ConfigError, err};

/// Resolve a secret: the fixed `FLOE_*` variable, then `*_env`, then `*_command`.
pub(super) fn secret(
    env: &dyn Fn(&str) -> Option<String>,
    fixed_var: &str,
    env_key: Option<&str>,
    command: Option<&str>,
    env_key_name: &str,
    command_key_name: &str,
) -> Result<Option<SecretString>, ConfigError> {
    if let Some(v) = env(fixed_var).filter(|v| !v.is_empty()) {
        return Ok(Some(SecretString::from(v)));
    }
    if let Some(var) = env_key {
        return match env(var).filter(|v| !v.is_empty()) {
            Some(v) => Ok(Some(SecretString::from(v))),
            None => Err(err(format!(
                "{env_key_name}: environment variable {var} is not set"
            ))),
        };
    }
    if let Some(cmd) = command {
        let out = Command::new("sh")
            .arg("-c")
            .arg(cmd)
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| err(format!("{command_key_name}: cannot run {cmd:?}: {e}")))?;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            return Err(err(format!(
                "{command_key_name}: {cmd:?} exited with {}: {}",
                out.status,
                stderr.trim()
            )));
        }
        let text = String::from_utf8_lossy(&out.stdout)
            .trim_end_matches(['\n', '\r'])
            .to_string();
        if text.is_empty() {
            return Err(err(format!("{command_key_name}: {cmd:?} printed nothing")));
        }
        return Ok(Some(SecretString::from(text)));
    }
    Ok(None)
}

pub(super) fn env_bool(
    env: &dyn Fn(&str) -> Option<String>,
    var: &str,
) -> Result<Option<bool>, ConfigError> {
    match env(var).map(|v| v.trim().to_ascii_lowercase()) {
        None => Ok(None),
        Some(v) if v.is_empty() => Ok(None),
        Some(v) => match v.as_str() {
            "1" | "true" | "yes" | "on" => Ok(Some(true)),
            "0" | "false" | "no" | "off" => Ok(Some(false)),
            _ => Err(err(format!("{var}={v}: expected true or false"))),
        },
    }
}

pub(super) fn env_dur(
    env: &dyn Fn(&str) -> Option<String>,
    var: &str,
) -> Result<Option<Dur>, ConfigError> {
    match env(var).filter(|v| !v.trim().is_empty()) {
        None => Ok(None),
        Some(v) => Dur::parse(&v)
            .map(Some)
            .map_err(|e| err(format!("{var}: {e}"))),
    }
}
