//! Tab 0: the incidents, worst first, one line each; the selected one's evidence below.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Wrap};

use super::theme::Theme;
use super::{ListProps, draw_list};
use crate::app::keymap::Command;
use crate::app::state::State;
use crate::health::incidents::{Incident, Jump, Next};
use crate::text::one_line;

pub fn draw(f: &mut Frame, area: Rect, s: &State, th: &Theme) {
    let detail = crate::app::triage::detail_height(s.size.1) as u16;
    let [list, pane] =
        Layout::vertical([Constraint::Min(2), Constraint::Length(detail)]).areas(area);
    let load = crate::app::triage::load(s);
    let props = ListProps {
        headers: vec!["SEV", "INCIDENT → TABLES  [NEXT]"],
        widths: vec![Constraint::Length(4), Constraint::Min(10)],
        grid: &s.triage.grid,
        load: &load,
        empty: "no incident: every table and DAG read so far is healthy",
    };
    // The incident column: the line is cut with an ellipsis where it does not fit, and the
    // keys of its next actions follow when they fit whole (the pane below has them all).
    let room = list.width.saturating_sub(5) as usize;
    draw_list(f, list, th, &props, |i| {
        let inc = &s.triage.incidents[i];
        let line = one_line(&inc.summary());
        let hints = hints(s, inc);
        let hints = if hints.is_empty() {
            String::new()
        } else {
            format!("  [{}]", hints.join(" · "))
        };
        let used = line.chars().count();
        let mut spans = vec![Span::raw(
            crate::text::clip(&line, room.saturating_sub(1)).into_owned(),
        )];
        if used + hints.chars().count() <= room {
            spans.push(Span::styled(hints, th.dim()));
        }
        (
            vec![
                Cell::from(Span::styled(
                    inc.severity.short().to_string(),
                    th.severity(inc.severity),
                )),
                Cell::from(Line::from(spans)),
            ],
            Style::default(),
        )
    });
    if detail > 0 {
        draw_detail(f, pane, s, th);
    }
}

/// The merged list of every cluster's incidents (`floe --all`), each tagged with its
/// profile; the evidence pane is the front cluster's, whose selection is the row's.
pub fn draw_fleet(f: &mut Frame, area: Rect, fl: &crate::app::fleet::Fleet, th: &Theme) {
    use crate::app::fleet::Row;
    let front = fl.front();
    let detail = crate::app::triage::detail_height(front.size.1) as u16;
    let [list, pane] =
        Layout::vertical([Constraint::Min(2), Constraint::Length(detail)]).areas(area);
    let loading = fl.clusters.iter().all(|s| {
        matches!(
            crate::app::triage::load(s),
            crate::app::state::Load::Loading
        )
    });
    let load = if loading {
        crate::app::state::Load::Loading
    } else {
        crate::app::state::Load::Loaded
    };
    let props = ListProps {
        headers: vec!["SEV", "[CLUSTER] INCIDENT → TABLES  [NEXT]"],
        widths: vec![Constraint::Length(4), Constraint::Min(10)],
        grid: &fl.grid,
        load: &load,
        empty: "no incident: every cluster's tables and DAGs read so far are healthy",
    };
    let room = list.width.saturating_sub(5) as usize;
    draw_list(f, list, th, &props, |i| {
        let row = &fl.rows[i];
        let sev = fl.severity(row);
        let line = one_line(&fl.row_text(row));
        let hints = match row {
            Row::Incident { cluster, incident } => {
                let s = &fl.clusters[*cluster];
                hints(s, &s.triage.incidents[*incident])
            }
            Row::Unreachable { .. } => Vec::new(),
        };
        let hints = if hints.is_empty() {
            String::new()
        } else {
            format!("  [{}]", hints.join(" · "))
        };
        let used = line.chars().count();
        let mut spans = vec![Span::raw(
            crate::text::clip(&line, room.saturating_sub(1)).into_owned(),
        )];
        if used + hints.chars().count() <= room {
            spans.push(Span::styled(hints, th.dim()));
        }
        (
            vec![
                Cell::from(Span::styled(sev.short().to_string(), th.severity(sev))),
                Cell::from(Line::from(spans)),
            ],
            Style::default(),
        )
    });
    let unreachable_row = matches!(
        fl.grid.selected_row().and_then(|i| fl.rows.get(i)),
        Some(Row::Unreachable { .. })
    );
    if detail > 0 && !unreachable_row {
        draw_detail(f, pane, front, th);
    }
}

/// The command that takes a next action from this tab, if one does.
fn command(n: &Next) -> Option<Command> {
    match n {
        Next::Trigger { .. } => Some(Command::TriggerDag),
        Next::Unpause { .. } => Some(Command::PauseDag),
        Next::Optimize { .. } => Some(Command::Optimize),
        Next::ExpireSnapshots { .. } => Some(Command::ExpireSnapshots),
        Next::ReadLog { .. } => Some(Command::Enter),
        Next::FixConnection { connections, .. } if !connections.is_empty() => {
            Some(Command::FixConnection)
        }
        _ => None,
    }
}

