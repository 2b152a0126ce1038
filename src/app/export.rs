//! Export: the current view as the operator sees it (filter and sort applied), for the
//! postmortem, and the CSV / JSON file it is written to.

use std::path::{Path, PathBuf};

use chrono::Utc;

use super::action::Effect;
use super::grid::Grid;
use super::partitions::PartitionCol;
use super::snapshots::SnapshotCol;
use super::state::{Level, State, Tab};
use super::tables::TableCol;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportFormat {
    Csv,
    Json,
}

/// A view as exported: what the operator sees, filtered and sorted.
#[derive(Clone, Debug, PartialEq)]
pub struct ExportData {
    pub view: &'static str,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// The export file was written (or not).
pub fn on_written(s: &mut State, r: Result<PathBuf, String>) {
    match r {
        Ok(path) => s.set_status(Level::Info, format!("exported to {}", path.display())),
        Err(e) => s.set_status(Level::Error, format!("export failed: {e}")),
    }
}

/// `e`, `:export`: the view as seen, to a file.
pub fn export(s: &mut State, format: ExportFormat) -> Vec<Effect> {
    match export_view(s) {
        Some(data) => vec![Effect::Export { format, data }],
        None => {
            s.set_status(Level::Warn, "nothing to export in this view");
            Vec::new()
        }
    }
}

/// The current view as the operator sees it (filter and sort applied), for the postmortem.
pub fn export_view(s: &State) -> Option<ExportData> {
    match s.tab {
        Tab::Tables => {
            let v = &s.tables;
            Some(table(
                "tables",
                &v.grid,
                &TableCol::EXPORTED.map(TableCol::field),
                |i| TableCol::EXPORTED.map(|c| c.export(&v.rows[i])).to_vec(),
            ))
        }
        Tab::Partitions => {
            let v = &s.partitions;
            v.table.as_ref()?;
            Some(table(
                "partitions",
                &v.grid,
                &PartitionCol::EXPORTED.map(PartitionCol::field),
                |i| {
                    PartitionCol::EXPORTED
                        .map(|c| c.export(v, &v.rows[i]))
                        .to_vec()
                },
            ))
        }
        Tab::Snapshots => {
            let v = &s.snapshots;
            v.table.as_ref()?;
            Some(table(
                "snapshots",
                &v.grid,
                &SnapshotCol::EXPORTED.map(SnapshotCol::field),
                |i| {
                    SnapshotCol::EXPORTED
                        .map(|c| c.export(v, &v.rows[i], s.now))
                        .to_vec()
                },
            ))
        }
        Tab::Dags => None,
    }
}

/// The rows of `grid` in display order, one `row(i)` each.
fn table(
    view: &'static str,
    grid: &Grid,
    fields: &[&str],
    row: impl Fn(usize) -> Vec<String>,
) -> ExportData {
    ExportData {
        view,
        columns: fields.iter().map(|c| c.to_string()).collect(),
        rows: grid.index.iter().map(|&i| row(i)).collect(),
    }
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Write an export file and return its path.
pub fn write_export(
    dir: &Path,
    format: ExportFormat,
    data: &ExportData,
) -> Result<PathBuf, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let stamp = Utc::now().format("%Y%m%d-%H%M%S");
    let (ext, text) = match format {
        ExportFormat::Csv => {
            let mut out = data
                .columns
                .iter()
                .map(|c| csv_field(c))
                .collect::<Vec<_>>()
                .join(",");
            out.push('\n');
            for r in &data.rows {
                out.push_str(&r.iter().map(|c| csv_field(c)).collect::<Vec<_>>().join(","));
                out.push('\n');
            }
            ("csv", out)
        }
        ExportFormat::Json => {
            let rows: Vec<serde_json::Map<String, serde_json::Value>> = data
                .rows
                .iter()
                .map(|r| {
                    data.columns
                        .iter()
                        .cloned()
                        .zip(r.iter().map(|v| serde_json::Value::String(v.clone())))
                        .collect()
                })
                .collect();
            (
                "json",
                serde_json::to_string_pretty(&rows).map_err(|e| e.to_string())? + "\n",
            )
        }
    };
    let path = dir.join(format!("floe-{}-{stamp}.{ext}", data.view));
    std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quotes_what_needs_it() {
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        let dir = std::env::temp_dir().join(format!("floe-export-{}", std::process::id()));
        let data = ExportData {
            view: "tables",
            columns: vec!["table".into(), "note".into()],
            rows: vec![vec!["ledger \"q3\"".into(), "x, y".into()]],
        };
        let p = write_export(&dir, ExportFormat::Csv, &data).unwrap();
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "table,note\n\"ledger \"\"q3\"\"\",\"x, y\"\n"
        );
        let p = write_export(&dir, ExportFormat::Json, &data).unwrap();
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        assert_eq!(v[0]["table"], "ledger \"q3\"");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
