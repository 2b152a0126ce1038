//! Tab 4: maintenance DAGs from Airflow — failing first, import errors on top, the
//! selected DAG's failing task with the tail of its log below; enter drills into runs,
//! task instances and a log.

use chrono::{DateTime, Utc};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Wrap};

use super::theme::Theme;
use super::{ListProps, age, constraint, draw_list, num};
use crate::app::dags::{DagCol, DagLevel, DagRow};
use crate::app::layout::identity_room;
use crate::app::state::{Load, State};
use crate::fmt::human_duration;
use crate::health::Severity;
use crate::health::airflow::{run_severity, task_severity};
use crate::text::sanitize;

/// What the DAGs tab says without Airflow.
pub const AIRFLOW_ADVICE: &str = "Pass --airflow URL (with FLOE_AIRFLOW_PASSWORD), or set [airflow] url in the config file, to see the maintenance DAGs, their failing tasks and the tail of their logs here.";

pub fn draw(f: &mut Frame, area: Rect, s: &State, th: &Theme) {
    if !s.airflow_configured {
        let lines = vec![
            Line::from(""),
            Line::from(Span::styled("Airflow is not configured.", th.header())),
            Line::from(AIRFLOW_ADVICE),
        ];
        // Indented by two, wrapped at word boundaries.
        let inset = Rect {
            x: area.x + 2.min(area.width),
            width: area.width.saturating_sub(2),
            ..area
        };
        f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), inset);
        return;
    }
    match s.dags.level() {
        DagLevel::List => list(f, area, s, th),
        DagLevel::Runs => runs(f, area, s, th),
        DagLevel::Tasks => tasks(f, area, s, th),
        DagLevel::Log => log(f, area, s, th),
        DagLevel::Source => super::dag_source::draw(f, area, s, th),
    }
}

fn list(f: &mut Frame, area: Rect, s: &State, th: &Theme) {
    let v = &s.dags;
    // Import errors and connection findings first: they are why DAGs do not run.
    let mut notes: Vec<Line> = Vec::new();
    // One line each, cut with an ellipsis where they do not fit (the Triage tab's
    // evidence has them whole).
    let room = |prefix: usize| (area.width as usize).saturating_sub(prefix + 1);
    for e in &v.import_errors {
        let text = format!("{}: {}", e.filename, e.summary());
        notes.push(Line::from(vec![
            Span::styled("IMPORT ERROR ", th.severity(Severity::Critical)),
            Span::raw(crate::text::clip(&text, room(13)).into_owned()),
        ]));
    }
    for fnd in &v.findings {
        notes.push(Line::from(vec![
            Span::styled(
                format!("{} ", fnd.severity.short()),
                th.severity(fnd.severity),
            ),
            Span::raw(crate::text::clip(&fnd.message, room(5)).into_owned()),
        ]));
    }
    let notes_h = (notes.len() as u16).min(area.height / 4);
    let detail_h = if area.height >= 16 {
        (area.height / 3).clamp(5, 12)
    } else {
        0
    };
    let [top, body, detail] = Layout::vertical([
        Constraint::Length(notes_h),
        Constraint::Min(3),
        Constraint::Length(detail_h),
    ])
    .areas(area);
    if notes_h > 0 {
        f.render_widget(Paragraph::new(notes), top);
    }
    let (shown, _) = columns(s, body.width);
    let props = ListProps {
        headers: shown.iter().map(|c| c.header()).collect(),
        widths: shown.iter().map(|c| constraint(c.width())).collect(),
        grid: &v.grid,
        load: &v.load,
        empty: "no maintenance DAGs (check [airflow] dag_tags / dag_ids)",
    };
    let now = s.now;
    draw_list(f, body, th, &props, |i| {
        let r = &v.rows[i];
        let cells = shown.iter().map(|&col| dag_cell(col, r, now, th)).collect();
        (cells, Style::default())
    });
    if detail_h > 0 {
        draw_detail(f, detail, s, th);
    }
}