/// `t trigger after fixing`, `o optimize documents`: the next actions a key takes here
/// (a command read-only mode removed is left out).
fn hints(s: &State, inc: &Incident) -> Vec<String> {
    inc.next
        .iter()
        .filter_map(|n| {
            let cmd = command(n)?;
            if !s.keymap.enabled(cmd) {
                return None;
            }
            let key = s.keymap.keys(cmd).first()?.to_string();
            let text = match n {
                Next::Trigger {
                    after_fix: true, ..
                } => "trigger after fixing".to_string(),
                Next::Trigger { .. } => "trigger".to_string(),
                Next::Unpause { .. } => "unpause".to_string(),
                Next::Optimize { table } => format!("optimize {}", table.table),
                Next::ExpireSnapshots { .. } => "expire snapshots".to_string(),
                Next::ReadLog { .. } => "log".to_string(),
                other => other.text(),
            };
            Some(format!("{key} {}", one_line(&text)))
        })
        .collect()
}

/// What Enter opens, in words.
fn jump_text(s: &State, j: &Jump) -> String {
    match j {
        // Until the failing task is read, Enter opens the DAG's runs.
        Jump::DagFailure { dag_id } => match s.dags.failures.get(dag_id) {
            Some(Ok(_)) => format!("the failing task's log of {dag_id}"),
            _ => format!("the runs of {dag_id} (its failing task is not read yet)"),
        },
        Jump::Dag { dag_id } => format!("{dag_id} in the DAGs tab"),
        Jump::DagCode { file, line, .. } => format!("the code of {file} at line {line}"),
        Jump::Dags => "the DAGs tab".into(),
        Jump::Partitions { table } => format!("the partitions of {}", table.table),
        Jump::Snapshots { table } => format!("the snapshots of {}", table.table),
        Jump::Table { table } => format!("the findings of {}", table.table),
    }
}

/// The selected incident: its cause and tables in full, the evidence, the next actions.
fn draw_detail(f: &mut Frame, area: Rect, s: &State, th: &Theme) {
    let Some(inc) = s.triage.selected() else {
        f.render_widget(
            Block::default()
                .borders(Borders::TOP)
                .title(" evidence ")
                .border_style(th.dim()),
            area,
        );
        return;
    };
    let mut lines = Vec::new();
    // The run floe triggered, until the operator triggers another (see `shown_with`).
    if let Some(w) = crate::app::dags::watch::shown_with(s, inc) {
        lines.push(Line::from(Span::styled(
            format!("run: {}", one_line(&w.line(s.now))),
            th.header(),
        )));
        if let Some(q) = crate::app::dags::watch::next_runs(s) {
            lines.push(Line::from(Span::styled(
                format!("     {}", one_line(&q)),
                th.header(),
            )));
        }
    }
    lines.push(Line::from(vec![
        Span::styled(
            format!("{} ", inc.severity.label()),
            th.severity(inc.severity),
        ),
        Span::styled(one_line(&inc.cause), th.header()),
    ]));
    for t in &inc.tables {
        lines.push(Line::from(vec![
            Span::styled(
                format!("  {:<4} ", t.severity.short()),
                th.severity(t.severity),
            ),
            Span::raw(one_line(&format!("{}: {}", t.name, t.summary))),
        ]));
        if let Some(q) = &t.suffered {
            lines.push(Line::from(Span::raw(format!("       {}", one_line(q)))));
        }
    }
    let mut next: Vec<Span> = vec![Span::styled("next: ", th.dim())];
    for (k, n) in inc.next.iter().enumerate() {
        if k > 0 {
            next.push(Span::styled(" · ", th.dim()));
        }
        if let Some(cmd) = command(n).filter(|c| s.keymap.enabled(*c))
            && let Some(key) = s.keymap.keys(cmd).first()
        {
            next.push(Span::styled(format!("{key} "), th.key()));
        }
        next.push(Span::raw(one_line(&n.text())));
    }
    lines.push(Line::from(next));
    let enter = match crate::app::dags::watch::running_log(s) {
        Some((_, _, task, _)) => format!("the log of task {task}, running (its tail)"),
        None => jump_text(s, &inc.jump),
    };
    lines.push(Line::from(vec![
        Span::styled("enter: ", th.dim()),
        Span::raw(one_line(&enter)),
    ]));
    for e in &inc.evidence {
        lines.push(Line::from(Span::styled(one_line(e), th.dim())));
    }
    f.render_widget(
        Paragraph::new(lines)
            .block(
                Block::default()
                    .borders(Borders::TOP)
                    .title(format!(" evidence: {} ", inc.kind.as_str()))
                    .border_style(th.dim()),
            )
            .wrap(Wrap { trim: false }),
        area,
    );
}

#[cfg(test)]
mod tests;
