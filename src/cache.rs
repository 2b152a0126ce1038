//! The warm start: the last stats of every table, kept per profile, coordinator URL,
//! table and snapshot in `$XDG_CACHE_HOME/floe/stats.json`, so the first frame shows the
//! last known state of the fleet while the change probe revalidates it.
//!
//! The file is a cache: a missing, corrupt or other-version file is ignored (with a log
//! line), never an error. It is written whole to a temporary file (0600) and renamed over
//! the old one, so a reader never sees half of it, and it is bounded: past
//! [`MAX_ENTRIES`] the tables read longest ago are dropped.

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
pub const VERSION: u32 = 2;
/// Tables kept across every profile and coordinator.
pub const MAX_ENTRIES: usize = 20_000;

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
    read_all(path)
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

/// Replace what the file holds for `profile` on `url` by `entries` (a table no longer
/// listed is gone), keeping the other profiles' and coordinators' entries, bounded.
pub fn store(path: &Path, profile: &str, url: &str, entries: Vec<Entry>) -> std::io::Result<()> {
    // Several profiles read at once (`floe --all`) store into one file: one read-modify-
    // write at a time, so no profile's store drops another's entries.
    static STORING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = STORING.lock().unwrap_or_else(|e| e.into_inner());
    let mut all: Vec<Entry> = read_all(path)
        .into_iter()
        .filter(|e| !(e.profile == profile && e.url == url))
        .collect();
    all.extend(entries);
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
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
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
        store(&p, "a", "http://t:8080", vec![entry("a", "x", 1)]).unwrap();
        assert_eq!(read_all(&p).len(), 1);
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
        let all = read_all(&p);
        assert_eq!(all.len(), MAX_ENTRIES);
        assert!(all.iter().all(|e| e.read_at.timestamp() >= 5));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
