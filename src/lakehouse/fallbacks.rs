//! What floe learned a server cannot read, so that it never pays for the same failure
//! twice: in one connection, and from one launch to the next while the cluster runs the
//! same server version (a file per coordinator beside the stats cache; an upgrade that
//! fixes the read is tried afresh).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::model::TableRef;

/// Which tables' `$entries` the server failed to read, and per catalog how many tables
/// failed and how many read it. A catalog whose first [`ENTRIES_GIVE_UP`] tables all failed
/// and none read it is read through `$files` from then on: on the real Trino 476 every
/// cold read of a pyiceberg-written table cost a failed `$entries` statement (its whole
/// planning, ~0.9 s) before the `$files` one, 300 failed statements in a 300-table cold
/// start. One table that reads it keeps `$entries` for the catalog's others.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EntriesRecord {
    tables: BTreeSet<TableRef>,
    catalogs: BTreeMap<String, CatalogRecord>,
    /// The format of each catalog whose listing had to ask its connector (one without
    /// `system.iceberg_tables`: a Delta Lake catalog): the next launch lists it the
    /// Delta way at once, with no failed statement first.
    #[serde(default)]
    formats: BTreeMap<String, crate::lakehouse::delta::TableFormat>,
    /// Why the coordinator's query list (`GET /v1/query`) was refused, when it was: the
    /// recent writes are read with a statement over `system.runtime.queries` instead.
    #[serde(default)]
    query_list: Option<String>,
}

/// One catalog's `$entries` reads.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CatalogRecord {
    pub failed: u32,
    pub read: u32,
    /// The server's words for the first failure (sanitised).
    pub error: Option<String>,
}

/// Tables of one catalog whose `$entries` failed, none read, before the catalog is read
/// through `$files` (a few, as that many run at once at a cold start).
pub const ENTRIES_GIVE_UP: u32 = 3;

impl EntriesRecord {
    /// `t`'s `$entries` failed (with `error`, the server's words); whether that is news
    /// (a table not known to fail before).
    pub fn failed(&mut self, t: &TableRef, error: &str) -> bool {
        if !self.tables.insert(t.clone()) {
            return false;
        }
        let c = self.catalogs.entry(t.catalog.clone()).or_default();
        c.failed += 1;
        if c.error.is_none() {
            c.error = Some(crate::text::sanitize(error).chars().take(300).collect());
        }
        true
    }

    /// `t`'s `$entries` read; whether that is news (its catalog's first read).
    pub fn read(&mut self, t: &TableRef) -> bool {
        let c = self.catalogs.entry(t.catalog.clone()).or_default();
        c.read += 1;
        c.read == 1
    }

    pub fn unreadable(&self, t: &TableRef) -> bool {
        self.tables.contains(t) || self.catalog_unreadable(&t.catalog)
    }

    /// Whether the catalog is read through `$files` for every table.
    pub fn catalog_unreadable(&self, catalog: &str) -> bool {
        self.catalogs
            .get(catalog)
            .is_some_and(|c| c.failed >= ENTRIES_GIVE_UP && c.read == 0)
    }

    /// Each catalog with a table that failed, with its record.
    pub fn catalogs(&self) -> impl Iterator<Item = (&str, &CatalogRecord)> {
        self.catalogs
            .iter()
            .filter(|(_, c)| c.failed > 0)
            .map(|(k, c)| (k.as_str(), c))
    }

    /// What `other` learned that this record does not know.
    /// Keep `catalog`'s format, learned from its connector; whether it is new.
    pub fn learned_format(
        &mut self,
        catalog: &str,
        format: crate::lakehouse::delta::TableFormat,
    ) -> bool {
        self.formats.insert(catalog.to_string(), format) != Some(format)
    }

    /// `catalog`'s format as an earlier listing learned it from its connector.
    pub fn format(&self, catalog: &str) -> Option<crate::lakehouse::delta::TableFormat> {
        self.formats.get(catalog).copied()
    }

    /// The coordinator refused its query list, in `why`'s words; whether that is news.
    pub fn query_list_refused(&mut self, why: &str) -> bool {
        let news = self.query_list.is_none();
        if news {
            self.query_list = Some(crate::text::sanitize(why).chars().take(300).collect());
        }
        news
    }

    /// Why the coordinator's query list was refused, if it was.
    pub fn query_list(&self) -> Option<&str> {
        self.query_list.as_deref()
    }

    pub fn absorb(&mut self, other: EntriesRecord) {
        if self.query_list.is_none() {
            self.query_list = other.query_list;
        }
        for (k, f) in other.formats {
            self.formats.entry(k).or_insert(f);
        }
        for t in other.tables {
            self.tables.insert(t);
        }
        for (k, c) in other.catalogs {
            let mine = self.catalogs.entry(k).or_default();
            mine.failed = mine.failed.max(c.failed);
            mine.read = mine.read.max(c.read);
            if mine.error.is_none() {
                mine.error = c.error;
            }
        }
    }
}

/// A coordinator's URL as the fallbacks name it (`http://host:8080` and `…:8080/` are one).
fn coordinator(url: &str) -> &str {
    url.trim_end_matches('/')
}

/// The file of one coordinator's learned fallbacks beside the stats cache `stats_cache`.
pub fn file_of(stats_cache: &Path, url: &str) -> PathBuf {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    coordinator(url).hash(&mut h);
    stats_cache.with_file_name(format!("fallbacks-{:016x}.json", h.finish()))
}

/// The format of [`file_of`]'s file: another is ignored.
const FORMAT: u32 = 1;

#[derive(Serialize, Deserialize)]
struct FallbacksFile {
    format: u32,
    url: String,
    /// The server version the record was learned on.
    server_version: u32,
    entries: EntriesRecord,
}

/// What was learned on `url` while it ran `server_version`; nothing from a missing,
/// corrupt or other-version file (a server upgraded since may read what its predecessor
/// could not).
pub fn load(path: &Path, url: &str, server_version: u32) -> Option<EntriesRecord> {
    let text = std::fs::read(path).ok()?;
    match serde_json::from_slice::<FallbacksFile>(&text) {
        Ok(f)
            if f.format == FORMAT
                && coordinator(&f.url) == coordinator(url)
                && f.server_version == server_version =>
        {
            Some(f.entries)
        }
        Ok(_) => None,
        Err(e) => {
            tracing::warn!(path = %path.display(), "learned fallbacks ignored: {e}");
            None
        }
    }
}

/// Keep `entries`, learned on `url` running `server_version`: written whole to a
/// temporary file (0600) and renamed over the old one.
pub fn store(
    path: &Path,
    url: &str,
    server_version: u32,
    entries: &EntriesRecord,
) -> std::io::Result<()> {
    let text = serde_json::to_vec_pretty(&FallbacksFile {
        format: FORMAT,
        url: coordinator(url).to_string(),
        server_version,
        entries: entries.clone(),
    })
    .map_err(std::io::Error::other)?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    crate::files::write_atomic(path, &text, 0o600)
}

#[cfg(test)]
mod tests;
