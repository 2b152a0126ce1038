//! Tab 1: every table, worst first.

use crate::airflow::DagRunState;
use crate::text::one_line;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Wrap};

use super::breakdown::health_breakdown;
use super::theme::Theme;
use super::{ListProps, age, compact, constraint, draw_list, num};
use crate::app::layout::identity_room;
use crate::app::state::State;
use crate::app::tables::{TableCol, TableRow, WIDE};
use crate::fmt::human_bytes;
use crate::health::Severity;
use crate::refresh::Standing;
use crate::text::sanitize;

pub fn draw(f: &mut Frame, area: Rect, s: &State, th: &Theme) {
    // At 160 columns and more the health breakdown of the selection sits beside the list.
    let (list, side) = if area.width >= 160 {
        let [l, r] =
            Layout::horizontal([Constraint::Min(100), Constraint::Length(SIDE)]).areas(area);
        (l, Some(r))
    } else {
        (area, None)
    };
    let (shown, _) = columns(s, list.width);
    let wide = list.width >= WIDE;
    let cols = Cols {
        dag: shown.contains(&TableCol::Dag),
    };
    let props = ListProps {
        headers: shown.iter().map(|c| c.header()).collect(),
        widths: shown.iter().map(|c| constraint(c.width(wide))).collect(),
        grid: &s.tables.grid,
        load: &s.tables.load,
        empty: "no Iceberg tables",
    };
    let now = s.now;
    draw_list(f, list, th, &props, |i| {
        let r = &s.tables.rows[i];
        row_cells(r, s.tables.standing(r), &shown, cols, now, th)
    });
    if let Some(side) = side {
        draw_side(f, side, s, th);
    }
}

fn status_cell(r: &TableRow, standing: Standing, th: &Theme) -> Cell<'static> {
    let reading = standing == Standing::Reading && r.read.stats.is_none();
    let (text, style) = match (r.status(), reading) {
        (_, true) => ("…".to_string(), th.dim()),
        (Some(sev), _) => (sev.short().to_string(), th.severity(sev)),
        (None, _) => ("-".to_string(), th.dim()),
    };
    // Read again now or soon, or shown from an earlier run: the values are older than
    // this refresh.
    let text = if !reading && (standing != Standing::Idle || r.read.cached) {
        format!("{text}~")
    } else {
        text
    };
    Cell::from(Span::styled(text, style))
}

/// Which optional columns fit.
#[derive(Clone, Copy)]
struct Cols {
    /// The maintenance DAG gets a column of its own.
    dag: bool,
}

