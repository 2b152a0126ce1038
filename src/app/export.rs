//! Export: the current view as the operator sees it (filter and sort applied), for the
//! postmortem, and the CSV / JSON file it is written to.

use std::path::{Path, PathBuf};

use chrono::Utc;

use super::action::Effect;
use super::grid::Grid;
use super::state::{Level, State};
use crate::health::{Health, Severity};
use crate::report::postmortem::{self, DagSection, Postmortem};
use crate::report::record::TableRecord;
use crate::report::{AirflowInfo, TrinoInfo};
use crate::timeline::DagRuns;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportFormat {
    Csv,
    Json,
    /// The postmortem of the focused table (`:export md`).
    Markdown,
}

/// A view as exported: what the operator sees, filtered and sorted.
#[derive(Clone, Debug, PartialEq)]
pub struct ExportData {
    pub view: &'static str,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// The Tables view's records, the ones `floe check --format json` prints (same field
    /// names): a JSON export writes them as they are; `columns`/`rows` flatten them.
    pub records: Vec<TableRecord>,
    /// The postmortem of the focused table (`:export md`); the runtime adds the audited
    /// actions when it writes the file.
    pub postmortem: Option<Box<Postmortem>>,
}

/// Why an export file was not written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ExportError {
    #[error("cannot create {}: {reason}", dir.display())]
    CreateDir { dir: PathBuf, reason: String },
    #[error("nothing to write: no postmortem")]
    NoPostmortem,
    /// The JSON could not be made.
    #[error("{0}")]
    Encode(String),
    #[error("cannot write {}: {reason}", path.display())]
    Write { path: PathBuf, reason: String },
    /// A hundred exports of the view within one second: none is overwritten.
    #[error("cannot write {}: too many exports this second", path.display())]
    TooMany { path: PathBuf },
    /// floe itself failed while writing it (a panic: a bug).
    #[error("internal error: {0} (a bug in floe; details in floe.log)")]
    Internal(String),
}

