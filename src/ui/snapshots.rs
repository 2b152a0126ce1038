//! Tab 3: snapshots of the selected table, with its timeline: the growth of data files
//! over time, compactions marked, the maintenance DAG's runs on the same axis, and the
//! sentence they add up to.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Block, Borders, Cell, Chart, Dataset, GraphType, Paragraph};

use super::theme::Theme;
use super::{ListProps, constraint, draw_list, num, thousands};
use crate::app::layout::chart_height;
use crate::app::snapshots::{SnapshotCol, SnapshotRow, timeline};
use crate::app::state::{Load, State};
use crate::fmt::human_duration;
use crate::health::Severity;
use crate::timeline::{EventKind, Timeline};

pub fn draw(f: &mut Frame, area: Rect, s: &State, th: &Theme) {
    let v = &s.snapshots;
    if v.detail.table.is_none() {
        f.render_widget(
            Paragraph::new(Span::styled(
                "  select a table in the Tables tab first",
                th.dim(),
            )),
            area,
        );
        return;
    }
    let tl = timeline(s);
    let ch = chart_height(s.size.1) as u16;
    // The chart shrinks away on short terminals; the sentence stays.
    let list_area = if ch > 0 && area.height > ch + 3 {
        let [c, l] = Layout::vertical([Constraint::Length(ch), Constraint::Min(3)]).areas(area);
        draw_chart(f, c, s, &tl, th);
        l
    } else if area.height > 4 && v.detail.load == Load::Loaded {
        let [c, l] = Layout::vertical([Constraint::Length(1), Constraint::Min(3)]).areas(area);
        let line = wrap_words(
            &crate::text::sanitize(&tl.sentence),
            c.width.saturating_sub(1) as usize,
            1,
        );
        f.render_widget(
            Paragraph::new(Span::styled(format!(" {}", line[0]), th.header())),
            c,
        );
        l
    } else {
        area
    };
    let shown = SnapshotCol::SHOWN;
    let props = ListProps {
        headers: shown.iter().map(|c| c.header()).collect(),
        widths: shown.iter().map(|c| constraint(c.width())).collect(),
        grid: &v.grid,
        load: &v.detail.load,
        empty: "no snapshots: the table was never written",
    };
    let now = s.now;
    draw_list(f, list_area, th, &props, |i| {
        let r = &v.rows[i].info;
        let compaction = r.is_compaction();
        let op = if compaction {
            format!("{} ◆", r.operation)
        } else {
            r.operation.to_string()
        };
        let n = |x: Option<u64>| x.map(thousands).unwrap_or_else(|| "-".into());
        let cells = shown
            .iter()
            .map(|col| match col {
                SnapshotCol::Committed => {
                    Cell::from(r.committed_at.format("%Y-%m-%d %H:%M").to_string())
                }
                SnapshotCol::Age => num(human_duration((now - r.committed_at).num_seconds())),
                SnapshotCol::Operation => Cell::from(op.clone()),
                SnapshotCol::Added => num(n(r.added_data_files)),
                SnapshotCol::Deleted => num(n(r.deleted_data_files)),
                SnapshotCol::TotalFiles => num(n(r.total_data_files)),
                SnapshotCol::Records => num(n(r.total_records)),
                SnapshotCol::By => Cell::from(r.trino_user.clone().unwrap_or_default()),
                SnapshotCol::Table | SnapshotCol::SnapshotId | SnapshotCol::QueryId => {
                    Cell::from("")
                }
            })
            .collect();
        let style = if compaction {
            th.compaction()
        } else {
            Style::default()
        };
        (cells, style)
    });
}

/// `text` in at most `max` lines of `width` characters, broken between words; a cut
/// last line ends in an ellipsis.
fn wrap_words(text: &str, width: usize, max: usize) -> Vec<String> {
    let width = width.max(8);
    let mut lines: Vec<String> = vec![String::new()];
    for w in text.split_whitespace() {
        let last = lines.last_mut().expect("one line at least");
        let n = last.chars().count();
        if n == 0 {
            last.push_str(w);
        } else if n + 1 + w.chars().count() <= width {
            last.push(' ');
            last.push_str(w);
        } else {
            lines.push(w.to_string());
        }
    }
    if lines.len() > max {
        lines.truncate(max);
        let last = lines.last_mut().expect("max is at least one");
        let keep: String = last.chars().take(width.saturating_sub(1)).collect();
        *last = format!("{keep}…");
    }
    for l in &mut lines {
        if l.chars().count() > width {
            *l = crate::text::clip(l, width.saturating_sub(1)).into_owned();
        }
    }
    lines
}

