//! The keymap is data: every command with its layer, default keys and description (the
//! default keymap, `config/keys/default.toml`). The footer, the `?` help and the key
//! dispatch all read the same table, and `[keys]` in the config overrides a command's
//! keys. A key is looked up by (layer, key): the layer on screen (an open confirmation,
//! else the tab), then `global`.

use std::collections::BTreeMap;

use crossterm::event::KeyEvent;

use crate::config::keys::{BindError, Bindings, KeySpec, bind};
pub use crate::config::keys::{Command, Key, KeyCodeOrd, Scope, Spec, by_name, spec, specs};

/// The resolved keymap: (layer, key) → command, and command → its keys (for display).
#[derive(Clone, Debug)]
pub struct Keymap {
    by_key: BTreeMap<(Scope, Key), Command>,
    by_command: BTreeMap<Command, Vec<Key>>,
    readonly: bool,
}

impl Keymap {
    /// The keymap of bindings the config resolved (`Settings::keys`).
    pub fn new(bindings: Bindings) -> Keymap {
        let Bindings { by_key, by_command } = bindings;
        Keymap {
            by_key,
            by_command,
            readonly: false,
        }
    }

    /// Validate `[keys]` overrides (command name → key or keys) and build the keymap.
    pub fn from_config(overrides: &BTreeMap<String, KeySpec>) -> Result<Keymap, BindError> {
        bind(overrides).map(Keymap::new)
    }

    /// In read-only mode every mutation leaves the keymap (and so the footer and help);
    /// the bindings stay, so leaving read-only mode (`:profile` to a writable profile)
    /// brings them back.
    pub fn with_readonly(mut self, readonly: bool) -> Keymap {
        self.readonly = readonly;
        self
    }

    pub fn readonly(&self) -> bool {
        self.readonly
    }

    /// The command of `ev` in `layer`: the layer's own binding, else the global one.
    pub fn lookup(&self, layer: Scope, ev: &KeyEvent) -> Option<Command> {
        let key = Key::from_event(ev)?;
        self.find(layer, key).or_else(|| {
            // Some terminals add SHIFT to upper-case letters and symbols: already in the char.
            match key.code {
                KeyCodeOrd::Char(c) if key.ctrl && c.is_ascii_uppercase() => self.find(
                    layer,
                    Key {
                        code: KeyCodeOrd::Char(c.to_ascii_lowercase()),
                        ..key
                    },
                ),
                _ => None,
            }
        })
    }

    fn find(&self, layer: Scope, key: Key) -> Option<Command> {
        // A disabled binding is as if absent: the global key under it still answers.
        let get = |l: Scope| {
            self.by_key
                .get(&(l, key))
                .copied()
                .filter(|c| self.enabled(*c))
        };
        get(layer).or_else(|| get(Scope::Global))
    }

    pub fn keys(&self, cmd: Command) -> &[Key] {
        self.by_command.get(&cmd).map(Vec::as_slice).unwrap_or(&[])
    }

