//! Moving through the lists: selection, pages, sort, tabs, enter and back. Each tab's
//! list is a `Grid`; the DAG log scrolls instead.

use super::action::Effect;
use super::dags::DagLevel;
use super::state::{Level, State, Tab};

/// The DAGs tab shows a task's log (which scrolls and searches instead of a list).
pub fn in_log(s: &State) -> bool {
    s.tab == Tab::Dags && s.dags.level() == DagLevel::Log
}

/// Re-apply filter and sort to the list on screen.
pub fn reindex_current(s: &mut State) {
    (s.tab.ops().reindex)(s)
}

/// The DAGs tab shows a DAG's source (which scrolls and searches like the log).
pub fn in_source(s: &State) -> bool {
    s.tab == Tab::Dags && s.dags.level() == DagLevel::Source
}

/// Move the selection (or scroll the log or the source) by `delta` rows.
pub fn move_by(s: &mut State, delta: isize) {
    let h = s.page_height();
    if in_log(s) {
        super::dags::scroll_log(s, delta, h);
    } else if in_source(s) {
        super::dags::source_view::scroll(s, delta, h);
    } else if let Some(g) = s.grid_mut() {
        g.move_by(delta, h);
    }
}

pub fn top(s: &mut State) {
    let h = s.page_height();
    if in_log(s) {
        super::dags::scroll_log(s, isize::MIN / 2, h);
    } else if in_source(s) {
        super::dags::source_view::scroll(s, isize::MIN / 2, h);
    } else if let Some(g) = s.grid_mut() {
        g.top(h);
    }
}

pub fn bottom(s: &mut State) {
    let h = s.page_height();
    if in_log(s) {
        super::dags::scroll_log(s, isize::MAX / 2, h);
    } else if in_source(s) {
        super::dags::source_view::scroll(s, isize::MAX / 2, h);
    } else if let Some(g) = s.grid_mut() {
        g.bottom(h);
    }
}

/// `s` (next column) and `S` (reverse).
pub fn sort(s: &mut State, next: bool) {
    let cols = (s.tab.ops().sorts)();
    if let Some(g) = s.grid_mut() {
        if next {
            g.cycle_sort(cols.len());
        } else {
            g.reverse = !g.reverse;
        }
        let text = format!(
            "sorted by {}{}",
            cols.get(g.sort_col).unwrap_or(&""),
            if g.reverse { " (reversed)" } else { "" }
        );
        reindex_current(s);
        s.set_status(Level::Info, text);
    }
}

pub fn switch_tab(s: &mut State, tab: Tab) -> Vec<Effect> {
    // The operator chose: floe no longer moves on its own.
    s.auto_start = false;
    if s.tab == Tab::Tables && tab.ops().detail.is_some() {
        open_selected(s);
    }
    s.tab = tab;
    let h = s.page_height();
    if let Some(g) = s.grid_mut() {
        g.ensure_visible(h);
    }
    (tab.ops().arrive)(s)
}

/// The selected row becomes the opened table: the Partitions and Snapshots tabs follow
/// it, and the Tables selection stays on it through re-sorts and refreshes.
pub(super) fn open_selected(s: &mut State) {
    if let Some(t) = s.tables.selected().map(|r| r.table.clone()) {
        s.tables.grid.moved = true;
        s.tables.opened = Some(t);
    }
}

/// Open `table` from anywhere (it need not be the selected row): it becomes the table
/// the detail tabs are about, and the Tables selection moves to it.
pub fn open_table(s: &mut State, table: crate::lakehouse::model::TableRef) {
    s.tables.grid.moved = true;
    s.tables.reindex_keeping(Some(table.clone()));
    s.tables.opened = Some(table);
}

/// Enter: what the tab says (a table opens its partitions; on the DAGs tab, one level
/// down; on Triage, the evidence of the incident).
pub fn enter(s: &mut State) -> Vec<Effect> {
    (s.tab.ops().enter)(s)
}

