//! The `:` command line. A line parses to the keymap's own commands, by their config
//! names and with arguments (`:help`, `:refresh 30s`, `:optimize`, `:profile prod`,
//! `:tab 2`), and runs through the one executor the keys use (`update::on_command`): a
//! `:` command does what its key does.

use super::action::Effect;
use super::export::ExportFormat;
use super::keymap::{Command, Scope, by_name, spec};
use super::state::{Level, Load, State, Tab};
use crate::fmt::human_duration;

use crate::config::{MAX_REFRESH, MIN_REFRESH};

/// A command with the argument its `:` line gave (a key gives none).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invocation {
    pub command: Command,
    pub arg: Arg,
}

/// A `:` line's argument, read as its command takes it when the line is parsed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Arg {
    /// None given (what a key gives).
    #[default]
    None,
    /// `:refresh 30s`: the interval (its bounds are the command's to check).
    Every(std::time::Duration),
    /// `:freeze`/`:freeze on`, `:unfreeze`/`:freeze off`.
    Frozen(bool),
    /// `:export csv|json|md`.
    Export(ExportChoice),
    /// `:profile NAME`.
    Profile(String),
    /// `:schema A,B` or `:schema A B`: the schemas, split at commas.
    Schemas(Vec<String>),
}

/// What `:export` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportChoice {
    Rows(ExportFormat),
    /// The table's postmortem (Markdown).
    Postmortem,
}

/// The short names vim and k9s users type: (alias, command name, the argument it implies).
const ALIASES: [(&str, &str, Option<&str>); 8] = [
    ("q", "quit", None),
    ("q!", "quit", None),
    ("h", "help", None),
    ("ctx", "profile", None),
    ("r", "refresh", None),
    ("w", "export", None),
    ("schemas", "schema", None),
    ("unfreeze", "freeze", Some("off")),
];

/// What a line may say, for an operator who typed what none says.
fn try_text() -> String {
    format!(
        "every command is a : command by its name (see ?): :q, :profile NAME, \
         :schema NAME, :refresh 30s, :export [csv|json|md], :freeze, :tab 0-{}",
        Tab::ALL.len() - 1
    )
}

/// A `:` line that names no command, or gives it what it does not take.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LineError {
    /// `0`: the first word as typed.
    #[error("unknown command :{0} ({hint})", hint = try_text())]
    Unknown(String),
    /// `:quit now`: a command that takes no argument (`most` 0) or one (`most` 1).
    #[error(
        ":{command} takes {} argument (got {:?})",
        if *most == 0 { "no" } else { "one" },
        args.join(" ")
    )]
    TooMany {
        command: String,
        most: usize,
        args: Vec<String>,
    },
    #[error(":tab takes a tab's number or name ({})", tab_names())]
    NoTab,
    #[error(":freeze takes on or off (got {0:?})")]
    Freeze(String),
    #[error("unknown export format {0:?} (csv, json, or md: the table's postmortem)")]
    Export(String),
    /// `:refresh` with what is not a duration: the config's own words for it.
    #[error("{0}")]
    Every(String),
    #[error("no tab {name:?} ({})", tab_names())]
    UnknownTab { name: String },
}

/// A line's command and arguments; `None` for an empty line.
pub fn parse(line: &str) -> Result<Option<Invocation>, LineError> {
    let mut words = line.split_whitespace();
    let Some(first) = words.next() else {
        return Ok(None);
    };
    let mut args: Vec<String> = words.map(str::to_string).collect();
    if first == "tab" {
        return tab(&args).map(Some);
    }
    let (name, implied) = ALIASES
        .iter()
        .find(|(alias, ..)| *alias == first)
        .map(|(_, name, arg)| (*name, *arg))
        .unwrap_or((first, None));
    let command = by_name(name).ok_or_else(|| LineError::Unknown(first.to_string()))?;
    if let Some(a) = implied {
        args.insert(0, a.to_string());
    }
    // `:freeze` freezes and `:unfreeze` resumes; the key toggles.
    if command == Command::Freeze && args.is_empty() {
        args.push("on".to_string());
    }
    let most = match command {
        Command::Schema => usize::MAX,
        Command::Refresh | Command::Export | Command::Freeze | Command::Profile => 1,
        _ => 0,
    };
    if args.len() > most {
        return Err(LineError::TooMany {
            command: first.to_string(),
            most,
            args,
        });
    }
    let arg = match (command, args.first().map(String::as_str)) {
        (_, None) => Arg::None,
        (Command::Schema, _) => Arg::Schemas(
            args.iter()
                .flat_map(|a| a.split(','))
                .filter(|x| !x.is_empty())
                .map(str::to_string)
                .collect(),
        ),
        (Command::Refresh, Some(a)) => Arg::Every(
            crate::config::Dur::parse(a)
                .map_err(|e| LineError::Every(e.to_string()))?
                .0,
        ),
        (Command::Freeze, Some("on")) => Arg::Frozen(true),
        (Command::Freeze, Some("off")) => Arg::Frozen(false),
        (Command::Freeze, Some(other)) => return Err(LineError::Freeze(other.to_string())),
        (Command::Export, Some("csv")) => Arg::Export(ExportChoice::Rows(ExportFormat::Csv)),
        (Command::Export, Some("json")) => Arg::Export(ExportChoice::Rows(ExportFormat::Json)),
        (Command::Export, Some("md" | "markdown")) => Arg::Export(ExportChoice::Postmortem),
        (Command::Export, Some(other)) => return Err(LineError::Export(other.to_string())),
        (Command::Profile, Some(name)) => Arg::Profile(name.to_string()),
        (_, Some(_)) => Arg::None,
    };
    Ok(Some(Invocation { command, arg }))
}

