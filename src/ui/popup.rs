//! Overlays: help (from the keymap) and the health breakdown of a table.

use ratatui::Frame;
use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use super::breakdown::health_breakdown;
use super::theme::Theme;
use crate::app::keymap::Scope;
use crate::app::state::{State, Tab};
use crate::lakehouse::model::TableRef;

/// Rows `lines` take once wrapped to `width` columns.
fn wrapped_rows(lines: &[Line], width: usize) -> usize {
    let w = width.max(1);
    lines.iter().map(|l| l.width().max(1).div_ceil(w)).sum()
}

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
    let lake: Vec<&str> = Tab::ALL
        .iter()
        .filter(|t| t.ops().lake)
        .map(|t| t.title())
        .collect();
    let groups = [(Scope::Global, "everywhere".to_string())]
        .into_iter()
        .chain([(Scope::Lake, lake.join(", "))])
        .chain(Tab::ALL.map(|t| (t.layer(), t.title().to_string())))
        .chain([(Scope::Confirm, "in a confirmation".to_string())]);
    for (scope, title) in groups {
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
    // A column is as wide as its longest description: descriptions are never cut. When
    // two such columns do not fit, one column, its descriptions wrapped.
    let desc_w = entries
        .iter()
        .map(|(_, d, _)| Span::raw(*d).width())
        .chain(items.iter().map(|l| l.width().saturating_sub(key_w + 2)))
        .max()
        .unwrap_or(20);
    let room = area.width.saturating_sub(2).max(1);
    let col_w = ((key_w + 4 + desc_w) as u16).min(room);
    // The notes only where the keys keep most of the room.
    let notes = if area.height >= 12 {
        help_notes(s, th)
    } else {
        Vec::new()
    };
    let notes_w = (room as usize).min((col_w as usize * 2).max(60));
    let notes_h = wrapped_rows(&notes, notes_w) as u16;
    let inner_h = area.height.saturating_sub(3 + notes_h).max(1) as usize;
    let cols = items
        .len()
        .div_ceil(inner_h)
        .max(1)
        .min((room / col_w).max(1) as usize);
    // Rows of the tallest column as drawn (one column wraps what is wider than it).
    let rows = if cols == 1 {
        wrapped_rows(&items, col_w as usize)
    } else {
        items.len().div_ceil(cols)
    };
    let width = (col_w * cols as u16 + 2)
        .max(notes_w as u16 + 2)
        .min(area.width);
    let height = (rows as u16 + 3 + notes_h).min(area.height);
    let r = centered(area, width, height);
    f.render_widget(Clear, r);
    // Rows the keys area cannot show: j/k scroll them into view.
    let hidden = rows.saturating_sub(height.saturating_sub(3 + notes_h).max(1) as usize);
    let scroll = s.help_scroll.min(hidden);
    let title = match (s.readonly, hidden > 0) {
        (true, _) => " help — READ-ONLY: maintenance disabled ".to_string(),
        (false, true) => format!(
            " help — esc closes · j/k scroll ({}/{}) ",
            scroll + 1,
            hidden + 1
        ),
        (false, false) => " help — esc closes ".to_string(),
    };
    let block = Block::default().borders(Borders::ALL).title(title);
    let inner = block.inner(r);
    f.render_widget(block, r);
    let [keys_area, notes_area] =
        Layout::vertical([Constraint::Min(1), Constraint::Length(notes_h)]).areas(inner);
    let parts = Layout::horizontal(vec![Constraint::Length(col_w); cols]).split(keys_area);
    let per_col = items.len().div_ceil(cols).max(1);
    for (c, chunk) in items.chunks(per_col).enumerate() {
        if let Some(a) = parts.get(c) {
            f.render_widget(
                Paragraph::new(chunk.to_vec())
                    .wrap(Wrap { trim: false })
                    .scroll((scroll as u16, 0)),
                *a,
            );
        }
    }
    f.render_widget(Paragraph::new(notes).wrap(Wrap { trim: false }), notes_area);
}