    /// `j ↓` for display.
    pub fn keys_text(&self, cmd: Command) -> String {
        self.keys(cmd)
            .iter()
            .map(|k| k.to_string())
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Whether the command is available at all (not removed by read-only mode).
    pub fn enabled(&self, cmd: Command) -> bool {
        !(self.readonly && cmd.mutation())
    }

    /// Help entries, in keymap order: (keys, description, scope).
    pub fn help(&self) -> Vec<(String, &'static str, Scope)> {
        specs()
            .iter()
            .filter(|s| self.enabled(s.command))
            .map(|s| {
                // A command of the command line only is shown by its `:` form.
                let keys = match self.keys_text(s.command) {
                    k if k.is_empty() => format!(":{}", s.name),
                    k => k,
                };
                (keys, s.desc.as_str(), s.scope)
            })
            .chain(
                FIXED
                    .iter()
                    .map(|(k, d)| (k.to_string(), *d, Scope::Global)),
            )
            .collect()
    }

    /// Footer hints for a view: (first key, short description).
    pub fn footer(&self, scope: Scope) -> Vec<(String, &'static str)> {
        specs()
            .iter()
            .filter(|s| s.footer && self.enabled(s.command))
            .filter(|s| {
                s.scope == Scope::Global
                    || s.scope == scope
                    || (s.scope == Scope::Lake && matches!(scope, Scope::Tab(t) if t.ops().lake))
            })
            .filter_map(|s| {
                self.keys(s.command)
                    .first()
                    .map(|k| (k.to_string(), short_desc(s)))
            })
            .collect()
    }
}

/// Keys the terminal gives meaning to, whatever `[keys]` says: listed in help too.
const FIXED: [(&str, &str); 2] = [
    ("ctrl-c", "quit, asks if jobs run"),
    ("ctrl-z", "suspend (fg resumes)"),
];

fn short_desc(s: &'static Spec) -> &'static str {
    match s.command {
        Command::SortNext => "sort",
        Command::Enter => "open",
        Command::Health => "why",
        Command::Mark => "mark",
        Command::Optimize => "optimize",
        Command::Refresh => "refresh",
        Command::TriggerDag => "trigger",
        Command::ClearRun => "clear run",
        Command::PauseDag => "pause",
        Command::Copy => "copy",
        _ => &s.desc,
    }
}

impl Default for Keymap {
    fn default() -> Self {
        Keymap::from_config(&BTreeMap::new()).expect("defaults are valid")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tab::Tab;
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

    fn ev(code: KeyCode, m: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, m)
    }

    #[test]
    fn default_keymap_dispatches() {
        let km = Keymap::default();
        assert_eq!(
            km.lookup(Scope::Global, &ev(KeyCode::Char('q'), KeyModifiers::NONE)),
            Some(Command::Quit)
        );
        assert_eq!(
            km.lookup(Scope::Global, &ev(KeyCode::Char('G'), KeyModifiers::SHIFT)),
            Some(Command::Bottom)
        );
        assert_eq!(
            km.lookup(
                Scope::Global,
                &ev(KeyCode::Char('d'), KeyModifiers::CONTROL)
            ),
            Some(Command::HalfDown)
        );
        assert_eq!(
            km.lookup(Scope::Global, &ev(KeyCode::Down, KeyModifiers::NONE)),
            Some(Command::Down)
        );
        assert_eq!(
            km.lookup(
                Scope::Global,
                &ev(KeyCode::Char('\\'), KeyModifiers::CONTROL)
            ),
            Some(Command::ClearMarks)
        );
        assert_eq!(
            km.lookup(
                Scope::Global,
                &ev(KeyCode::Char('4'), KeyModifiers::CONTROL)
            ),
            Some(Command::ClearMarks)
        );
        assert_eq!(
            km.lookup(Scope::Global, &ev(KeyCode::BackTab, KeyModifiers::SHIFT)),
            Some(Command::PrevTab)
        );
        // z unfolds a log's library frames, on DAGs only; v is bound to nothing.
        assert_eq!(
            km.lookup(
                Scope::Tab(Tab::Dags),
                &ev(KeyCode::Char('z'), KeyModifiers::NONE)
            ),
            Some(Command::Frames)
        );
        assert_eq!(
            km.lookup(
                Scope::Tab(Tab::Tables),
                &ev(KeyCode::Char('z'), KeyModifiers::NONE)
            ),
            None
        );
        assert_eq!(
            km.lookup(Scope::Global, &ev(KeyCode::Char('v'), KeyModifiers::NONE)),
            None
        );
    }

    #[test]
    fn overrides_replace_keys_and_conflicts_are_errors() {
        let mut o = BTreeMap::new();
        o.insert(
            "quit".to_string(),
            KeySpec::Many(vec!["ctrl-q".into(), "F10".into()]),
        );
        let km = Keymap::from_config(&o).unwrap();
        assert_eq!(
            km.lookup(Scope::Global, &ev(KeyCode::Char('q'), KeyModifiers::NONE)),
            None
        );
        assert_eq!(
            km.lookup(Scope::Global, &ev(KeyCode::F(10), KeyModifiers::NONE)),
            Some(Command::Quit)
        );
        assert_eq!(km.keys_text(Command::Quit), "ctrl-q F10");

        let mut o = BTreeMap::new();
        o.insert("quit".to_string(), KeySpec::One("r".into()));
        let e = Keymap::from_config(&o).unwrap_err().to_string();
        assert!(e.contains("refresh") && e.contains("quit"), "{e}");

        let mut o = BTreeMap::new();
        o.insert("teleport".to_string(), KeySpec::One("t".into()));
        assert!(
            Keymap::from_config(&o)
                .unwrap_err()
                .to_string()
                .contains("teleport")
        );
    }

    #[test]
    fn leaving_read_only_brings_the_mutations_back() {
        let o = ev(KeyCode::Char('o'), KeyModifiers::NONE);
        let t = ev(KeyCode::Char('t'), KeyModifiers::NONE);
        let ro = Keymap::default().with_readonly(true);
        assert_eq!(ro.lookup(Scope::Tab(Tab::Tables), &o), None);
        assert!(!ro.help().iter().any(|(k, _, _)| k == "o"));
        let rw = ro.with_readonly(false);
        assert_eq!(
            rw.lookup(Scope::Tab(Tab::Tables), &o),
            Some(Command::Optimize)
        );
        assert_eq!(
            rw.lookup(Scope::Tab(Tab::Dags), &t),
            Some(Command::TriggerDag)
        );
        assert!(rw.help().iter().any(|(k, _, _)| k == "o"));
        assert!(
            rw.footer(Scope::Tab(Tab::Tables))
                .iter()
                .any(|(k, _)| k == "o")
        );
    }

    #[test]
    fn readonly_removes_every_mutation() {
        let km = Keymap::default().with_readonly(true);
        assert_eq!(
            km.lookup(Scope::Global, &ev(KeyCode::Char('o'), KeyModifiers::NONE)),
            None
        );
        assert_eq!(
            km.lookup(Scope::Global, &ev(KeyCode::Char('x'), KeyModifiers::NONE)),
            None
        );
        assert_eq!(
            km.lookup(Scope::Global, &ev(KeyCode::Char('t'), KeyModifiers::NONE)),
            None
        );
        assert_eq!(
            km.lookup(Scope::Global, &ev(KeyCode::Char('F'), KeyModifiers::SHIFT)),
            None
        );
        assert!(km.help().iter().all(|(_, d, _)| !d.contains("optimize")));
        assert!(
            km.footer(Scope::Tab(Tab::Partitions))
                .iter()
                .all(|(k, _)| k != "o")
        );
        let rw = Keymap::default();
        assert!(
            rw.footer(Scope::Tab(Tab::Partitions))
                .iter()
                .any(|(k, _)| k == "o")
        );
        assert!(rw.help().len() > km.help().len());
    }

    #[test]
    fn footer_and_help_come_from_the_same_table() {
        let km = Keymap::default();
        let help = km.help();
        for (key, _) in km.footer(Scope::Tab(Tab::Tables)) {
            assert!(
                help.iter().any(|(k, _, _)| k.split(' ').any(|x| x == key)),
                "{key} not in help"
            );
        }
    }

    #[test]
    fn the_default_keymap_names_every_command_once() {
        let names: Vec<&str> = specs().iter().map(|s| s.name.as_str()).collect();
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "a command twice: {names:?}");
        for s in specs() {
            assert_eq!(spec(s.command).name, s.name);
            assert!(!s.desc.is_empty(), "{}", s.name);
            // Only the commands that need an argument to mean much are of the line only.
            assert!(
                !s.keys.is_empty() || matches!(s.command, Command::Profile | Command::Schema),
                "{} has no key",
                s.name
            );
        }
        // Every command the dispatcher knows has an entry (spec() panics otherwise).
        for c in [
            Command::Confirm,
            Command::Decline,
            Command::CopySql,
            Command::Frames,
        ] {
            spec(c);
        }
        assert!(Command::Optimize.mutation() && !Command::Confirm.mutation());
    }

    #[test]
    fn each_tab_is_a_command_on_its_number_by_its_config_name() {
        let km = Keymap::default();
        for t in Tab::ALL {
            let n = char::from_digit(t.number() as u32, 10).unwrap();
            let key = ev(KeyCode::Char(n), KeyModifiers::NONE);
            assert_eq!(km.lookup(Scope::Global, &key), Some(Command::Tab(t)));
            assert_eq!(by_name(&format!("tab_{}", t.name())), Some(Command::Tab(t)));
            assert_eq!(spec(Command::Tab(t)).desc, format!("{} tab", t.title()));
        }
        assert_eq!(
            by_name("tab_partitions"),
            Some(Command::Tab(Tab::Partitions))
        );
        // A config written for the tabs' names binds them still.
        let mut o = BTreeMap::new();
        o.insert("tab_dags".to_string(), KeySpec::One("F4".into()));
        let km = Keymap::from_config(&o).unwrap();
        let f4 = ev(KeyCode::F(4), KeyModifiers::NONE);
        let four = ev(KeyCode::Char('4'), KeyModifiers::NONE);
        assert_eq!(km.lookup(Scope::Global, &f4), Some(Command::Tab(Tab::Dags)));
        assert_eq!(km.lookup(Scope::Global, &four), None);
        // The layers are the tabs': `on DAGs` in a clash.
        let mut o = BTreeMap::new();
        o.insert("frames".to_string(), KeySpec::One("3".into()));
        let e = Keymap::from_config(&o).unwrap_err().to_string();
        assert!(
            e.contains("tab_snapshots (everywhere)") && e.contains("frames (on DAGs)"),
            "{e}"
        );
    }

    #[test]
    fn one_key_means_one_thing_on_one_tab_and_another_elsewhere() {
        // w wraps a log on DAGs; bound to mark on Partitions, it marks there.
        let mut o = BTreeMap::new();
        o.insert("mark".to_string(), KeySpec::One("w".into()));
        let km = Keymap::from_config(&o).unwrap();
        let w = ev(KeyCode::Char('w'), KeyModifiers::NONE);
        assert_eq!(
            km.lookup(Scope::Tab(Tab::Partitions), &w),
            Some(Command::Mark)
        );
        assert_eq!(km.lookup(Scope::Tab(Tab::Dags), &w), Some(Command::Wrap));
        assert_eq!(km.lookup(Scope::Tab(Tab::Tables), &w), None);
        // The global keys work on every tab, and in a confirmation but where it shadows them.
        let g = ev(KeyCode::Char('g'), KeyModifiers::NONE);
        assert_eq!(km.lookup(Scope::Tab(Tab::Dags), &g), Some(Command::Top));
        assert_eq!(km.lookup(Scope::Confirm, &g), Some(Command::ToggleGrouped));
        let j = ev(KeyCode::Char('j'), KeyModifiers::NONE);
        assert_eq!(km.lookup(Scope::Confirm, &j), Some(Command::Down));
    }

    #[test]
    fn a_tab_key_hiding_a_global_one_or_a_careless_confirm_is_refused() {
        let mut o = BTreeMap::new();
        o.insert("wrap".to_string(), KeySpec::One("r".into()));
        let e = Keymap::from_config(&o).unwrap_err().to_string();
        assert!(
            e.contains("refresh (everywhere)") && e.contains("wrap (on DAGs)"),
            "{e}"
        );
        for careless in ["enter", "esc", "space", "tab"] {
            let mut o = BTreeMap::new();
            o.insert("confirm".to_string(), KeySpec::One(careless.into()));
            let e = Keymap::from_config(&o).unwrap_err().to_string();
            assert!(e.contains("cannot be confirm"), "{careless}: {e}");
        }
        // Nor a key that also opens a confirmation: a double tap would confirm it.
        for (opener, key) in [("trigger_dag", "t"), ("optimize", "o"), ("quit", "q")] {
            let mut o = BTreeMap::new();
            o.insert("confirm".to_string(), KeySpec::One(key.into()));
            let e = Keymap::from_config(&o).unwrap_err().to_string();
            assert!(
                e.contains("cannot be confirm") && e.contains(opener),
                "{key}: {e}"
            );
        }
        // Another deliberate key is fine, and y then no longer confirms.
        let mut o = BTreeMap::new();
        o.insert("confirm".to_string(), KeySpec::One("ctrl-y".into()));
        let km = Keymap::from_config(&o).unwrap();
        let y = ev(KeyCode::Char('y'), KeyModifiers::NONE);
        assert_eq!(km.lookup(Scope::Confirm, &y), Some(Command::Copy));
    }
}
