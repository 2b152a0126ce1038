//! The column that names the row yields last: every tab's columns at 60, 80, 100, 120
//! and 160 columns with the longest names of the lab.

use super::*;
use crate::app::testing::{healthy_stats, tref};

const WIDTHS: [u16; 5] = [60, 80, 100, 120, 160];
/// The lab's longest table name as a row shows it (`finance."ledger ""q3"" it's-odd"`).
const LEDGER: &str = "finance.ledger \"q3\" it's-odd";

fn lines(term: &Terminal<TestBackend>) -> Vec<String> {
    let b = term.backend().buffer();
    (0..b.area.height)
        .map(|y| {
            (0..b.area.width)
                .map(|x| b[(x, y)].symbol().to_string())
                .collect::<String>()
        })
        .collect()
}

fn with_ledger() -> State {
    let mut s = all_loaded();
    let mut tables: Vec<TableRef> = s.tables.rows.iter().map(|r| r.table.clone()).collect();
    tables.push(tref("finance", "ledger \"q3\" it's-odd"));
    crate::app::testing::relist(&mut s, tables);
    s.tables.refresh.abandon();
    crate::app::testing::settle(
        &mut s,
        &tref("finance", "ledger \"q3\" it's-odd"),
        Ok(healthy_stats()),
    );
    s
}

#[test]
fn the_table_name_is_never_cut() {
    let mut s = with_ledger();
    assert!(s.tables.rows.iter().any(|r| r.name == LEDGER));
    for w in WIDTHS {
        let term = screen(&mut s, w, 30);
        let l = lines(&term);
        assert!(
            l.iter().any(|x| x.contains(LEDGER)),
            "{w} columns cut {LEDGER}:\n{}",
            l.join("\n")
        );
        assert!(
            l[2].contains("STAT") && l[2].contains("SMALL"),
            "{w}: {}",
            l[2]
        );
    }
}

#[test]
fn the_partition_name_yields_last_then_shows_its_values() {
    let mut s = all_loaded();
    update(
        &mut s,
        Action::Key(
            KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE),
            std::time::Instant::now(),
        ),
    );
    let req = s.partitions.detail.request;
    update(
        &mut s,
        Action::Partitions(crate::app::partitions::PartitionsMsg::Loaded {
            request: req,
            table: TableRef::new("iceberg", "zoning", "documents"),
            result: Ok(partitions(40)),
        }),
    );
    let selected = s.partitions.selected().unwrap().clone();
    // As long as the lab's `district=east/filed_at_day=2026-11-17` or longer.
    assert!(selected.label.chars().count() >= 37, "{}", selected.label);
    for w in WIDTHS {
        let term = screen(&mut s, w, 30);
        let l = lines(&term);
        let row = &l[3];
        if w >= 80 {
            assert!(
                row.contains(&selected.label),
                "{w} columns cut the partition name:\n{}",
                l.join("\n")
            );
        } else {
            // Too narrow for the name: its values, and the whole name in the status line.
            assert!(row.contains(&selected.stats.values_label()), "{w}: {row}");
            assert!(
                l[28].contains(&format!("selected: {}", selected.label)),
                "{w}: {}",
                l[28]
            );
        }
        // Every other visible row shows its whole name or its values, never a cut.
        for (i, line) in l[3..27].iter().enumerate() {
            let Some(r) = s
                .partitions
                .grid
                .index
                .get(i)
                .map(|&k| &s.partitions.rows[k])
            else {
                break;
            };
            assert!(
                line.contains(&r.label) || line.contains(&r.stats.values_label()),
                "{w}: {line}"
            );
        }
    }
    // At 100 columns the name wins over the widest columns, not over RECORDS.
    let l = lines(&screen(&mut s, 100, 30));
    assert!(l[2].contains("RECORDS"), "{}", l[2]);
    assert!(!l[2].contains("DELETES"), "{}", l[2]);
}

#[test]
fn the_dag_name_is_never_cut() {
    let mut s = crate::app::testing::dags::with_dags();
    key(&mut s, '4');
    for w in WIDTHS {
        let l = lines(&screen(&mut s, w, 30));
        for name in [
            "expire_snapshots (paused)",
            "compact_documents",
            "compact_parcels",
        ] {
            assert!(
                l.iter().any(|x| x.contains(name)),
                "{w} columns cut {name}:\n{}",
                l.join("\n")
            );
        }
        assert!(l.iter().any(|x| x.contains("LAST RUN")), "{w}");
    }
}
