//! A Delta Lake catalog's tables, read through the same entry points as an Iceberg one's
//! (see [`crate::lakehouse::delta`]): the listing learns the catalog's format, and every
//! read of a Delta catalog takes the Delta way.

use std::sync::atomic::Ordering;

use super::{Lakehouse, Layout, PartitionList};
use crate::lakehouse::delta::{self, TableFormat};
use crate::lakehouse::model::{SnapshotInfo, TableRef};
use crate::lakehouse::probe::{Probe, parse_probe};
use crate::lakehouse::summary::Survey;
use crate::trino::{TrinoError, Value};

/// [`Lakehouse::format`]'s states.
pub(super) const FORMAT_UNKNOWN: u8 = 0;
const FORMAT_ICEBERG: u8 = 1;
const FORMAT_DELTA: u8 = 2;

/// How [`Lakehouse::format`] stores `f`.
pub(super) fn format_code(f: TableFormat) -> u8 {
    match f {
        TableFormat::Iceberg => FORMAT_ICEBERG,
        TableFormat::Delta => FORMAT_DELTA,
    }
}

impl Lakehouse {
    /// The format of the catalog's tables, as the listing learned it (Iceberg until then).
    pub fn format(&self) -> TableFormat {
        match self.format.load(Ordering::Relaxed) {
            FORMAT_DELTA => TableFormat::Delta,
            _ => TableFormat::Iceberg,
        }
    }

    pub(super) fn set_format(&self, f: TableFormat) {
        self.format.store(format_code(f), Ordering::Relaxed);
    }

    pub(super) fn is_delta(&self) -> bool {
        self.format() == TableFormat::Delta
    }

    /// Whether the catalog is Delta Lake's, learned first where no listing told (a read of
    /// one table: `floe maintain`, a postmortem).
    pub(super) async fn delta(&self) -> Result<bool, TrinoError> {
        Ok(self.known_format().await? == TableFormat::Delta)
    }

    /// The catalog's format: as the listing learned it, else asked of the catalog list
    /// once (a `floe maintain` lists no table).
    pub async fn known_format(&self) -> Result<TableFormat, TrinoError> {
        if self.format.load(Ordering::Relaxed) == FORMAT_UNKNOWN {
            self.learn_format().await
        } else {
            Ok(self.format())
        }
    }

    /// The catalog's connector, asked once where the listing could not tell (a catalog
    /// without `system.iceberg_tables` on a server that has it): a catalog of another
    /// connector than Iceberg's or Delta Lake's is read as Iceberg, and fails as such.
    pub(super) async fn learn_format(&self) -> Result<TableFormat, TrinoError> {
        let sql = format!(
            "SELECT connector_name FROM system.metadata.catalogs WHERE catalog_name = {}",
            crate::sql::quote_string(&self.catalog)
        );
        let out = self.client.query(&sql).await?;
        let f = out
            .rows
            .first()
            .and_then(|r| r.str("connector_name"))
            .and_then(TableFormat::of_connector)
            .unwrap_or_default();
        self.set_format(f);
        // Kept for the next launch on this server: its listing asks no more.
        let catalog = self.catalog.clone();
        self.learn_entries(|r| r.learned_format(&catalog, f));
        Ok(f)
    }

    /// The surveys of Delta tables: their partitions' totals and history, ten tables a
    /// statement, complete (no file read follows).
    pub(super) async fn delta_survey(
        &self,
        tables: &[TableRef],
    ) -> Vec<(TableRef, Result<Survey, TrinoError>)> {
        let read = self
            .batched(
                tables,
                "delta survey",
                delta::survey_sql,
                delta::parse_survey,
            )
            .await;
        // A table with commits and no partition row is unpartitioned (or empty): its
        // files' totals from their hidden columns, ten tables a statement.
        let whole: Vec<TableRef> = read
            .iter()
            .filter(|(_, r)| r.as_ref().is_ok_and(|(p, h)| p.is_empty() && h.commits > 0))
            .map(|(t, _)| t.clone())
            .collect();
        for t in &whole {
            self.set_file_layout(t, Layout::Unpartitioned);
        }
        let mut totals: std::collections::HashMap<TableRef, Result<(u64, u64), TrinoError>> =
            Default::default();
        if !whole.is_empty() {
            let found = self
                .batched(
                    &whole,
                    "delta files",
                    delta::unpartitioned_sql,
                    |rows, n| {
                        crate::lakehouse::probe::by_index(rows, n, "delta files", |r| {
                            (r.u64("files").unwrap_or(0), r.u64("bytes").unwrap_or(0))
                        })
                    },
                )
                .await;
            totals.extend(found);
        }
        // Deletion vectors matter where rows were removed since the newest OPTIMIZE: their
        // property is read for those tables alone, ten a statement.
        let removed: Vec<TableRef> = read
            .iter()
            .filter(|(_, r)| r.as_ref().is_ok_and(|(_, h)| h.removals_since > 0))
            .map(|(t, _)| t.clone())
            .collect();
        let mut dv: std::collections::HashMap<TableRef, bool> = Default::default();
        if !removed.is_empty() {
            let found = self
                .batched(
                    &removed,
                    "deletion vectors",
                    delta::deletion_vectors_sql,
                    |rows, n| {
                        crate::lakehouse::probe::by_index(rows, n, "deletion vectors", |r| {
                            r.u64("dv").unwrap_or(0) > 0
                        })
                    },
                )
                .await;
            // (a failed read leaves the finding out, not the table's verdict)
            dv.extend(found.into_iter().filter_map(|(t, r)| Some((t, r.ok()?))));
        }
        read.into_iter()
            .map(|(t, r)| {
                let on = dv.get(&t).copied().unwrap_or(false);
                let survey = r.and_then(|(parts, mut history)| {
                    history.deletion_vectors = on;
                    let partitioned = !parts.is_empty();
                    let parts = match totals.remove(&t) {
                        Some(whole) => vec![whole?],
                        None => parts,
                    };
                    Ok(Survey {
                        totals: Default::default(),
                        stats: delta::stats(&parts, &history, partitioned, &self.scan),
                        meta: None,
                        props: None,
                        history: Vec::new(),
                        long_history: false,
                        removed_by_newest: None,
                        complete: true,
                    })
                });
                (t, survey)
            })
            .collect()
    }

