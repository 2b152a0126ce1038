use super::testing::{all_small, at, snap};
use super::*;

#[test]
fn a_table_written_by_appends_alone_is_dated_by_its_first_files() {
    // Created empty on the 1st, appended to from the 3rd.
    let h = [
        snap(4, 9, 30, false),
        snap(3, 5, 20, false),
        snap(2, 3, 10, false),
        snap(1, 1, 0, false),
    ];
    assert_eq!(appended_since(&h, &all_small(30)), Some((at(3), false)));
    // The oldest snapshot kept already held files and has a parent (expired): at
    // least as old as it.
    assert_eq!(appended_since(&h[..3], &all_small(30)), Some((at(3), true)));
    // Its first snapshot held files: exactly then.
    let first = [snap(2, 5, 20, false), snap(1, 3, 10, false)];
    assert_eq!(appended_since(&first, &all_small(20)), Some((at(3), false)));
    // Files that left (a delete, an overwrite, a compaction), a file that is not small,
    // delete files, a summary without totals: not dated this way.
    let fell = [snap(4, 9, 15, false), snap(3, 5, 20, false)];
    assert_eq!(appended_since(&fell, &all_small(15)), None);
    let compacted = [snap(4, 9, 30, true), snap(3, 5, 20, false)];
    assert_eq!(appended_since(&compacted, &all_small(30)), None);
    let mut big = all_small(30);
    big.small_files = 29;
    assert_eq!(appended_since(&h, &big), None);
    let mut deletes = all_small(30);
    deletes.delete_files = 1;
    assert_eq!(appended_since(&h, &deletes), None);
    let untotalled = [
        Snap {
            total: None,
            ..h[0]
        },
        h[1],
    ];
    assert_eq!(appended_since(&untotalled, &all_small(30)), None);
}

/// `snap` with the files it added (`n` of `bytes` together).
fn added(s: Snap, n: u64, bytes: u64) -> Snap {
    Snap {
        added: Some(n),
        added_bytes: Some(bytes),
        ..s
    }
}

/// A compaction of `deleted` files into `n` of `bytes`, leaving `total` live files.
fn compaction(id: i64, d: u32, total: u64, deleted: u64, n: u64, bytes: u64) -> Snap {
    Snap {
        deleted: Some(deleted),
        ..added(snap(id, d, total, true), n, bytes)
    }
}

/// The stats of a table whose files the rules measure against `target`.
fn table(target: u64) -> TableStats {
    TableStats {
        target_file_size: target,
        small_files: 10,
        data_files: 12,
        ..Default::default()
    }
}

const MB: u64 = 1 << 20;

#[test]
fn a_whole_compaction_of_small_output_dates_its_small_files_exactly() {
    let scan = ScanParams::default();
    let st = table(128 * MB);
    // Compacted on the 10th into 3 files of 2 MB together (every live file rewritten),
    // appends since.
    let h = [
        added(snap(5, 14, 5, false), 1, MB),
        added(snap(4, 12, 4, false), 1, MB),
        compaction(3, 10, 3, 9, 3, 2 * MB),
        added(snap(2, 5, 9, false), 5, 5 * MB),
        added(snap(1, 1, 4, false), 4, 4 * MB),
    ];
    assert_eq!(
        compacted_since(&h, &st, &scan, at(15)),
        Some((at(10), false))
    );
    // Its output large (one 500 MB file), the first small files those appended on the
    // 12th: between the 10th and the 12th, settled only when both are critical.
    let mut big = h;
    big[2] = compaction(3, 10, 3, 9, 1, 500 * MB);
    assert_eq!(compacted_since(&big, &st, &scan, at(13)), None);
    assert_eq!(
        compacted_since(&big, &st, &scan, at(20)),
        Some((at(12), true))
    );
}

#[test]
fn a_compaction_that_left_older_files_settles_only_a_critical_wait() {
    let scan = ScanParams::default();
    let st = table(128 * MB);
    // 9 files, 7 rewritten into 2: two older files left, their sizes unknown.
    let h = [
        added(snap(4, 12, 5, false), 1, MB),
        compaction(3, 10, 4, 7, 2, 2 * MB),
        added(snap(2, 5, 9, false), 5, 5 * MB),
        added(snap(1, 1, 4, false), 4, 4 * MB),
    ];
    // An hour after it: the older files could have waited since the 1st, or not at all.
    let soon = at(10) + chrono::Duration::hours(1);
    assert_eq!(compacted_since(&h, &st, &scan, soon), None);
    // Days after: at least since the 10th is critical already.
    assert_eq!(
        compacted_since(&h, &st, &scan, at(14)),
        Some((at(10), true))
    );
}

#[test]
fn a_history_that_cannot_tell_leaves_the_files_read() {
    let scan = ScanParams::default();
    let st = table(128 * MB);
    let whole = compaction(3, 10, 3, 9, 3, 2 * MB);
    let before = added(snap(2, 5, 9, false), 5, 5 * MB);
    // Never compacted: not this rule's.
    assert_eq!(compacted_since(&[before], &st, &scan, at(20)), None);
    // A delete or an overwrite since may have removed the small files it would name.
    let overwrite = Snap {
        append: false,
        ..added(snap(4, 12, 4, false), 1, MB)
    };
    assert_eq!(
        compacted_since(&[overwrite, whole, before], &st, &scan, at(20)),
        None
    );
    // A writer that records no counts.
    let uncounted = Snap {
        added_bytes: None,
        ..whole
    };
    assert_eq!(
        compacted_since(&[uncounted, before], &st, &scan, at(20)),
        None
    );
    // Nothing small added since (a large output, large appends): the small files are
    // older ones the compaction left, or none.
    let large = compaction(3, 10, 3, 9, 1, 500 * MB);
    let big_append = added(snap(4, 12, 4, false), 1, 200 * MB);
    assert_eq!(
        compacted_since(&[big_append, large, before], &st, &scan, at(20)),
        None
    );
    // Two files averaging over the line may still hold a small one: not proof.
    let mixed = added(snap(4, 12, 5, false), 2, 200 * MB);
    assert_eq!(
        compacted_since(&[mixed, large, before], &st, &scan, at(20)),
        None
    );
}