/// Esc: clear the filter, else what the tab goes back to (the log search, a level up,
/// the Tables tab), else the status.
pub fn back(s: &mut State) {
    if !super::prompt::current_filter(s).is_empty() {
        super::prompt::set_filter(s, "");
    } else if (s.tab.ops().back)(s) {
    } else if s.status.is_some() {
        s.status = None;
    }
}

#[cfg(test)]
mod tests {
    use crate::app::action::{Action, Effect};
    use crate::app::state::{State, Tab};
    use crate::app::tables::TABLE_SORTS;
    use crate::app::testing::*;
    use crate::app::update::update;
    use crossterm::event::KeyCode;

    #[test]
    fn navigation_and_vim_keys() {
        let mut s = loaded();
        assert_eq!(selected_name(&s), "zoning.documents");
        update(&mut s, key('j'));
        assert_eq!(selected_name(&s), "zoning.parcels");
        update(&mut s, code(KeyCode::Down));
        update(&mut s, code(KeyCode::Down));
        assert_eq!(selected_name(&s), "audit.events", "stops at the bottom");
        update(&mut s, key('g'));
        assert_eq!(selected_name(&s), "zoning.documents");
        update(&mut s, key('G'));
        assert_eq!(selected_name(&s), "audit.events");
        update(&mut s, ctrl('u'));
        assert_eq!(selected_name(&s), "zoning.documents");
        update(&mut s, code(KeyCode::PageDown));
        assert_eq!(selected_name(&s), "audit.events");
    }

    #[test]
    fn sort_cycles_and_reverses() {
        let mut s = loaded();
        update(&mut s, key('s'));
        assert_eq!(s.tables.grid.sort_col, 1);
        let names: Vec<_> = s
            .tables
            .grid
            .index
            .iter()
            .map(|&i| s.tables.rows[i].name.clone())
            .collect();
        assert_eq!(
            names,
            vec!["audit.events", "zoning.documents", "zoning.parcels"]
        );
        assert!(s.status.as_ref().unwrap().text.contains("sorted by table"));
        update(&mut s, key('S'));
        let names: Vec<_> = s
            .tables
            .grid
            .index
            .iter()
            .map(|&i| s.tables.rows[i].name.clone())
            .collect();
        assert_eq!(
            names,
            vec!["zoning.parcels", "zoning.documents", "audit.events"]
        );
        for _ in 0..TABLE_SORTS.len() - 1 {
            update(&mut s, key('s'));
        }
        assert_eq!(s.tables.grid.sort_col, 0, "cycles back to health");
    }

    #[test]
    fn resize_keeps_selection_visible() {
        let mut s = loaded();
        update(&mut s, key('G'));
        update(&mut s, Action::Resize(20, 7));
        let h = s.page_height();
        let g = &s.tables.grid;
        assert!(g.selected >= g.offset && g.selected < g.offset + h);
    }

    /// The detail tabs follow the table the operator opened; the Tables selection stays on its
    /// table (by key) through re-sorts, refreshes and filters.
    mod context {
        use super::*;

        fn order(s: &State) -> Vec<String> {
            s.tables
                .grid
                .index
                .iter()
                .map(|&i| s.tables.rows[i].name.clone())
                .collect()
        }

        /// A refresh whose discovery lists `tables` and whose stats say `stats` per table.
        fn refresh_with(
            s: &mut State,
            tables: &[(&str, &str)],
            stats: Vec<crate::lakehouse::model::TableStats>,
        ) {
            s.tables.refresh.abandon();
            let fx = update(s, key('r'));
            let refs: Vec<_> = tables.iter().map(|(a, b)| tref(a, b)).collect();
            crate::app::testing::listed(s, &fx, refs.clone());
            s.tables.refresh.abandon();
            for (t, st) in refs.into_iter().zip(stats) {
                crate::app::testing::settle(s, &t, Ok(st));
            }
        }

