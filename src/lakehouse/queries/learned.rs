//! What a connection learns its server cannot read, kept for the next launch (see
//! [`crate::lakehouse::fallbacks`]).

use std::sync::Arc;

use super::{EntriesRecord, Lakehouse, MetaTables};
use crate::lakehouse::model::TableRef;

impl Lakehouse {
    /// Keep what this connection learns the server cannot read in the fallbacks file of
    /// its coordinator beside `stats_cache`, and start from what it holds for the
    /// server's version (read at [`Lakehouse::connect`]).
    pub fn with_fallbacks_beside(mut self, stats_cache: &std::path::Path) -> Lakehouse {
        self.fallbacks_file = Some(Arc::new(crate::lakehouse::fallbacks::file_of(
            stats_cache,
            self.client.url().as_str(),
        )));
        self
    }

    /// The file what this connection learns is kept in, when kept.
    pub fn fallbacks_file(&self) -> Option<&std::path::Path> {
        self.fallbacks_file.as_deref().map(|p| p.as_path())
    }

    /// What this connection knows the server cannot read.
    pub fn learned_fallbacks(&self) -> EntriesRecord {
        self.entries_unreadable
            .lock()
            .map(|r| r.clone())
            .unwrap_or_default()
    }

    /// Record a read of `$entries` (`f` says whether it taught anything new), and keep
    /// what is new for the next launch.
    pub(super) fn learn_entries(&self, f: impl FnOnce(&mut EntriesRecord) -> bool) {
        let Ok(mut r) = self.entries_unreadable.lock() else {
            return;
        };
        if !f(&mut r) {
            return;
        }
        let (Some(path), Some(version)) = (self.fallbacks_file.as_deref(), self.server_version())
        else {
            return;
        };
        if let Err(e) =
            crate::lakehouse::fallbacks::store(path, self.client.url().as_str(), version, &r)
        {
            tracing::warn!(path = %path.display(), "learned fallbacks not kept: {e}");
        }
    }

    /// `m` with files dated by their modification time where this server has `$entries`
    /// but `m` reads `$files` instead (it failed for the table): what the waiting age of
    /// small files needs. Servers without `$entries` keep the newest compaction.
    pub fn dated(&self, m: MetaTables) -> MetaTables {
        MetaTables {
            file_times: !m.entries && self.meta_tables().entries,
            ..m
        }
    }

    /// The metadata tables to read `t` through: [`Lakehouse::meta_tables`] less `$entries`
    /// where this server could not read it for `t`.
    pub fn meta_tables_for(&self, t: &TableRef) -> MetaTables {
        let mut m = self.meta_tables();
        if m.entries
            && self
                .entries_unreadable
                .lock()
                .is_ok_and(|s| s.unreadable(t))
        {
            m.entries = false;
        }
        m
    }
}