    /// The change probe of Delta tables: the newest version of each, ten a statement.
    pub(super) async fn delta_probe(
        &self,
        tables: &[TableRef],
    ) -> Vec<(TableRef, Result<Probe, TrinoError>)> {
        self.batched(tables, "change probe", delta::probe_sql, parse_probe)
            .await
    }

    /// One Delta table's partitions. An unpartitioned table's `$partitions` has no
    /// `partition` column (and no row): Trino refuses the statement at analysis, and the
    /// table's one "partition" is its files' totals from their hidden columns, as the
    /// survey reads them. A table known unpartitioned (by its survey, or by that refusal
    /// once) is read that way at once, as an Iceberg table's learned layout is.
    pub(super) async fn delta_partitions(&self, t: &TableRef) -> Result<PartitionList, TrinoError> {
        let unpartitioned = self.layouts_of(t) == Some(Layout::Unpartitioned);
        let listed = if unpartitioned {
            None
        } else {
            match self.client.query(&delta::partitions_sql(t)).await {
                Ok(out) => Some(delta::parse_partitions(&out.rows, &self.scan)),
                Err(TrinoError::Query {
                    ref error_name,
                    ref message,
                    ..
                }) if super::layouts::missing_partition(error_name, message) => {
                    self.set_file_layout(t, Layout::Unpartitioned);
                    None
                }
                Err(e) => return Err(e),
            }
        };
        let partitions = match listed {
            Some(p) => p,
            None => {
                let whole = delta::unpartitioned_sql(std::slice::from_ref(t));
                let out = self.client.query(&whole).await?;
                delta::parse_partitions(&out.rows, &self.scan)
                    .into_iter()
                    .filter(|p| p.data_files > 0)
                    .collect()
            }
        };
        let layout_fields = partitions
            .first()
            .map(|p| p.values.iter().map(|(k, _)| k.clone()).collect())
            .unwrap_or_default();
        Ok(PartitionList {
            target_file_size: self.scan.target_file_size,
            layout_fields,
            partitions,
        })
    }

    /// What is left in the partitions of a Delta table matching any of `targets` (each
    /// the values a plan step recorded, all fields or some): its partitions read again
    /// (`$partitions`, one statement), their files and proved small files summed.
    pub(super) async fn delta_recount(
        &self,
        t: &TableRef,
        targets: &[Vec<(String, Option<String>)>],
    ) -> Result<(u64, u64), TrinoError> {
        let list = self.delta_partitions(t).await?;
        Ok(delta::recount(&list.partitions, targets))
    }

    /// One Delta table's history as its snapshots, oldest first: a version a snapshot;
    /// `OPTIMIZE` a compaction, a write an append (a blind append) or an overwrite.
    pub(super) async fn delta_snapshots(
        &self,
        t: &TableRef,
    ) -> Result<Vec<SnapshotInfo>, TrinoError> {
        let out = self
            .client
            .query(&delta::history_sql(t, self.snapshot_limit))
            .await?;
        let mut list: Vec<SnapshotInfo> = out
            .rows
            .iter()
            .filter_map(|r| {
                let operation = r.str("operation").unwrap_or("");
                Some(SnapshotInfo {
                    committed_at: r.get("committed_at").and_then(Value::as_datetime)?,
                    snapshot_id: r.i64("version")?,
                    parent_id: r.i64("parent_id"),
                    operation: delta::operation_of(
                        operation,
                        r.get("is_blind_append").and_then(Value::as_bool),
                    ),
                    added_data_files: None,
                    // an OPTIMIZE rewrote files: what marks a compaction
                    deleted_data_files: (operation == "OPTIMIZE").then_some(1),
                    total_data_files: None,
                    added_records: None,
                    total_records: None,
                    total_delete_files: None,
                    added_files_size: None,
                    removed_files_size: None,
                    trino_user: r.str("user_name").map(str::to_string),
                    trino_query_id: None,
                })
            })
            .collect();
        list.reverse();
        Ok(list)
    }

    /// What `t`'s log tells of its removed files at `retention_secs` and of its live
    /// files' deletion vectors: one statement over its commits ([`delta::log::log_sql`]).
    pub async fn delta_log(
        &self,
        t: &TableRef,
        retention_secs: u64,
    ) -> Result<delta::log::LogFacts, TrinoError> {
        if let Some(l) = self.sibling(&t.catalog) {
            return Box::pin(l.delta_log(t, retention_secs)).await;
        }
        let out = self
            .client
            .query(&delta::log::log_sql(t, retention_secs))
            .await?;
        Ok(delta::log::parse_log(&out.rows))
    }
}