        fn bloated() -> crate::lakehouse::model::TableStats {
            let mut b = healthy_stats();
            b.snapshots = 600;
            b.oldest_snapshot = Some(t0() - chrono::Duration::days(60));
            b
        }

        #[test]
        fn snapshots_follow_the_opened_table_after_a_refresh_re_sorts_the_list() {
            let mut s = loaded();
            assert_eq!(
                selected_name(&s),
                "zoning.documents",
                "worst first, untouched"
            );
            update(&mut s, code(KeyCode::Enter));
            assert_eq!(s.tab, Tab::Partitions);
            // Optimized meanwhile: documents is healthy now, events is the worst.
            refresh_with(
                &mut s,
                &[
                    ("zoning", "parcels"),
                    ("zoning", "documents"),
                    ("audit", "events"),
                ],
                vec![healthy_stats(), healthy_stats(), bloated()],
            );
            assert_eq!(order(&s)[0], "audit.events", "the list re-sorted");
            let fx = update(&mut s, key('3'));
            assert_eq!(
                fx,
                vec![Effect::LoadSnapshots {
                    request: 1,
                    table: tref("zoning", "documents")
                }]
            );
            assert_eq!(s.snapshots.detail.table, Some(tref("zoning", "documents")));
            // Back on Tables, the selection is still on the opened table.
            update(&mut s, key('1'));
            assert_eq!(selected_name(&s), "zoning.documents");
        }

        #[test]
        fn a_refresh_on_the_partitions_tab_reloads_the_opened_table() {
            let mut s = loaded();
            update(&mut s, code(KeyCode::Enter));
            let fx = update(&mut s, key('r'));
            assert!(
                fx.contains(&Effect::LoadPartitions {
                    request: 2,
                    table: tref("zoning", "documents")
                }),
                "{fx:?}"
            );
        }

        #[test]
        fn the_selection_stays_on_its_table_when_a_rediscovery_reorders_rows() {
            let mut s = loaded();
            update(&mut s, key('j'));
            assert_eq!(selected_name(&s), "zoning.parcels");
            // The catalog lists the tables in another order: data indices change.
            refresh_with(
                &mut s,
                &[
                    ("audit", "events"),
                    ("zoning", "parcels"),
                    ("zoning", "documents"),
                ],
                vec![bloated(), healthy_stats(), incident_stats()],
            );
            assert_eq!(selected_name(&s), "zoning.parcels");
            // A sort change and a filter keep it too.
            update(&mut s, key('s'));
            assert_eq!(selected_name(&s), "zoning.parcels");
            update(&mut s, key('/'));
            for c in "zoning".chars() {
                update(&mut s, key(c));
            }
            update(&mut s, code(KeyCode::Enter));
            assert_eq!(selected_name(&s), "zoning.parcels");
            let fx = update(&mut s, key('3'));
            assert_eq!(
                fx,
                vec![Effect::LoadSnapshots {
                    request: 1,
                    table: tref("zoning", "parcels")
                }]
            );
        }

        #[test]
        fn moving_on_the_tables_tab_then_opening_another_table_follows_it() {
            let mut s = loaded();
            update(&mut s, code(KeyCode::Enter));
            update(&mut s, key('1'));
            update(&mut s, key('j'));
            let fx = update(&mut s, key('3'));
            assert_eq!(
                fx,
                vec![Effect::LoadSnapshots {
                    request: 1,
                    table: tref("zoning", "parcels")
                }]
            );
            // g: back to following the worst row.
            update(&mut s, key('1'));
            update(&mut s, key('g'));
            refresh_with(
                &mut s,
                &[
                    ("zoning", "parcels"),
                    ("zoning", "documents"),
                    ("audit", "events"),
                ],
                vec![healthy_stats(), healthy_stats(), bloated()],
            );
            assert_eq!(selected_name(&s), "audit.events");
        }
    }
}
