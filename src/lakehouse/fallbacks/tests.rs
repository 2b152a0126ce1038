use super::*;

#[test]
fn a_catalog_whose_first_tables_all_fail_entries_is_read_through_files() {
    let t = |c: &str, n: usize| TableRef::new(c, "s", format!("t{n}"));
    let mut r = EntriesRecord::default();
    for n in 0..ENTRIES_GIVE_UP as usize - 1 {
        r.failed(&t("lake", n), "GENERIC_INTERNAL_ERROR");
        // The same table failing twice counts once.
        assert!(!r.failed(&t("lake", n), "again"));
    }
    assert!(r.unreadable(&t("lake", 0)));
    assert!(
        !r.unreadable(&t("lake", 99)),
        "not yet: too few tables failed"
    );
    r.failed(&t("lake", 50), "x");
    assert!(
        r.unreadable(&t("lake", 99)),
        "every table of the catalog now"
    );
    assert!(!r.unreadable(&t("other", 99)), "another catalog is its own");
    // One table of a catalog reading it keeps $entries for the catalog's others.
    let mut r = EntriesRecord::default();
    assert!(r.read(&t("lake", 0)), "the catalog's first read is news");
    assert!(!r.read(&t("lake", 7)));
    for n in 1..=ENTRIES_GIVE_UP as usize + 2 {
        r.failed(&t("lake", n), "x");
    }
    assert!(r.unreadable(&t("lake", 1)));
    assert!(!r.unreadable(&t("lake", 99)));
}

#[test]
fn what_was_learned_is_kept_per_coordinator_and_server_version() {
    let dir = std::env::temp_dir().join(format!("floe-fallbacks-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let stats = dir.join("stats.json");
    let url = "https://trino.example:8443";
    let path = file_of(&stats, url);
    assert_ne!(
        path,
        file_of(&stats, "https://other:8443"),
        "a file per coordinator"
    );
    let mut r = EntriesRecord::default();
    for n in 0..ENTRIES_GIVE_UP {
        r.failed(
            &TableRef::new("lake", "s", format!("t{n}")),
            "GENERIC_INTERNAL_ERROR: Cannot invoke \"java.lang.Integer.intValue()\"\u{1b}[2J",
        );
    }
    store(&path, url, 476, &r).unwrap();
    let back = load(&path, url, 476).expect("the same server version reads it");
    assert_eq!(back, r);
    assert!(back.catalog_unreadable("lake"));
    let (name, c) = back.catalogs().next().unwrap();
    assert_eq!((name, c.failed, c.read), ("lake", 3, 0));
    assert!(
        !c.error.as_deref().unwrap().contains('\u{1b}'),
        "the server's words sanitised"
    );
    // An upgraded server, another coordinator, a corrupt file: nothing learned.
    assert_eq!(load(&path, url, 481), None);
    assert_eq!(load(&path, "https://other:8443", 476), None);
    std::fs::write(&path, b"{not json").unwrap();
    assert_eq!(load(&path, url, 476), None);
    // What one connection learned is added to what the file held.
    let mut mine = EntriesRecord::default();
    assert!(mine.read(&TableRef::new("other", "s", "t")));
    mine.absorb(back);
    assert!(mine.catalog_unreadable("lake") && !mine.catalog_unreadable("other"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A catalog's format learned from its connector is kept with the rest; a file written
/// before formats were kept still loads (none known).
#[test]
fn a_catalogs_format_learned_from_its_connector_is_kept() {
    use crate::lakehouse::delta::TableFormat;
    let dir = std::env::temp_dir().join(format!("floe-formats-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let url = "http://trino:8080";
    let path = file_of(&dir.join("stats.json"), url);
    let mut r = EntriesRecord::default();
    assert!(r.learned_format("delta", TableFormat::Delta), "news");
    assert!(!r.learned_format("delta", TableFormat::Delta), "known");
    assert_eq!(r.format("delta"), Some(TableFormat::Delta));
    assert_eq!(r.format("iceberg"), None);
    store(&path, url, 476, &r).unwrap();
    let back = load(&path, url, 476).unwrap();
    assert_eq!(back.format("delta"), Some(TableFormat::Delta));
    let mut mine = EntriesRecord::default();
    mine.absorb(back);
    assert_eq!(mine.format("delta"), Some(TableFormat::Delta));
    // The file of an earlier release: no `formats`.
    std::fs::write(
        &path,
        format!(
            r#"{{"format":1,"url":"{url}","server_version":476,"entries":{{"tables":[],"catalogs":{{}}}}}}"#
        ),
    )
    .unwrap();
    assert_eq!(load(&path, url, 476).map(|r| r.format("delta")), Some(None));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_refused_query_list_is_kept_with_its_words() {
    let dir = std::env::temp_dir().join(format!("floe-qlist-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let url = "http://gateway:8080";
    let path = file_of(&dir.join("stats.json"), url);
    let mut r = EntriesRecord::default();
    assert_eq!(r.query_list(), None);
    assert!(r.query_list_refused("HTTP 404 from http://gateway:8080/v1/query\x1b[2J"));
    assert!(
        !r.query_list_refused("HTTP 405"),
        "known: the first words stay"
    );
    assert_eq!(
        r.query_list(),
        Some("HTTP 404 from http://gateway:8080/v1/query\\x1b[2J"),
        "sanitised: the escape shown, not sent"
    );
    store(&path, url, 476, &r).unwrap();
    let mut mine = EntriesRecord::default();
    mine.absorb(load(&path, url, 476).unwrap());
    assert!(mine.query_list().is_some_and(|w| w.starts_with("HTTP 404")));
    assert_eq!(load(&path, url, 483), None, "an upgrade is asked afresh");
    let _ = std::fs::remove_dir_all(&dir);
}
