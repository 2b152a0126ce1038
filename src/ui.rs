//! Rendering: a pure function of `State`. Only the visible window of a list becomes
//! widgets.

pub mod ascii;
pub mod breakdown;
pub mod caps;
pub mod dag_source;
pub mod dags;
pub mod partitions;
pub mod popup;
pub mod snapshots;
pub mod tables;
pub mod theme;
pub mod triage;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Table, TableState};

use crate::app::layout::Width;
use crate::app::prompt::Prompt;
use crate::app::state::{Load, Popup, State, Tab};
use crate::fmt::human_duration;
use theme::Theme;

pub fn draw(f: &mut Frame, s: &State) {
    draw_screen(f, s, None);
    scrub(f.buffer_mut());
    if s.ascii {
        ascii::fold(f.buffer_mut());
    }
}

/// Every cluster at once (`floe --all`): the front cluster's screen, with the header's one
/// line per cluster and, on Triage, the merged list of every cluster's incidents.
pub fn draw_fleet(f: &mut Frame, fleet: &crate::app::fleet::Fleet) {
    if !fleet.merged {
        return draw(f, fleet.front());
    }
    draw_screen(f, fleet.front(), Some(fleet));
    scrub(f.buffer_mut());
    if fleet.front().ascii {
        ascii::fold(f.buffer_mut());
    }
}

/// The output boundary of the screen: no cell keeps a character a terminal acts on.
/// ratatui drops control characters but not format characters: a bidi override or
/// isolate (U+202A–202E, U+2066–2069) is zero-width and rides along in the symbol of the
/// cell before it, reordering what follows on the operator's screen. Texts from servers
/// are sanitised where they are laid out (their escapes stay visible); this catches
/// whatever a widget let through.
fn scrub(buf: &mut ratatui::buffer::Buffer) {
    for cell in buf.content.iter_mut() {
        if !crate::text::is_inert(cell.symbol()) {
            let clean: String = cell
                .symbol()
                .chars()
                .filter(|c| !crate::text::is_unsafe(*c))
                .collect();
            cell.set_symbol(if clean.is_empty() { " " } else { &clean });
        }
    }
}

fn draw_screen(f: &mut Frame, s: &State, fleet: Option<&crate::app::fleet::Fleet>) {
    let area = f.area();
    if area.width < crate::app::state::MIN_WIDTH || area.height < crate::app::state::MIN_HEIGHT {
        f.render_widget(Paragraph::new("floe: terminal too small"), area);
        return;
    }
    let th = Theme::new(s.no_color);
    let job = s.jobs.visible(s.now);
    let [header, tabs, body, jobline, status, footer] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Min(1),
        Constraint::Length(u16::from(job.is_some())),
        Constraint::Length(1),
        Constraint::Length(1),
    ])
    .areas(area);
    if let Some(j) = job {
        draw_job(f, jobline, s, j, &th);
    }
    match fleet {
        Some(fl) => draw_fleet_header(f, header, fl, &th),
        None => draw_header(f, header, s, &th),
    }
    draw_tabs(f, tabs, s, &th);
    match fleet {
        // Triage lists every cluster's incidents (until Enter jumps into one).
        Some(fl) if s.tab == Tab::Triage && s.triage.jumped.is_none() => {
            triage::draw_fleet(f, body, fl, &th)
        }
        _ => (tab_view(s.tab).draw)(f, body, s, &th),
    }
    draw_status(f, status, s, &th);
    draw_footer(f, footer, s, &th);
    match &s.popup {
        Some(Popup::Help) => popup::help(f, area, s, &th),
        Some(Popup::Health(t)) => popup::health(f, area, s, t, &th),
        Some(Popup::Confirm(c)) => popup::confirm(f, area, c, cluster_line(s), &th),
        Some(Popup::Queue) => popup::queue(f, area, s, &th),
        Some(Popup::ConfirmDag(c)) => popup::confirm_dag(f, area, c, cluster_line(s), &th),
        Some(Popup::QuitJobs { .. }) => popup::quit_jobs(f, area, s, &th),
        None => {}
    }
}