/// One cell of the DAG list. Without facts, LAST RUN holds the error and the columns
/// that need facts stay empty.
fn dag_cell(col: DagCol, r: &DagRow, now: DateTime<Utc>, th: &Theme) -> Cell<'static> {
    let facts = r.facts.as_ref();
    match col {
        DagCol::Status => {
            let (stat, sev) = match (r.status(), facts) {
                (_, None) if r.error.is_none() => ("…".to_string(), Severity::Info),
                (Some(sev), _) => (sev.short().to_string(), sev),
                (None, _) => ("-".to_string(), Severity::Info),
            };
            Cell::from(Span::styled(stat, th.severity(sev)))
        }
        DagCol::Dag => Cell::from(sanitize(&dag_name(r)).into_owned()),
        DagCol::LastRun => match facts {
            Some(fa) => {
                let style = th.severity(run_severity(fa.last_run_state.as_ref()));
                Cell::from(Span::styled(
                    sanitize(fa.last_run_text()).into_owned(),
                    style,
                ))
            }
            None => {
                let e = r.error.clone().unwrap_or_default();
                Cell::from(Span::styled(e, th.severity(Severity::Unknown)))
            }
        },
        DagCol::Ago | DagCol::LastOk | DagCol::Failed => match facts {
            Some(fa) => num(match col {
                DagCol::Ago => age(now, fa.last_run_at),
                DagCol::LastOk => age(now, fa.last_success_at),
                _ => fa.failed_runs.to_string(),
            }),
            None => Cell::from(""),
        },
        DagCol::Paused => Cell::from(if r.dag.paused { "yes" } else { "" }),
        // A paused DAG has no next run, whatever the schedule says.
        DagCol::NextRun => num(if r.dag.paused {
            "-".to_string()
        } else {
            r.dag
                .next_run
                .map(|t| human_duration((t - now).num_seconds()))
                .unwrap_or_default()
        }),
        DagCol::Schedule => Cell::from(r.dag.schedule.clone().unwrap_or_default()),
        DagCol::Owner => Cell::from(r.dag.owners.join(",")),
        DagCol::Tags => Cell::from(r.dag.tags.join(", ")),
    }
}

/// The selected DAG's failing task: its error line first, then the tail of its log.
fn draw_detail(f: &mut Frame, area: Rect, s: &State, th: &Theme) {
    let Some(r) = s.dags.selected() else { return };
    let mut lines = Vec::new();
    let title = format!(" {} ", r.dag.dag_id);
    match (&r.facts, s.dags.failures.get(&r.dag.dag_id)) {
        (Some(fa), failure) if fa.last_run_failed() => {
            if let Some(Ok(d)) = failure {
                lines.push(Line::from(vec![
                    Span::styled("failing task ", th.dim()),
                    Span::styled(format!("{} ", d.task_id), th.header()),
                    Span::styled(
                        format!("(run {}, try {})", d.run_id, d.try_number),
                        th.dim(),
                    ),
                ]));
                if let Some(e) = &d.log.error_line {
                    lines.push(Line::from(Span::styled(
                        e.clone(),
                        th.severity(Severity::Critical),
                    )));
                }
                let room = (area.height as usize).saturating_sub(lines.len() + 2);
                for l in d.log.tail(room) {
                    let style = if l.error {
                        th.severity(Severity::Critical)
                    } else {
                        th.dim()
                    };
                    lines.push(Line::from(Span::styled(l.text.clone(), style)));
                }
            } else {
                if let (Some(t), Some(e)) = (&fa.failing_task, &fa.error_line) {
                    lines.push(Line::from(Span::styled(
                        format!("{t}: {e}"),
                        th.severity(Severity::Critical),
                    )));
                }
                if let Some(Err(e)) = failure {
                    lines.push(Line::from(Span::styled(
                        format!("cannot read the failing task's log: {e}"),
                        th.dim(),
                    )));
                }
            }
        }
        (Some(fa), _) => {
            lines.push(Line::from(format!(
                "last run {} {} ago; last success {} ago; {} failed runs in the window; expected every {}",
                fa.last_run_text(),
                age(s.now, fa.last_run_at),
                age(s.now, fa.last_success_at),
                fa.failed_runs,
                human_duration(fa.expected_interval.as_secs() as i64)
            )));
            if let Some(h) = &r.health {
                for fnd in &h.findings {
                    lines.push(Line::from(Span::styled(
                        format!("[{}] {}", fnd.severity.short(), fnd.message),
                        th.severity(fnd.severity),
                    )));
                }
            }
        }
        (None, _) => lines.push(Line::from(Span::styled("loading…", th.dim()))),
    }
    if !r.tables.is_empty() {
        lines.push(Line::from(Span::styled(
            format!("maintains {}", r.tables.join(", ")),
            th.dim(),
        )));
    }
    lines.extend(super::dag_source::code_lines(r, th));
    f.render_widget(
        Paragraph::new(lines)
            .block(Block::default().borders(Borders::TOP).title(title))
            .wrap(Wrap { trim: false }),
        area,
    );
}

