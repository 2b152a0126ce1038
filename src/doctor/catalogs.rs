//! `floe doctor`: which catalogs floe reads, and of which format.

use super::*;

impl Doctor<'_> {
    /// The catalogs read beside the first (`trino.catalog = "iceberg,delta"`, `*`), each
    /// with its format, as the connect found them in the cluster's catalog list.
    pub(super) async fn more_catalogs(
        &mut self,
        s: &Settings,
        lake: &Lakehouse,
        failed: Option<crate::trino::TrinoError>,
    ) -> Option<()> {
        if s.trino.more_catalogs.is_empty() {
            return Some(());
        }
        if let Some(e) = failed {
            self.report(Check::fail(
                "catalogs",
                e.to_string(),
                "set trino.catalog (--catalog) to catalogs the cluster has, comma-separated",
            ));
            return None;
        }
        let read: Vec<String> = lake
            .catalogs()
            .iter()
            .map(|c| format!("{c} ({})", lake.format_of_catalog(c).title()))
            .collect();
        let by_default = if s.trino.catalogs_by_default {
            " (none named: every Iceberg and Delta Lake catalog of the cluster)"
        } else {
            ""
        };
        match lake.catalogs_unread() {
            Some(why) => {
                let fix = format!(
                    "floe reads {} alone; name the catalogs in trino.catalog (--catalog), comma-separated, or allow SELECT on system.metadata.catalogs",
                    s.trino.catalog
                );
                self.report(Check {
                    name: "catalogs",
                    status: Status::Fallback,
                    figure: format!("the cluster's catalog list not read: {why}"),
                    fix: Some(fix),
                });
            }
            None if read.is_empty() => {
                self.report(Check::fail(
                    "catalogs",
                    "the cluster has no Iceberg or Delta Lake catalog".to_string(),
                    "set trino.catalog (--catalog) to the catalog of the tables",
                ));
                return None;
            }
            None => {
                self.report(Check::pass(
                    "catalogs",
                    format!("read: {}{by_default}", read.join(", ")),
                ));
            }
        }
        Some(())
    }
}