/// The export file was written (or not).
pub fn on_written(s: &mut State, r: Result<PathBuf, ExportError>) {
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

/// The current view as the operator sees it (filter and sort applied), as the tab's
/// feature gives it; `None` for a tab with nothing to export.
pub fn export_view(s: &State) -> Option<ExportData> {
    (s.tab.ops().export)(s)
}

/// The rows of `grid` in display order, one `row(i)` each.
pub fn table(
    view: &'static str,
    grid: &Grid,
    fields: &[&str],
    row: impl Fn(usize) -> Vec<String>,
) -> ExportData {
    ExportData {
        view,
        columns: fields.iter().map(|c| c.to_string()).collect(),
        rows: grid.index.iter().map(|&i| row(i)).collect(),
        records: Vec::new(),
        postmortem: None,
    }
}

/// `:export md`: the postmortem of the table the operator is looking at (the tab's table:
/// the incident's on Triage, the one the Partitions and Snapshots tabs show; else the
/// selected row of Tables), from what is on screen.
pub fn export_postmortem(s: &mut State) -> Vec<Effect> {
    match postmortem_of(s) {
        Some(p) => vec![Effect::Export {
            format: ExportFormat::Markdown,
            data: ExportData {
                view: "postmortem",
                columns: Vec::new(),
                rows: Vec::new(),
                records: Vec::new(),
                postmortem: Some(Box::new(p)),
            },
        }],
        None => {
            s.set_status(Level::Warn, "no table to write a postmortem of: select one");
            Vec::new()
        }
    }
}

/// The postmortem of the focused table as far as the screen knows it (the audit log's
/// actions are the runtime's to add).
pub fn postmortem_of(s: &State) -> Option<Postmortem> {
    let table = (s.tab.ops().table)(s).or_else(|| s.tables.selected().map(|r| r.table.clone()))?;
    let row = s.tables.rows.iter().find(|r| r.table == table)?;
    let unknown = Health {
        status: Severity::Unknown,
        score: 0,
        findings: Vec::new(),
    };
    let mut notes = Vec::new();
    let here = s.snapshots.detail.table.as_ref() == Some(&table);
    let snapshots: Option<Vec<_>> = (here && s.snapshots.detail.load == super::state::Load::Loaded)
        .then(|| s.snapshots.rows.iter().map(|r| r.info.clone()).collect());
    let mapped = s.dags.mapping.get(&table).map(|m| m.dag_id.clone());
    let runs = if here {
        super::snapshots::dag_runs(s)
    } else if !s.airflow_configured {
        DagRuns::NoAirflow
    } else {
        match &mapped {
            Some(d) => DagRuns::Failed {
                dag_id: d.clone(),
                error: "not read: open the table's Snapshots tab (3) first".into(),
            },
            None => DagRuns::NotMapped,
        }
    };
    if snapshots.is_none() {
        notes.push(format!(
            "the snapshots of {table}: open the table's Snapshots tab (3) to read them"
        ));
    }
    let dag = row.dag.as_ref().map(|f| {
        let mut d = DagSection::new(f);
        if let Some(Ok(fail)) = s.dags.failures.get(&f.dag_id) {
            d.failing_run = Some(fail.run_id.clone());
            d.failing_task = Some(fail.task_id.clone());
            if let Some(e) = &fail.log.error_line {
                d.error_line = Some(e.clone());
            }
        }
        d
    });
    let info = s.conn.info.as_ref();
    let airflow = s.conn.airflow_url.as_ref().map(|url| AirflowInfo {
        url: url.clone(),
        version: s.conn.airflow_version.clone(),
        api: s.dags.api,
        error: match &s.dags.load {
            super::state::Load::Failed(e) => Some(e.to_string()),
            _ => None,
        },
    });
    let error = row.error().map(ToString::to_string);
    Some(postmortem::build(postmortem::Sources {
        now: s.now,
        profile: &s.conn.profile,
        table: &table,
        stats: row.stats(),
        health: row.health.as_ref().unwrap_or(&unknown),
        error: error.as_deref(),
        trino: TrinoInfo {
            url: s.conn.trino_url.clone(),
            version: info.map(|i| i.node_version.version.clone()),
            uptime_seconds: info.and_then(|i| i.uptime_secs()),
        },
        airflow,
        dag,
        snapshots: snapshots.as_deref(),
        runs: &runs,
        stale_after: chrono::Duration::from_std(s.health.compaction_warn)
            .unwrap_or(chrono::Duration::hours(36)),
        audit_log: None,
        audit: &[],
        queries: match s.queries.by_table.get(&table) {
            Some((_, crate::app::query_history::QueryLoad::Loaded(q))) => Some(q.clone()),
            _ => None,
        },
        notes,
    }))
}

/// One CSV cell: control characters made visible and a formula neutralised (a table or
/// partition value is a server's string), then quoted when needed.
fn csv_field(s: &str) -> String {
    let s = crate::text::csv_cell(s);
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.into_owned()
    }
}

/// Write an export file and return its path. A postmortem gets the actions of the
/// audit log at `audit_log`.
pub fn write_export(
    dir: &Path,
    audit_log: &Path,
    format: ExportFormat,
    data: &ExportData,
) -> Result<PathBuf, ExportError> {
    std::fs::create_dir_all(dir).map_err(|e| ExportError::CreateDir {
        dir: dir.to_path_buf(),
        reason: e.to_string(),
    })?;
    let stamp = Utc::now().format("%Y%m%d-%H%M%S");
    let (ext, text) = match format {
        ExportFormat::Markdown => {
            let p = data
                .postmortem
                .as_deref()
                .ok_or(ExportError::NoPostmortem)?
                .clone();
            let records = crate::mutation::audit::AuditLog::new(audit_log).read();
            // Sanitised as it is rendered.
            ("md", p.with_audit(audit_log, &records).markdown())
        }
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
        ExportFormat::Json if !data.records.is_empty() => (
            "json",
            serde_json::to_string_pretty(&data.records)
                .map_err(|e| ExportError::Encode(e.to_string()))?
                + "\n",
        ),
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
                serde_json::to_string_pretty(&rows)
                    .map_err(|e| ExportError::Encode(e.to_string()))?
                    + "\n",
            )
        }
    };
    let name = |n: u32| match n {
        0 => format!("floe-{}-{stamp}.{ext}", data.view),
        n => format!("floe-{}-{stamp}-{n}.{ext}", data.view),
    };
    // Table names, errors and statements: readable by the operator only. JSON keeps the
    // real strings, with what serde leaves raw written as \uXXXX.
    let text = match format {
        ExportFormat::Json => crate::text::json_escape_unsafe(&text),
        ExportFormat::Csv | ExportFormat::Markdown => text,
    };
    // A second export within the same second gets its own file, never overwrites.
    for n in 0..100 {
        let path = dir.join(name(n));
        match write_private(&path, &text) {
            Ok(()) => return Ok(path),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(ExportError::Write {
                    path,
                    reason: e.to_string(),
                });
            }
        }
    }
    Err(ExportError::TooMany {
        path: dir.join(name(0)),
    })
}

fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(text.as_bytes())
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
            records: Vec::new(),
            postmortem: None,
        };
        let p = write_export(
            &dir,
            Path::new("/nonexistent/audit.jsonl"),
            ExportFormat::Csv,
            &data,
        )
        .unwrap();
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "table,note\n\"ledger \"\"q3\"\"\",\"x, y\"\n"
        );
        let p = write_export(
            &dir,
            Path::new("/nonexistent/audit.jsonl"),
            ExportFormat::Json,
            &data,
        )
        .unwrap();
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        assert_eq!(v[0]["table"], "ledger \"q3\"");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn exports_are_private_inert_and_formula_free() {
        use std::os::unix::fs::PermissionsExt;
        let h = crate::text::hostile_sample();
        let dir = std::env::temp_dir().join(format!("floe-export-h-{}", std::process::id()));
        let data = ExportData {
            view: "partitions",
            columns: vec!["partition".into(), "note".into()],
            rows: vec![vec![
                format!("r{h}"),
                "=HYPERLINK(\"http://x\",\"y\")".into(),
            ]],
            records: Vec::new(),
            postmortem: None,
        };
        let csv = write_export(
            &dir,
            Path::new("/nonexistent/audit.jsonl"),
            ExportFormat::Csv,
            &data,
        )
        .unwrap();
        let again = write_export(
            &dir,
            Path::new("/nonexistent/audit.jsonl"),
            ExportFormat::Csv,
            &data,
        )
        .unwrap();
        assert_ne!(
            csv, again,
            "a second export in the same second is a new file"
        );
        let text = std::fs::read_to_string(&csv).unwrap();
        assert!(crate::text::is_inert(&text), "{text:?}");
        assert!(text.contains("\\x1b]52;"), "{text}");
        assert!(text.contains("\"'=HYPERLINK("), "{text}");
        let json = write_export(
            &dir,
            Path::new("/nonexistent/audit.jsonl"),
            ExportFormat::Json,
            &data,
        )
        .unwrap();
        let jtext = std::fs::read_to_string(&json).unwrap();
        assert!(crate::text::is_inert(&jtext));
        let v: serde_json::Value = serde_json::from_str(&jtext).unwrap();
        assert_eq!(
            v[0]["partition"],
            format!("r{h}"),
            "JSON keeps the real string"
        );
        for p in [&csv, &again, &json] {
            let mode = std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{}", p.display());
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_tables_export_is_floe_checks_record() {
        let s = crate::app::testing::loaded();
        let data = export_view(&s).expect("the Tables view exports");
        assert!(data.columns.iter().any(|c| c == "last_compaction_at"));
        assert!(!data.columns.iter().any(|c| c == "last_compaction"));
        assert_eq!(data.records.len(), data.rows.len());
        let first = serde_json::to_value(&data.records[0]).unwrap();
        // Every CSV column is a field of the record `floe check --format json` prints.
        for c in &data.columns {
            assert!(first.get(c).is_some(), "{c} is not a check JSON field");
        }
        let col = |name: &str| data.columns.iter().position(|c| c == name).unwrap();
        assert_eq!(data.rows[0][col("table")], first["table"].as_str().unwrap());
        assert_eq!(
            data.rows[0][col("data_files")],
            first["data_files"].to_string()
        );
    }

    #[test]
    fn export_md_writes_the_focused_tables_postmortem() {
        use crate::app::action::Action;
        use crate::app::testing::dags::{ERROR, with_dags};
        use crate::app::testing::{code, key, tref};
        use crate::app::update::update;
        use crate::mutation::audit::{AuditLog, Record};
        use crossterm::event::KeyCode;
        use std::os::unix::fs::PermissionsExt;

        let mut s = with_dags();
        // The Snapshots tab of documents, its snapshots and its DAG's runs read.
        let pos = s
            .tables
            .grid
            .index
            .iter()
            .position(|&i| s.tables.rows[i].table == tref("zoning", "documents"))
            .unwrap();
        s.tables.grid.selected = pos;
        update(&mut s, key('3'));
        let request = s.snapshots.detail.request;
        let info = crate::lakehouse::model::SnapshotInfo {
            committed_at: s.now - chrono::Duration::days(2),
            snapshot_id: 7,
            parent_id: None,
            operation: crate::lakehouse::model::SnapshotOperation::Append,
            added_data_files: Some(5),
            deleted_data_files: None,
            total_data_files: Some(2016),
            added_records: None,
            total_records: None,
            total_delete_files: None,
            added_files_size: None,
            removed_files_size: None,
            trino_user: None,
            trino_query_id: None,
        };
        update(
            &mut s,
            Action::Snapshots(crate::app::snapshots::SnapshotsMsg::Loaded {
                request,
                table: tref("zoning", "documents"),
                result: Ok(vec![info]),
            }),
        );
        update(
            &mut s,
            Action::Snapshots(crate::app::snapshots::SnapshotsMsg::Runs {
                dag_id: "compact_documents".into(),
                result: Ok(vec![]),
            }),
        );
        update(&mut s, key(':'));
        for c in "export md".chars() {
            update(&mut s, key(c));
        }
        let fx = update(&mut s, code(KeyCode::Enter));
        let [Effect::Export { format, data }] = fx.as_slice() else {
            panic!("{fx:?}")
        };
        assert_eq!(*format, ExportFormat::Markdown);
        let p = data.postmortem.as_deref().expect("a postmortem");
        assert_eq!(p.name, "iceberg.zoning.documents");
        let dag = p.dag.as_ref().expect("its DAG");
        assert_eq!(dag.failing_task.as_deref(), Some("compact"));
        assert_eq!(dag.error_line.as_deref(), Some(ERROR));
        assert_eq!(
            dag.failing_run.as_deref(),
            Some("scheduled__2026-11-29T00:00:00+00:00")
        );
        assert!(
            p.timeline
                .sentence
                .contains("compact_documents has no runs"),
            "{}",
            p.timeline.sentence
        );
        assert!(p.notes.is_empty(), "{:?}", p.notes);

        // The runtime adds the table's audited actions as it writes the file.
        let dir = std::env::temp_dir().join(format!("floe-export-md-{}", std::process::id()));
        let audit = AuditLog::new(dir.join("audit.jsonl"));
        let mut r = Record::now(
            "lab",
            "floe",
            "http://t/",
            crate::mutation::audit::Action::Optimize,
            "ALTER TABLE … optimize",
        );
        r.table = Some("iceberg.zoning.documents".into());
        r.query_id = Some("20261129_091502_00043_lab01".into());
        r.outcome = crate::mutation::audit::Outcome::Succeeded;
        audit.append(&r).unwrap();
        let path = write_export(&dir, audit.path(), ExportFormat::Markdown, data).unwrap();
        assert!(
            path.extension().is_some_and(|e| e == "md"),
            "{}",
            path.display()
        );
        let md = std::fs::read_to_string(&path).unwrap();
        assert!(md.contains("`20261129_091502_00043_lab01`"), "{md}");
        assert!(md.contains("- error: `ConnectionError"), "{md}");
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn export_md_elsewhere_says_what_it_could_not_read() {
        let mut s = crate::app::testing::loaded();
        let fx = export_postmortem(&mut s);
        let [Effect::Export { data, .. }] = fx.as_slice() else {
            panic!("{fx:?}")
        };
        let p = data.postmortem.as_deref().unwrap();
        assert!(
            p.notes.iter().any(|n| n.contains("Snapshots tab")),
            "{:?}",
            p.notes
        );
        assert!(p.timeline.sentence.contains("Airflow not configured"));
    }

    mod keys {
        use crate::app::action::Effect;
        use crate::app::export::ExportFormat;
        use crate::app::testing::*;
        use crate::app::update::update;
        use crossterm::event::KeyCode;

        #[test]
        fn export_is_the_view_as_seen() {
            let mut s = loaded();
            update(&mut s, key('/'));
            update(&mut s, key('d'));
            update(&mut s, key('o'));
            update(&mut s, key('c'));
            update(&mut s, code(KeyCode::Enter));
            let fx = update(&mut s, ctrl('s'));
            let Effect::Export { data, format } = &fx[0] else {
                panic!("{fx:?}")
            };
            assert_eq!(*format, ExportFormat::Csv);
            assert_eq!(data.rows.len(), 1);
            assert_eq!(data.rows[0][2], "documents");
            assert_eq!(data.rows[0][3], "CRITICAL");
            assert!(data.rows[0].last().unwrap().contains("compaction"));
        }
    }
}
