//! How each table's files group into partitions ([`Layout`]): learned in batches ahead
//! of the reads, from the statements that fail on an unpartitioned table, or remembered
//! from the cache; and the per-table statement run in the form its layout needs.

use super::{FILES_PARTITION_SINCE, Lakehouse, Layout, MetaTables};
use crate::lakehouse::model::TableRef;
use crate::trino::{QueryOptions, Row, TrinoError};

impl Lakehouse {
    pub(super) fn file_layout(&self, t: &TableRef) -> Layout {
        if !self.supports(FILES_PARTITION_SINCE) {
            return Layout::Directory;
        }
        self.layouts
            .lock()
            .ok()
            .and_then(|m| m.get(t).copied())
            .unwrap_or(Layout::PartitionColumn)
    }

    /// Layouts learned earlier (the stats cache keeps whether each table was partitioned),
    /// so that a table known to be unpartitioned is asked the unpartitioned form at once.
    /// A layout this connection has learned itself is kept.
    pub fn remember_layouts(&self, known: impl IntoIterator<Item = (TableRef, Layout)>) {
        if let Ok(mut m) = self.layouts.lock() {
            for (t, l) in known {
                m.entry(t).or_insert(l);
            }
        }
    }

    /// Forget every table's layout and spec, remembered or learned: the next read of each
    /// table learns them again (a manual refresh, so that a table re-partitioned since
    /// is seen as it is now, not as the cache or an earlier read knew it).
    pub fn forget_layouts(&self) {
        if let Ok(mut m) = self.layouts.lock() {
            m.clear();
        }
        if let Ok(mut m) = self.specs.lock() {
            m.clear();
        }
    }

    /// The declared layout of `t` read again from the coordinator (`DESCRIBE`, `SHOW
    /// CREATE TABLE`), whatever the cache or an earlier read knew, and whether its files
    /// are partitioned set from it: a table partitioned since is read as it is now.
    pub async fn relearn_layout(
        &self,
        t: &TableRef,
    ) -> Result<crate::lakehouse::plan::TableLayout, TrinoError> {
        if let Ok(mut m) = self.specs.lock() {
            m.remove(t);
        }
        let layout = self.table_layout(t).await?;
        self.set_file_layout(
            t,
            if layout.partitioning.is_empty() {
                Layout::Unpartitioned
            } else {
                Layout::PartitionColumn
            },
        );
        Ok(layout)
    }

    pub(super) fn set_file_layout(&self, t: &TableRef, l: Layout) {
        if let Ok(mut m) = self.layouts.lock() {
            m.insert(t.clone(), l);
        }
    }

    /// What was learned of `t`'s layout, whatever the server's release.
    pub(super) fn layouts_of(&self, t: &TableRef) -> Option<Layout> {
        self.layouts.lock().ok().and_then(|m| m.get(t).copied())
    }

    pub(super) fn layout_known(&self, t: &TableRef) -> bool {
        self.layouts.lock().is_ok_and(|m| m.contains_key(t))
    }

    /// Learn whether `t` is partitioned before its first per-file statement, from its
    /// manifests' partition fields ([`Lakehouse::file_meta`], read with the other tables
    /// waiting for a file read): a statement that would fail on an unpartitioned table
    /// is never sent (failed statements are what a coordinator's operators see first).
    /// What the manifests cannot tell (a table without any) is learned by the first
    /// statement, as a server older than `FILES_PARTITION_SINCE` always does.
    async fn learn_layout(&self, t: &TableRef) {
        if !self.supports(FILES_PARTITION_SINCE) || self.layout_known(t) {
            return;
        }
        match self.file_meta(t).await {
            // The layout is learned; the metadata stays for the table's file read in this
            // refresh (the next listing forgets it).
            Ok(m) => {
                self.pending.lock().await.meta.insert(t.clone(), m);
            }
            Err(e) => tracing::debug!(table = %t, "layout not learned: {e}"),
        }
    }

