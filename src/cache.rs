//! The warm start: the last stats of every table, kept per profile, coordinator URL,
//! table and snapshot, so the first frame shows the last known state of the fleet while
//! the change probe revalidates it, and a check reads again only what changed.
//!
//! Each profile on each coordinator has a file of its own beside the configured one
//! (`$XDG_CACHE_HOME/floe/stats.json` names the directory and the stem:
//! `stats-<profile>-<hash>.json`), so one cluster's refresh never reads or rewrites
//! another's, and a refresh that changed nothing writes nothing. A file is a cache: a
//! missing, corrupt or other-version file is ignored (with a log line), never an error.
//! It is written whole to a temporary file (0600) and renamed over the old one, so a
//! reader never sees half of it, and it is bounded: past [`MAX_ENTRIES`] the tables read
//! longest ago are dropped.

use std::path::Path;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::lakehouse::model::{TableRef, TableStats};
use crate::lakehouse::probe::Probe;

/// The cache file's name in floe's cache directory.
pub use crate::config::STATS_CACHE_FILE as FILE_NAME;
/// The format's version: a file of another version is ignored. 2: `critical_partitions`
/// counts partitions whose small files a reader pays for, no longer an average under 1/8.
/// 3: a file per profile and coordinator; the stats are of the table's current snapshot.
pub const VERSION: u32 = 3;
/// Tables kept for one profile on one coordinator.
pub const MAX_ENTRIES: usize = 20_000;

/// The file of `profile` on `url` beside `path` (whose directory and stem it takes).
pub fn file_of(path: &Path, profile: &str, url: &str) -> std::path::PathBuf {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (profile, url).hash(&mut h);
    let safe: String = profile
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "stats".into());
    path.with_file_name(format!("{stem}-{safe}-{:016x}.json", h.finish()))
}

/// The last stats of one table as one coordinator showed them to one profile.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub profile: String,
    pub url: String,
    pub table: TableRef,
    /// What the change probe saw when these stats were read: the snapshot they belong to.
    pub probe: Option<Probe>,
    /// When the stats were read.
    pub read_at: DateTime<Utc>,
    pub stats: TableStats,
}

#[derive(Serialize, Deserialize)]
struct CacheFile {
    version: u32,
    entries: Vec<Entry>,
}

/// Every entry of the file; nothing when it is missing, unreadable, corrupt or of
/// another version (logged).
pub fn read_all(path: &Path) -> Vec<Entry> {
    let text = match std::fs::read(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => {
            tracing::warn!(path = %path.display(), "stats cache ignored: {e}");
            return Vec::new();
        }
    };
    #[derive(Deserialize)]
    struct Head {
        version: u32,
    }
    match serde_json::from_slice::<Head>(&text) {
        Ok(h) if h.version == VERSION => {}
        Ok(h) => {
            tracing::info!(path = %path.display(), version = h.version, "stats cache of another version ignored");
            return Vec::new();
        }
        Err(e) => {
            tracing::warn!(path = %path.display(), "corrupt stats cache ignored: {e}");
            return Vec::new();
        }
    }
    match serde_json::from_slice::<CacheFile>(&text) {
        Ok(f) => f.entries,
        Err(e) => {
            tracing::warn!(path = %path.display(), "corrupt stats cache ignored: {e}");
            Vec::new()
        }
    }
}

/// The entries of one profile on one coordinator.
pub fn load(path: &Path, profile: &str, url: &str) -> Vec<Entry> {
    read_all(&file_of(path, profile, url))
        .into_iter()
        .filter(|e| e.profile == profile && e.url == url)
        .collect()
}

/// The entries of one profile on one coordinator read at most `max_age` before `now`.
pub fn load_fresh(
    path: &Path,
    profile: &str,
    url: &str,
    now: DateTime<Utc>,
    max_age: Duration,
) -> Vec<Entry> {
    let max_age = chrono::Duration::from_std(max_age).unwrap_or(chrono::Duration::MAX);
    load(path, profile, url)
        .into_iter()
        .filter(|e| now.signed_duration_since(e.read_at) <= max_age)
        .collect()
}

/// Keep `entries` for `profile` on `url` beside what the file holds of its other tables
/// (a check of some tables leaves the others' entries).
pub fn merge(path: &Path, profile: &str, url: &str, entries: Vec<Entry>) -> std::io::Result<()> {
    let mut all: Vec<Entry> = load(path, profile, url)
        .into_iter()
        .filter(|e| !entries.iter().any(|n| n.table == e.table))
        .collect();
    all.extend(entries);
    store(path, profile, url, all)
}

