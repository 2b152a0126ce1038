//! Key bindings as data: every command with its name, layer, default keys and description
//! (`default.toml`, the default keymap), the key syntax of `[keys]` (`q`, `ctrl-s`,
//! `<Ctrl-d>`, `shift-tab`, `F5`), and the resolution of `[keys]` overrides over the
//! defaults, layer by layer. The app's keymap, footer and help read this table.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::tab::Tab;

mod key;

pub use key::{InvalidKey, Key, KeyCodeOrd};

/// What a key asks for. Its config name is its snake_case name (`sort_next`), but for the
/// three renamed below and the tabs'.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Command {
    Quit,
    Help,
    Refresh,
    Freeze,
    Filter,
    #[serde(rename = "command")]
    CommandLine,
    SortNext,
    SortReverse,
    NextTab,
    PrevTab,
    /// A tab, by its number (`0` … `4`, `:tab 2`). Config names `tab_triage`, `tab_tables`,
    /// …: one a tab, from the default keymap's `tab_{name}`.
    #[serde(skip)]
    Tab(Tab),
    Down,
    Up,
    PageDown,
    PageUp,
    HalfDown,
    HalfUp,
    Top,
    Bottom,
    Enter,
    Back,
    Mark,
    ClearMarks,
    /// The health breakdown of a table (config name `info`).
    #[serde(rename = "info")]
    Health,
    Export,
    /// `:profile NAME`: another profile (none: the list). Of the command line only.
    Profile,
    /// `:schema A,B`: watch these schemas (none: every schema). Of the command line only.
    Schema,
    Optimize,
    ExpireSnapshots,
    #[serde(rename = "remove_orphan_files")]
    RemoveOrphans,
    OptimizeManifests,
    /// A Delta table's vacuum (its retention asked first).
    Vacuum,
    TriggerDag,
    ClearRun,
    PauseDag,
    /// Point the incident's Airflow connection at another host and port.
    FixConnection,
    Cancel,
    Queue,
    /// `y`: the selection to the clipboard (OSC 52).
    Copy,
    /// `Y` in the confirm popup: its SQL to the clipboard.
    CopySql,
    /// A task's log: scroll long lines left and right, wrap them, unfold library frames.
    ScrollLeft,
    ScrollRight,
    Wrap,
    Frames,
    /// The selected DAG's source file, its code findings marked.
    ViewSource,
    /// In a confirmation: run it (maintenance, an Airflow write, quitting with jobs).
    Confirm,
    /// In a confirmation: do not.
    Decline,
    /// In the optimize confirmation: one statement per partition, or one for all.
    ToggleGrouped,
    /// In the optimize confirmation: the first part now, the rest later.
    ToggleIncremental,
}

impl Command {
    /// Changes the lakehouse or Airflow: removed from the keymap in read-only mode. The
    /// code's to say, not the keymap file's.
    pub fn mutation(self) -> bool {
        matches!(
            self,
            Command::Optimize
                | Command::ExpireSnapshots
                | Command::RemoveOrphans
                | Command::OptimizeManifests
                | Command::Vacuum
                | Command::TriggerDag
                | Command::ClearRun
                | Command::PauseDag
                | Command::FixConnection
        )
    }

    /// Opens a question that `confirm` answers: every mutation, and quitting while jobs
    /// run.
    pub fn opens_confirmation(self) -> bool {
        self.mutation() || self == Command::Quit
    }
}

/// A layer of the keymap (where a command's keys are looked up), and where the help
/// lists a command and the footer hints it. Spelled in `default.toml` as `global`,
/// `lake`, `confirm` or a tab's name (`dags`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scope {
    Global,
    /// Tables, Partitions and Snapshots: the lakehouse tabs (help and footer only).
    Lake,
    /// A tab's own keys, looked up on it before the global ones.
    Tab(Tab),
    /// The popups that ask before anything runs (never in the footer).
    Confirm,
}

impl Scope {
    /// The scope of a name in `default.toml`.
    pub fn by_name(name: &str) -> Option<Scope> {
        match name {
            "global" => Some(Scope::Global),
            "lake" => Some(Scope::Lake),
            "confirm" => Some(Scope::Confirm),
            tab => Tab::ALL
                .into_iter()
                .find(|t| t.name() == tab)
                .map(Scope::Tab),
        }
    }
}