/// A drill-down level's title line (what it lists, then its keys, dimmed) above the list;
/// returns the list's area.
fn titled(f: &mut Frame, area: Rect, th: &Theme, title: String, keys: &'static str) -> Rect {
    let [top, body] = Layout::vertical([Constraint::Length(1), Constraint::Min(2)]).areas(area);
    f.render_widget(
        Paragraph::new(Line::from(vec![
            Span::styled(title, th.header()),
            Span::styled(keys, th.dim()),
        ])),
        top,
    );
    body
}

fn runs(f: &mut Frame, area: Rect, s: &State, th: &Theme) {
    let v = &s.dags;
    let body = titled(
        f,
        area,
        th,
        format!(" runs of {} ", sanitize(v.dag_id.as_deref().unwrap_or(""))),
        " enter: task instances · C clears the selected run · t triggers · esc back",
    );
    let headers = ["STATE", "RUN", "TYPE", "STARTED", "DURATION"];
    let widths = [
        Constraint::Length(9),
        Constraint::Min(24),
        Constraint::Length(10),
        Constraint::Length(8),
        Constraint::Length(9),
    ];
    let now = s.now;
    draw_list(
        f,
        body,
        th,
        &ListProps {
            headers: headers.to_vec(),
            widths: widths.to_vec(),
            grid: &v.runs_grid,
            load: &v.runs_load,
            empty: "no runs",
        },
        |i| {
            let r = &v.runs[i];
            let style = th.severity(run_severity(Some(&r.state)));
            (
                vec![
                    Cell::from(Span::styled(sanitize(r.state.as_str()).into_owned(), style)),
                    Cell::from(sanitize(&r.run_id).into_owned()),
                    Cell::from(sanitize(r.run_type.as_str()).into_owned()),
                    num(age(now, r.start_date.or(r.sort_time()))),
                    num(r
                        .duration
                        .map(|d| human_duration(d.as_secs() as i64))
                        .unwrap_or_default()),
                ],
                Style::default(),
            )
        },
    );
}

