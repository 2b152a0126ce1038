//! The listing of a catalog's tables, which learns the catalog's format.

use super::{ICEBERG_TABLES_SINCE, Lakehouse, Pending, discover_sql, glob_match};
use crate::lakehouse::delta;
use crate::lakehouse::model::TableRef;
use crate::trino::TrinoError;

impl Lakehouse {
    /// Every table of the catalog (Iceberg, or Delta Lake) in the given schemas (all when
    /// empty), filtered by globs over `schema.table`, sorted; then those of the catalogs
    /// read beside it (see `catalogs`), each catalog's sorted. The catalogs are listed at
    /// once: a cold start's first survey waits for the slowest listing, not for their sum
    /// (on the lab's Trino 476 an Iceberg listing takes 0.2 s, a Delta Lake one 0.3 s).
    pub async fn discover(
        &self,
        schemas: &[String],
        globs: &[String],
    ) -> Result<Vec<TableRef>, TrinoError> {
        self.find_catalogs().await?;
        let siblings = self.siblings();
        let (own, others) = tokio::join!(
            self.own_tables(schemas, globs),
            futures::future::try_join_all(
                siblings
                    .iter()
                    .map(|l| Box::pin(l.discover(schemas, globs)))
            )
        );
        let mut tables = own?;
        // A new listing starts a new refresh: what the last one left unread goes.
        *self.pending.lock().await = Pending::default();
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
