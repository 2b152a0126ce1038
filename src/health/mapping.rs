//! Which Airflow DAG maintains which table: the configured `[[maintenance]]` mappings,
//! else a guess from the DAG's tags or id (marked as guessed).

use std::collections::BTreeMap;

use crate::lakehouse::model::TableRef;

pub use crate::config::MaintenanceMapping;

/// A DAG as far as mapping is concerned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DagName {
    pub dag_id: String,
    pub tags: Vec<String>,
}

impl DagName {
    /// The names of an Airflow DAG.
    pub fn of(d: &crate::airflow::Dag) -> DagName {
        DagName {
            dag_id: d.dag_id.clone(),
            tags: d.tags.clone(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mapped {
    pub dag_id: String,
    pub guessed: bool,
}

fn tokens(s: &str) -> Vec<String> {
    s.split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Words in a DAG id that say it compacts (preferred when several DAGs name a table).
const COMPACTION_WORDS: [&str; 4] = ["compact", "compaction", "optimize", "rewrite"];

/// Map tables to their maintenance DAG. Configured mappings win; otherwise a DAG tagged
/// with the table's name (`catalog.schema.table` or `schema.table`), else one whose id
/// contains the table's name as a word (`compact_documents` → `documents`) when that
/// word names exactly one table. Among several candidates, compaction DAGs come first.
pub fn map_dags(
    tables: &[TableRef],
    dags: &[DagName],
    configured: &[MaintenanceMapping],
) -> BTreeMap<TableRef, Mapped> {
    let mut out = BTreeMap::new();
    for m in configured {
        let parts = crate::sql::split_table_name(&m.table);
        if let [c, s, t] = parts.as_slice()
            && let Some(table) = tables.iter().find(|x| {
                x.catalog.eq_ignore_ascii_case(c)
                    && x.schema.eq_ignore_ascii_case(s)
                    && x.table.eq_ignore_ascii_case(t)
            })
        {
            out.insert(
                table.clone(),
                Mapped {
                    dag_id: m.dag_id.clone(),
                    guessed: false,
                },
            );
        }
    }
    let rank = |d: &DagName| {
        if tokens(&d.dag_id)
            .iter()
            .any(|t| COMPACTION_WORDS.contains(&t.as_str()))
        {
            0
        } else {
            1
        }
    };
    for table in tables {
        if out.contains_key(table) {
            continue;
        }
        let full = format!("{}.{}.{}", table.catalog, table.schema, table.table).to_lowercase();
        let short = format!("{}.{}", table.schema, table.table).to_lowercase();
        let mut by_tag: Vec<&DagName> = dags
            .iter()
            .filter(|d| {
                d.tags
                    .iter()
                    .any(|t| t.to_lowercase() == full || t.to_lowercase() == short)
            })
            .collect();
        by_tag.sort_by_key(|d| (rank(d), d.dag_id.clone()));
        if let Some(d) = by_tag.first() {
            out.insert(
                table.clone(),
                Mapped {
                    dag_id: d.dag_id.clone(),
                    guessed: true,
                },
            );
            continue;
        }
        let name = table.table.to_lowercase();
        // The word must name this table only: `events` in two schemas is ambiguous.
        if tables
            .iter()
            .filter(|t| t.table.to_lowercase() == name)
            .count()
            != 1
        {
            continue;
        }
        let mut by_id: Vec<&DagName> = dags
            .iter()
            .filter(|d| tokens(&d.dag_id).contains(&name))
            .collect();
        by_id.sort_by_key(|d| (rank(d), d.dag_id.clone()));
        if let Some(d) = by_id.first() {
            out.insert(
                table.clone(),
                Mapped {
                    dag_id: d.dag_id.clone(),
                    guessed: true,
                },
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str, n: &str) -> TableRef {
        TableRef::new("iceberg", s, n)
    }

    fn dag(id: &str, tags: &[&str]) -> DagName {
        DagName {
            dag_id: id.into(),
            tags: tags.iter().map(|x| x.to_string()).collect(),
        }
    }

    #[test]
    fn configured_then_tags_then_ids() {
        let tables = vec![
            t("zoning", "documents"),
            t("zoning", "permits"),
            t("zoning", "parcels"),
            t("audit", "events"),
            t("zoning", "staging"),
        ];
        let dags = vec![
            dag(
                "compact_documents",
                &["maintenance", "iceberg.zoning.documents"],
            ),
            dag("nightly_cleanup", &["maintenance", "zoning.permits"]),
            dag("compact_permits", &["maintenance"]),
            dag("parcels_compaction", &[]),
            dag("expire_snapshots", &["maintenance", "iceberg.audit.events"]),
        ];
        let configured = vec![MaintenanceMapping {
            table: "iceberg.zoning.parcels".into(),
            dag_id: "custom_parcels_job".into(),
            interval: None,
        }];
        let m = map_dags(&tables, &dags, &configured);
        assert_eq!(
            m[&t("zoning", "parcels")],
            Mapped {
                dag_id: "custom_parcels_job".into(),
                guessed: false
            }
        );
        assert_eq!(
            m[&t("zoning", "documents")],
            Mapped {
                dag_id: "compact_documents".into(),
                guessed: true
            }
        );
        assert_eq!(
            m[&t("zoning", "permits")].dag_id,
            "nightly_cleanup",
            "a tag beats an id match"
        );
        assert_eq!(m[&t("audit", "events")].dag_id, "expire_snapshots");
        assert!(!m.contains_key(&t("zoning", "staging")));
    }

    #[test]
    fn id_words_must_be_unambiguous_and_compaction_wins() {
        let tables = vec![t("a", "events"), t("b", "events"), t("a", "orders")];
        let dags = vec![
            dag("compact_events", &[]),
            dag("expire_orders", &[]),
            dag("optimize_orders", &[]),
        ];
        let m = map_dags(&tables, &dags, &[]);
        assert!(
            !m.contains_key(&t("a", "events")),
            "events names two tables"
        );
        assert_eq!(m[&t("a", "orders")].dag_id, "optimize_orders");
        // Word match, not substring: `reorders` is not `orders`.
        let m = map_dags(&[t("a", "orders")], &[dag("reorders_job", &[])], &[]);
        assert!(m.is_empty());
    }
}