fn tasks(f: &mut Frame, area: Rect, s: &State, th: &Theme) {
    let v = &s.dags;
    let body = titled(
        f,
        area,
        th,
        format!(
            " {} / {} ",
            sanitize(v.dag_id.as_deref().unwrap_or("")),
            sanitize(v.run_id.as_deref().unwrap_or(""))
        ),
        " enter: log · C clears this run · esc back",
    );
    let headers = ["STATE", "TASK", "TRY", "STARTED", "DURATION", "HOST"];
    let widths = [
        Constraint::Length(15),
        Constraint::Min(16),
        Constraint::Length(3),
        Constraint::Length(8),
        Constraint::Length(9),
        Constraint::Length(12),
    ];
    let now = s.now;
    draw_list(
        f,
        body,
        th,
        &ListProps {
            headers: headers.to_vec(),
            widths: widths.to_vec(),
            grid: &v.tasks_grid,
            load: &v.tasks_load,
            empty: "no task instances",
        },
        |i| {
            let t = &v.tasks[i];
            let st = sanitize(t.state.as_ref().map_or("none", |x| x.as_str())).into_owned();
            let style = th.severity(task_severity(t.state.as_ref()));
            (
                vec![
                    Cell::from(Span::styled(st, style)),
                    Cell::from(sanitize(&t.task_id).into_owned()),
                    num(t.try_number.to_string()),
                    num(if t.start_date.is_some() {
                        age(now, t.start_date)
                    } else {
                        String::new()
                    }),
                    num(t
                        .duration
                        .map(|d| format!("{:.1}s", d.as_secs_f64()))
                        .unwrap_or_default()),
                    Cell::from(sanitize(t.hostname.as_deref().unwrap_or_default()).into_owned()),
                ],
                Style::default(),
            )
        },
    );
}

fn log(f: &mut Frame, area: Rect, s: &State, th: &Theme) {
    let v = &s.dags;
    let Some(lv) = &v.log else {
        let msg = match &v.log_load {
            Load::Failed(e) => format!("  cannot read the log: {e}"),
            _ => "  loading the log…".to_string(),
        };
        f.render_widget(Paragraph::new(Span::styled(msg, th.dim())), area);
        return;
    };
    // The error line is always wrapped (the host at its end is what the operator came
    // for), up to a third of the log's height.
    let err_line = lv.log.error_line.as_ref().map(|e| {
        Line::from(vec![
            Span::styled("ERROR ", th.badge()),
            Span::styled(format!(" {e}"), th.severity(Severity::Critical)),
        ])
    });
    let pinned = err_line
        .as_ref()
        .map(|l| {
            let text: String = l.spans.iter().map(|s| s.content.as_ref()).collect();
            let rows = super::wrapped_height(&text, area.width) as u16;
            rows.min((area.height / 3).max(1))
        })
        .unwrap_or(0);
    let [title, err, body] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(pinned),
        Constraint::Min(1),
    ])
    .areas(area);
    f.render_widget(Paragraph::new(log_title(lv, area.width, th)), title);
    if let Some(l) = err_line {
        f.render_widget(Paragraph::new(l).wrap(Wrap { trim: false }), err);
    }
    let h = body.height as usize;
    let lines: Vec<Line> = lv
        .rows
        .iter()
        .skip(lv.scroll)
        .take(h)
        .flat_map(|row| log_row(lv, row, body.width, th))
        .collect();
    let body_text = Paragraph::new(lines);
    f.render_widget(
        if lv.wrap {
            body_text.wrap(Wrap { trim: false })
        } else {
            body_text
        },
        body,
    );
}

/// The log's title line: task, run (where it fits), try, position and the keys that apply.
fn log_title<'a>(lv: &'a crate::app::dags::LogView, width: u16, th: &Theme) -> Line<'a> {
    let mode = match (lv.wrap, lv.hscroll) {
        (true, _) => " · w: wrapped".to_string(),
        (false, 0) => " · w wrap · h/l".to_string(),
        (false, n) => format!(" · w wrap · h/l (col {})", n + 1),
    };
    let folded = lv
        .rows
        .iter()
        .any(|r| matches!(r, crate::app::dags::LogRow::Folded { .. }));
    let frames = if folded {
        " · z frames"
    } else if lv.frames {
        " · z folds frames"
    } else {
        ""
    };
    // The run id only where the keys still fit beside it.
    let run = if width >= 120 {
        format!(" · {}", lv.run_id)
    } else {
        String::new()
    };
    Line::from(vec![
        Span::styled(
            format!(" {}{run} · try {} ", lv.task_id, lv.try_number),
            th.header(),
        ),
        Span::styled(
            format!(
                " line {}/{} · esc back · / search{}{mode}{frames}",
                lv.rows
                    .get(lv.scroll)
                    .map(|r| r.first() + 1)
                    .unwrap_or(lv.scroll + 1),
                lv.log.lines.len(),
                if lv.search.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", lv.search)
                }
            ),
            th.dim(),
        ),
    ])
}

