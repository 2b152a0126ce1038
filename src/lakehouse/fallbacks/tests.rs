use super::*;

#[test]
fn a_catalog_whose_first_tables_all_fail_entries_is_read_through_files() {
    let t = |c: &str, n: usize| TableRef::new(c, "s", format!("t{n}"));
    let mut r = EntriesRecord::default();
    for n in 0..ENTRIES_GIVE_UP as usize - 1 {
        r.failed(&t("lake", n));
        // The same table failing twice counts once.
        r.failed(&t("lake", n));
    }
    assert!(r.unreadable(&t("lake", 0)));
    assert!(
        !r.unreadable(&t("lake", 99)),
        "not yet: too few tables failed"
    );
    r.failed(&t("lake", 50));
    assert!(
        r.unreadable(&t("lake", 99)),
        "every table of the catalog now"
    );
    assert!(!r.unreadable(&t("other", 99)), "another catalog is its own");
    // One table of a catalog reading it keeps $entries for the catalog's others.
    let mut r = EntriesRecord::default();
    r.read(&t("lake", 0));
    for n in 1..=ENTRIES_GIVE_UP as usize + 2 {
        r.failed(&t("lake", n));
    }
    assert!(r.unreadable(&t("lake", 1)));
    assert!(!r.unreadable(&t("lake", 99)));
}
