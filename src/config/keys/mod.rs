//! Key bindings as data: every command with its name, default keys and description, the
//! key syntax of `[keys]` (`q`, `ctrl-s`, `<Ctrl-d>`, `shift-tab`, `F5`), and the resolution
//! of `[keys]` overrides over the defaults. The app's keymap, footer and help read this table.

use std::collections::BTreeMap;

use serde::Deserialize;

mod key;

pub use key::{Key, KeyCodeOrd};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Command {
    Quit,
    Help,
    Refresh,
    Freeze,
    Filter,
    CommandLine,
    SortNext,
    SortReverse,
    NextTab,
    PrevTab,
    TabTriage,
    TabTables,
    TabPartitions,
    TabSnapshots,
    TabDags,
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
    Health,
    Export,
    Optimize,
    ExpireSnapshots,
    RemoveOrphans,
    OptimizeManifests,
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
}

/// Where a command applies (for the footer and help).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    Global,
    /// Tables, Partitions and Snapshots: the lakehouse tabs.
    Lake,
    Tables,
    Partitions,
    Snapshots,
    Dags,
    /// Inside a popup (never in the footer).
    Popup,
}

pub struct Spec {
    pub command: Command,
    pub name: &'static str,
    pub keys: &'static [&'static str],
    pub desc: &'static str,
    /// Changes the lakehouse or Airflow: removed in read-only mode.
    pub mutation: bool,
    pub scope: Scope,
    /// Shown in the footer (short hint) and not only in help.
    pub footer: bool,
}

macro_rules! spec {
    ($cmd:ident, $name:literal, [$($k:literal),*], $desc:literal, $mutation:literal, $scope:ident, $footer:literal) => {
        Spec {
            command: Command::$cmd,
            name: $name,
            keys: &[$($k),*],
            desc: $desc,
            mutation: $mutation,
            scope: Scope::$scope,
            footer: $footer,
        }
    };
}