/// The screen lines of one log row: a folded run of frames, or a line (the error line
/// wrapped even when the others are not).
fn log_row(
    lv: &crate::app::dags::LogView,
    row: &crate::app::dags::LogRow,
    width: u16,
    th: &Theme,
) -> Vec<Line<'static>> {
    match *row {
        crate::app::dags::LogRow::Folded { lines, frames, .. } => {
            vec![Line::from(Span::styled(
                format!(
                    "  ⋯ {frames} frame{} under site-packages ({lines} lines; z unfolds)",
                    if frames == 1 { "" } else { "s" }
                ),
                th.dim(),
            ))]
        }
        crate::app::dags::LogRow::Line(i) => {
            let l = &lv.log.lines[i];
            let mut style = if l.error {
                th.severity(Severity::Critical)
            } else {
                Style::default()
            };
            if !lv.search.is_empty() && l.text.to_lowercase().contains(&lv.search) {
                style = style.add_modifier(Modifier::REVERSED);
            }
            let ts = l
                .timestamp
                .map(|t| t.format("%H:%M:%S ").to_string())
                .unwrap_or_default();
            // The error line wraps even when the others do not.
            if !lv.wrap && lv.log.error_line.as_deref() == Some(l.text.as_str()) {
                let first = width.saturating_sub(super::text_width(&ts));
                return super::wrap_words(&l.text, first)
                    .into_iter()
                    .enumerate()
                    .map(|(k, piece)| {
                        let lead = if k == 0 {
                            ts.clone()
                        } else {
                            " ".repeat(ts.len())
                        };
                        Line::from(vec![
                            Span::styled(lead, th.dim()),
                            Span::styled(piece, style),
                        ])
                    })
                    .collect::<Vec<_>>();
            }
            let text = if lv.wrap {
                l.text.clone()
            } else {
                l.text.chars().skip(lv.hscroll).collect()
            };
            vec![Line::from(vec![
                Span::styled(ts, th.dim()),
                Span::styled(text, style),
            ])]
        }
    }
}

/// The DAG's name as its row shows it: `expire_snapshots (paused)`, `compact_permits
/// (source refused: HTTP 403)`.
fn dag_name(r: &DagRow) -> String {
    let mut notes: Vec<String> = Vec::new();
    if r.dag.paused {
        notes.push("paused".into());
    }
    notes.extend(
        r.facts
            .as_ref()
            .and_then(|f| f.code.as_ref())
            .and_then(|c| c.row_note()),
    );
    if notes.is_empty() {
        r.dag.dag_id.clone()
    } else {
        format!("{} ({})", r.dag.dag_id, notes.join("; "))
    }
}

/// The columns a list `width` wide shows, and the cells left for the DAG's name.
fn columns(s: &State, width: u16) -> (Vec<DagCol>, u16) {
    let v = &s.dags;
    let names: Vec<String> = v.grid.index.iter().map(|&i| dag_name(&v.rows[i])).collect();
    let need = super::identity_need(names.iter().map(String::as_str));
    let shown = DagCol::shown(width, need);
    let room = identity_room(width, &shown, DagCol::width, |c| c == DagCol::Dag);
    (shown, room)
}

/// The selected DAG's whole name when the list, `width` wide, cannot show it.
pub fn cut_name(s: &State, width: u16) -> Option<String> {
    let r = s.dags.selected()?;
    let (_, room) = columns(s, width);
    let name = dag_name(r);
    (super::text_width(&name) > room).then(|| sanitize(&name).into_owned())
}