/// Replace what the file of `profile` on `url` holds by `entries` (a table no longer
/// listed is gone), bounded; no other profile's file is read or written.
pub fn store(path: &Path, profile: &str, url: &str, entries: Vec<Entry>) -> std::io::Result<()> {
    // A merge reads the file it then replaces: one store at a time in this process.
    static STORING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = STORING.lock().unwrap_or_else(|e| e.into_inner());
    let path = &file_of(path, profile, url);
    let mut all = entries;
    if all.len() > MAX_ENTRIES {
        all.sort_by_key(|e| std::cmp::Reverse(e.read_at));
        all.truncate(MAX_ENTRIES);
    }
    let text = serde_json::to_vec(&CacheFile {
        version: VERSION,
        entries: all,
    })
    .map_err(std::io::Error::other)?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    crate::files::write_atomic(path, &text, 0o600)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("floe-cache-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn entry(profile: &str, table: &str, secs: i64) -> Entry {
        Entry {
            profile: profile.into(),
            url: "http://t:8080".into(),
            table: TableRef::new("iceberg", "s", table),
            probe: Some(Probe {
                snapshot_id: Some(secs),
                committed_at: DateTime::from_timestamp(secs, 0),
                snapshots: 3,
                metadata_at: None,
                metadata_files: None,
            }),
            read_at: DateTime::from_timestamp(secs, 0).unwrap(),
            stats: TableStats {
                data_files: 12,
                ..Default::default()
            },
        }
    }

    #[test]
    fn round_trip_per_profile_and_url_in_a_private_file() {
        use std::os::unix::fs::PermissionsExt;
        let d = dir("rt");
        let p = d.join("floe").join(FILE_NAME);
        store(&p, "a", "http://t:8080", vec![entry("a", "x", 100)]).unwrap();
        store(&p, "b", "http://t:8080", vec![entry("b", "y", 200)]).unwrap();
        assert_eq!(load(&p, "a", "http://t:8080"), vec![entry("a", "x", 100)]);
        assert_eq!(load(&p, "b", "http://t:8080").len(), 1);
        assert!(load(&p, "a", "http://other:8080").is_empty());
        // A file a profile: a's store never reads or rewrites b's.
        let (fa, fb) = (
            file_of(&p, "a", "http://t:8080"),
            file_of(&p, "b", "http://t:8080"),
        );
        assert_ne!(fa, fb);
        let b_written = std::fs::metadata(&fb).unwrap().modified().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        store(&p, "a", "http://t:8080", vec![entry("a", "x", 101)]).unwrap();
        assert_eq!(
            std::fs::metadata(&fb).unwrap().modified().unwrap(),
            b_written
        );
        let mode = std::fs::metadata(&fa).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        // A merge keeps the profile's other tables.
        merge(&p, "a", "http://t:8080", vec![entry("a", "w", 150)]).unwrap();
        assert_eq!(load(&p, "a", "http://t:8080").len(), 2);
        // A new store of a profile replaces its tables (a dropped one is gone).
        store(&p, "a", "http://t:8080", vec![entry("a", "z", 300)]).unwrap();
        let a = load(&p, "a", "http://t:8080");
        assert_eq!(a.len(), 1);
        assert_eq!(a[0].table.table, "z");
        let now = DateTime::from_timestamp(400, 0).unwrap();
        assert_eq!(
            load_fresh(&p, "a", "http://t:8080", now, Duration::from_secs(100)).len(),
            1
        );
        assert!(load_fresh(&p, "a", "http://t:8080", now, Duration::from_secs(99)).is_empty());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn corrupt_or_other_version_files_are_ignored() {
        let d = dir("bad");
        let p = d.join(FILE_NAME);
        std::fs::write(&p, b"{not json").unwrap();
        assert!(read_all(&p).is_empty());
        std::fs::write(&p, br#"{"version": 99, "entries": [{"what": 1}]}"#).unwrap();
        assert!(read_all(&p).is_empty());
        std::fs::write(&p, br#"{"version": 1, "entries": []}"#).unwrap();
        assert!(read_all(&p).is_empty());
        std::fs::write(
            &p,
            format!(r#"{{"version": {VERSION}, "entries": [{{"what": 1}}]}}"#),
        )
        .unwrap();
        assert!(read_all(&p).is_empty());
        assert!(read_all(&d.join("missing.json")).is_empty());
        // And a store over a corrupt file starts afresh.
        let own = file_of(&p, "a", "http://t:8080");
        std::fs::write(&own, b"{not json").unwrap();
        store(&p, "a", "http://t:8080", vec![entry("a", "x", 1)]).unwrap();
        assert_eq!(read_all(&own).len(), 1);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn the_file_is_bounded_dropping_the_oldest_reads() {
        let d = dir("cap");
        let p = d.join(FILE_NAME);
        let many: Vec<Entry> = (0..MAX_ENTRIES as i64 + 5)
            .map(|i| entry("a", &format!("t{i}"), i))
            .collect();
        store(&p, "a", "http://t:8080", many).unwrap();
        let all = read_all(&file_of(&p, "a", "http://t:8080"));
        assert_eq!(all.len(), MAX_ENTRIES);
        assert!(all.iter().all(|e| e.read_at.timestamp() >= 5));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
