//! Several catalogs read as one lakehouse: a profile's further catalogs (`catalog =
//! "iceberg,delta"`; `*`: every Iceberg and Delta Lake catalog of the cluster, from its
//! catalog list and connector names), each read through a Lakehouse of its own — its own
//! format, its own listing — sharing this one's client and what it learned of the server.
//! A read of a table goes to its catalog's; a read of many is split by catalog.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, RwLock};

use super::Lakehouse;
use super::delta_reads::format_code;
use crate::lakehouse::delta::TableFormat;
use crate::lakehouse::model::TableRef;
use crate::lakehouse::probe::Probe;
use crate::lakehouse::summary::Survey;
use crate::trino::TrinoError;

/// The catalogs of the cluster floe reads, with their connector: `(name, connector)`.
pub fn catalogs_sql() -> &'static str {
    "SELECT catalog_name, connector_name FROM system.metadata.catalogs ORDER BY catalog_name"
}

/// Which of the cluster's `listed` catalogs (name, connector) to read beside `primary`:
/// every Iceberg and Delta Lake one for `*`, else those `wanted` names; a name the
/// cluster does not have, or of a connector floe does not read, is an error that says so.
pub fn choose(
    primary: &str,
    wanted: &[String],
    listed: &[(String, String)],
) -> Result<Vec<(String, TableFormat)>, String> {
    let format_of = |name: &str| {
        listed
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, c)| (c.as_str(), TableFormat::of_connector(c)))
    };
    let mut out = Vec::new();
    if wanted.iter().any(|w| w == "*") {
        for (name, connector) in listed {
            if let Some(f) = TableFormat::of_connector(connector)
                && name != primary
            {
                out.push((name.clone(), f));
            }
        }
        return Ok(out);
    }
    for name in wanted.iter().filter(|w| w.as_str() != primary) {
        match format_of(name) {
            Some((_, Some(f))) => out.push((name.clone(), f)),
            Some((connector, None)) => {
                return Err(format!(
                    "catalog {name} is a {connector} catalog: floe reads Iceberg and Delta Lake catalogs"
                ));
            }
            None => {
                return Err(format!(
                    "the cluster has no catalog {name} (it has {})",
                    listed
                        .iter()
                        .map(|(n, _)| n.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
    }
    Ok(out)
}

impl Lakehouse {
    /// The same connection whose statements are counted apart from this one's (see
    /// [`Client::with_own_meter`]): what a maintenance job runs on.
    pub fn with_own_meter(&self) -> Lakehouse {
        let client = self.client.with_own_meter();
        let siblings = self
            .siblings()
            .into_iter()
            .map(|l| Lakehouse {
                client: client.clone(),
                ..l
            })
            .collect();
        Lakehouse {
            client,
            siblings: Arc::new(std::sync::RwLock::new(siblings)),
            ..self.clone()
        }
    }

    /// Read `more` catalogs beside this one (a profile's further catalogs; `*`: every
    /// Iceberg and Delta Lake catalog of the cluster), found at [`Lakehouse::connect`].
    pub fn with_catalogs(mut self, more: &[String]) -> Lakehouse {
        self.more_catalogs = Arc::new(more.to_vec());
        self
    }

    /// The catalogs `trino` names beside this one; with none named, every Iceberg and
    /// Delta Lake catalog of the cluster, as far as its catalog list can be read (a user
    /// denied `system.metadata.catalogs`, or a server without it, reads this one alone),
    /// and this one only when the cluster has it.
    pub fn with_catalogs_of(mut self, trino: &crate::config::TrinoSettings) -> Lakehouse {
        self.catalogs_by_default = trino.catalogs_by_default;
        self.with_catalogs(&trino.more_catalogs)
    }

    /// Why the cluster's catalogs were not found when none was named (this one is read
    /// alone), as the server said it.
    pub fn catalogs_unread(&self) -> Option<String> {
        self.catalogs_unread.lock().ok()?.clone()
    }

    /// This catalog was read by default and the cluster has none of its name.
    pub fn absent(&self) -> bool {
        self.absent.load(Ordering::Relaxed)
    }

    /// The surveys of a fleet's `tables` (see [`crate::lakehouse::summary::survey_sql`]),
    /// in one statement when all answer: `$snapshots` alone. The change probe reads the
    /// metadata log (see `adopt_probe` in the TUI's refresh); the tables whose files are
    /// worth reading get their target and manifests read ahead of their files, ten a
    /// statement ([`Lakehouse::file_stats`]).
    pub async fn survey(&self, tables: &[TableRef]) -> Vec<(TableRef, Result<Survey, TrinoError>)> {
        let mut out = Vec::with_capacity(tables.len());
        for (lake, group) in self.by_catalog(tables, |t| t) {
            out.extend(lake.survey_here(&group).await);
        }
        out
    }

    /// The change probe of `tables` (see [`super::probe`]), in one statement when all
    /// answer (see [`Lakehouse::batched`]).
    pub async fn probe(&self, tables: &[TableRef]) -> Vec<(TableRef, Result<Probe, TrinoError>)> {
        let mut out = Vec::with_capacity(tables.len());
        for (lake, group) in self.by_catalog(tables, |t| t) {
            out.extend(lake.probe_here(&group).await);
        }
        out
    }

    /// Read `wanted` beside this catalog (see [`choose`]): one statement, the cluster's
    /// catalog list, which also tells each one's format (and this one's).
    pub async fn add_catalogs(&self, wanted: &[String]) -> Result<(), TrinoError> {
        if wanted.iter().all(|w| w == &self.catalog) {
            return Ok(());
        }
        let out = self.client.query(catalogs_sql()).await?;
        let listed: Vec<(String, String)> = out
            .rows
            .iter()
            .filter_map(|r| {
                Some((
                    r.str("catalog_name")?.to_string(),
                    r.str("connector_name")?.to_string(),
                ))
            })
            .collect();
        if let Some(f) = listed
            .iter()
            .find(|(n, _)| *n == self.catalog)
            .and_then(|(_, c)| TableFormat::of_connector(c))
        {
            self.set_format(f);
        }
        if self.catalogs_by_default && !listed.iter().any(|(n, _)| *n == self.catalog) {
            self.absent.store(true, Ordering::Relaxed);
        }
        let chosen = choose(&self.catalog, wanted, &listed).map_err(|message| {
            TrinoError::Config(format!("trino.catalog (--catalog): {message}"))
        })?;
        let siblings = chosen
            .into_iter()
            .map(|(catalog, f)| Lakehouse {
                catalog,
                format: Arc::new(AtomicU8::new(format_code(f))),
                siblings: Arc::new(RwLock::new(Vec::new())),
                // (a sibling reads its own catalog alone)
                more_catalogs: Default::default(),
                catalogs_by_default: false,
                absent: Default::default(),
                ..self.clone()
            })
            .collect();
        if let Ok(mut s) = self.siblings.write() {
            *s = siblings;
        }
        Ok(())
    }

    /// The catalogs asked for beside this one, found once (at connect, or by the first
    /// listing when it is sent before the connect ends): a second caller while the first
    /// reads waits for its answer instead of sending the statement again.
    pub(super) async fn find_catalogs(&self) -> Result<(), TrinoError> {
        if self.more_catalogs.is_empty() {
            return Ok(());
        }
        let mut found = self.catalogs_found.lock().await;
        if *found {
            return Ok(());
        }
        match self.add_catalogs(&self.more_catalogs).await {
            Ok(()) => {}
            // Read by default: a server or a user without the catalog list reads this
            // catalog alone, as before catalogs were read by default.
            Err(e @ TrinoError::Query { .. }) if self.catalogs_by_default => {
                tracing::debug!("the cluster's catalogs not read: {e}");
                if let Ok(mut u) = self.catalogs_unread.lock() {
                    *u = Some(e.to_string());
                }
            }
            Err(e) => return Err(e),
        }
        *found = true;
        Ok(())
    }

    /// Every catalog read: this one first (unless the cluster has none of its name, see
    /// [`Lakehouse::absent`]).
    pub fn catalogs(&self) -> Vec<String> {
        let mut out = Vec::new();
        if !self.absent() {
            out.push(self.catalog.clone());
        }
        if let Ok(s) = self.siblings.read() {
            out.extend(s.iter().map(|l| l.catalog.clone()));
        }
        out
    }

    /// The Lakehouse of another catalog read beside this one.
    pub(super) fn sibling(&self, catalog: &str) -> Option<Lakehouse> {
        if catalog == self.catalog {
            return None;
        }
        self.siblings
            .read()
            .ok()?
            .iter()
            .find(|l| l.catalog == catalog)
            .cloned()
    }

    /// The other catalogs read beside this one.
    pub(super) fn siblings(&self) -> Vec<Lakehouse> {
        self.siblings.read().map(|s| s.clone()).unwrap_or_default()
    }

    /// `items` by the Lakehouse of their catalog (this one's first, then each other
    /// catalog's), the order given kept within each; an item of a catalog not read goes
    /// to this one. Groups without items are left out.
    pub(super) fn by_catalog<T: Clone>(
        &self,
        items: &[T],
        table: impl Fn(&T) -> &TableRef,
    ) -> Vec<(Lakehouse, Vec<T>)> {
        let mut groups: Vec<(Lakehouse, Vec<T>)> = std::iter::once(self.clone())
            .chain(self.siblings())
            .map(|l| (l, Vec::new()))
            .collect();
        for item in items {
            let catalog = &table(item).catalog;
            let at = groups
                .iter()
                .position(|(l, _)| l.catalog == *catalog)
                .unwrap_or(0);
            groups[at].1.push(item.clone());
        }
        groups.retain(|(_, v)| !v.is_empty());
        groups
    }

    /// The format of a catalog read, as known now (Iceberg until learned).
    pub fn format_of_catalog(&self, catalog: &str) -> TableFormat {
        match self.sibling(catalog) {
            Some(l) => l.format(),
            None => self.format(),
        }
    }

    /// The format of `t`'s catalog.
    pub async fn format_of(&self, t: &TableRef) -> Result<TableFormat, TrinoError> {
        match self.sibling(&t.catalog) {
            Some(l) => Ok(l.format()),
            None => self.known_format().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed() -> Vec<(String, String)> {
        [
            ("delta", "delta_lake"),
            ("iceberg", "iceberg"),
            ("pyfleet", "iceberg"),
            ("system", "system"),
            ("tpch", "tpch"),
        ]
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
    }

    #[test]
    fn every_iceberg_and_delta_catalog_for_a_star_the_named_ones_else() {
        let all = choose("iceberg", &["*".into()], &listed()).unwrap();
        assert_eq!(
            all,
            vec![
                ("delta".to_string(), TableFormat::Delta),
                ("pyfleet".to_string(), TableFormat::Iceberg)
            ]
        );
        let named = choose("iceberg", &["iceberg".into(), "delta".into()], &listed()).unwrap();
        assert_eq!(named, vec![("delta".to_string(), TableFormat::Delta)]);
    }

    #[test]
    fn a_missing_catalog_or_one_of_another_connector_is_named_in_the_error() {
        let e = choose("iceberg", &["lake".into()], &listed()).unwrap_err();
        assert!(
            e.contains("no catalog lake") && e.contains("delta, iceberg"),
            "{e}"
        );
        let e = choose("iceberg", &["tpch".into()], &listed()).unwrap_err();
        assert_eq!(
            e,
            "catalog tpch is a tpch catalog: floe reads Iceberg and Delta Lake catalogs"
        );
    }
}
