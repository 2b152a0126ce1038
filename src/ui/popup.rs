//! Overlays: help (from the keymap) and the health breakdown of a table.

use ratatui::Frame;
use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use super::theme::Theme;
use crate::app::keymap::Scope;
use crate::app::state::State;
use crate::app::update::breakdown;
use crate::lakehouse::model::TableRef;

pub fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let [v] = Layout::vertical([Constraint::Length(height.min(area.height))])
        .flex(Flex::Center)
        .areas(area);
    let [h] = Layout::horizontal([Constraint::Length(width.min(area.width))])
        .flex(Flex::Center)
        .areas(v);
    h
}

/// Help, generated from the keymap (the same data as the footer), in as many columns as
/// the terminal allows.
pub fn help(f: &mut Frame, area: Rect, s: &State, th: &Theme) {
    let entries = s.keymap.help();
    let key_w = entries
        .iter()
        .map(|(k, _, _)| k.chars().count())
        .max()
        .unwrap_or(4)
        .min(12);
    let mut items: Vec<Line> = Vec::new();
    for (scope, title) in [
        (Scope::Global, "everywhere"),
        (Scope::Tables, "Tables"),
        (Scope::Partitions, "Partitions"),
        (Scope::Snapshots, "Snapshots"),
        (Scope::Dags, "DAGs"),
    ] {
        let group: Vec<_> = entries.iter().filter(|(_, _, sc)| *sc == scope).collect();
        if group.is_empty() {
            continue;
        }
        items.push(Line::from(Span::styled(title, th.header())));
        for (k, d, _) in group {
            items.push(Line::from(vec![
                Span::styled(format!(" {k:<key_w$} "), th.key()),
                Span::raw(*d),
            ]));
        }
    }
    let col_w = (key_w + 26) as u16;
    let inner_h = area.height.saturating_sub(3).max(1) as usize;
    let cols = items
        .len()
        .div_ceil(inner_h)
        .max(1)
        .min((area.width.saturating_sub(2) / col_w).max(1) as usize);
    let rows = items.len().div_ceil(cols);
    let width = (col_w * cols as u16 + 2).min(area.width);
    let height = (rows as u16 + 3).min(area.height);
    let r = centered(area, width, height);
    f.render_widget(Clear, r);
    let title = if s.readonly {
        " help — READ-ONLY: maintenance disabled "
    } else {
        " help — esc closes "
    };
    let block = Block::default().borders(Borders::ALL).title(title);
    let inner = block.inner(r);
    f.render_widget(block, r);
    let parts = Layout::horizontal(vec![Constraint::Length(col_w); cols]).split(inner);
    for (c, chunk) in items.chunks(rows).enumerate() {
        if let Some(a) = parts.get(c) {
            f.render_widget(Paragraph::new(chunk.to_vec()), *a);
        }
    }
}

pub fn info(f: &mut Frame, area: Rect, s: &State, t: &TableRef, th: &Theme) {
    let mut lines = vec![Line::from(Span::styled(t.to_string(), th.header()))];
    for (sev, text) in breakdown(s, t) {
        lines.push(Line::from(Span::styled(text, th.severity(sev))));
    }
    lines.push(Line::from(Span::styled("esc closes", th.dim())));
    let width = area.width.saturating_sub(4).min(100);
    let inner = width.saturating_sub(2).max(1) as usize;
    let wrapped: u16 = lines
        .iter()
        .map(|l| (l.width().max(1).div_ceil(inner)) as u16)
        .sum();
    let r = centered(area, width, (wrapped + 2).min(area.height));
    f.render_widget(Clear, r);
    f.render_widget(
        Paragraph::new(lines)
            .block(
                Block::default()
                    .borders(Borders::ALL)
                    .title(" health breakdown "),
            )
            .wrap(Wrap { trim: false }),
        r,
    );
}