/// What the keys alone do not say: where copying works, and when old snapshots warn.
fn help_notes(s: &State, th: &Theme) -> Vec<Line<'static>> {
    use crate::fmt::{human_duration, thousands};
    let copy = s.keymap.keys_text(crate::app::keymap::Command::Copy);
    let h = &s.health;
    [
        format!(
            "{copy} copies with OSC 52: through SSH to your terminal's clipboard; in tmux set -g set-clipboard on"
        ),
        format!(
            "snapshots past the {} retention are INFO until {} could be expired or they pin {} data files: then WARNING",
            human_duration(h.snapshot_retention.as_secs() as i64),
            thousands(h.expirable_snapshots_warn),
            thousands(h.pinned_files_warn),
        ),
    ]
    .into_iter()
    .map(|t| Line::from(Span::styled(t, th.dim())))
    .collect()
}

pub fn health(f: &mut Frame, area: Rect, s: &State, t: &TableRef, th: &Theme) {
    let mut lines = vec![Line::from(Span::styled(t.to_string(), th.header()))];
    for (sev, text) in health_breakdown(s, t) {
        lines.push(Line::from(Span::styled(
            crate::text::sanitize(&text).into_owned(),
            th.severity(sev),
        )));
    }
    lines.push(Line::from(Span::styled("esc closes", th.dim())));
    let width = area.width.saturating_sub(4).min(100);
    let wrapped = wrapped_rows(&lines, width.saturating_sub(2) as usize) as u16;
    let r = centered(area, width, (wrapped + 2).min(area.height));
    boxed(f, r, lines, " health breakdown ");
}

/// The confirm popup: what will be rewritten, the exact SQL, and `y` to run it.
pub fn confirm(
    f: &mut Frame,
    area: Rect,
    c: &crate::app::maintenance::Confirm,
    on: Option<String>,
    th: &Theme,
) {
    let plan = &c.plan;
    // With several clusters on screen, which one it runs on comes first.
    let mut lines: Vec<Line> = on
        .map(|o| Line::from(Span::styled(o, th.badge())))
        .into_iter()
        .collect();
    lines.push(Line::from(Span::styled(plan.summary(), th.header())));
    for n in &plan.notes {
        lines.push(Line::from(Span::styled(
            format!("note: {}", crate::text::sanitize(n)),
            th.header(),
        )));
    }
    if plan.steps.iter().any(|s| s.files > 0) {
        lines.push(Line::from(format!(
            "{} data files ({} small) in {} — one statement at a time, oldest partition first; a failure stops the rest",
            crate::fmt::thousands(plan.steps.iter().map(|s| s.files).sum()),
            crate::fmt::thousands(plan.files()),
            crate::fmt::human_bytes(plan.bytes()),
        )));
    }
    for l in &c.cost {
        lines.push(Line::from(Span::styled(
            crate::text::sanitize(l).into_owned(),
            th.header(),
        )));
    }
    for (k, v) in &plan.session {
        lines.push(Line::from(Span::styled(
            format!("session: {k} = {v}"),
            th.dim(),
        )));
    }
    lines.push(Line::from(""));
    for (i, st) in plan.steps.iter().enumerate() {
        let head = match &st.partition {
            Some(p) => format!(
                "-- {}/{}: {p} ({} files, {} small, {})",
                i + 1,
                plan.steps.len(),
                st.files,
                st.small_files,
                crate::fmt::human_bytes(st.bytes)
            ),
            None => format!("-- {}/{}", i + 1, plan.steps.len()),
        };
        lines.push(Line::from(Span::styled(head, th.dim())));
        lines.push(Line::from(format!("{};", st.sql)));
    }
    let mut keys = vec![
        Span::styled(" y ", th.badge()),
        Span::raw(" run   "),
        Span::styled(" n ", th.key()),
        Span::raw("/esc/any key: do nothing   "),
    ];
    if c.draft.partitions.len() > 1 {
        keys.push(Span::styled(" g ", th.key()));
        keys.push(Span::raw(if c.grouped {
            " one statement per partition   "
        } else {
            " group into one statement   "
        }));
    }
    if c.incremental || c.cost.iter().any(|l| l.ends_with("i: part 1 only")) {
        keys.push(Span::styled(" i ", th.key()));
        keys.push(Span::raw(if c.incremental {
            " the whole plan   "
        } else {
            " part 1 only   "
        }));
    }
    keys.push(Span::styled("j/k scroll", th.dim()));
    let width = area.width.saturating_sub(4).min(140);
    let wrapped = wrapped_rows(&lines, width.saturating_sub(2) as usize);
    let height = ((wrapped + 4) as u16)
        .min(area.height.saturating_sub(2))
        .max(6);
    let r = centered(area, width, height);
    f.render_widget(Clear, r);
    let block = Block::default()
        .borders(Borders::ALL)
        .title(format!(" confirm {} ", plan.procedure.name()));
    let inner = block.inner(r);
    f.render_widget(block, r);
    let [body, legend] = Layout::vertical([Constraint::Min(1), Constraint::Length(1)]).areas(inner);
    f.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .scroll((c.scroll, 0)),
        body,
    );
    f.render_widget(Paragraph::new(Line::from(keys)), legend);
}

