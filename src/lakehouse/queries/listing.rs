//! The listing of a catalog's tables, which learns the catalog's format.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::{ICEBERG_TABLES_SINCE, Lakehouse, Pending, discover_sql, glob_match};
use crate::lakehouse::delta;
use crate::lakehouse::model::TableRef;
use crate::trino::TrinoError;

/// What a listing of several catalogs is told of each catalog's tables as they come
/// ([`Lakehouse::discover_in_parts`]).
pub type OnPart<'a> = &'a (dyn Fn(Vec<TableRef>) + Send + Sync);

impl Lakehouse {
    /// Every table of the catalog (Iceberg, or Delta Lake) in the given schemas (all when
    /// empty), filtered by globs over `schema.table`, sorted; then those of the catalogs
    /// read beside it (see `catalogs`), each catalog's sorted.
    pub async fn discover(
        &self,
        schemas: &[String],
        globs: &[String],
    ) -> Result<Vec<TableRef>, TrinoError> {
        self.discover_in_parts(schemas, globs, &|_| {}).await
    }

    /// [`Lakehouse::discover`], each catalog's tables told to `on_part` as they come while
    /// another catalog's are still awaited (the last catalog's come with the whole). The
    /// catalogs are listed at once, and a cold start surveys a catalog's tables as soon as
    /// they are in: on the lab's Trino 476 an Iceberg listing answers in 0.06 s and a
    /// Delta Lake one (`information_schema`) in 0.4 s, which the first survey of the
    /// Iceberg tables no longer waits for.
    pub async fn discover_in_parts(
        &self,
        schemas: &[String],
        globs: &[String],
        on_part: OnPart<'_>,
    ) -> Result<Vec<TableRef>, TrinoError> {
        self.find_catalogs().await?;
        // A new listing starts a new refresh: what the last one left unread goes (the
        // catalogs share it), before any catalog's tables are told.
        let siblings = self.siblings();
        for l in std::iter::once(self).chain(&siblings) {
            *l.pending.lock().await = Pending::default();
        }
        let waiting = AtomicUsize::new(1 + siblings.len());
        let told = |r: Result<Vec<TableRef>, TrinoError>| {
            let last = waiting.fetch_sub(1, Ordering::AcqRel) == 1;
            if let (Ok(tables), false) = (&r, last)
                && !tables.is_empty()
            {
                on_part(tables.clone());
            }
            r
        };
        let (own, others) = tokio::join!(
            async { told(self.own_tables(schemas, globs).await) },
            futures::future::try_join_all(
                siblings
                    .iter()
                    .map(|l| Box::pin(async { told(l.own_tables(schemas, globs).await) }))
            )
        );
        let mut tables = own?;
        // The other catalogs read beside this one, after its own tables.
        tables.extend(others?.into_iter().flatten());
        *self.last_listing.lock().expect("listing lock") =
            Some((schemas.to_vec(), globs.to_vec(), tables.clone()));
        Ok(tables)
    }

    /// This catalog's own tables, sorted (its format learned on the way).
    async fn own_tables(
        &self,
        schemas: &[String],
        globs: &[String],
    ) -> Result<Vec<TableRef>, TrinoError> {
        let mut rows = None;
        if self.absent() {
            // Read by default, and the cluster has no catalog of this name: its others.
            rows = Some(Vec::new());
        } else if self.supports(ICEBERG_TABLES_SINCE) && !self.is_delta() {
            let sql = discover_sql(&self.catalog, schemas, true);
            match self.client.query(&sql).await {
                Ok(out) => {
                    self.set_format(delta::TableFormat::Iceberg);
                    rows = Some(out.rows)
                }
                Err(TrinoError::Query { ref error_name, .. })
                    if matches!(error_name.as_str(), "TABLE_NOT_FOUND" | "SCHEMA_NOT_FOUND") =>
                {
                    // Not an Iceberg catalog (a Delta Lake one?): its connector says.
                    self.learn_format().await?;
                }
                Err(e) => return Err(e),
            }
        }
        let rows = match rows {
            Some(r) => r,
            None => {
                let sql = discover_sql(&self.catalog, schemas, false);
                self.client.query(&sql).await?.rows
            }
        };
        let mut tables: Vec<TableRef> = rows
            .iter()
            .filter_map(|r| {
                Some(TableRef::new(
                    &self.catalog,
                    r.str("table_schema")?,
                    r.str("table_name")?,
                ))
            })
            .filter(|t| {
                globs.is_empty()
                    || globs.iter().any(|g| {
                        glob_match(g, &format!("{}.{}", t.schema, t.table))
                            || glob_match(g, &t.table)
                    })
            })
            .collect();
        tables.sort();
        tables.dedup();
        Ok(tables)
    }

    /// The tables the last listing with these filters found, without a statement (what a
    /// steady refresh lists between two listings, see `refresh::listing`); `None` when
    /// this connection has not listed with them.
    pub async fn listed_again(
        &self,
        schemas: &[String],
        globs: &[String],
    ) -> Option<Vec<TableRef>> {
        let tables = self
            .last_listing
            .lock()
            .expect("listing lock")
            .as_ref()
            .filter(|(s, g, _)| s == schemas && g == globs)
            .map(|(_, _, t)| t.clone())?;
        // As a listing does: what the last refresh left unread goes.
        *self.pending.lock().await = Pending::default();
        for l in self.siblings() {
            *l.pending.lock().await = Pending::default();
        }
        Some(tables)
    }
}
