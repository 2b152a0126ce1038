//! What can be wrong with a configuration: each error names what failed and where it was
//! set (the key and the file, the flag, or the environment variable).

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::keys::BindError;
use super::secrets::SecretError;
use super::uri::UriError;
use crate::units::{Bytes, UnitError};

/// Where a setting was given (boxed in a [`ConfigError`], which stays small).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum At {
    /// A key at the top of the config file (`probe_batch`); `file` is `None` when there is
    /// no config file.
    File { key: String, file: Option<PathBuf> },
    /// A key as resolved for a profile (`trino.url`): the profile's section, else the
    /// file's top level.
    Profile {
        key: String,
        profile: String,
        file: Option<PathBuf>,
    },
    /// A command-line flag (`--trino`).
    Flag(&'static str),
    /// An environment variable (`FLOE_TRINO_URL`).
    Env(String),
}

impl fmt::Display for At {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            At::File { key, file } => write!(f, "{key} in {}", Shown(file)),
            At::Profile { key, profile, file } => {
                write!(f, "{key} (profile {profile:?} in {})", Shown(file))
            }
            At::Flag(flag) => f.write_str(flag),
            At::Env(var) => f.write_str(var),
        }
    }
}

/// A config file as messages name it, or `(no config file)`.
pub(super) struct Shown<'a>(pub &'a Option<PathBuf>);

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(p) => write!(f, "{}", p.display()),
            None => f.write_str("(no config file)"),
        }
    }
}

/// Names as a list, or `none`.
struct Names<'a>(&'a [String]);

impl fmt::Display for Names<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            f.write_str("none")
        } else {
            f.write_str(&self.0.join(", "))
        }
    }
}

fn shown(p: &Path) -> std::path::Display<'_> {
    p.display()
}

/// A configuration problem, always naming what and where.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {}: {reason}", shown(file))]
    Unreadable { file: PathBuf, reason: String },
    /// Not TOML, or not floe's: TOML's own message names the key (an unknown key, a wrong
    /// type) and the line.
    #[error("config file {}: {reason}", shown(file))]
    Syntax { file: PathBuf, reason: String },
    /// `--config` or `FLOE_CONFIG` names a file that is not there.
    #[error("config file {} does not exist", shown(file))]
    NoFile { file: PathBuf },
    #[error(
        "profile {name:?} is not defined in {} (profiles: {})",
        Shown(file),
        Names(known)
    )]
    UnknownProfile {
        name: String,
        file: Option<PathBuf>,
        known: Vec<String>,
    },
    #[error("groups.{group} in {}: a profile has the same name", Shown(file))]
    GroupIsProfile {
        group: String,
        file: Option<PathBuf>,
    },
    #[error(
        "groups.{group} in {}: profile {member:?} is not defined (profiles: {})",
        Shown(file),
        Names(known)
    )]
    UnknownMember {
        group: String,
        member: String,
        file: Option<PathBuf>,
        known: Vec<String>,
    },
    #[error(
        "reading every profile at once needs profiles ([profiles.NAME]) in {}, which defines none",
        Shown(file)
    )]
    NoProfiles { file: Option<PathBuf> },
    #[error("--all reads every profile; --profile {profile:?} names one (use one or the other)")]
    AllAndProfile { profile: String },
    /// A flag or variable naming one server while several profiles are read at once.
    #[error(
        "{at} names one server, and {} profiles are read at once ({}): each takes its server from its profile",
        profiles.len(),
        profiles.join(", ")
    )]
    OneServer { at: Box<At>, profiles: Vec<String> },
    /// A command that works on one cluster, given several profiles.
    #[error(
        "{what} works on one cluster, and {} profiles are selected ({}): name one with --profile",
        profiles.len(),
        profiles.join(", ")
    )]
    OneCluster { what: String, profiles: Vec<String> },
    /// `file`: the config file the URL would be set in.
    #[error(
        "no Trino URL: pass --trino URL, set FLOE_TRINO_URL, or set trino.url in {}",
        shown(file)
    )]
    NoTrinoUrl { file: PathBuf },
    /// A top-level key's value outside its bounds.
    #[error("{key} = {value} in {}: expected {expected}", Shown(file))]
    OutOfRange {
        key: &'static str,
        value: String,
        file: Option<PathBuf>,
        expected: &'static str,
    },
    #[error(
        "maintenance table {table:?} in {}: expected catalog.schema.table",
        Shown(file)
    )]
    MaintenanceTable {
        table: String,
        file: Option<PathBuf>,
    },
    #[error("{at}: {source}")]
    TrinoUrl { at: Box<At>, source: UriError },
    #[error("{at}: invalid Airflow URL {text:?}: {reason}")]
    AirflowUrl {
        at: Box<At>,
        text: String,
        reason: url::ParseError,
    },
    #[error("{at}: invalid Airflow URL {text:?}: expected http:// or https://")]
    AirflowScheme { at: Box<At>, text: String },
    /// The URL itself is never repeated: it holds the password.
    #[error(
        "{at}: the Airflow URL contains a password: use FLOE_AIRFLOW_PASSWORD, airflow.password_env or airflow.password_command"
    )]
    AirflowPassword { at: Box<At> },
    /// A credential that would cross the network in clear text.
    #[error(
        "{at}: refusing to send {what} over plain HTTP to {url}: use https://, or an SSH tunnel to 127.0.0.1"
    )]
    PlainHttp {
        at: Box<At>,
        what: &'static str,
        url: String,
    },
    #[error(
        "{at}: basic auth needs a password: set FLOE_TRINO_PASSWORD, trino.password_env or trino.password_command"
    )]
    NoPassword { at: Box<At> },
    #[error(
        "{at}: bearer auth needs a token: set FLOE_TRINO_TOKEN, trino.token_env or trino.token_command"
    )]
    NoToken { at: Box<At> },
    #[error("{at}: Trino accepts passwords only over HTTPS, but the URL is {url}")]
    PasswordOverHttp { at: Box<At>, url: String },
    #[error("{at}: CA file {} does not exist", shown(file))]
    NoCaFile { at: Box<At>, file: PathBuf },
    #[error("{at}: must be longer than 0s")]
    NotPositive { at: Box<At> },
    /// A response-size limit below 64 KiB.
    #[error("{at}: {size} is too small (at least 64KiB)")]
    TooSmall { at: Box<At>, size: Bytes },
    #[error("refresh {} is below the minimum of 5s ({at})", humantime::format_duration(*value))]
    RefreshBelow { at: Box<At>, value: Duration },
    #[error("refresh {} is above the maximum of 1d ({at})", humantime::format_duration(*value))]
    RefreshAbove { at: Box<At>, value: Duration },
    /// A health threshold that cannot hold (out of its range, or against another one).
    #[error("{at}: {problem}")]
    Threshold { at: Box<At>, problem: String },
    #[error("{at}: {source}")]
    Secret { at: Box<At>, source: SecretError },
    #[error("{var}={value}: expected true or false")]
    EnvBool { var: String, value: String },
    #[error("{var}: {source}")]
    EnvDuration { var: String, source: UnitError },
    #[error("{source} in [keys] of {}", Shown(file))]
    Keys {
        file: Option<PathBuf>,
        source: BindError,
    },
}