fn row_cells(
    r: &TableRow,
    standing: Standing,
    shown: &[TableCol],
    cols: Cols,
    now: chrono::DateTime<chrono::Utc>,
    th: &Theme,
) -> (Vec<Cell<'static>>, Style) {
    let stale = r.read.cached || standing == Standing::Queued;
    let style = if stale { th.dim() } else { Style::default() };
    let error = r.error().map(ToString::to_string);
    let mut cells = Vec::with_capacity(shown.len());
    for &col in shown {
        let cell = match (col, r.stats()) {
            (TableCol::Status, _) => status_cell(r, standing, th),
            (TableCol::Score, _) => num(r
                .health
                .as_ref()
                .map(|h| h.score.to_string())
                .unwrap_or_default()),
            // Names and errors are the server's: sanitised in the cell, escapes visible.
            (TableCol::Table, _) => match (r.stats(), &error) {
                // Not readable: the reason goes where the eye is (the full text is in `i`).
                (None, Some(e)) => Cell::from(Line::from(vec![
                    Span::raw(one_line(&r.name)),
                    Span::styled(
                        format!(" ! {}", one_line(e)),
                        th.severity(Severity::Unknown),
                    ),
                ])),
                // Read before, not now: the figures are old and the row says why.
                (Some(_), Some(e)) => Cell::from(Line::from(vec![
                    Span::raw(one_line(&r.name)),
                    Span::styled(
                        format!(" ! re-read failed: {}", one_line(e)),
                        th.severity(Severity::Unknown),
                    ),
                ])),
                _ => Cell::from(one_line(&r.name)),
            },
            // The rest needs stats: a row without them stops here.
            (_, None) => break,
            (TableCol::Files, Some(st)) => num(compact(st.data_files)),
            (TableCol::Small, Some(st)) => {
                let small_style =
                    if st.small_files > 0 && r.status().is_some_and(|s| s >= Severity::Warning) {
                        th.severity(r.status().unwrap_or(Severity::Ok))
                    } else {
                        Style::default()
                    };
                // Files not read: a proved lower bound while their read runs; nothing
                // known (nor needed: too few files for any small-file verdict) after.
                let text = match (st.files_unread, r.read.stats.is_none() || error.is_some()) {
                    (false, _) => compact(st.small_files),
                    (true, true) => format!(">={}", compact(st.small_files)),
                    (true, false) => "-".into(),
                };
                Cell::from(
                    Line::from(Span::styled(text, small_style))
                        .alignment(ratatui::layout::Alignment::Right),
                )
            }
            (TableCol::AvgSize, Some(st)) => num(st
                .avg_file_size()
                .map(human_bytes)
                .unwrap_or_else(|| "-".into())),
            (TableCol::Size, Some(st)) => num(human_bytes(st.total_bytes)),
            (TableCol::Records, Some(st)) => num(compact(st.records)),
            (TableCol::Partitions, Some(st)) => num(if st.partitioned {
                compact(st.partitions)
            } else {
                "-".into()
            }),
            (TableCol::Snapshots, Some(st)) => num(compact(st.snapshots)),
            (TableCol::Compacted, Some(st)) => compacted_cell(r, st, cols, now, th),
            (TableCol::Waiting, Some(st)) => num(if st.small_files > 0 {
                age(now, st.oldest_small_file_at)
            } else {
                "-".into()
            }),
            (TableCol::Written, Some(st)) => num(age(now, st.last_write)),
            (TableCol::Deletes, Some(st)) => num(compact(st.delete_files)),
            (TableCol::Dag, Some(_)) => match &r.dag {
                Some(d) => {
                    let (mark, sev) = dag_mark(d);
                    let guess = if d.guessed { "?" } else { "" };
                    Cell::from(Span::styled(
                        format!("{mark} {}{guess}", d.dag_id),
                        th.severity(sev),
                    ))
                }
                None => continue,
            },
            (TableCol::SmallPartitions, Some(_)) => continue,
        };
        cells.push(cell);
    }
    (cells, style)
}

/// The compaction age, with the maintenance DAG's last run beside it when the DAG has no
/// column of its own: ✗ failed, ✓ success, ‖ paused, ! import error.
fn compacted_cell(
    r: &TableRow,
    st: &crate::lakehouse::model::TableStats,
    cols: Cols,
    now: chrono::DateTime<chrono::Utc>,
    th: &Theme,
) -> Cell<'static> {
    let age_text = if st.is_empty_table() {
        "-".to_string()
    } else {
        age(now, st.last_compaction)
    };
    match (&r.dag, cols.dag) {
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
    }
}

/// The maintenance DAG's state as one symbol (readable without colour).
fn dag_mark(d: &crate::health::DagFacts) -> (&'static str, Severity) {
    if d.import_error.is_some() {
        ("!", Severity::Critical)
    } else if d.paused {
        ("‖", Severity::Warning)
    } else {
        match &d.last_run_state {
            Some(DagRunState::Failed) => ("✗", Severity::Critical),
            Some(DagRunState::Success) => ("✓", Severity::Ok),
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
            for (sev, text) in health_breakdown(s, &r.table) {
                v.push(Line::from(Span::styled(
                    crate::text::sanitize(&text).into_owned(),
                    th.severity(sev),
                )));
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

/// The width of the health breakdown beside the list (160 columns and more).
const SIDE: u16 = 48;

/// The columns a list `width` wide shows, and the cells left for the table's name.
fn columns(s: &State, width: u16) -> (Vec<TableCol>, u16) {
    let t = &s.tables;
    let need = super::identity_need(t.grid.index.iter().map(|&i| t.rows[i].name.as_str()));
    let shown = TableCol::shown(width, s.airflow_configured, need);
    let wide = width >= WIDE;
    let room = identity_room(width, &shown, |c| c.width(wide), |c| c == TableCol::Table);
    (shown, room)
}

/// The selected table's whole name when the list (of a screen `width` wide) cannot show it.
pub fn cut_name(s: &State, width: u16) -> Option<String> {
    let r = s.tables.selected()?;
    let list = if width >= 160 { width - SIDE } else { width };
    let (_, room) = columns(s, list);
    (super::text_width(&r.name) > room).then(|| sanitize(&r.table.to_string()).into_owned())
}