impl<'de> Deserialize<'de> for Scope {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        Scope::by_name(&name).ok_or_else(|| {
            let tabs: Vec<String> = Tab::ALL.iter().map(|t| t.name()).collect();
            serde::de::Error::custom(format!(
                "unknown scope {name:?} (global, lake, confirm, {})",
                tabs.join(", ")
            ))
        })
    }
}

/// One command of the default keymap.
#[derive(Debug)]
pub struct Spec {
    pub command: Command,
    /// Its config name (`[keys]`).
    pub name: String,
    /// Where its keys are looked up.
    pub layer: Scope,
    /// Where the help lists it and the footer hints it.
    pub scope: Scope,
    pub keys: Vec<String>,
    pub desc: String,
    pub footer: bool,
}

/// A `[[command]]` of `default.toml`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    name: String,
    #[serde(default = "global")]
    layer: Scope,
    shown: Scope,
    keys: Vec<String>,
    desc: String,
    #[serde(default)]
    footer: bool,
}

fn global() -> Scope {
    Scope::Global
}

/// The default keymap: `default.toml`, compiled in.
pub const DEFAULT_KEYMAP: &str = include_str!("keys/default.toml");

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DefaultKeymap {
    command: Vec<Entry>,
}

/// The default keymap's commands, in the order of help and footer.
pub fn specs() -> &'static [Spec] {
    static SPECS: std::sync::OnceLock<Vec<Spec>> = std::sync::OnceLock::new();
    SPECS.get_or_init(|| {
        toml::from_str::<DefaultKeymap>(DEFAULT_KEYMAP)
            .expect("the default keymap parses")
            .command
            .into_iter()
            .flat_map(|e| {
                if e.name == TAB_ENTRY {
                    return Tab::ALL.into_iter().map(|t| tab_spec(&e, t)).collect();
                }
                let command: Command = toml::Value::String(e.name.clone())
                    .try_into()
                    .unwrap_or_else(|err| panic!("default keymap: {}: {err}", e.name));
                vec![Spec {
                    command,
                    name: e.name,
                    layer: e.layer,
                    scope: e.shown,
                    keys: e.keys,
                    desc: e.desc,
                    footer: e.footer,
                }]
            })
            .collect()
    })
}

/// The entry of `default.toml` that stands for one command a tab.
const TAB_ENTRY: &str = "tab_{name}";

/// The tab entry for tab `t`: `{name}`, `{number}` and `{title}` are the tab's.
fn tab_spec(e: &Entry, t: Tab) -> Spec {
    let fill = |text: &str| {
        text.replace("{name}", &t.name())
            .replace("{number}", &t.number().to_string())
            .replace("{title}", t.title())
    };
    Spec {
        command: Command::Tab(t),
        name: fill(&e.name),
        layer: e.layer,
        scope: e.shown,
        keys: e.keys.iter().map(|k| fill(k)).collect(),
        desc: fill(&e.desc),
        footer: e.footer,
    }
}

/// The command of a config (and `:` line) name: `sort_next`, `info`, `profile`.
pub fn by_name(name: &str) -> Option<Command> {
    specs().iter().find(|s| s.name == name).map(|s| s.command)
}

pub fn spec(cmd: Command) -> &'static Spec {
    specs()
        .iter()
        .find(|s| s.command == cmd)
        .expect("every command has a spec")
}

/// A key binding in `[keys]`: one key string or several.
#[derive(Debug, Deserialize, Clone, PartialEq, Eq)]
#[serde(untagged)]
pub enum KeySpec {
    One(String),
    Many(Vec<String>),
}

impl KeySpec {
    pub fn keys(&self) -> Vec<String> {
        match self {
            KeySpec::One(k) => vec![k.clone()],
            KeySpec::Many(v) => v.clone(),
        }
    }
}

/// Resolved bindings: (layer, key) → command, and command → its keys (in the order
/// written).
#[derive(Clone, Debug, Default)]
pub struct Bindings {
    pub by_key: BTreeMap<(Scope, Key), Command>,
    pub by_command: BTreeMap<Command, Vec<Key>>,
}

/// Keys a confirmation may never be bound to: the ones hit without meaning to (Enter
/// after a command, Esc to get out, Space, Tab).
const NEVER_CONFIRM: [&str; 4] = ["enter", "esc", "space", "tab"];

