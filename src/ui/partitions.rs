//! Tab 2: the partitions of the selected table; space marks rows for optimize.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::Style;
use ratatui::text::Span;
use ratatui::widgets::{Cell, Paragraph};

use super::theme::Theme;
use super::{draw_list, num, thousands};
use crate::app::state::State;
use crate::fmt::human_bytes;
use crate::health::Severity;

pub fn draw(f: &mut Frame, area: Rect, s: &State, th: &Theme) {
    let p = &s.partitions;
    if p.table.is_none() {
        f.render_widget(
            Paragraph::new(Span::styled(
                "  select a table in the Tables tab and press enter",
                th.dim(),
            )),
            area,
        );
        return;
    }
    let wide = area.width >= 100;
    let mut headers = vec!["M", "STAT", "PARTITION", "FILES", "SMALL", "AVG", "SIZE"];
    let mut widths = vec![
        Constraint::Length(1),
        Constraint::Length(4),
        Constraint::Min(20),
        Constraint::Length(6),
        Constraint::Length(6),
        Constraint::Length(7),
        Constraint::Length(7),
    ];
    if wide {
        headers.extend(["RECORDS", "MIN FILE", "MAX FILE", "DELETES"]);
        widths.extend([
            Constraint::Length(9),
            Constraint::Length(8),
            Constraint::Length(8),
            Constraint::Length(7),
        ]);
    }
    let empty = if p.fields.is_empty() && !p.rows.is_empty() {
        ""
    } else {
        "no data files"
    };
    draw_list(
        f,
        area,
        th,
        &headers,
        &widths,
        &p.grid,
        &p.load,
        empty,
        |i| {
            let r = &p.rows[i];
            let marked = p.marks.contains(&r.label);
            let (stat, st_style) = match r.severity {
                Severity::Ok => ("ok".to_string(), th.dim()),
                sev => (sev.short().to_string(), th.severity(sev)),
            };
            let row_style = if marked {
                th.marked()
            } else if r.severity >= Severity::Warning {
                th.severity(r.severity)
            } else {
                Style::default()
            };
            let mut cells = vec![
                Cell::from(if marked { "*" } else { " " }),
                Cell::from(Span::styled(stat, st_style)),
                Cell::from(r.label.clone()),
                num(thousands(r.stats.data_files)),
                num(thousands(r.stats.small_files)),
                num(human_bytes(r.stats.avg_file_size())),
                num(human_bytes(r.stats.total_bytes)),
            ];
            if wide {
                cells.push(num(thousands(r.stats.records)));
                cells.push(num(human_bytes(r.stats.min_file)));
                cells.push(num(human_bytes(r.stats.max_file)));
                cells.push(num(thousands(r.stats.delete_files)));
            }
            (cells, row_style)
        },
    );
}
