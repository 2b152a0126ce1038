//! Tab 2: the partitions of the selected table; space marks rows for optimize.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::Span;
use ratatui::widgets::{Cell, Paragraph};

use super::theme::Theme;
use super::{ListProps, constraint, draw_list, num, thousands};
use crate::app::layout::identity_room;
use crate::app::partitions::PartitionCol;
use crate::app::state::State;
use crate::fmt::{human_bytes, human_duration};
use crate::health::Severity;
use crate::text::sanitize;

pub fn draw(f: &mut Frame, area: Rect, s: &State, th: &Theme) {
    let p = &s.partitions;
    if p.detail.table.is_none() {
        f.render_widget(
            Paragraph::new(Span::styled(
                "  select a table in the Tables tab and press enter",
                th.dim(),
            )),
            area,
        );
        return;
    }
    let (shown, room) = columns(s, area.width);
    let empty = if p.fields.is_empty() && !p.rows.is_empty() {
        ""
    } else {
        "no data files"
    };
    let props = ListProps {
        headers: shown.iter().map(|c| c.header()).collect(),
        widths: shown.iter().map(|c| constraint(c.width())).collect(),
        grid: &p.grid,
        load: &p.detail.load,
        empty,
    };
    draw_list(f, area, th, &props, |i| {
        let r = &p.rows[i];
        let marked = p.is_marked(r);
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
        let st = &r.stats;
        let cells = shown
            .iter()
            .map(|col| match col {
                PartitionCol::Mark => Cell::from(if marked { "*" } else { " " }),
                PartitionCol::Status => Cell::from(Span::styled(stat.clone(), st_style)),
                // Too narrow for the whole name: its values (`east · 2026-11-17`), and
                // the whole name in the status line.
                PartitionCol::Partition if super::text_width(&r.label) > room => {
                    Cell::from(sanitize(&r.stats.values_label()).into_owned())
                }
                PartitionCol::Partition => Cell::from(sanitize(&r.label).into_owned()),
                PartitionCol::Files => num(thousands(st.data_files)),
                PartitionCol::Small => num(thousands(st.small_files)),
                PartitionCol::AvgSize => num(human_bytes(st.avg_file_size())),
                PartitionCol::Size => num(human_bytes(st.total_bytes)),
                PartitionCol::Records => num(thousands(st.records)),
                PartitionCol::MinFile => num(human_bytes(st.min_file)),
                PartitionCol::MaxFile => num(human_bytes(st.max_file)),
                PartitionCol::Deletes => num(thousands(st.delete_files)),
                PartitionCol::Waiting => num(match st.oldest_small_file_at {
                    Some(t) if st.small_files > 0 => {
                        human_duration((s.now - t).num_seconds().max(0))
                    }
                    _ => "-".into(),
                }),
                PartitionCol::Table => Cell::from(""),
            })
            .collect();
        (cells, row_style)
    });
}

/// The columns a list `width` wide shows, and the cells left for the partition's name.
fn columns(s: &State, width: u16) -> (Vec<PartitionCol>, u16) {
    let p = &s.partitions;
    let need = super::identity_need(p.grid.index.iter().map(|&i| p.rows[i].label.as_str()));
    let shown = PartitionCol::shown(width, need);
    let room = identity_room(width, &shown, PartitionCol::width, |c| {
        c == PartitionCol::Partition
    });
    (shown, room)
}

/// The selected partition's whole name when the list, `width` wide, cannot show it.
pub fn cut_name(s: &State, width: u16) -> Option<String> {
    let r = s.partitions.selected()?;
    let (_, room) = columns(s, width);
    (super::text_width(&r.label) > room).then(|| sanitize(&r.label).into_owned())
}