/// `:tab 2` or `:tab partitions`: the command of that tab (numbered as its key).
fn tab(args: &[String]) -> Result<Invocation, LineError> {
    let [arg] = args else {
        return Err(LineError::NoTab);
    };
    let tab = match arg.parse::<usize>() {
        Ok(i) => Tab::by_number(i),
        Err(_) => Tab::by_name(arg),
    }
    .ok_or_else(|| LineError::UnknownTab { name: arg.clone() })?;
    Ok(Invocation {
        command: Command::Tab(tab),
        arg: Arg::None,
    })
}

/// `0 triage, 1 tables, …`: the tabs as `:tab` takes them.
fn tab_names() -> String {
    Tab::ALL
        .iter()
        .map(|t| format!("{} {}", t.number(), t.name()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Enter on the `:` prompt.
pub fn run(s: &mut State, line: &str) -> Vec<Effect> {
    let inv = match parse(line) {
        Ok(Some(inv)) => inv,
        Ok(None) => return Vec::new(),
        Err(e) => {
            s.set_status(Level::Error, e.to_string());
            return Vec::new();
        }
    };
    let name = &spec(inv.command).name;
    if !s.keymap.enabled(inv.command) {
        s.set_status(
            Level::Error,
            format!(":{name} changes the cluster: not in a read-only profile"),
        );
        return Vec::new();
    }
    // A `y` only ever answers the confirmation that was drawn: no line answers one.
    if spec(inv.command).layer == Scope::Confirm {
        s.set_status(
            Level::Error,
            format!(":{name} answers a confirmation on screen: press its key there"),
        );
        return Vec::new();
    }
    super::update::on_command(s, inv.command, &inv.arg)
}

/// `f` toggles (`None`), `:freeze` and `:unfreeze` say which.
pub fn freeze(s: &mut State, frozen: Option<bool>) {
    s.frozen = frozen.unwrap_or(!s.frozen);
    let text = if s.frozen {
        match s.keymap.keys_text(Command::Freeze) {
            k if k.is_empty() => "auto-refresh frozen (:unfreeze resumes)".to_string(),
            k => format!("auto-refresh frozen ({k} or :unfreeze resumes)"),
        }
    } else {
        "auto-refresh resumed".to_string()
    };
    s.set_status(Level::Info, text);
}

/// `:refresh 30s`: the auto-refresh interval, within its bounds.
pub fn refresh_every(s: &mut State, every: std::time::Duration) {
    if (MIN_REFRESH..=MAX_REFRESH).contains(&every) {
        s.refresh_every = every;
        s.set_status(
            Level::Info,
            format!(
                "auto-refresh every {}",
                human_duration(every.as_secs() as i64)
            ),
        );
    } else {
        s.set_status(
            Level::Error,
            format!(
                "refresh interval must be at least 5s and at most {} (got {})",
                human_duration(MAX_REFRESH.as_secs() as i64),
                human_duration(every.as_secs() as i64)
            ),
        );
    }
}

/// `ctrl-s` and `:export [csv|json|md]` (none: CSV).
pub fn export(s: &mut State, choice: Option<ExportChoice>) -> Vec<Effect> {
    match choice {
        None => super::export::export(s, ExportFormat::Csv),
        Some(ExportChoice::Rows(format)) => super::export::export(s, format),
        Some(ExportChoice::Postmortem) => super::export::export_postmortem(s),
    }
}

fn profiles_text(s: &State) -> String {
    if s.profiles.is_empty() {
        "none defined".to_string()
    } else {
        s.profiles.join(", ")
    }
}

/// `:profile NAME` (none: the current one and the list).
pub fn profile(s: &mut State, arg: Option<&str>) -> Vec<Effect> {
    match arg {
        None => {
            let list = profiles_text(s);
            s.set_status(
                Level::Info,
                format!("profile {} (profiles: {list})", s.conn.profile),
            );
            Vec::new()
        }
        Some(name) if s.profiles.iter().any(|p| p == name) => {
            vec![Effect::SwitchProfile(name.to_string())]
        }
        Some(name) => {
            let list = profiles_text(s);
            s.set_status(
                Level::Error,
                format!("no profile {name:?} (profiles: {list})"),
            );
            Vec::new()
        }
    }
}

/// `:schema A,B` or `:schema A B` (none: every schema), read from the start.
pub fn schema(s: &mut State, schemas: &[String]) -> Vec<Effect> {
    s.schemas = schemas.to_vec();
    s.set_status(
        Level::Info,
        if s.schemas.is_empty() {
            "watching all schemas".to_string()
        } else {
            format!("watching schemas {}", s.schemas.join(", "))
        },
    );
    // A new scope: start over even if a refresh is running.
    s.tables.refresh.abandon();
    s.tables.load = Load::Idle;
    s.tables.rows.clear();
    s.tables.reindex();
    super::update::refresh(s, true)
}

#[cfg(test)]
mod tests;
