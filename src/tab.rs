//! The tabs, in the order of the tab bar: each one's number (its key and `:tab N`), title
//! and name (`layer = "dags"` in the keymap, `tab_dags` in `[keys]`, `:tab dags`). Below
//! `config`, whose keymap binds keys per tab, and `app`, whose `tabs.rs` gives each tab its
//! behaviour.

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Tab {
    Triage,
    Tables,
    Partitions,
    Snapshots,
    Dags,
}

impl Tab {
    /// Every tab, in the order of the tab bar: a tab's place here is its number.
    pub const ALL: [Tab; 5] = [
        Tab::Triage,
        Tab::Tables,
        Tab::Partitions,
        Tab::Snapshots,
        Tab::Dags,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Tab::Triage => "Triage",
            Tab::Tables => "Tables",
            Tab::Partitions => "Partitions",
            Tab::Snapshots => "Snapshots",
            Tab::Dags => "DAGs",
        }
    }

    /// Its name in the keymap and on the `:` line: the title in lower case (`dags`).
    pub fn name(self) -> String {
        self.title().to_lowercase()
    }

    /// Its place in the tab bar, from 0: its key.
    pub fn number(self) -> usize {
        Tab::ALL.iter().position(|t| *t == self).unwrap_or(0)
    }

    pub fn by_number(n: usize) -> Option<Tab> {
        Tab::ALL.get(n).copied()
    }

    /// The tab of a name, in any case (`dags`, `DAGs`).
    pub fn by_name(name: &str) -> Option<Tab> {
        Tab::ALL
            .into_iter()
            .find(|t| t.title().eq_ignore_ascii_case(name))
    }

    pub fn next(self) -> Tab {
        Tab::ALL[(self.number() + 1) % Tab::ALL.len()]
    }

    pub fn prev(self) -> Tab {
        Tab::ALL[(self.number() + Tab::ALL.len() - 1) % Tab::ALL.len()]
    }
}

#[cfg(test)]
mod tests {
    use super::Tab;

    #[test]
    fn a_tab_is_found_by_its_number_and_its_name() {
        for (i, t) in Tab::ALL.into_iter().enumerate() {
            assert_eq!(t.number(), i);
            assert_eq!(Tab::by_number(i), Some(t));
            assert_eq!(Tab::by_name(&t.name()), Some(t));
            assert_eq!(Tab::by_name(t.title()), Some(t));
        }
        assert_eq!(Tab::Dags.name(), "dags");
        assert_eq!(Tab::by_name("DAGS"), Some(Tab::Dags));
        assert_eq!(Tab::by_number(Tab::ALL.len()), None);
        assert_eq!(Tab::by_name("history"), None);
        assert_eq!(Tab::Dags.next(), Tab::Triage);
        assert_eq!(Tab::Triage.prev(), Tab::Dags);
    }
}
