//! `e` on the Tables tab: a [`TableRecord`] per row as listed (the JSON file's), and its
//! cells for the CSV.

use crate::app::export::ExportData;
use crate::app::state::State;
use crate::health::{Health, Severity};
use crate::report::record::{DagRecord, TableRecord};

/// The rows as listed (filter and sort applied).
pub fn export_view(s: &State) -> ExportData {
    let records = table_records(s);
    let rows = records
        .iter()
        .map(|r| {
            let v = serde_json::to_value(r).expect("a table record serializes");
            TABLE_FIELDS.iter().map(|f| record_cell(&v, f)).collect()
        })
        .collect();
    ExportData {
        view: "tables",
        columns: TABLE_FIELDS.iter().map(|f| f.to_string()).collect(),
        rows,
        records,
        postmortem: None,
    }
}

/// The fields of a [`TableRecord`] in a CSV export, in file order (the record's names).
const TABLE_FIELDS: [&str; 20] = [
    "catalog",
    "schema",
    "table",
    "status",
    "score",
    "data_files",
    "small_files",
    "total_bytes",
    "records",
    "partitions",
    "small_file_partitions",
    "snapshots",
    "delete_files",
    "target_file_size",
    "last_compaction_at",
    "last_compaction_age_hours",
    "last_write_at",
    "maintenance_dag",
    "error",
    "findings",
];

/// A record field as one CSV cell: the DAG by its id, findings as `[SEVERITY] message`.
fn record_cell(v: &serde_json::Value, field: &str) -> String {
    match (field, &v[field]) {
        (_, serde_json::Value::Null) => String::new(),
        (_, serde_json::Value::String(s)) => s.clone(),
        ("maintenance_dag", d) => d["dag_id"].as_str().unwrap_or_default().to_string(),
        ("findings", serde_json::Value::Array(fs)) => fs
            .iter()
            .map(|f| {
                format!(
                    "[{}] {}",
                    f["severity"].as_str().unwrap_or_default(),
                    f["message"].as_str().unwrap_or_default()
                )
            })
            .collect::<Vec<_>>()
            .join("; "),
        (_, other) => other.to_string(),
    }
}

fn table_records(s: &State) -> Vec<TableRecord> {
    let v = &s.tables;
    let unknown = Health {
        status: Severity::Unknown,
        score: 0,
        findings: Vec::new(),
    };
    v.grid
        .index
        .iter()
        .map(|&i| {
            let r = &v.rows[i];
            TableRecord {
                maintenance_dag: r.dag.as_ref().map(DagRecord::new),
                error: r.error().map(ToString::to_string),
                ..TableRecord::new(
                    &r.table,
                    r.stats(),
                    r.health.as_ref().unwrap_or(&unknown),
                    s.now,
                )
            }
        })
        .collect()
}
