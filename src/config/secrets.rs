//! Secrets and plain values from the environment: secrets never live in the file.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use secrecy::SecretString;

use super::{At, ConfigError};
use crate::units::Dur;

/// Why a secret could not be had.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SecretError {
    /// `*_env` names a variable that is not set (or empty).
    #[error("environment variable {var} is not set")]
    EnvNotSet { var: String },
    #[error(transparent)]
    Command(#[from] CommandError),
    #[error("{command:?} printed nothing")]
    PrintedNothing { command: String },
}

/// Why a `*_command` gave no output.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    #[error("cannot run {command:?}: {reason}")]
    Spawn { command: String, reason: String },
    #[error("{command:?} did not finish within {secs}s (killed)")]
    Timeout { command: String, secs: u64 },
    #[error("waiting for {command:?}: {reason}")]
    Wait { command: String, reason: String },
    #[error(
        "{command:?} exited, but a process it started still holds its output open (killed); redirect the output of what it leaves running"
    )]
    HeldOpen { command: String },
    /// It failed: its exit status and the first line of what it said on stderr.
    #[error("{command:?} exited with {status}: {stderr}")]
    Exit {
        command: String,
        status: String,
        stderr: String,
    },
}

/// What a secret is: a token is one word (whitespace around it is never part of it); a
/// password keeps inner and leading spaces but not the line ending an `echo` or a file
/// read left behind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SecretKind {
    Password,
    Token,
}

impl SecretKind {
    fn clean(self, v: &str) -> String {
        match self {
            SecretKind::Token => v.trim().to_string(),
            SecretKind::Password => v.trim_end_matches(['\n', '\r']).to_string(),
        }
    }
}

/// How long a `*_command` may take (a vault that waits for a login never answers).
pub const SECRET_COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

/// Resolve a secret: the fixed `FLOE_*` variable, then `*_env`, then `*_command`.
pub(super) fn secret(
    env: &dyn Fn(&str) -> Option<String>,
    kind: SecretKind,
    fixed_var: &str,
    env_key: Option<&str>,
    command: Option<&str>,
    env_key_name: Box<At>,
    command_key_name: Box<At>,
) -> Result<Option<SecretString>, ConfigError> {
    if let Some(v) = env(fixed_var)
        .map(|v| kind.clean(&v))
        .filter(|v| !v.is_empty())
    {
        return Ok(Some(SecretString::from(v)));
    }
    if let Some(var) = env_key {
        return match env(var).map(|v| kind.clean(&v)).filter(|v| !v.is_empty()) {
            Some(v) => Ok(Some(SecretString::from(v))),
            None => Err(ConfigError::Secret {
                at: env_key_name,
                source: SecretError::EnvNotSet { var: var.into() },
            }),
        };
    }
    if let Some(cmd) = command {
        let failed = |source: SecretError| ConfigError::Secret {
            at: command_key_name.clone(),
            source,
        };
        let out = run_secret_command(cmd, SECRET_COMMAND_TIMEOUT).map_err(|e| failed(e.into()))?;
        let text = kind.clean(&out);
        if text.is_empty() {
            return Err(failed(SecretError::PrintedNothing {
                command: cmd.into(),
            }));
        }
        return Ok(Some(SecretString::from(text)));
    }
    Ok(None)
}

/// How long the output of a command that has exited may stay open: a background process
/// it left behind holding stdout would otherwise keep the read waiting forever.
const OUTPUT_GRACE: Duration = Duration::from_secs(2);

/// Run `cmd` with `sh -c`, no stdin, and give up (killing it) after `timeout`. The read of
/// its output is bounded too: once the shell has exited, its pipes must close within
/// [`OUTPUT_GRACE`] (and the timeout), else what still holds them is killed.
fn run_secret_command(cmd: &str, timeout: Duration) -> Result<String, CommandError> {
    use std::io::Read;
    use std::os::unix::process::CommandExt;
    use std::sync::mpsc;
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(cmd)
        // Its own process group, so a timeout kills what the shell started too.
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| CommandError::Spawn {
            command: cmd.into(),
            reason: e.to_string(),
        })?;
    let group = child.id() as i32;
    let kill_group = || {
        // SAFETY: kill(2) on the process group this function created.
        unsafe {
            libc::kill(-group, libc::SIGKILL);
        }
    };
    // Read both pipes on their own threads so a chatty command cannot block on a full
    // pipe; each sends its bytes once its pipe closes.
    let (tx, rx) = mpsc::channel::<(bool, Vec<u8>)>();
    for (is_out, mut pipe) in [
        (
            true,
            Box::new(child.stdout.take().expect("piped")) as Box<dyn Read + Send>,
        ),
        (false, Box::new(child.stderr.take().expect("piped"))),
    ] {
        let tx = tx.clone();
        std::thread::spawn(move || {
            let mut b = Vec::new();
            let _ = pipe.read_to_end(&mut b);
            let _ = tx.send((is_out, b));
        });
    }
    drop(tx);
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() >= timeout => {
                kill_group();
                let _ = child.kill();
                let _ = child.wait();
                return Err(CommandError::Timeout {
                    command: cmd.into(),
                    secs: timeout.as_secs(),
                });
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => {
                return Err(CommandError::Wait {
                    command: cmd.into(),
                    reason: e.to_string(),
                });
            }
        }
    };
    let until = (Instant::now() + OUTPUT_GRACE).min(started + timeout.max(OUTPUT_GRACE));
    let (mut stdout, mut stderr) = (None, None);
    while stdout.is_none() || stderr.is_none() {
        let left = until.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok((true, b)) => stdout = Some(b),
            Ok((false, b)) => stderr = Some(b),
            Err(_) => {
                kill_group();
                return Err(CommandError::HeldOpen {
                    command: cmd.into(),
                });
            }
        }
    }
    let (stdout, stderr) = (stdout.unwrap_or_default(), stderr.unwrap_or_default());
    if !status.success() {
        return Err(CommandError::Exit {
            command: cmd.into(),
            status: status.to_string(),
            stderr: crate::text::one_line(&String::from_utf8_lossy(&stderr)),
        });
    }
    Ok(String::from_utf8_lossy(&stdout).into_owned())
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
            _ => Err(ConfigError::EnvBool {
                var: var.into(),
                value: v,
            }),
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
            .map_err(|source| ConfigError::EnvDuration {
                var: var.into(),
                source,
            }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hung_password_command_is_killed_at_its_timeout() {
        let started = Instant::now();
        let e = run_secret_command("sleep 30; echo late", Duration::from_millis(300))
            .unwrap_err()
            .to_string();
        assert!(e.contains("did not finish within"), "{e}");
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn a_background_process_holding_the_output_does_not_hang_the_read() {
        let started = Instant::now();
        let e = run_secret_command("echo s3cret; sleep 60 &", Duration::from_secs(30))
            .unwrap_err()
            .to_string();
        assert!(e.contains("still holds its output open"), "{e}");
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
        // Its output sent elsewhere, the same command is fine.
        let out = run_secret_command(
            "echo s3cret; sleep 60 >/dev/null 2>&1 &",
            Duration::from_secs(30),
        )
        .unwrap();
        assert_eq!(out.trim_end(), "s3cret");
    }

    #[test]
    fn a_chatty_command_does_not_block_on_a_full_pipe() {
        // 1 MB on stderr, more than a pipe holds, then the secret on stdout.
        let out = run_secret_command(
            "head -c 1000000 /dev/zero | tr '\\0' x >&2; echo s3cret",
            Duration::from_secs(20),
        )
        .unwrap();
        assert_eq!(out.trim_end(), "s3cret");
    }
}
