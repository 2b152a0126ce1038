use super::PartitionsMsg;
use crate::app::action::{Action, Effect};
use crate::app::state::Tab;
use crate::app::testing::*;
use crate::app::update::update;
use crate::lakehouse::queries::PartitionList;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

#[test]
fn enter_drills_into_partitions_and_loads_them_once() {
    let mut s = loaded();
    let fx = update(&mut s, code(KeyCode::Enter));
    assert_eq!(s.tab, Tab::Partitions);
    assert_eq!(
        fx,
        vec![Effect::LoadPartitions {
            request: 1,
            table: tref("zoning", "documents")
        }]
    );
    // Switching away and back does not reload what is loaded or loading.
    update(&mut s, key('1'));
    let fx = update(&mut s, key('2'));
    assert!(fx.is_empty());
    update(&mut s, code(KeyCode::Esc));
    assert_eq!(s.tab, Tab::Tables, "esc goes back");
    // Another table: a new request replaces the old.
    update(&mut s, key('j'));
    let fx = update(&mut s, code(KeyCode::Enter));
    assert_eq!(
        fx,
        vec![Effect::LoadPartitions {
            request: 2,
            table: tref("zoning", "parcels")
        }]
    );
    // The stale answer for documents is dropped.
    update(
        &mut s,
        Action::Partitions(PartitionsMsg::Loaded {
            request: 1,
            table: tref("zoning", "documents"),
            result: Ok(PartitionList::default()),
        }),
    );
    assert!(s.partitions.detail.load.is_loading());
}

#[test]
fn a_null_partition_and_the_string_null_are_marked_apart() {
    let mut s = loaded();
    update(&mut s, code(KeyCode::Enter));
    let table = tref("zoning", "documents");
    let mut list = partitions(3);
    // NULL, the string 'null', and a value whose text joins two fields' labels.
    list.layout_fields = vec!["district".into()];
    list.partitions[0].values = vec![("district".into(), None)];
    list.partitions[1].values = vec![("district".into(), Some("null".into()))];
    list.partitions[2].values = vec![("district".into(), Some("a/b=c".into()))];
    for p in &mut list.partitions {
        p.small_files = 14;
    }
    update(
        &mut s,
        Action::Partitions(PartitionsMsg::Loaded {
            request: 1,
            table,
            result: Ok(list),
        }),
    );
    let labels: std::collections::BTreeSet<String> =
        s.partitions.rows.iter().map(|r| r.label.clone()).collect();
    assert_eq!(labels.len(), 3, "NULL reads apart from 'null': {labels:?}");
    assert!(labels.contains("district IS NULL"), "{labels:?}");
    // Mark the NULL partition only.
    let null_at = (0..3)
        .find(|&i| {
            s.partitions.rows[s.partitions.grid.index[i]].stats.values[0]
                .1
                .is_none()
        })
        .unwrap();
    for _ in 0..null_at {
        update(&mut s, key('j'));
    }
    update(&mut s, key(' '));
    let marked = s.partitions.marked();
    assert_eq!(marked.len(), 1, "{marked:?}");
    assert_eq!(marked[0].values, vec![("district".to_string(), None)]);
}

#[test]
fn marks_toggle_move_and_clear() {
    let mut s = loaded();
    update(&mut s, code(KeyCode::Enter));
    let table = tref("zoning", "documents");
    update(
        &mut s,
        Action::Partitions(PartitionsMsg::Loaded {
            request: 1,
            table: table.clone(),
            result: Ok(partitions(9)),
        }),
    );
    assert_eq!(s.partitions.rows.len(), 9);
    let first = s.partitions.selected().unwrap().stats.key();
    update(&mut s, key(' '));
    update(&mut s, key(' '));
    assert_eq!(s.partitions.marks.len(), 2);
    assert!(s.partitions.marks.contains(&first));
    update(&mut s, key('k'));
    update(&mut s, key(' '));
    assert_eq!(
        s.partitions.marks.len(),
        1,
        "space on a marked row unmarks it"
    );
    // Marks survive a reload of the same partitions.
    update(&mut s, key('r'));
    let req = s.partitions.detail.request;
    update(
        &mut s,
        Action::Partitions(PartitionsMsg::Loaded {
            request: req,
            table: table.clone(),
            result: Ok(partitions(9)),
        }),
    );
    assert_eq!(s.partitions.marks.len(), 1);
    update(
        &mut s,
        Action::Key(
            KeyEvent::new(KeyCode::Char('\\'), KeyModifiers::CONTROL),
            std::time::Instant::now(),
        ),
    );
    assert!(s.partitions.marks.is_empty());
}

#[test]
fn partition_severity_follows_the_rules() {
    let mut s = loaded();
    update(&mut s, code(KeyCode::Enter));
    // Eight partitions of 14-18 small files (WARNING, or OK under min_small_files), and
    // one that holds 150 small files of 3 KB: a reader of it alone pays for them.
    let mut list = partitions(8);
    let mut heavy = list.partitions[1].clone();
    heavy.values[1].1 = Some("2026-11-28".into());
    heavy.data_files = 150;
    heavy.small_files = 150;
    heavy.total_bytes = 150 * 3000;
    list.partitions.push(heavy);
    update(
        &mut s,
        Action::Partitions(PartitionsMsg::Loaded {
            request: 1,
            table: tref("zoning", "documents"),
            result: Ok(list),
        }),
    );
    let count = |sev| {
        s.partitions
            .rows
            .iter()
            .filter(|r| r.severity == sev)
            .count()
    };
    use crate::health::Severity;
    assert_eq!(
        (
            count(Severity::Critical),
            count(Severity::Warning),
            count(Severity::Ok)
        ),
        (1, 6, 2)
    );
    assert_eq!(
        s.partitions.selected().unwrap().severity,
        crate::health::Severity::Critical,
        "worst first"
    );
}