/// The timeline: the sentence, the data files over time with compactions marked, and
/// the maintenance DAG's runs (✗ failed, ✓ succeeded) on the same time axis below.
fn draw_chart(f: &mut Frame, area: Rect, s: &State, tl: &Timeline, th: &Theme) {
    let series = Series::of(&s.snapshots.rows, tl);
    // The legend, in words and glyphs (readable without colour).
    let legend = match &tl.dag_id {
        Some(d) => format!(" ◆ compaction · runs of {d}: ✗ failed ✓ ok "),
        None => " ◆ compaction ".to_string(),
    };
    let block = Block::default()
        .borders(Borders::TOP | Borders::BOTTOM)
        .title(Span::styled(chart_title(s, &series.points), th.header()))
        .title_bottom(Line::from(Span::styled(legend, th.dim())).right_aligned());
    let inner = block.inner(area);
    f.render_widget(block, area);
    let [chart_area, runs_area] = draw_sentence(f, inner, tl, th);
    let Some(x) = draw_plot(f, chart_area, &series, th) else {
        return;
    };
    if runs_area.height == 0 {
        return;
    }
    draw_runs(f, [chart_area, runs_area], tl, &series.runs, x, th);
}

/// What the chart shows: the data files at each snapshot, the compactions among them, and
/// the DAG's runs, each at its Unix time.
struct Series {
    points: Vec<(f64, f64)>,
    compactions: Vec<(f64, f64)>,
    runs: Vec<(f64, EventKind)>,
}

impl Series {
    fn of(rows: &[SnapshotRow], tl: &Timeline) -> Series {
        // A snapshot's data files at its commit time, when it records them.
        let files_at = |r: &SnapshotRow| {
            r.info
                .total_data_files
                .map(|n| (r.info.committed_at.timestamp() as f64, n as f64))
        };
        let mut points: Vec<(f64, f64)> = rows.iter().filter_map(files_at).collect();
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        let compactions: Vec<(f64, f64)> = rows
            .iter()
            .filter(|r| r.info.is_compaction())
            .filter_map(files_at)
            .collect();
        let runs: Vec<(f64, EventKind)> = tl
            .events
            .iter()
            .filter(|e| e.kind.is_run())
            .map(|e| (e.at.timestamp() as f64, e.kind))
            .collect();
        Series {
            points,
            compactions,
            runs,
        }
    }
}

/// ` data files: 144 → 2,016 since the last compaction 15d ago `.
fn chart_title(s: &State, points: &[(f64, f64)]) -> String {
    let last_compaction = s
        .snapshots
        .rows
        .iter()
        .filter(|r| r.info.is_compaction())
        .map(|r| &r.info)
        .max_by_key(|i| i.committed_at);
    let current = points.last().map(|p| p.1 as u64);
    match (last_compaction, current) {
        (Some(c), Some(now_files)) => format!(
            " data files: {} → {} since the last compaction {} ago ",
            thousands(c.total_data_files.unwrap_or(0)),
            thousands(now_files),
            human_duration((s.now - c.committed_at).num_seconds())
        ),
        (None, Some(now_files)) => {
            format!(" data files: {} — never compacted ", thousands(now_files))
        }
        _ => " data files over time ".to_string(),
    }
}

/// The sentence at the top of `inner`; the areas left for the plot and the runs row.
fn draw_sentence(f: &mut Frame, inner: Rect, tl: &Timeline, th: &Theme) -> [Rect; 2] {
    let sentence_rows = if inner.height >= 6 { 2 } else { 1 };
    // (it names a DAG, and a Delta table's log error: server strings)
    let lines = wrap_words(
        &crate::text::sanitize(&tl.sentence),
        inner.width.saturating_sub(1) as usize,
        sentence_rows,
    );
    let runs_row = u16::from(tl.dag_id.is_some());
    let [sentence_area, chart_area, runs_area] = Layout::vertical([
        Constraint::Length(lines.len() as u16),
        Constraint::Min(0),
        Constraint::Length(runs_row),
    ])
    .areas(inner);
    f.render_widget(
        Paragraph::new(
            lines
                .iter()
                .map(|l| Line::from(Span::styled(format!(" {l}"), th.header())))
                .collect::<Vec<_>>(),
        ),
        sentence_area,
    );
    [chart_area, runs_area]
}

