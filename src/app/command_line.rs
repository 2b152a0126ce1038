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

/// A command with the arguments its `:` line gave (a key gives none).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invocation {
    pub command: Command,
    pub args: Vec<String>,
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
    Ok(Some(Invocation { command, args }))
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
        args: Vec::new(),
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
    super::update::on_command(s, inv.command, &inv.args)
}

/// `f` toggles (`on: None`), `:freeze` and `:unfreeze` say which.
pub fn freeze(s: &mut State, arg: Option<&str>) {
    s.frozen = match arg {
        None => !s.frozen,
        Some("on") => true,
        Some("off") => false,
        Some(other) => {
            s.set_status(
                Level::Error,
                format!(":freeze takes on or off (got {other:?})"),
            );
            return;
        }
    };
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
pub fn refresh_every(s: &mut State, arg: &str) {
    match crate::config::Dur::parse(arg) {
        Ok(d) if (MIN_REFRESH..=MAX_REFRESH).contains(&d.0) => {
            s.refresh_every = d.0;
            s.set_status(
                Level::Info,
                format!(
                    "auto-refresh every {}",
                    human_duration(d.0.as_secs() as i64)
                ),
            );
        }
        Ok(_) => s.set_status(
            Level::Error,
            format!(
                "refresh interval must be at least 5s and at most {} (got {arg})",
                human_duration(MAX_REFRESH.as_secs() as i64)
            ),
        ),
        Err(e) => s.set_status(Level::Error, e.to_string()),
    }
}

/// `ctrl-s` and `:export [csv|json|md]`.
pub fn export(s: &mut State, arg: Option<&str>) -> Vec<Effect> {
    let format = match arg {
        None | Some("csv") => ExportFormat::Csv,
        Some("json") => ExportFormat::Json,
        Some("md" | "markdown") => return super::export::export_postmortem(s),
        Some(other) => {
            s.set_status(
                Level::Error,
                format!(
                    "unknown export format {other:?} (csv, json, or md: the table's postmortem)"
                ),
            );
            return Vec::new();
        }
    };
    super::export::export(s, format)
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
pub fn schema(s: &mut State, args: &[String]) -> Vec<Effect> {
    s.schemas = args
        .iter()
        .flat_map(|a| a.split(','))
        .filter(|x| !x.is_empty())
        .map(str::to_string)
        .collect();
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