    /// Run a per-table statement; when `$files` has no `partition` column the table is
    /// unpartitioned: remember that and run the unpartitioned form.
    ///
    /// A statement over `$entries` that the server fails with an internal error (not the
    /// user's: a bad name, a denied table) is run again over `$files`; when that answers,
    /// the table is read through `$files` from then on (see `entries_unreadable`).
    pub(super) async fn with_layout<F>(
        &self,
        t: &TableRef,
        build: F,
    ) -> Result<(Vec<Row>, Layout), TrinoError>
    where
        F: Fn(Layout, MetaTables) -> String,
    {
        self.learn_layout(t).await;
        let layout = self.file_layout(t);
        let meta = self.meta_tables_for(t);
        match self.run_layout(t, layout, meta, &build).await {
            Err(TrinoError::Query {
                ref error_name,
                ref message,
                ..
            }) if meta.entries && error_name == "GENERIC_INTERNAL_ERROR" => {
                let files = MetaTables {
                    entries: false,
                    ..meta
                };
                let layout = self.file_layout(t);
                let again = self.run_layout(t, layout, files, &build).await;
                if again.is_ok() {
                    tracing::warn!(
                        table = %t,
                        "the server cannot read $entries ({}); reading $files instead, without file write times",
                        crate::text::sanitize(message)
                    );
                    self.learn_entries(|r| r.failed(t, &format!("{error_name}: {message}")));
                }
                again
            }
            other => {
                if meta.entries && other.is_ok() {
                    self.learn_entries(|r| r.read(t));
                }
                other
            }
        }
    }

    async fn run_layout<F>(
        &self,
        t: &TableRef,
        layout: Layout,
        meta: MetaTables,
        build: &F,
    ) -> Result<(Vec<Row>, Layout), TrinoError>
    where
        F: Fn(Layout, MetaTables) -> String,
    {
        match self
            .client
            .execute(&build(layout, meta), QueryOptions::default())
            .await
        {
            Ok(out) => Ok((out.rows, layout)),
            Err(TrinoError::Query {
                ref error_name,
                ref message,
                ..
            }) if layout == Layout::PartitionColumn && missing_partition(error_name, message) => {
                self.set_file_layout(t, Layout::Unpartitioned);
                let out = self
                    .client
                    .execute(&build(Layout::Unpartitioned, meta), QueryOptions::default())
                    .await?;
                Ok((out.rows, Layout::Unpartitioned))
            }
            Err(e) => Err(e),
        }
    }
}

/// Whether a statement failed because the table's files have no `partition` field (an
/// unpartitioned table): Trino says COLUMN_NOT_FOUND for `f.partition` over `$files`
/// ("Column 'f.partition' cannot be resolved") and INVALID_COLUMN_REFERENCE for the field
/// of a row, `e.data_file.partition` over `$entries` ("Column reference
/// 'e.data_file.partition' is invalid"), and COLUMN_NOT_FOUND for `partition` over a
/// Delta Lake table's `$partitions` ("Column 'partition' cannot be resolved").
pub(super) fn missing_partition(error_name: &str, message: &str) -> bool {
    matches!(error_name, "COLUMN_NOT_FOUND" | "INVALID_COLUMN_REFERENCE")
        && message.contains("partition")
}

#[cfg(test)]
mod missing_partition_tests {
    use super::missing_partition;

    #[test]
    fn both_of_trinos_answers_for_a_missing_partition_field_mean_unpartitioned() {
        assert!(missing_partition(
            "COLUMN_NOT_FOUND",
            "line 3:10: Column 'f.partition' cannot be resolved"
        ));
        assert!(missing_partition(
            "INVALID_COLUMN_REFERENCE",
            "line 10:47: Column reference 'e.data_file.partition' is invalid"
        ));
        assert!(!missing_partition(
            "INVALID_COLUMN_REFERENCE",
            "line 1:8: Column reference 'x.size' is invalid"
        ));
        assert!(!missing_partition("TABLE_NOT_FOUND", "partition"));
    }
}
