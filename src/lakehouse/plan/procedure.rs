//! The maintenance procedures a plan runs, and the statement each is.

use serde::Serialize;

use crate::lakehouse::model::TableRef;
use crate::sql::quote_string;
use crate::units::Bytes;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum Procedure {
    Optimize {
        threshold: u64,
    },
    ExpireSnapshots {
        retention_secs: u64,
    },
    RemoveOrphanFiles {
        retention_secs: u64,
    },
    OptimizeManifests,
    /// A Delta table's `CALL <catalog>.system.vacuum`: removes the files no version
    /// newer than the retention references (never under the catalog's minimum retention,
    /// `delta.vacuum.min-retention`, 7 days by default).
    Vacuum {
        retention_secs: u64,
    },
}

impl Procedure {
    pub fn name(&self) -> &'static str {
        match self {
            Procedure::Optimize { .. } => "optimize",
            Procedure::ExpireSnapshots { .. } => "expire_snapshots",
            Procedure::RemoveOrphanFiles { .. } => "remove_orphan_files",
            Procedure::OptimizeManifests => "optimize_manifests",
            Procedure::Vacuum { .. } => "vacuum",
        }
    }

    /// The statement that runs the procedure on `table` (no partition predicate).
    pub fn statement(&self, table: &TableRef) -> String {
        match self {
            Procedure::Vacuum { retention_secs } => format!(
                "CALL {}.system.vacuum({}, {}, {})",
                crate::sql::quote_ident(&table.catalog),
                quote_string(&table.schema),
                quote_string(&table.table),
                quote_string(&trino_duration(*retention_secs))
            ),
            _ => format!("ALTER TABLE {} EXECUTE {}", table.sql(), self.call()),
        }
    }

    fn call(&self) -> String {
        match self {
            Procedure::Optimize { threshold } => {
                format!(
                    "optimize(file_size_threshold => {})",
                    quote_string(&Bytes(*threshold).trino_literal())
                )
            }
            Procedure::ExpireSnapshots { retention_secs } => {
                format!(
                    "expire_snapshots(retention_threshold => {})",
                    quote_string(&trino_duration(*retention_secs))
                )
            }
            Procedure::RemoveOrphanFiles { retention_secs } => {
                format!(
                    "remove_orphan_files(retention_threshold => {})",
                    quote_string(&trino_duration(*retention_secs))
                )
            }
            Procedure::OptimizeManifests => "optimize_manifests".into(),
            // (a CALL, not a table procedure: see `statement`)
            Procedure::Vacuum { retention_secs } => {
                format!("vacuum({})", trino_duration(*retention_secs))
            }
        }
    }
}

/// A duration as Trino's airlift `Duration` parses it: `7d`, `36h`, `90m`, `45s`.
pub fn trino_duration(secs: u64) -> String {
    for (unit, n) in [("d", 86_400), ("h", 3600), ("m", 60)] {
        if secs >= n && secs.is_multiple_of(n) {
            return format!("{}{unit}", secs / n);
        }
    }
    format!("{secs}s")
}