/// ` floe │ prod-eu ✓ 3 crit · prod-us ✗ unreachable · staging ✓ │ RO`
fn draw_fleet_header(f: &mut Frame, area: Rect, fl: &crate::app::fleet::Fleet, th: &Theme) {
    let mut spans = vec![
        Span::styled(" floe ", th.header()),
        Span::raw(crate::text::sanitize(&fl.header()).into_owned()),
    ];
    if fl.front().readonly {
        spans.push(Span::styled(" │ ", th.dim()));
        spans.push(Span::styled(
            format!(
                "{} read-only",
                crate::text::sanitize(&fl.front().conn.profile)
            ),
            th.badge(),
        ));
    }
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn draw_header(f: &mut Frame, area: Rect, s: &State, th: &Theme) {
    let mut spans = vec![Span::styled(" floe ", th.header())];
    let sep = || Span::styled(" │ ", th.dim());
    spans.push(Span::raw(s.conn.profile.clone()));
    spans.push(sep());
    spans.push(Span::raw(
        s.conn.trino_url.trim_end_matches('/').to_string(),
    ));
    // verify=false in a pasted URI, or insecure_skip_verify: never silently.
    if !s.conn.warnings.is_empty() {
        spans.push(Span::styled(
            " TLS UNVERIFIED",
            th.severity(crate::health::Severity::Critical),
        ));
    }
    match (&s.conn.info, &s.conn.info_error) {
        (_, Some(_)) => spans.push(Span::styled(
            " UNREACHABLE",
            th.severity(crate::health::Severity::Critical),
        )),
        (Some(i), None) => {
            spans.push(Span::raw(format!(" v{}", i.node_version.version)));
            if let Some(u) = i.uptime_secs() {
                let up = human_duration(u as i64);
                spans.push(Span::raw(" up "));
                // A coordinator restarted in the last hours is a clue.
                if u < 6.0 * 3600.0 {
                    spans.push(Span::styled(
                        up,
                        th.severity(crate::health::Severity::Warning),
                    ));
                } else {
                    spans.push(Span::raw(up));
                }
            }
            if i.starting {
                spans.push(Span::styled(
                    " STARTING",
                    th.severity(crate::health::Severity::Warning),
                ));
            }
        }
        (None, None) => spans.push(Span::styled(" connecting…", th.dim())),
    }
    if s.airflow_configured {
        spans.push(sep());
        match (&s.dags.load, &s.conn.airflow_version) {
            (Load::Failed(_), _) => spans.push(Span::styled(
                "airflow UNREACHABLE",
                th.severity(crate::health::Severity::Critical),
            )),
            (_, v) => spans.push(Span::raw(format!(
                "airflow {}",
                v.as_deref().unwrap_or("…")
            ))),
        }
        // The scheduler or DAG processor down explains DAGs that do not run.
        if let Some(h) = &s.dags.health {
            for name in crate::health::airflow::unhealthy(h) {
                spans.push(Span::styled(
                    format!(" {name} UNHEALTHY"),
                    th.severity(crate::health::Severity::Critical),
                ));
            }
        }
    }
    spans.push(sep());
    let age = s
        .last_refresh
        .map(|t| human_duration((s.now - t).num_seconds()))
        .unwrap_or_else(|| "-".into());
    let refresh = if s.refresh_in_flight() {
        format!("refreshing… ({age} ago)")
    } else if s.frozen {
        format!("{age} ago, FROZEN")
    } else {
        format!(
            "{age} ago, next {}",
            s.next_refresh_in()
                .map(human_duration)
                .unwrap_or_else(|| "-".into())
        )
    };
    spans.push(Span::raw(refresh));
    if s.readonly {
        spans.push(Span::raw(" "));
        spans.push(Span::styled(" READ-ONLY ", th.badge()));
    }
    // Too wide for the terminal: the coordinator's uptime gives way first, so the refresh
    // age and READ-ONLY at the end stay readable.
    let width = |v: &[Span]| v.iter().map(|s| s.width()).sum::<usize>();
    if width(&spans) > area.width as usize
        && let Some(i) = spans.iter().position(|s| s.content == " up ")
        && i + 1 < spans.len()
    {
        spans.drain(i..=i + 1);
    }
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// `on cluster prod-us: Trino https://…, Airflow https://…`: the first line of a
/// confirmation when several clusters are on screen (`floe --all`).
fn cluster_line(s: &State) -> Option<String> {
    s.fleet_member.then(|| {
        let mut l = format!(
            "on cluster {}: Trino {}",
            crate::text::sanitize(&s.conn.profile),
            s.conn.trino_url.trim_end_matches('/')
        );
        if let Some(a) = &s.conn.airflow_url {
            l.push_str(&format!(", Airflow {}", a.trim_end_matches('/')));
        }
        l
    })
}

/// What the screen draws of a tab: its body, and the selected row's name where its list
/// cuts it (the status line then shows it whole).
struct TabView {
    draw: fn(&mut Frame, Rect, &State, &Theme),
    cut_name: fn(&State, u16) -> Option<String>,
}

/// Each tab's [`TabView`]: one arm a tab.
fn tab_view(tab: Tab) -> TabView {
    match tab {
        Tab::Triage => TabView {
            draw: triage::draw,
            cut_name: uncut,
        },
        Tab::Tables => TabView {
            draw: tables::draw,
            cut_name: tables::cut_name,
        },
        Tab::Partitions => TabView {
            draw: partitions::draw,
            cut_name: partitions::cut_name,
        },
        Tab::Snapshots => TabView {
            draw: snapshots::draw,
            cut_name: uncut,
        },
        Tab::Dags => TabView {
            draw: dags::draw,
            cut_name: dags::cut_name,
        },
    }
}

/// A list that never cuts the selected row's name.
fn uncut(_: &State, _: u16) -> Option<String> {
    None
}

fn draw_tabs(f: &mut Frame, area: Rect, s: &State, th: &Theme) {
    let mut spans = Vec::new();
    if s.fleet_member {
        // The cluster the tabs show (Triage lists every cluster's incidents).
        spans.push(Span::styled(
            format!("[{}] ", crate::text::sanitize(&s.conn.profile)),
            th.badge(),
        ));
    }
    for (i, t) in Tab::ALL.iter().enumerate() {
        // The tab's number is its key (0 Triage … 4 DAGs).
        let mut title = format!(" {i} {} ", t.title());
        if let Some(tb) = t.ops().detail.and_then(|d| d(s).table.as_ref()) {
            title = format!(" {i} {}: {} ", t.title(), tb.table);
        }
        let style = if *t == s.tab {
            th.active_tab()
        } else {
            Style::default()
        };
        spans.push(Span::styled(title, style));
        // Between tabs only: at 80 columns the marks badge after the last one still fits.
        if i + 1 < Tab::ALL.len() {
            spans.push(Span::raw(" "));
        }
    }
    let marked = (s.tab.ops().marked)(s);
    if marked > 0 {
        spans.push(Span::styled(format!("[{marked} marked]"), th.marked()));
    }
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn draw_status(f: &mut Frame, area: Rect, s: &State, th: &Theme) {
    let line = match &s.prompt {
        Some(Prompt::Filter(t)) => Line::from(vec![
            Span::styled("/", th.key()),
            Span::raw(t.clone()),
            Span::raw("█"),
        ]),
        Some(Prompt::Command(t)) => Line::from(vec![
            Span::styled(":", th.key()),
            Span::raw(t.clone()),
            Span::raw("█"),
        ]),
        Some(Prompt::Retention(r, t)) => Line::from(vec![
            Span::styled(r.question(), th.key()),
            Span::raw(t.clone()),
            Span::raw("█"),
            Span::styled("  enter plans it, esc cancels", th.dim()),
        ]),
        Some(Prompt::Connection { id, text }) => Line::from(vec![
            Span::styled(
                format!(
                    "point Airflow connection {} at (host:port or trino:// URI): ",
                    crate::text::one_line(id)
                ),
                th.key(),
            ),
            Span::raw(crate::text::one_line(text)),
            Span::raw("█"),
            Span::styled(
                match &s.status {
                    // Nothing offered: what floe knows of where it should point.
                    Some(m) if text.is_empty() => format!("  {}", crate::text::one_line(&m.text)),
                    _ => "  enter shows the change, esc cancels".to_string(),
                },
                th.dim(),
            ),
        ]),
        None => match &s.status {
            Some(m) => {
                let label = match m.level {
                    crate::app::state::Level::Error => "ERROR ",
                    crate::app::state::Level::Warn => "WARN ",
                    crate::app::state::Level::Info => "",
                };
                Line::from(vec![
                    Span::styled(label, th.level(m.level)),
                    Span::styled(m.text.clone(), th.level(m.level)),
                ])
            }
            None => {
                let filter = s.grid().map(|g| g.filter.clone()).unwrap_or_default();
                let cut = (tab_view(s.tab).cut_name)(s, area.width);
                if let (true, Some(name)) = (filter.is_empty(), cut) {
                    Line::from(vec![Span::styled("selected: ", th.dim()), Span::raw(name)])
                } else if filter.is_empty() {
                    Line::from("")
                } else {
                    Line::from(vec![
                        Span::styled("filter: ", th.dim()),
                        Span::raw(filter),
                        Span::styled("  (esc clears)", th.dim()),
                    ])
                }
            }
        },
    };
    f.render_widget(Paragraph::new(line), area);
}

/// The running (or just finished) maintenance job: a gauge and its progress line.
fn draw_job(f: &mut Frame, area: Rect, s: &State, job: &crate::app::maintenance::Job, th: &Theme) {
    let line = job.line(s.now);
    let style = if job.error.is_some() {
        th.severity(crate::health::Severity::Critical)
    } else if job.running() {
        th.key()
    } else {
        th.compaction()
    };
    let bar_w = 12usize;
    let filled = (job.ratio() * bar_w as f64).round() as usize;
    let bar = format!("[{}{}] ", "█".repeat(filled), "░".repeat(bar_w - filled));
    let mut spans = vec![];
    if job.running() {
        spans.push(Span::raw(bar));
    }
    spans.push(Span::styled(line, style));
    if job.running() {
        spans.push(Span::styled("  c cancels", th.dim()));
    }
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn draw_footer(f: &mut Frame, area: Rect, s: &State, th: &Theme) {
    let scope = s.tab.layer();
    let mut spans = Vec::new();
    let mut width = 0usize;
    for (k, d) in s.keymap.footer(scope) {
        let item = k.chars().count() + d.chars().count() + 3;
        if width + item > area.width as usize {
            break;
        }
        width += item;
        spans.push(Span::styled(k, th.key()));
        spans.push(Span::raw(format!(" {d}  ")));
    }
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// What a list body shows: its columns, rows (through the grid), and what to say when
/// there are none.
pub struct ListProps<'a> {
    pub headers: Vec<&'a str>,
    pub widths: Vec<Constraint>,
    pub grid: &'a crate::app::grid::Grid,
    pub load: &'a Load,
    /// Shown when loaded and empty.
    pub empty: &'a str,
}

/// A column width as ratatui lays it out.
pub fn constraint(w: Width) -> Constraint {
    match w {
        Width::Fixed(n) => Constraint::Length(n),
        Width::Min(n) => Constraint::Min(n),
    }
}

/// A list body: column header plus the visible window of rows. `cells(i)` builds the row
/// for data index `i`; only `height` of them are built.
pub fn draw_list(
    f: &mut Frame,
    area: Rect,
    th: &Theme,
    p: &ListProps,
    mut cells: impl FnMut(usize) -> (Vec<Cell<'static>>, Style),
) {
    let (grid, load) = (p.grid, p.load);
    let height = (area.height as usize).saturating_sub(1);
    let (start, end) = grid.window(height);
    let rows: Vec<Row> = grid.index[start..end]
        .iter()
        .map(|&i| {
            let (c, style) = cells(i);
            Row::new(c).style(style)
        })
        .collect();
    let header =
        Row::new(p.headers.iter().map(|h| Cell::from(h.to_string()))).style(th.column_header());
    if rows.is_empty() {
        let msg = match load {
            Load::Loading | Load::Idle => "loading…".to_string(),
            Load::Failed(e) => format!("failed: {e}"),
            Load::Loaded if !grid.filter.is_empty() => format!("nothing matches /{}", grid.filter),
            Load::Loaded => p.empty.to_string(),
        };
        f.render_widget(
            Table::new(Vec::<Row>::new(), p.widths.clone()).header(header),
            area,
        );
        if area.height > 2 {
            let r = Rect {
                y: area.y + 2,
                height: 1,
                ..area
            };
            f.render_widget(
                Paragraph::new(Span::styled(format!("  {msg}"), th.dim())),
                r,
            );
        }
        return;
    }
    let table = Table::new(rows, p.widths.clone())
        .header(header)
        .row_highlight_style(th.selected())
        .column_spacing(1);
    let mut state = TableState::default().with_selected(Some(grid.selected.saturating_sub(start)));
    f.render_stateful_widget(table, area, &mut state);
}

/// `text` wrapped at word boundaries into rows of at most `width` cells (words longer
/// than a row are broken), as a wrapping `Paragraph` lays it out.
pub fn wrap_words(text: &str, width: u16) -> Vec<String> {
    let w = width.max(1) as usize;
    let mut rows: Vec<String> = vec![String::new()];
    for word in text.split(' ') {
        let n = Span::raw(word).width();
        let cur = rows
            .last()
            .map(|r| Span::raw(r.as_str()).width())
            .unwrap_or(0);
        let need = if cur == 0 { n } else { cur + 1 + n };
        if need <= w {
            let r = rows.last_mut().expect("a row");
            if cur > 0 {
                r.push(' ');
            }
            r.push_str(word);
        } else if n <= w {
            rows.push(word.to_string());
        } else {
            // Broken across rows, from a fresh one.
            if cur > 0 {
                rows.push(String::new());
            }
            for c in word.chars() {
                let r = rows.last_mut().expect("a row");
                if Span::raw(r.as_str()).width() + Span::raw(c.to_string()).width() > w {
                    rows.push(String::new());
                }
                rows.last_mut().expect("a row").push(c);
            }
        }
    }
    rows
}

/// Rows `text` takes wrapped by [`wrap_words`].
pub fn wrapped_height(text: &str, width: u16) -> usize {
    wrap_words(text, width).len()
}

/// Display cells `s` takes.
pub fn text_width(s: &str) -> u16 {
    u16::try_from(Span::raw(s).width()).unwrap_or(u16::MAX)
}

/// The widest name an identity column asks room for: the longest of `names`, up to
/// [`MAX_IDENTITY`] (one pathological name does not empty the list of columns).
pub fn identity_need<'a>(names: impl Iterator<Item = &'a str>) -> u16 {
    let mut need = 0;
    for n in names {
        need = need.max(text_width(n).min(MAX_IDENTITY));
        if need == MAX_IDENTITY {
            break;
        }
    }
    need
}

/// The most an identity column claims before the other columns are kept anyway.
pub const MAX_IDENTITY: u16 = 48;

/// How long ago `t` was (`15d`, `3h20m`), or `never`.
pub fn age(now: chrono::DateTime<chrono::Utc>, t: Option<chrono::DateTime<chrono::Utc>>) -> String {
    t.map(|t| human_duration((now - t).num_seconds()))
        .unwrap_or_else(|| "never".into())
}

/// Right-aligned cell text.
pub fn num(text: impl Into<String>) -> Cell<'static> {
    Cell::from(Line::from(text.into()).alignment(ratatui::layout::Alignment::Right))
}

pub use crate::fmt::thousands;

/// `1.2M`, `18k`, `950`: counts in narrow columns.
pub fn compact(n: u64) -> String {
    match n {
        0..=9_999 => n.to_string(),
        10_000..=999_999 => format!("{}k", n / 1000),
        1_000_000..=9_999_999 => format!("{:.1}M", n as f64 / 1e6),
        10_000_000..=999_999_999 => format!("{}M", n / 1_000_000),
        _ => format!("{:.1}G", n as f64 / 1e9),
    }
}

#[cfg(test)]
mod tests;