/// Maintenance jobs, newest first, with the outcome of every statement.
pub fn queue(f: &mut Frame, area: Rect, s: &State, th: &Theme) {
    let mut lines = Vec::new();
    if s.jobs.list.is_empty() {
        lines.push(Line::from(Span::styled(
            "no maintenance has run in this session",
            th.dim(),
        )));
    }
    for job in s.jobs.list.iter().rev() {
        lines.push(Line::from(Span::styled(job.line(s.now), th.header())));
        for i in 0..job.steps.len() {
            lines.push(Line::from(format!(
                "  {}",
                crate::app::maintenance::step_line(job, i)
            )));
        }
    }
    lines.push(Line::from(Span::styled(
        "c cancels the running job · Q or esc closes",
        th.dim(),
    )));
    let width = area.width.saturating_sub(4).min(140);
    let wrapped = wrapped_rows(&lines, width.saturating_sub(2) as usize);
    let height = (wrapped as u16 + 2)
        .min(area.height.saturating_sub(2))
        .max(4);
    let r = centered(area, width, height);
    boxed(f, r, lines, " maintenance ");
}

/// A write to Airflow awaiting `y`.
pub fn confirm_dag(
    f: &mut Frame,
    area: Rect,
    c: &crate::app::dags::DagConfirm,
    on: Option<String>,
    th: &Theme,
) {
    let mut lines: Vec<Line> = on
        .map(|o| Line::from(Span::styled(o, th.badge())))
        .into_iter()
        .collect();
    lines.extend(c.lines.iter().map(|l| Line::from(l.clone())));
    lines.push(Line::from(""));
    lines.push(Line::from(vec![
        Span::styled(" y ", th.badge()),
        Span::raw(" do it   "),
        Span::styled("any other key: do nothing", th.dim()),
    ]));
    let width = area.width.saturating_sub(4).min(110);
    let height =
        (wrapped_rows(&lines, width.saturating_sub(2) as usize) as u16 + 2).min(area.height);
    let r = centered(area, width, height);
    boxed(f, r, lines, format!(" confirm {} ", c.action.action()));
}

/// Quitting while maintenance jobs run: `y` cancels them on Trino first, `n` stays.
pub fn quit_jobs(f: &mut Frame, area: Rect, s: &State, th: &Theme) {
    let lines: Vec<Line> = crate::app::maintenance::quit::question(s)
        .into_iter()
        .map(|l| match l.split_once("  ") {
            Some((k, rest)) if k.len() == 1 => Line::from(vec![
                Span::styled(format!(" {k} "), th.badge()),
                Span::raw(format!(" {rest}")),
            ]),
            _ => Line::from(l),
        })
        .collect();
    let width = area.width.saturating_sub(4).min(90);
    let height =
        (wrapped_rows(&lines, width.saturating_sub(2) as usize) as u16 + 2).min(area.height);
    let r = centered(area, width, height);
    boxed(f, r, lines, " quit while jobs run? ");
}

/// A popup's box at `r`: what was under it cleared, the lines wrapped inside a titled border.
fn boxed<'a>(f: &mut Frame, r: Rect, lines: Vec<Line<'a>>, title: impl Into<Line<'a>>) {
    f.render_widget(Clear, r);
    f.render_widget(
        Paragraph::new(lines)
            .block(Block::default().borders(Borders::ALL).title(title))
            .wrap(Wrap { trim: false }),
        r,
    );
}
