//! The partitions of one table: their file counts and sizes, values rendered from the
//! table's spec, and the recount of what a maintenance step left in them.

use std::collections::BTreeSet;

use super::{Lakehouse, Layout, PartitionList};
use crate::lakehouse::model::{PartitionStats, TableRef};
use crate::lakehouse::statements::{
    partition_field_names, partition_value_text, partitions_sql, recount_in_spec_sql,
};
use crate::trino::{TrinoError, Value};

impl Lakehouse {
    /// Per-partition file counts and sizes of one table, values rendered by each field's
    /// transform from the table's spec (see [`Lakehouse::table_layout`]); where `$entries`
    /// failed for it, its small files dated by their modification times (the operator
    /// looks: see [`Lakehouse::dated`]).
    pub async fn partitions(&self, t: &TableRef) -> Result<PartitionList, TrinoError> {
        if let Some(l) = self.sibling(&t.catalog) {
            return Box::pin(l.partitions(t)).await;
        }
        if self.delta().await? {
            return self.delta_partitions(t).await;
        }
        let (rows, layout) = self
            .with_layout(t, |l, m| partitions_sql(t, &self.scan, l, self.dated(m)))
            .await?;
        let spec = if layout == Layout::PartitionColumn && !rows.is_empty() {
            Some(
                self.spec_for_fields(t, &partition_field_names(&rows))
                    .await?,
            )
        } else {
            None
        };
        let mut list = PartitionList::default();
        for r in &rows {
            list.target_file_size = r.u64("target").unwrap_or(self.scan.target_file_size);
            let values = match (layout, r.get("part")) {
                (Layout::PartitionColumn, Some(Value::Row(fields))) => fields
                    .iter()
                    .enumerate()
                    .map(|(i, (name, v))| {
                        let name = name.clone().unwrap_or_else(|| format!("field{i}"));
                        let field = spec.as_ref().and_then(|s| s.field(&name));
                        let text = (!v.is_null()).then(|| partition_value_text(field, v));
                        (name, text)
                    })
                    .collect(),
                (Layout::Directory, Some(v)) => {
                    vec![(
                        "path".to_string(),
                        v.as_str()
                            .map(|p| p.rsplit('/').next().unwrap_or(p).to_string()),
                    )]
                }
                _ => Vec::new(),
            };
            if list.layout_fields.is_empty() {
                list.layout_fields = values.iter().map(|(k, _)| k.clone()).collect();
            }
            list.partitions.push(PartitionStats {
                values,
                data_files: r.u64("files").unwrap_or(0),
                small_files: r.u64("small_files").unwrap_or(0),
                total_bytes: r.u64("bytes").unwrap_or(0),
                records: r.u64("records").unwrap_or(0),
                min_file: r.u64("min_size").unwrap_or(0),
                max_file: r.u64("max_size").unwrap_or(0),
                delete_files: r.u64("delete_files").unwrap_or(0),
                oldest_small_file_at: r.get("oldest_small").and_then(Value::as_datetime),
                spec_id: r
                    .get("spec")
                    .and_then(Value::as_i64)
                    .and_then(|n| i32::try_from(n).ok()),
            });
        }
        // The spec tells partitions apart only when the live files span more than one.
        let specs: BTreeSet<Option<i32>> = list.partitions.iter().map(|p| p.spec_id).collect();
        if specs.len() < 2 {
            for p in &mut list.partitions {
                p.spec_id = None;
            }
        }
        if list.target_file_size == 0 {
            list.target_file_size = self.scan.target_file_size;
        }
        Ok(list)
    }

    /// Data files, and those below `threshold`, left in the partitions matching any of
    /// `targets` (rendered values, as a plan step records them): one aggregate over
    /// `$files` with one row back.
    pub async fn recount(
        &self,
        t: &TableRef,
        targets: &[Vec<(String, Option<String>)>],
        threshold: u64,
    ) -> Result<(u64, u64), TrinoError> {
        self.recount_in_spec(t, None, targets, threshold).await
    }

    /// [`Lakehouse::recount`] among the files of partition spec `spec_id` only, when given.
    pub async fn recount_in_spec(
        &self,
        t: &TableRef,
        spec_id: Option<i32>,
        targets: &[Vec<(String, Option<String>)>],
        threshold: u64,
    ) -> Result<(u64, u64), TrinoError> {
        if let Some(l) = self.sibling(&t.catalog) {
            return Box::pin(l.recount_in_spec(t, spec_id, targets, threshold)).await;
        }
        if self.delta().await? {
            return self.delta_recount(t, targets).await;
        }
        let names: BTreeSet<String> = targets.iter().flatten().map(|(k, _)| k.clone()).collect();
        let spec = self.spec_for_fields(t, &names).await?;
        let sql = recount_in_spec_sql(t, &spec, spec_id, targets, threshold).map_err(|m| {
            TrinoError::Malformed {
                url: self.client.url().to_string(),
                message: format!("re-reading partitions of {t}: {m}"),
            }
        })?;
        let out = self.client.query(&sql).await?;
        let r = out.rows.first();
        Ok((
            r.and_then(|r| r.u64("files")).unwrap_or(0),
            r.and_then(|r| r.u64("small_files")).unwrap_or(0),
        ))
    }
}
