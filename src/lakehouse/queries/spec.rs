//! A table's declared layout (columns and partition spec, from `DESCRIBE` and `SHOW
//! CREATE TABLE`), read once per table and cached for the life of the connection.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::{CachedSpec, Lakehouse};
use crate::lakehouse::delta::TableFormat;
use crate::lakehouse::model::TableRef;
use crate::lakehouse::plan::TableLayout;
use crate::lakehouse::statements::{describe_sql, show_create_sql};
use crate::trino::{TrinoError, Value};

impl Lakehouse {
    /// Columns and partitioning of a table (`DESCRIBE` and `SHOW CREATE TABLE`): how its
    /// partition values read and how a maintenance plan types its predicates. Read once
    /// per table and kept for the life of this connection.
    pub async fn table_layout(&self, t: &TableRef) -> Result<TableLayout, TrinoError> {
        if let Some(l) = self.sibling(&t.catalog) {
            return Box::pin(l.table_layout(t)).await;
        }
        Ok(self.spec(t).await?.as_ref().clone())
    }

    async fn spec(&self, t: &TableRef) -> Result<Arc<TableLayout>, TrinoError> {
        let cached = self.specs.lock().ok().and_then(|m| m.get(t).cloned());
        match cached {
            Some(c) => Ok(c.layout),
            None => self.read_spec(t, &BTreeSet::new()).await,
        }
    }

    /// The cached spec, read again once when it does not know a field `$files` shows
    /// (the spec evolved since it was read).
    pub(super) async fn spec_for_fields(
        &self,
        t: &TableRef,
        fields: &BTreeSet<String>,
    ) -> Result<Arc<TableLayout>, TrinoError> {
        let cached = self.specs.lock().ok().and_then(|m| m.get(t).cloned());
        match cached {
            Some(c)
                if fields
                    .iter()
                    .all(|f| c.layout.field(f).is_some() || c.unknown.contains(f)) =>
            {
                Ok(c.layout)
            }
            _ => self.read_spec(t, fields).await,
        }
    }

    async fn read_spec(
        &self,
        t: &TableRef,
        fields: &BTreeSet<String>,
    ) -> Result<Arc<TableLayout>, TrinoError> {
        let cols = self.client.query(&describe_sql(t)).await?;
        let columns = cols
            .rows
            .iter()
            .filter_map(|r| Some((r.str("Column")?.to_string(), r.str("Type")?.to_string())))
            .collect();
        let create = self.client.query(&show_create_sql(t)).await?;
        let text = create
            .rows
            .first()
            .and_then(|r| r.values.first())
            .and_then(Value::as_str)
            .unwrap_or("");
        let format = self.format();
        let partitioning = match format {
            TableFormat::Delta => crate::lakehouse::plan::delta_partitioning_from_show_create(text),
            TableFormat::Iceberg => crate::lakehouse::plan::partitioning_from_show_create(text),
        }
        .map_err(|m| TrinoError::Malformed {
            url: self.client.url().to_string(),
            message: format!("partitioning of {t}: {m}"),
        })?;
        let layout = Arc::new(TableLayout {
            columns,
            partitioning,
            live_specs: Vec::new(),
            format,
        });
        let unknown = fields
            .iter()
            .filter(|f| layout.field(f).is_none())
            .cloned()
            .collect();
        if let Ok(mut m) = self.specs.lock() {
            m.insert(
                t.clone(),
                CachedSpec {
                    layout: layout.clone(),
                    unknown,
                },
            );
        }
        Ok(layout)
    }
}