/// The data files over time with the compactions marked; the time axis's bounds, or
/// `None` (and a word why) when there is too little to chart.
fn draw_plot(f: &mut Frame, area: Rect, series: &Series, th: &Theme) -> Option<(f64, f64)> {
    let (points, runs) = (&series.points, &series.runs);
    if points.len() < 2 || area.height < 3 {
        let msg = if points.is_empty() {
            "  no snapshot records total-data-files"
        } else if points.len() < 2 {
            "  one snapshot: nothing to chart yet"
        } else {
            ""
        };
        f.render_widget(Paragraph::new(Span::styled(msg, th.dim())), area);
        return None;
    }
    let first = runs.first().map_or(points[0].0, |r| r.0.min(points[0].0));
    let last = runs.last().map_or(points[points.len() - 1].0, |r| {
        r.0.max(points[points.len() - 1].0)
    });
    let (x0, x1) = (first, last.max(first + 1.0));
    let ymax = points.iter().map(|p| p.1).fold(1.0, f64::max) * 1.1;
    let date = |t: f64| {
        chrono::DateTime::from_timestamp(t as i64, 0)
            .map(|d| d.format("%m-%d").to_string())
            .unwrap_or_default()
    };
    let datasets = vec![
        Dataset::default()
            .marker(Marker::Braille)
            .graph_type(GraphType::Line)
            .style(th.chart_line())
            .data(points),
        Dataset::default()
            .marker(Marker::Block)
            .graph_type(GraphType::Scatter)
            .style(th.compaction())
            .data(&series.compactions),
    ];
    let y_labels = if area.height >= 5 {
        vec![
            Line::from("0"),
            Line::from(thousands((ymax / 2.0) as u64)),
            Line::from(thousands(ymax as u64)),
        ]
    } else {
        vec![Line::from("0"), Line::from(thousands(ymax as u64))]
    };
    let chart = Chart::new(datasets)
        .x_axis(Axis::default().bounds([x0, x1]).labels(vec![
            Line::from(date(x0)),
            Line::from(date((x0 + x1) / 2.0)),
            Line::from(date(x1)),
        ]))
        .y_axis(Axis::default().bounds([0.0, ymax]).labels(y_labels));
    f.render_widget(chart, area);
    Some((x0, x1))
}

/// The DAG's runs in the row below the plot, in the plot's columns over its time axis
/// `(x0, x1)`.
fn draw_runs(
    f: &mut Frame,
    [chart_area, runs_area]: [Rect; 2],
    tl: &Timeline,
    runs: &[(f64, EventKind)],
    (x0, x1): (f64, f64),
    th: &Theme,
) {
    // The runs go in the plot's columns: where the chart drew its axis corner.
    let buf = f.buffer_mut();
    let corner = (chart_area.top()..chart_area.bottom()).find_map(|y| {
        (chart_area.left()..chart_area.right()).find(|&x| buf[(x, y)].symbol() == "└")
    });
    let left = corner.map_or(chart_area.left(), |x| x + 1);
    let width = chart_area.right().saturating_sub(left);
    let gutter = left.saturating_sub(runs_area.left()) as usize;
    let label = if runs.is_empty() {
        match &tl.dag_id {
            Some(_) => " no runs".to_string(),
            None => String::new(),
        }
    } else {
        String::new()
    };
    buf.set_string(
        runs_area.left(),
        runs_area.top(),
        format!("{:<gutter$}", if gutter >= 4 { "runs" } else { "" }),
        th.dim(),
    );
    if !label.is_empty() {
        buf.set_string(left, runs_area.top(), label, th.dim());
    }
    if width == 0 {
        return;
    }
    for (i, k) in run_columns(runs, (x0, x1), width).iter().enumerate() {
        let Some(k) = k else { continue };
        let style = match k {
            EventKind::RunFailed => th.severity(Severity::Critical),
            EventKind::RunSucceeded => th.severity(Severity::Ok),
            _ => th.dim(),
        };
        buf.set_string(left + i as u16, runs_area.top(), k.glyph(), style);
    }
}

/// The run each of `width` columns over the time axis `(x0, x1)` shows (a failure in a
/// column outweighs a success in it).
fn run_columns(
    runs: &[(f64, EventKind)],
    (x0, x1): (f64, f64),
    width: u16,
) -> Vec<Option<EventKind>> {
    let mut cols: Vec<Option<EventKind>> = vec![None; width as usize];
    for (t, kind) in runs {
        let pos = ((t - x0) / (x1 - x0) * f64::from(width - 1)).round();
        let i = (pos.max(0.0) as usize).min(width as usize - 1);
        cols[i] = match (cols[i], kind) {
            (Some(EventKind::RunFailed), _) | (_, EventKind::RunFailed) => {
                Some(EventKind::RunFailed)
            }
            (Some(EventKind::RunSucceeded), _) | (_, EventKind::RunSucceeded) => {
                Some(EventKind::RunSucceeded)
            }
            _ => Some(*kind),
        };
    }
    cols
}

#[cfg(test)]
mod tests;
