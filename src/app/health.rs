//! The health popup: the verdict of the table under the cursor, on whichever tab it is
//! (an incident's table on Triage, the row on Tables, the opened table on the detail tabs).

use super::state::{Level, Popup, State};

/// `i`: the health of the tab's table (`TabOps::table`, the one maintenance applies to).
pub fn open(s: &mut State) {
    match (s.tab.ops().table)(s) {
        Some(t) => s.popup = Some(Popup::Health(t)),
        None => s.set_status(
            Level::Warn,
            "select a table first: i shows a table's health",
        ),
    }
}

#[cfg(test)]
mod tests {
    use crate::app::action::DagWrite;
    use crate::app::state::{Popup, Tab};
    use crate::app::testing::dags::with_dags;
    use crate::app::testing::*;
    use crate::app::update::update;
    use crossterm::event::KeyCode;

    /// Partitions of one table seen, then Snapshots of another: `i` and `t` on Snapshots
    /// are about the table Snapshots shows, not the one Partitions last showed.
    #[test]
    fn i_and_t_on_the_snapshots_tab_are_about_the_table_it_shows() {
        let mut s = with_dags();
        update(&mut s, key('1'));
        update(&mut s, code(KeyCode::Enter));
        assert_eq!(s.tab, Tab::Partitions);
        let first = s.partitions.detail.table.clone().unwrap();
        update(&mut s, key('1'));
        update(&mut s, key('j'));
        update(&mut s, key('3'));
        assert_eq!(s.tab, Tab::Snapshots);
        let second = s.snapshots.detail.table.clone().unwrap();
        assert_ne!(first, second);
        update(&mut s, key('i'));
        assert_eq!(s.popup, Some(Popup::Health(second.clone())));
        update(&mut s, code(KeyCode::Esc));
        update(&mut s, key('t'));
        let dag = s.dags.mapping.get(&second).unwrap().dag_id.clone();
        match &s.popup {
            Some(Popup::ConfirmDag(c)) => {
                assert_eq!(c.action, DagWrite::Trigger { dag_id: dag });
            }
            other => panic!("no trigger confirmation: {other:?}"),
        }
    }

    #[test]
    fn i_where_no_table_is_selected_says_so() {
        let mut s = with_dags();
        update(&mut s, key('4'));
        update(&mut s, key('i'));
        assert_eq!(s.popup, None);
        assert!(s.status.as_ref().unwrap().text.contains("select a table"));
    }
}
