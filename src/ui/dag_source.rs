//! The DAGs tab's source view (`v`): a DAG's file with line numbers, its code findings
//! pinned above it and marked at their lines, `/` matches highlighted; and the code
//! lines of the DAG list's detail pane. The file is the server's: its lines were cleaned
//! when the view was built (`app::dags::source_view::screen_lines`), every finding's text
//! is cleaned here.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::theme::Theme;
use crate::app::dags::DagRow;
use crate::app::dags::source_view::SourceView;
use crate::app::state::State;
use crate::dag_code::CodeFacts;
use crate::health::Severity;
use crate::text::one_line;

pub fn draw(f: &mut Frame, area: Rect, s: &State, th: &Theme) {
    let Some(v) = &s.dags.source else {
        f.render_widget(
            Paragraph::new(Span::styled("  no source read", th.dim())),
            area,
        );
        return;
    };
    let mut pinned: Vec<Line> = Vec::new();
    if let Some(u) = &v.unparsed {
        pinned.push(Line::from(Span::styled(
            format!("{} {u}: no finding", v.file),
            th.severity(Severity::Warning),
        )));
    }
    let room = (area.height / 4).max(1) as usize;
    let shown = if v.marks.len() > room {
        room.saturating_sub(1)
    } else {
        v.marks.len()
    };
    for (_, text) in v.marks.iter().take(shown) {
        pinned.push(Line::from(Span::styled(
            text.clone(),
            th.severity(Severity::Warning),
        )));
    }
    if shown < v.marks.len() {
        pinned.push(Line::from(Span::styled(
            format!(
                "and {} more (enter: the next finding)",
                v.marks.len() - shown
            ),
            th.dim(),
        )));
    }
    let [title, notes, body] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(pinned.len() as u16),
        Constraint::Min(1),
    ])
    .areas(area);
    f.render_widget(Paragraph::new(title_line(v, th)), title);
    f.render_widget(Paragraph::new(pinned), notes);
    let digits = v.lines.len().max(1).to_string().len();
    let lines: Vec<Line> = v
        .lines
        .iter()
        .enumerate()
        .skip(v.scroll)
        .take(body.height as usize)
        .map(|(i, text)| source_line(v, i, text, digits, th))
        .collect();
    f.render_widget(Paragraph::new(lines), body);
}

/// ` compact_permits.py · v1  54/64 · enter next finding · / search · esc back`: 74
/// columns, within an 80-column terminal.
fn title_line<'a>(v: &'a SourceView, th: &Theme) -> Line<'a> {
    let search = if v.search.is_empty() {
        String::new()
    } else {
        format!(" ({})", one_line(&v.search))
    };
    let next = if v.marks.is_empty() {
        ""
    } else {
        " · enter next finding"
    };
    let version = if v.version.is_empty() {
        String::new()
    } else {
        format!(" · {}", one_line(&v.version))
    };
    Line::from(vec![
        Span::styled(format!(" {}{version} ", one_line(&v.file)), th.header()),
        Span::styled(
            format!(
                " {}/{}{next} · / search{search} · esc back",
                (v.scroll + 1).min(v.lines.len().max(1)),
                v.lines.len()
            ),
            th.dim(),
        ),
    ])
}

/// `  56 ▶ except:  # noqa`: the number, the mark of a finding line, the line.
fn source_line<'a>(v: &SourceView, i: usize, text: &'a str, digits: usize, th: &Theme) -> Line<'a> {
    let marked = v.marks.iter().any(|m| m.0 == i + 1);
    let mut style = if marked {
        th.severity(Severity::Warning)
    } else {
        Style::default()
    };
    if !v.search.is_empty() && text.to_lowercase().contains(&v.search) {
        style = style.add_modifier(Modifier::REVERSED);
    }
    Line::from(vec![
        Span::styled(format!("{:>digits$} ", i + 1), th.dim()),
        Span::styled(
            if marked { "▶ " } else { "  " },
            th.severity(Severity::Warning),
        ),
        Span::styled(text, style),
    ])
}

/// What a DAG's code says, for the detail pane under the DAG list: each finding, or why
/// the source could not be read.
pub fn code_lines(r: &DagRow, th: &Theme) -> Vec<Line<'static>> {
    let Some(code) = r.facts.as_ref().and_then(|f| f.code.as_ref()) else {
        return Vec::new();
    };
    let warn = th.severity(Severity::Warning);
    match code {
        CodeFacts::Unread { error, .. } => vec![Line::from(Span::styled(
            one_line(&format!("code: cannot read the source: {error}")),
            warn,
        ))],
        CodeFacts::Read(c) => {
            if let Some(u) = &c.unparsed {
                return vec![Line::from(Span::styled(
                    one_line(&format!("code: {} {}", c.file, u.message)),
                    warn,
                ))];
            }
            let findings = c.advice(&|_| None);
            let mut out: Vec<Line> = findings
                .iter()
                .map(|fnd| Line::from(Span::styled(one_line(&fnd.text(&c.file)), warn)))
                .collect();
            out.push(Line::from(Span::styled(
                if findings.is_empty() {
                    format!(
                        "code: {} read, no finding · v: its source",
                        one_line(&c.file)
                    )
                } else {
                    "v: the DAG's source, these lines marked".to_string()
                },
                th.dim(),
            )));
            out
        }
    }
}