/// Resolve `[keys]` overrides (command name → key or keys) over the defaults: an unknown
/// command, a key that does not parse, a key bound twice in one layer or in a tab's layer
/// and in `global`, or `confirm` on a key hit without meaning to, is an error.
pub fn bind(overrides: &BTreeMap<String, KeySpec>) -> Result<Bindings, BindError> {
    let mut by_command: BTreeMap<Command, Vec<Key>> = BTreeMap::new();
    for s in specs() {
        let keys = s
            .keys
            .iter()
            .map(|k| Key::parse(k).expect("default keys parse"))
            .collect();
        by_command.insert(s.command, keys);
    }
    for (name, spec) in overrides {
        let s = specs()
            .iter()
            .find(|s| s.name == *name)
            .ok_or_else(|| BindError::UnknownCommand { name: name.clone() })?;
        let mut keys = Vec::new();
        for k in spec.keys() {
            keys.push(Key::parse(&k).map_err(|key| BindError::Key {
                key,
                command: name.clone(),
            })?);
        }
        by_command.insert(s.command, keys);
    }
    let never: Vec<Key> = NEVER_CONFIRM
        .iter()
        .map(|k| Key::parse(k).expect("parses"))
        .collect();
    if let Some(k) = by_command[&Command::Confirm]
        .iter()
        .find(|k| never.contains(k))
    {
        return Err(BindError::CarelessConfirm(*k));
    }
    // A key that opens a confirmation and confirms it: a double tap (or a key repeated
    // over a slow link) would answer the question it just asked.
    for (cmd, keys) in &by_command {
        if !cmd.opens_confirmation() {
            continue;
        }
        if let Some(k) = keys
            .iter()
            .find(|k| by_command[&Command::Confirm].contains(k))
        {
            return Err(BindError::ConfirmOpens {
                key: *k,
                opens: *cmd,
            });
        }
    }
    let mut by_key = BTreeMap::new();
    for (cmd, keys) in &by_command {
        let layer = spec(*cmd).layer;
        for k in keys {
            if let Some(prev) = by_key.insert((layer, *k), *cmd)
                && prev != *cmd
            {
                return Err(BindError::Clash {
                    key: *k,
                    first: prev,
                    second: *cmd,
                });
            }
        }
    }
    // A tab's key may not hide a global one there (a confirmation's keys may: it is open
    // only for the moment it asks).
    for ((layer, k), cmd) in &by_key {
        if matches!(layer, Scope::Global | Scope::Confirm) {
            continue;
        }
        if let Some(g) = by_key.get(&(Scope::Global, *k)) {
            return Err(BindError::Clash {
                key: *k,
                first: *g,
                second: *cmd,
            });
        }
    }
    Ok(Bindings { by_key, by_command })
}

/// Why `[keys]` cannot be bound as written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BindError {
    #[error("unknown command {name:?} (known: {})", known_commands())]
    UnknownCommand { name: String },
    #[error("{key} for {command}")]
    Key { key: InvalidKey, command: String },
    /// `confirm` on a key hit without meaning to.
    #[error("key {0} cannot be confirm: a confirmation takes a key pressed on purpose")]
    CarelessConfirm(Key),
    #[error(
        "key {key} cannot be confirm: it also opens a confirmation ({}), so pressing it twice would confirm what it asked",
        spec(*opens).name
    )]
    ConfirmOpens { key: Key, opens: Command },
    /// One key, two commands where both answer it.
    #[error("key {key} is bound to both {} and {}", bound(first), bound(second))]
    Clash {
        key: Key,
        first: Command,
        second: Command,
    },
}

fn known_commands() -> String {
    specs()
        .iter()
        .map(|s| s.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// `quit (everywhere)`: a command and where its keys answer.
fn bound(c: &Command) -> String {
    let s = spec(*c);
    format!("{} ({})", s.name, layer_name(s.layer))
}

fn layer_name(l: Scope) -> String {
    match l {
        Scope::Global => "everywhere".to_string(),
        Scope::Lake => "on the lakehouse tabs".to_string(),
        Scope::Tab(t) => format!("on {}", t.title()),
        Scope::Confirm => "in a confirmation".to_string(),
    }
}
