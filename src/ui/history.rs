//! Tab 3: snapshots of the selected table, with the growth of data files over time and
//! compactions marked.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{
    Axis, Block, Borders, Cell, Chart, Dataset, GraphType, LegendPosition, Paragraph,
};

use super::theme::Theme;
use super::{ListProps, constraint, draw_list, num, thousands};
use crate::app::layout::chart_height;
use crate::app::snapshots::SnapshotCol;
use crate::app::state::State;
use crate::fmt::human_duration;

pub fn draw(f: &mut Frame, area: Rect, s: &State, th: &Theme) {
    let v = &s.snapshots;
    if v.table.is_none() {
        f.render_widget(
            Paragraph::new(Span::styled(
                "  select a table in the Tables tab first",
                th.dim(),
            )),
            area,
        );
        return;
    }
    let ch = chart_height(s.size.1) as u16;
    let (chart_area, list_area) = if ch > 0 && area.height > ch + 3 {
        let [c, l] = Layout::vertical([Constraint::Length(ch), Constraint::Min(3)]).areas(area);
        (Some(c), l)
    } else {
        (None, area)
    };
    if let Some(c) = chart_area {
        draw_chart(f, c, s, th);
    }
    let shown = SnapshotCol::SHOWN;
    let props = ListProps {
        headers: shown.iter().map(|c| c.header()).collect(),
        widths: shown.iter().map(|c| constraint(c.width())).collect(),
        grid: &v.grid,
        load: &v.load,
        empty: "no snapshots: the table was never written",
    };
    let now = s.now;
    draw_list(f, list_area, th, &props, |i| {
        let r = &v.rows[i].info;
        let compaction = r.is_compaction();
        let op = if compaction {
            format!("{} ◆", r.operation)
        } else {
            r.operation.clone()
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

fn draw_chart(f: &mut Frame, area: Rect, s: &State, th: &Theme) {
    let rows = &s.snapshots.rows;
    let mut points: Vec<(f64, f64)> = rows
        .iter()
        .filter_map(|r| {
            r.info
                .total_data_files
                .map(|n| (r.info.committed_at.timestamp() as f64, n as f64))
        })
        .collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    let compactions: Vec<(f64, f64)> = rows
        .iter()
        .filter(|r| r.info.is_compaction())
        .filter_map(|r| {
            r.info
                .total_data_files
                .map(|n| (r.info.committed_at.timestamp() as f64, n as f64))
        })
        .collect();
    let last_compaction = rows
        .iter()
        .filter(|r| r.info.is_compaction())
        .map(|r| &r.info)
        .max_by_key(|i| i.committed_at);
    let current = points.last().map(|p| p.1 as u64);
    let title = match (last_compaction, current) {
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
    };
    let block = Block::default()
        .borders(Borders::TOP | Borders::BOTTOM)
        .title(Span::styled(title, th.header()));
    if points.len() < 2 {
        let msg = if points.is_empty() {
            "  no snapshot records total-data-files"
        } else {
            "  one snapshot: nothing to chart yet"
        };
        f.render_widget(
            Paragraph::new(Span::styled(msg, th.dim())).block(block),
            area,
        );
        return;
    }
    let (x0, x1) = (
        points[0].0,
        points[points.len() - 1].0.max(points[0].0 + 1.0),
    );
    let ymax = points.iter().map(|p| p.1).fold(1.0, f64::max) * 1.1;
    let date = |t: f64| {
        chrono::DateTime::from_timestamp(t as i64, 0)
            .map(|d| d.format("%m-%d").to_string())
            .unwrap_or_default()
    };
    let datasets = vec![
        Dataset::default()
            .name("data files")
            .marker(Marker::Braille)
            .graph_type(GraphType::Line)
            .style(th.chart_line())
            .data(&points),
        Dataset::default()
            .name("compaction ◆")
            .marker(Marker::Block)
            .graph_type(GraphType::Scatter)
            .style(th.compaction())
            .data(&compactions),
    ];
    let chart = Chart::new(datasets)
        .block(block)
        .legend_position(Some(LegendPosition::TopLeft))
        .hidden_legend_constraints((Constraint::Ratio(1, 2), Constraint::Ratio(1, 2)))
        .x_axis(Axis::default().bounds([x0, x1]).labels(vec![
            Line::from(date(x0)),
            Line::from(date((x0 + x1) / 2.0)),
            Line::from(date(x1)),
        ]))
        .y_axis(Axis::default().bounds([0.0, ymax]).labels(vec![
            Line::from("0"),
            Line::from(thousands((ymax / 2.0) as u64)),
            Line::from(thousands(ymax as u64)),
        ]));
    f.render_widget(chart, area);
}
