//! Tab 1: every table, worst first.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Wrap};

use super::theme::Theme;
use super::{age, compact, draw_list, num};
use crate::app::state::{State, TableRow};
use crate::app::update::breakdown;
use crate::fmt::human_bytes;
use crate::health::Severity;

pub fn draw(f: &mut Frame, area: Rect, s: &State, th: &Theme) {
    // At 160 columns and more the health breakdown of the selection sits beside the list.
    let (list, side) = if area.width >= 160 {
        let [l, r] = Layout::horizontal([Constraint::Min(100), Constraint::Length(48)]).areas(area);
        (l, Some(r))
    } else {
        (area, None)
    };
    let wide = list.width >= 110;
    let cols = Cols {
        wide,
        dag: wide && s.airflow_configured && list.width >= 150,
    };
    let mut headers = vec!["STAT", "SCORE", "TABLE", "FILES", "SMALL", "AVG", "SIZE"];
    let mut widths = vec![
        Constraint::Length(5),
        Constraint::Length(5),
        Constraint::Min(20),
        Constraint::Length(6),
        Constraint::Length(6),
        Constraint::Length(7),
        Constraint::Length(7),
    ];
    if wide {
        headers.extend([
            "RECORDS",
            "PARTS",
            "SNAPS",
            "COMPACTED",
            "WRITTEN",
            "DELETES",
        ]);
        widths.extend([
            Constraint::Length(7),
            Constraint::Length(6),
            Constraint::Length(5),
            Constraint::Length(9),
            Constraint::Length(7),
            Constraint::Length(7),
        ]);
        if cols.dag {
            headers.push("MAINTENANCE DAG");
            widths.push(Constraint::Length(24));
        }
    } else {
        headers.push("COMPACTED");
        widths.push(Constraint::Length(10));
    }
    let now = s.now;
    draw_list(
        f,
        list,
        th,
        &headers,
        &widths,
        &s.tables.grid,
        &s.tables.load,
        "no Iceberg tables",
        |i| {
            let r = &s.tables.rows[i];
            row_cells(r, cols, now, th)
        },
    );
    if let Some(side) = side {
        draw_side(f, side, s, th);
    }
}

fn status_cell(r: &TableRow, th: &Theme) -> Cell<'static> {
    let (text, style) = match (r.status(), r.loading && r.stats.is_none()) {
        (_, true) => ("…".to_string(), th.dim()),
        (Some(sev), _) => (sev.short().to_string(), th.severity(sev)),
        (None, _) => ("-".to_string(), th.dim()),
    };
    // A reload in flight: the values are from the previous refresh.
    let text = if r.stale || (r.loading && r.stats.is_some()) {
        format!("{text}~")
    } else {
        text
    };
    Cell::from(Span::styled(text, style))
}

/// Which optional columns fit.
#[derive(Clone, Copy)]
struct Cols {
    wide: bool,
    /// The maintenance DAG gets a column of its own.
    dag: bool,
}

fn row_cells(
    r: &TableRow,
    cols: Cols,
    now: chrono::DateTime<chrono::Utc>,
    th: &Theme,
) -> (Vec<Cell<'static>>, Style) {
    let name = match (&r.stats, &r.error) {
        // Not readable: the reason goes where the eye is (the full text is in `i`).
        (None, Some(e)) => Cell::from(Line::from(vec![
            Span::raw(r.name.clone()),
            Span::styled(format!(" ! {e}"), th.severity(Severity::Unknown)),
        ])),
        _ => Cell::from(r.name.clone()),
    };
    let mut cells = vec![
        status_cell(r, th),
        num(r
            .health
            .as_ref()
            .map(|h| h.score.to_string())
            .unwrap_or_default()),
        name,
    ];
    let style = if r.stale { th.dim() } else { Style::default() };
    if let Some(st) = &r.stats {
        let small_style =
            if st.small_files > 0 && r.status().is_some_and(|s| s >= Severity::Warning) {
                th.severity(r.status().unwrap_or(Severity::Ok))
            } else {
                Style::default()
            };
        cells.push(num(compact(st.data_files)));
        cells.push(Cell::from(
            Line::from(Span::styled(compact(st.small_files), small_style))
                .alignment(ratatui::layout::Alignment::Right),
        ));
        cells.push(num(st
            .avg_file_size()
            .map(human_bytes)
            .unwrap_or_else(|| "-".into())));
        cells.push(num(human_bytes(st.total_bytes)));
        // The compaction age, with the maintenance DAG's last run beside it when the
        // DAG has no column of its own: ✗ failed, ✓ success, ‖ paused, ! import error.
        let age_text = if st.is_empty_table() {
            "-".to_string()
        } else {
            age(now, st.last_compaction)
        };
        let compacted = match (&r.dag, cols.dag) {
            (Some(d), false) => {
                let (mark, sev) = dag_mark(d);
                Cell::from(
                    Line::from(vec![
                        Span::raw(format!("{age_text} ")),
                        Span::styled(mark, th.severity(sev)),
                    ])
                    .alignment(ratatui::layout::Alignment::Right),
                )
            }
            _ => num(age_text),
        };
        if cols.wide {
            cells.push(num(compact(st.records)));
            cells.push(num(if st.partitioned {
                compact(st.partitions)
            } else {
                "-".into()
            }));
            cells.push(num(compact(st.snapshots)));
            cells.push(compacted);
            cells.push(num(age(now, st.last_write)));
            cells.push(num(compact(st.delete_files)));
            if cols.dag
                && let Some(d) = &r.dag
            {
                let (mark, sev) = dag_mark(d);
                let guess = if d.guessed { "?" } else { "" };
                cells.push(Cell::from(Span::styled(
                    format!("{mark} {}{guess}", d.dag_id),
                    th.severity(sev),
                )));
            }
        } else {
            cells.push(compacted);
        }
    }
    (cells, style)
}

/// The maintenance DAG's state as one symbol (readable without colour).
fn dag_mark(d: &crate::health::DagFacts) -> (&'static str, Severity) {
    if d.import_error.is_some() {
        ("!", Severity::Critical)
    } else if d.paused {
        ("‖", Severity::Warning)
    } else {
        match d.last_run_state.as_deref() {
            Some("failed") => ("✗", Severity::Critical),
            Some("success") => ("✓", Severity::Ok),
            Some(_) => ("…", Severity::Info),
            None => ("·", Severity::Info),
        }
    }
}

fn draw_side(f: &mut Frame, area: Rect, s: &State, th: &Theme) {
    let block = Block::default().borders(Borders::LEFT).title(" why ");
    let lines: Vec<Line> = match s.tables.selected() {
        Some(r) => {
            let mut v = vec![Line::from(Span::styled(r.table.to_string(), th.header()))];
            for (sev, text) in breakdown(s, &r.table) {
                v.push(Line::from(Span::styled(text, th.severity(sev))));
            }
            v
        }
        None => vec![Line::from("")],
    };
    f.render_widget(
        Paragraph::new(lines)
            .block(block)
            .wrap(Wrap { trim: false }),
        area,
    );
}