/// The defaults. Order is the order of help and footer.
pub const SPECS: &[Spec] = &[
    spec!(Help, "help", ["?"], "help", false, Global, true),
    spec!(Quit, "quit", ["q"], "quit", false, Global, true),
    spec!(Filter, "filter", ["/"], "filter", false, Global, true),
    spec!(
        SortNext,
        "sort_next",
        ["s"],
        "sort by next column",
        false,
        Global,
        true
    ),
    spec!(
        SortReverse,
        "sort_reverse",
        ["S"],
        "reverse sort",
        false,
        Global,
        false
    ),
    spec!(
        Refresh,
        "refresh",
        ["r"],
        "refresh now",
        false,
        Global,
        true
    ),
    spec!(
        Freeze,
        "freeze",
        ["f"],
        "freeze auto-refresh",
        false,
        Global,
        false
    ),
    spec!(
        CommandLine,
        "command",
        [":"],
        "command line (:help lists)",
        false,
        Global,
        false
    ),
    spec!(
        Export,
        "export",
        ["ctrl-s"],
        "export view (CSV/JSON)",
        false,
        Global,
        false
    ),
    spec!(
        NextTab,
        "next_tab",
        ["tab"],
        "next tab",
        false,
        Global,
        false
    ),
    spec!(
        PrevTab,
        "prev_tab",
        ["backtab"],
        "previous tab",
        false,
        Global,
        false
    ),
    spec!(
        TabTriage,
        "tab_triage",
        ["0"],
        "Triage tab",
        false,
        Global,
        false
    ),
    spec!(
        TabTables,
        "tab_tables",
        ["1"],
        "Tables tab",
        false,
        Global,
        false
    ),
    spec!(
        TabPartitions,
        "tab_partitions",
        ["2"],
        "Partitions tab",
        false,
        Global,
        false
    ),
    spec!(
        TabSnapshots,
        "tab_snapshots",
        ["3"],
        "Snapshots tab",
        false,
        Global,
        false
    ),
    spec!(TabDags, "tab_dags", ["4"], "DAGs tab", false, Global, false),
    spec!(Down, "down", ["j", "down"], "down", false, Global, false),
    spec!(Up, "up", ["k", "up"], "up", false, Global, false),
    spec!(
        PageDown,
        "page_down",
        ["pagedown"],
        "page down",
        false,
        Global,
        false
    ),
    spec!(
        PageUp,
        "page_up",
        ["pageup"],
        "page up",
        false,
        Global,
        false
    ),
    spec!(
        HalfDown,
        "half_down",
        ["ctrl-d"],
        "half page down",
        false,
        Global,
        false
    ),
    spec!(
        HalfUp,
        "half_up",
        ["ctrl-u"],
        "half page up",
        false,
        Global,
        false
    ),
    spec!(Top, "top", ["g", "home"], "first row", false, Global, false),
    spec!(
        Bottom,
        "bottom",
        ["G", "end"],
        "last row",
        false,
        Global,
        false
    ),
    spec!(Enter, "enter", ["enter"], "drill down", false, Global, true),
    spec!(Back, "back", ["esc"], "back / clear", false, Global, false),
    spec!(
        Health,
        "info",
        ["i"],
        "health breakdown",
        false,
        Tables,
        true
    ),
    spec!(Mark, "mark", ["space"], "mark row", false, Partitions, true),
    spec!(
        ClearMarks,
        "clear_marks",
        ["ctrl-\\"],
        "clear marks",
        false,
        Partitions,
        false
    ),
    spec!(
        Optimize,
        "optimize",
        ["o"],
        "optimize marked/selected",
        true,
        Lake,
        true
    ),
    spec!(
        ExpireSnapshots,
        "expire_snapshots",
        ["x"],
        "expire snapshots",
        true,
        Lake,
        false
    ),
    spec!(
        RemoveOrphans,
        "remove_orphan_files",
        ["R"],
        "remove orphan files",
        true,
        Lake,
        false
    ),
    spec!(
        OptimizeManifests,
        "optimize_manifests",
        ["M"],
        "optimize manifests",
        true,
        Lake,
        false
    ),
    spec!(
        ScrollLeft,
        "scroll_left",
        ["h", "left"],
        "log: scroll left",
        false,
        Dags,
        false
    ),
    spec!(
        ScrollRight,
        "scroll_right",
        ["l", "right"],
        "log: scroll right",
        false,
        Dags,
        false
    ),
    spec!(
        Wrap,
        "wrap",
        ["w"],
        "log: wrap long lines",
        false,
        Dags,
        false
    ),
    spec!(
        Frames,
        "frames",
        ["z"],
        "log: unfold library frames",
        false,
        Dags,
        false
    ),
    spec!(
        TriggerDag,
        "trigger_dag",
        ["t"],
        "trigger DAG run",
        true,
        Dags,
        true
    ),
    spec!(
        ClearRun,
        "clear_run",
        ["C"],
        "clear failed run",
        true,
        Dags,
        true
    ),
    spec!(
        PauseDag,
        "pause_dag",
        ["p"],
        "pause/unpause DAG",
        true,
        Dags,
        true
    ),
    spec!(
        FixConnection,
        "fix_connection",
        ["F"],
        "fix Airflow connection",
        true,
        Dags,
        false
    ),
    spec!(
        Cancel,
        "cancel",
        ["c"],
        "cancel running maintenance",
        false,
        Global,
        false
    ),
    spec!(
        Queue,
        "queue",
        ["Q"],
        "maintenance queue",
        false,
        Global,
        false
    ),
    spec!(
        Copy,
        "copy",
        ["y"],
        "copy selection (OSC 52)",
        false,
        Global,
        true
    ),
    spec!(
        CopySql,
        "copy_sql",
        ["Y"],
        "copy the SQL (confirm)",
        false,
        Popup,
        false
    ),
];

pub fn spec(cmd: Command) -> &'static Spec {
    SPECS
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

/// Resolved bindings: key → command, and command → its keys (in the order written).
#[derive(Clone, Debug, Default)]
pub struct Bindings {
    pub by_key: BTreeMap<Key, Command>,
    pub by_command: BTreeMap<Command, Vec<Key>>,
}

/// Resolve `[keys]` overrides (command name → key or keys) over the defaults: an unknown
/// command, a key that does not parse or a key bound to two commands is an error.
pub fn bind(overrides: &BTreeMap<String, KeySpec>) -> Result<Bindings, String> {
    let mut by_command: BTreeMap<Command, Vec<Key>> = BTreeMap::new();
    for s in SPECS {
        let keys = s
            .keys
            .iter()
            .map(|k| Key::parse(k).expect("default keys parse"))
            .collect();
        by_command.insert(s.command, keys);
    }
    for (name, spec) in overrides {
        let s = SPECS.iter().find(|s| s.name == name).ok_or_else(|| {
            format!(
                "unknown command {name:?} (known: {})",
                SPECS.iter().map(|s| s.name).collect::<Vec<_>>().join(", ")
            )
        })?;
        let mut keys = Vec::new();
        for k in spec.keys() {
            keys.push(Key::parse(&k).map_err(|e| format!("{e} for {name}"))?);
        }
        by_command.insert(s.command, keys);
    }
    let mut by_key = BTreeMap::new();
    for (cmd, keys) in &by_command {
        for k in keys {
            if let Some(prev) = by_key.insert(*k, *cmd)
                && prev != *cmd
            {
                return Err(format!(
                    "key {k} is bound to both {} and {}",
                    spec(prev).name,
                    spec(*cmd).name
                ));
            }
        }
    }
    Ok(Bindings { by_key, by_command })
}
