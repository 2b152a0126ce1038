//! `update(&mut State, Action) -> Vec<Effect>`: all behaviour, no IO.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::action::{Action, DagWrite, Effect, ExportData, ExportFormat, MaintenanceKind};
use super::dags::DagLevel;
use super::jobs::{Confirm, Job};
use super::keymap::Command;
use super::state::*;
use crate::fmt::{human_bytes, human_duration};
use crate::health::{Severity, evaluate};
use crate::lakehouse::model::TableRef;

pub fn update(s: &mut State, action: Action) -> Vec<Effect> {
    match action {
        Action::Start => {
            let mut fx = refresh(s, false);
            fx.insert(0, Effect::FetchInfo);
            fx
        }
        Action::Key(ev) => on_key(s, ev),
        Action::Tick(now) => {
            s.now = now;
            if let Some(m) = &s.status
                && m.level == Level::Info
                && (now - m.at).num_seconds() >= 8
            {
                s.status = None;
            }
            match s.next_refresh_in() {
                Some(0) if !s.refresh_in_flight() => refresh(s, false),
                _ => Vec::new(),
            }
        }
        Action::Resize(w, h) => {
            s.size = (w, h);
            let height = s.page_height();
            if let Some(g) = s.grid_mut() {
                g.ensure_visible(height);
            }
            Vec::new()
        }
        Action::Info(r) => {
            match r {
                Ok(info) => {
                    s.conn.info = Some(info);
                    s.conn.info_at = Some(s.now);
                    s.conn.info_error = None;
                }
                Err(e) => {
                    s.conn.info_error = Some(e.clone());
                    s.set_status(Level::Error, format!("Trino: {e}"));
                }
            }
            Vec::new()
        }
        Action::Discovered { generation, result } => on_discovered(s, generation, result),
        Action::Stats {
            generation,
            table,
            result,
        } => {
            if generation != s.tables.generation {
                return Vec::new();
            }
            s.tables.pending = s.tables.pending.saturating_sub(1);
            let now = s.now;
            let cfg = s.health.clone();
            if let Some(row) = s.tables.row_mut(&table) {
                row.loading = false;
                row.stale = false;
                match result {
                    Ok(stats) => {
                        row.health = Some(evaluate(&stats, row.dag.as_ref(), &cfg, now));
                        row.stats = Some(stats);
                        row.error = None;
                    }
                    Err(e) => row.error = Some(e),
                }
            }
            if s.tables.pending == 0 {
                let failed: Vec<String> = s
                    .tables
                    .rows
                    .iter()
                    .filter(|r| r.error.is_some())
                    .map(|r| r.name.clone())
                    .collect();
                if let Some(first) = failed.first() {
                    let e = s
                        .tables
                        .rows
                        .iter()
                        .find(|r| &r.name == first)
                        .and_then(|r| r.error.clone())
                        .unwrap_or_default();
                    s.set_status(
                        Level::Error,
                        format!(
                            "{} of {} tables failed to load; {first}: {e}",
                            failed.len(),
                            s.tables.rows.len()
                        ),
                    );
                }
            }
            s.tables.reindex();
            Vec::new()
        }
        Action::Partitions {
            request,
            table,
            result,
        } => {
            if request != s.partitions.request || s.partitions.table.as_ref() != Some(&table) {
                return Vec::new();
            }
            match result {
                Ok(list) => {
                    let keep = s.partitions.selected().map(|r| r.label.clone());
                    let target = list.target_file_size;
                    let cfg = s.health.clone();
                    s.partitions.rows = list
                        .partitions
                        .into_iter()
                        .map(|p| {
                            let label = p.label();
                            PartitionRow {
                                search: label.to_lowercase(),
                                severity: partition_severity(&p, target, &cfg),
                                label,
                                stats: p,
                                order: 0,
                            }
                        })
                        .collect();
                    // Rank labels once per load (the tie-break of every sort).
                    let mut by_label: Vec<usize> = (0..s.partitions.rows.len()).collect();
                    by_label.sort_unstable_by(|&a, &b| {
                        s.partitions.rows[a].label.cmp(&s.partitions.rows[b].label)
                    });
                    for (rank, i) in by_label.into_iter().enumerate() {
                        s.partitions.rows[i].order = rank as u32;
                    }
                    s.partitions.target_file_size = target;
                    s.partitions.fields = list.layout_fields;
                    let labels: std::collections::BTreeSet<&str> =
                        s.partitions.rows.iter().map(|r| r.label.as_str()).collect();
                    let before = s.partitions.marks.len();
                    s.partitions.marks.retain(|m| labels.contains(m.as_str()));
                    if s.partitions.marks.len() < before {
                        s.set_status(
                            Level::Info,
                            "marks on partitions that no longer exist were dropped",
                        );
                    }
                    s.partitions.load = Load::Loaded;
                    s.partitions.reindex(keep);
                }
                Err(e) => {
                    s.set_status(Level::Error, format!("partitions of {table}: {e}"));
                    s.partitions.load = Load::Failed(e);
                }
            }
            Vec::new()
        }
        Action::Snapshots {
            request,
            table,
            result,
        } => {
            if request != s.snapshots.request || s.snapshots.table.as_ref() != Some(&table) {
                return Vec::new();
            }
            match result {
                Ok(list) => {
                    s.snapshots.rows = list
                        .into_iter()
                        .map(|info| SnapshotRow {
                            search: format!(
                                "{} {} {}",
                                info.operation,
                                info.snapshot_id,
                                info.committed_at.format("%Y-%m-%d %H:%M")
                            )
                            .to_lowercase(),
                            info,
                        })
                        .collect();
                    s.snapshots.load = Load::Loaded;
                    s.snapshots.reindex();
                }
                Err(e) => {
                    s.set_status(Level::Error, format!("snapshots of {table}: {e}"));
                    s.snapshots.load = Load::Failed(e);
                }
            }
            Vec::new()
        }
        Action::Exported(r) => {
            match r {
                Ok(path) => s.set_status(Level::Info, format!("exported to {}", path.display())),
                Err(e) => s.set_status(Level::Error, format!("export failed: {e}")),
            }
            Vec::new()
        }
        Action::ProfileSwitched(r) => match r {
            Ok(p) => {
                s.conn = Conn {
                    profile: p.profile.clone(),
                    trino_url: p.trino_url,
                    airflow_url: p.airflow_url,
                    ..Conn::default()
                };
                s.readonly = p.readonly;
                s.keymap = s.keymap.clone().with_readonly(p.readonly);
                s.refresh_every = p.refresh;
                s.schemas = p.schemas;
                s.health = p.health;
                s.airflow_configured = s.conn.airflow_url.is_some();
                s.maintenance = p.maintenance;
                s.dags = super::dags::DagsView::default();
                s.tables = TablesView::default();
                s.partitions = PartitionsView::default();
                s.snapshots = SnapshotsView::default();
                s.tab = Tab::Tables;
                s.set_status(Level::Info, format!("switched to profile {}", p.profile));
                let mut fx = refresh(s, false);
                fx.insert(0, Effect::FetchInfo);
                fx
            }
            Err(e) => {
                s.set_status(Level::Error, e);
                Vec::new()
            }
        },
        Action::Terminate => {
            s.quit = true;
            vec![Effect::Quit]
        }
        Action::DagsLoaded { generation, result } => super::dags::on_list(s, generation, result),
        Action::DagFacts {
            generation,
            dag_id,
            result,
        } => {
            if generation != s.dags.generation {
                return Vec::new();
            }
            super::dags::on_facts(s, &dag_id, result)
        }
        Action::ConnectionFindings(f) => {
            s.dags.findings = f;
            Vec::new()
        }
        Action::Runs { dag_id, result } => {
            super::dags::on_runs(s, &dag_id, result);
            Vec::new()
        }
        Action::Tasks {
            dag_id,
            run_id,
            result,
        } => {
            super::dags::on_tasks(s, &dag_id, &run_id, result);
            Vec::new()
        }
        Action::Log {
            dag_id,
            run_id,
            task_id,
            try_number,
            result,
        } => {
            super::dags::on_log(s, (dag_id, run_id, task_id, try_number), result);
            Vec::new()
        }
        Action::Failure { dag_id, result } => {
            match result {
                Ok(Some(f)) => {
                    s.dags.failures.insert(dag_id, Ok(f));
                }
                Ok(None) => {
                    s.dags.failures.remove(&dag_id);
                }
                Err(e) => {
                    s.dags.failures.insert(dag_id, Err(e));
                }
            }
            Vec::new()
        }
        Action::ClearPlanned {
            dag_id,
            run_id,
            result,
        } => {
            match result {
                Ok(outcome) if !s.readonly => {
                    s.status = None;
                    s.popup = Some(Popup::ConfirmDag(Box::new(super::dags::confirm_clear(
                        &dag_id, &run_id, &outcome,
                    ))));
                }
                Ok(_) => s.set_status(Level::Error, "read-only: Airflow writes are disabled"),
                Err(e) => s.set_status(Level::Error, format!("dry run of clearing {run_id}: {e}")),
            }
            Vec::new()
        }
        Action::DagWritten { action, result } => {
            match result {
                Ok(msg) => s.set_status(Level::Info, msg),
                Err(e) => s.set_status(
                    Level::Error,
                    format!("{} {}: {e}", action.name(), action.dag_id()),
                ),
            }
            // Show the new state: the DAG's facts, and its runs when they are open.
            let mut fx = Vec::new();
            if let Some(r) = s.dags.row(action.dag_id()) {
                fx.push(Effect::LoadDagFacts {
                    generation: s.dags.generation,
                    dag: Box::new(r.dag.clone()),
                });
            }
            if s.dags.dag_id.as_deref() == Some(action.dag_id()) {
                fx.push(Effect::LoadRuns {
                    dag_id: action.dag_id().to_string(),
                });
            }
            if matches!(action, DagWrite::SetPaused { .. }) {
                s.dags.last_full = None;
                fx.extend(super::dags::refresh(s, false));
            }
            fx
        }

        Action::PlanReady(r) => {
            match r.and_then(|draft| {
                let plan = draft.build(false)?;
                Ok(Confirm {
                    draft,
                    grouped: false,
                    plan,
                    scroll: 0,
                })
            }) {
                Ok(c) if s.readonly => {
                    s.set_status(
                        Level::Error,
                        format!("read-only: not running {}", c.plan.procedure.name()),
                    );
                }
                Ok(c) => {
                    s.prompt = None;
                    s.status = None;
                    s.popup = Some(Popup::Confirm(Box::new(c)));
                }
                Err(e) => s.set_status(Level::Error, e),
            }
            Vec::new()
        }
        Action::Job { job, event } => {
            if let crate::maintain::run::StepEvent::Finished { step, outcome } = &event
                && let Some(j) = s.jobs.list.iter().find(|j| j.id == job)
            {
                let what = j
                    .plan
                    .steps
                    .get(*step)
                    .and_then(|x| x.partition.clone())
                    .unwrap_or_else(|| j.plan.table.to_string());
                let name = j.plan.procedure.name();
                if outcome.ok {
                    if s.partitions.table.as_ref() == Some(&j.plan.table) {
                        s.partitions.marks.remove(&what);
                    }
                    let files = match (outcome.files_after, j.plan.steps.get(*step)) {
                        (Some(a), Some(st)) => format!(": files {} → {a}", st.files),
                        _ => String::new(),
                    };
                    s.set_status(Level::Info, format!("{name} {what}{files}"));
                } else if !outcome.cancelled {
                    s.set_status(
                        Level::Error,
                        format!(
                            "{name} {what} failed: {}",
                            outcome.error.as_deref().unwrap_or("")
                        ),
                    );
                }
            }
            if let Some(j) = s.jobs.get_mut(job) {
                j.apply(event);
            }
            Vec::new()
        }
        Action::JobDone { job, result } => {
            let now = s.now;
            let Some(j) = s.jobs.get_mut(job) else {
                return Vec::new();
            };
            j.finish(now, result.err());
            let line = j.line(now);
            let failed = j.error.is_some();
            let table = j.plan.table.clone();
            s.set_status(if failed { Level::Error } else { Level::Info }, line);
            after_mutation(s, &table)
        }
    }
}

/// Re-read what a finished job changed: the table's stats (its row), its partitions and
/// snapshots when they are loaded (the new `replace` appears).
fn after_mutation(s: &mut State, table: &TableRef) -> Vec<Effect> {
    let mut fx = Vec::new();
    if let Some(row) = s.tables.row_mut(table) {
        row.loading = true;
        row.stale = true;
        s.tables.pending += 1;
        fx.push(Effect::LoadStats {
            generation: s.tables.generation,
            table: table.clone(),
        });
    }
    if s.partitions.table.as_ref() == Some(table) {
        s.partitions.request += 1;
        s.partitions.load = Load::Loading;
        fx.push(Effect::LoadPartitions {
            request: s.partitions.request,
            table: table.clone(),
        });
    }
    if s.snapshots.table.as_ref() == Some(table) {
        s.snapshots.request += 1;
        s.snapshots.load = Load::Loading;
        fx.push(Effect::LoadSnapshots {
            request: s.snapshots.request,
            table: table.clone(),
        });
    }
    fx
}

/// The table a maintenance command applies to on the current tab.
fn maintenance_table(s: &State) -> Option<TableRef> {
    match s.tab {
        Tab::Tables => s.tables.selected().map(|r| r.table.clone()),
        Tab::Partitions => s.partitions.table.clone(),
        Tab::Snapshots => s.snapshots.table.clone(),
        Tab::Dags => None,
    }
}

fn plan_maintenance(s: &mut State, kind: MaintenanceKind) -> Vec<Effect> {
    if s.readonly {
        s.set_status(Level::Error, "read-only: maintenance is disabled");
        return Vec::new();
    }
    let Some(table) = maintenance_table(s) else {
        s.set_status(Level::Warn, "select a table first");
        return Vec::new();
    };
    if let Some(j) = s.jobs.running_on(&table) {
        let name = j.plan.procedure.name();
        s.set_status(
            Level::Error,
            format!("{name} is already running on {table}: one mutation per table at a time"),
        );
        return Vec::new();
    }
    let partitions = match (kind, s.tab) {
        (MaintenanceKind::Optimize, Tab::Partitions) => {
            let marked: Vec<_> = s
                .partitions
                .rows
                .iter()
                .filter(|r| s.partitions.marks.contains(&r.label))
                .map(|r| r.stats.clone())
                .collect();
            if !marked.is_empty() {
                Some(marked)
            } else {
                match s.partitions.selected() {
                    Some(r) if !r.stats.values.is_empty() => Some(vec![r.stats.clone()]),
                    _ => None,
                }
            }
        }
        _ => None,
    };
    s.set_status(Level::Info, format!("planning maintenance of {table}…"));
    vec![Effect::PlanMaintenance {
        table,
        kind,
        partitions,
    }]
}

fn on_confirm_key(s: &mut State, mut c: Box<Confirm>, ev: KeyEvent) -> Vec<Effect> {
    match ev.code {
        KeyCode::Char('y') | KeyCode::Char('Y') => {
            s.popup = None;
            if s.readonly {
                s.set_status(Level::Error, "read-only: maintenance is disabled");
                return Vec::new();
            }
            if let Some(j) = s.jobs.running_on(&c.plan.table) {
                let name = j.plan.procedure.name();
                s.set_status(
                    Level::Error,
                    format!("{name} is already running on {}", c.plan.table),
                );
                return Vec::new();
            }
            s.jobs.next_id += 1;
            let id = s.jobs.next_id;
            s.jobs.list.push(Job::new(id, c.plan.clone(), s.now));
            s.set_status(
                Level::Info,
                format!(
                    "{} started: c cancels, Q shows the queue",
                    c.plan.procedure.name()
                ),
            );
            return vec![Effect::RunPlan {
                job: id,
                plan: c.plan,
            }];
        }
        KeyCode::Char('g') if c.draft.partitions.len() > 1 => match c.draft.build(!c.grouped) {
            Ok(p) => {
                c.grouped = !c.grouped;
                c.plan = p;
                c.scroll = 0;
            }
            Err(e) => s.set_status(Level::Error, e),
        },
        KeyCode::Char('j') | KeyCode::Down => c.scroll = c.scroll.saturating_add(1),
        KeyCode::Char('k') | KeyCode::Up => c.scroll = c.scroll.saturating_sub(1),
        KeyCode::PageDown => c.scroll = c.scroll.saturating_add(10),
        KeyCode::PageUp => c.scroll = c.scroll.saturating_sub(10),
        // Anything else, Enter included, is no: nothing runs without an explicit y.
        _ => {
            s.popup = None;
            s.set_status(Level::Info, "cancelled: nothing was run");
            return Vec::new();
        }
    }
    s.popup = Some(Popup::Confirm(c));
    Vec::new()
}

/// Start a refresh of the tables (and the detail tab on screen), unless one is running.
fn refresh(s: &mut State, manual: bool) -> Vec<Effect> {
    let mut fx = Vec::new();
    if s.refresh_in_flight() {
        if manual {
            s.set_status(Level::Info, "a refresh is already running");
        }
    } else {
        s.tables.generation += 1;
        s.tables.load = Load::Loading;
        for r in &mut s.tables.rows {
            r.stale = true;
        }
        s.last_refresh = Some(s.now);
        fx.push(Effect::FetchInfo);
        fx.push(Effect::Discover {
            generation: s.tables.generation,
            schemas: s.schemas.clone(),
        });
    }
    match s.tab {
        Tab::Partitions if manual || !s.partitions.load.is_loading() => {
            fx.extend(load_partitions(s, true))
        }
        Tab::Snapshots if manual || !s.snapshots.load.is_loading() => {
            fx.extend(load_snapshots(s, true))
        }
        _ => {}
    }
    fx.extend(super::dags::refresh(s, manual));
    fx
}

fn on_discovered(
    s: &mut State,
    generation: u64,
    result: Result<Vec<TableRef>, String>,
) -> Vec<Effect> {
    if generation != s.tables.generation {
        return Vec::new();
    }
    match result {
        Ok(tables) => {
            let old = std::mem::take(&mut s.tables.rows);
            let mut rows = Vec::with_capacity(tables.len());
            for t in &tables {
                let mut row = old
                    .iter()
                    .find(|r| &r.table == t)
                    .cloned()
                    .unwrap_or_else(|| TableRow::new(t.clone()));
                row.loading = true;
                rows.push(row);
            }
            s.tables.rows = rows;
            s.tables.load = Load::Loaded;
            super::dags::correlate(s);
            s.tables.pending = s.tables.rows.len();
            s.tables.reindex();
            if s.tables.rows.is_empty() {
                let scope = if s.schemas.is_empty() {
                    "the catalog".to_string()
                } else {
                    format!("schemas {}", s.schemas.join(", "))
                };
                s.set_status(Level::Warn, format!("no Iceberg tables found in {scope}"));
            }
            // Worst known first, so what matters fills in first.
            let order: Vec<TableRef> = s
                .tables
                .grid
                .index
                .iter()
                .map(|&i| s.tables.rows[i].table.clone())
                .collect();
            let generation = s.tables.generation;
            order
                .into_iter()
                .map(|table| Effect::LoadStats { generation, table })
                .collect()
        }
        Err(e) => {
            s.tables.load = Load::Failed(e.clone());
            s.tables.pending = 0;
            for r in &mut s.tables.rows {
                r.stale = false;
            }
            s.set_status(Level::Error, format!("cannot list tables: {e}"));
            Vec::new()
        }
    }
}

/// Point the Partitions tab at the selected table and load it (when needed or forced).
fn load_partitions(s: &mut State, force: bool) -> Vec<Effect> {
    let Some(table) = s
        .tables
        .selected()
        .map(|r| r.table.clone())
        .or_else(|| s.partitions.table.clone())
    else {
        return Vec::new();
    };
    let same = s.partitions.table.as_ref() == Some(&table);
    if same && !force && matches!(s.partitions.load, Load::Loaded | Load::Loading) {
        return Vec::new();
    }
    if !same {
        s.partitions = PartitionsView {
            request: s.partitions.request,
            ..PartitionsView::default()
        };
        s.partitions.table = Some(table.clone());
    }
    s.partitions.request += 1;
    s.partitions.load = Load::Loading;
    vec![Effect::LoadPartitions {
        request: s.partitions.request,
        table,
    }]
}

fn load_snapshots(s: &mut State, force: bool) -> Vec<Effect> {
    let Some(table) = s
        .tables
        .selected()
        .map(|r| r.table.clone())
        .or_else(|| s.snapshots.table.clone())
    else {
        return Vec::new();
    };
    let same = s.snapshots.table.as_ref() == Some(&table);
    if same && !force && matches!(s.snapshots.load, Load::Loaded | Load::Loading) {
        return Vec::new();
    }
    if !same {
        s.snapshots = SnapshotsView {
            request: s.snapshots.request,
            ..SnapshotsView::default()
        };
        s.snapshots.table = Some(table.clone());
    }
    s.snapshots.request += 1;
    s.snapshots.load = Load::Loading;
    vec![Effect::LoadSnapshots {
        request: s.snapshots.request,
        table,
    }]
}

fn switch_tab(s: &mut State, tab: Tab) -> Vec<Effect> {
    s.tab = tab;
    let h = s.page_height();
    if let Some(g) = s.grid_mut() {
        g.ensure_visible(h);
    }
    match tab {
        Tab::Partitions => load_partitions(s, false),
        Tab::Snapshots => load_snapshots(s, false),
        _ => Vec::new(),
    }
}

fn reindex_current(s: &mut State) {
    match s.tab {
        Tab::Tables => s.tables.reindex(),
        Tab::Partitions => s.partitions.reindex(None),
        Tab::Snapshots => s.snapshots.reindex(),
        Tab::Dags => s.dags.reindex_level(),
    }
}

fn in_log(s: &State) -> bool {
    s.tab == Tab::Dags && s.dags.level() == DagLevel::Log
}

fn set_filter(s: &mut State, text: &str) {
    if in_log(s) {
        super::dags::search_log(s, text);
        return;
    }
    let lower = text.to_lowercase();
    if let Some(g) = s.grid_mut() {
        if g.filter == lower {
            return;
        }
        g.filter = lower;
    }
    reindex_current(s);
}

fn current_filter(s: &State) -> String {
    if in_log(s) {
        return s
            .dags
            .log
            .as_ref()
            .map(|l| l.search.clone())
            .unwrap_or_default();
    }
    s.grid().map(|g| g.filter.clone()).unwrap_or_default()
}

fn sort_columns(tab: Tab) -> &'static [&'static str] {
    match tab {
        Tab::Tables => &TABLE_SORTS,
        Tab::Partitions => &PARTITION_SORTS,
        Tab::Snapshots => &SNAPSHOT_SORTS,
        Tab::Dags => &[],
    }
}

fn on_key(s: &mut State, ev: KeyEvent) -> Vec<Effect> {
    if ev.kind != KeyEventKind::Press && ev.kind != KeyEventKind::Repeat {
        return Vec::new();
    }
    // ctrl-c always leaves, whatever the keymap says (raw mode swallows SIGINT).
    if ev.code == KeyCode::Char('c') && ev.modifiers.contains(KeyModifiers::CONTROL) {
        s.quit = true;
        return vec![Effect::Quit];
    }
    if let Some(p) = s.prompt.clone() {
        return on_prompt_key(s, p, ev);
    }
    if let Some(Popup::Confirm(c)) = s.popup.clone() {
        return on_confirm_key(s, c, ev);
    }
    if let Some(Popup::ConfirmDag(c)) = s.popup.clone() {
        s.popup = None;
        if matches!(ev.code, KeyCode::Char('y') | KeyCode::Char('Y')) {
            if s.readonly {
                s.set_status(Level::Error, "read-only: Airflow writes are disabled");
                return Vec::new();
            }
            s.set_status(
                Level::Info,
                format!("{} {}…", c.action.name(), c.action.dag_id()),
            );
            return vec![Effect::WriteDag(c.action)];
        }
        s.set_status(Level::Info, "cancelled: nothing was sent to Airflow");
        return Vec::new();
    }
    if s.popup == Some(Popup::Queue) && s.keymap.lookup(&ev) == Some(Command::Queue) {
        s.popup = None;
        return Vec::new();
    }
    if s.popup.is_some() {
        let cmd = s.keymap.lookup(&ev);
        if matches!(
            cmd,
            Some(Command::Back | Command::Help | Command::Info | Command::Quit | Command::Enter)
        ) {
            s.popup = None;
        }
        return Vec::new();
    }
    match s.keymap.lookup(&ev) {
        Some(cmd) => on_command(s, cmd),
        None => Vec::new(),
    }
}

fn on_prompt_key(s: &mut State, p: Prompt, ev: KeyEvent) -> Vec<Effect> {
    let retention = match &p {
        Prompt::Retention(r, _) => Some(*r),
        _ => None,
    };
    let (mut text, is_filter) = match p {
        Prompt::Filter(t) => (t, true),
        Prompt::Command(t) | Prompt::Retention(_, t) => (t, false),
    };
    match ev.code {
        KeyCode::Esc => {
            s.prompt = None;
            if is_filter {
                set_filter(s, "");
            }
            return Vec::new();
        }
        KeyCode::Enter => {
            s.prompt = None;
            if let Some(r) = retention {
                return match crate::config::Dur::parse(&text) {
                    Ok(d) => {
                        let secs = d.0.as_secs();
                        plan_maintenance(
                            s,
                            match r {
                                RetentionFor::ExpireSnapshots => MaintenanceKind::ExpireSnapshots {
                                    retention_secs: secs,
                                },
                                RetentionFor::RemoveOrphanFiles => {
                                    MaintenanceKind::RemoveOrphanFiles {
                                        retention_secs: secs,
                                    }
                                }
                            },
                        )
                    }
                    Err(e) => {
                        s.set_status(Level::Error, e);
                        Vec::new()
                    }
                };
            }
            return if is_filter {
                Vec::new()
            } else {
                run_command_line(s, text.trim())
            };
        }
        KeyCode::Backspace => {
            text.pop();
        }
        KeyCode::Char('u') if ev.modifiers.contains(KeyModifiers::CONTROL) => text.clear(),
        KeyCode::Char('w') if ev.modifiers.contains(KeyModifiers::CONTROL) => {
            let t = text.trim_end().to_string();
            text = match t.rfind(' ') {
                Some(i) => t[..=i].to_string(),
                None => String::new(),
            };
        }
        KeyCode::Char(c) if !ev.modifiers.contains(KeyModifiers::CONTROL) => text.push(c),
        _ => {}
    }
    if is_filter {
        set_filter(s, &text);
        s.prompt = Some(Prompt::Filter(text));
    } else if let Some(r) = retention {
        s.prompt = Some(Prompt::Retention(r, text));
    } else {
        s.prompt = Some(Prompt::Command(text));
    }
    Vec::new()
}

fn run_command_line(s: &mut State, line: &str) -> Vec<Effect> {
    let mut parts = line.split_whitespace();
    let cmd = parts.next().unwrap_or("");
    let arg: Vec<&str> = parts.collect();
    match cmd {
        "" => Vec::new(),
        "q" | "quit" | "q!" => {
            s.quit = true;
            vec![Effect::Quit]
        }
        "help" | "h" => {
            s.popup = Some(Popup::Help);
            Vec::new()
        }
        "profile" | "ctx" => match arg.first() {
            None => {
                let list = if s.profiles.is_empty() {
                    "none defined".to_string()
                } else {
                    s.profiles.join(", ")
                };
                s.set_status(
                    Level::Info,
                    format!("profile {} (profiles: {list})", s.conn.profile),
                );
                Vec::new()
            }
            Some(name) if s.profiles.iter().any(|p| p == name) => {
                vec![Effect::SwitchProfile(name.to_string())]
            }
            Some(name) => {
                let list = if s.profiles.is_empty() {
                    "none defined".to_string()
                } else {
                    s.profiles.join(", ")
                };
                s.set_status(
                    Level::Error,
                    format!("no profile {name:?} (profiles: {list})"),
                );
                Vec::new()
            }
        },
        "schema" | "schemas" => {
            s.schemas = arg
                .iter()
                .flat_map(|a| a.split(','))
                .filter(|x| !x.is_empty())
                .map(str::to_string)
                .collect();
            s.set_status(
                Level::Info,
                if s.schemas.is_empty() {
                    "watching all schemas".to_string()
                } else {
                    format!("watching schemas {}", s.schemas.join(", "))
                },
            );
            // A new scope: start over even if a refresh is running.
            s.tables.pending = 0;
            s.tables.load = Load::Idle;
            s.tables.rows.clear();
            s.tables.reindex();
            refresh(s, true)
        }
        "refresh" | "r" => match arg.first() {
            None => refresh(s, true),
            Some(d) => match crate::config::Dur::parse(d) {
                Ok(d) if d.0 >= crate::config::MIN_REFRESH => {
                    s.refresh_every = d.0;
                    s.set_status(
                        Level::Info,
                        format!(
                            "auto-refresh every {}",
                            human_duration(d.0.as_secs() as i64)
                        ),
                    );
                    Vec::new()
                }
                Ok(_) => {
                    s.set_status(Level::Error, "refresh interval must be at least 5s");
                    Vec::new()
                }
                Err(e) => {
                    s.set_status(Level::Error, e);
                    Vec::new()
                }
            },
        },
        "freeze" | "unfreeze" => {
            s.frozen = cmd == "freeze";
            s.set_status(
                Level::Info,
                if s.frozen {
                    "auto-refresh frozen"
                } else {
                    "auto-refresh resumed"
                },
            );
            Vec::new()
        }
        "export" | "w" => {
            let format = match arg.first().copied() {
                None | Some("csv") => ExportFormat::Csv,
                Some("json") => ExportFormat::Json,
                Some(other) => {
                    s.set_status(
                        Level::Error,
                        format!("unknown export format {other:?} (csv or json)"),
                    );
                    return Vec::new();
                }
            };
            export(s, format)
        }
        other => {
            s.set_status(
                Level::Error,
                format!("unknown command :{other} (try :q, :profile NAME, :schema NAME, :refresh 30s, :export [csv|json], :freeze)"),
            );
            Vec::new()
        }
    }
}

fn export(s: &mut State, format: ExportFormat) -> Vec<Effect> {
    match export_view(s) {
        Some(data) => vec![Effect::Export { format, data }],
        None => {
            s.set_status(Level::Warn, "nothing to export in this view");
            Vec::new()
        }
    }
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|x| x.to_string()).unwrap_or_default()
}

/// The current view as the operator sees it (filter and sort applied), for the postmortem.
pub fn export_view(s: &State) -> Option<ExportData> {
    let ts =
        |t: Option<chrono::DateTime<chrono::Utc>>| t.map(|t| t.to_rfc3339()).unwrap_or_default();
    match s.tab {
        Tab::Tables => {
            let columns = [
                "catalog",
                "schema",
                "table",
                "status",
                "score",
                "data_files",
                "small_files",
                "avg_file_bytes",
                "total_bytes",
                "records",
                "partitions",
                "small_file_partitions",
                "snapshots",
                "delete_files",
                "last_compaction",
                "last_write",
                "findings",
            ];
            let rows = s
                .tables
                .grid
                .index
                .iter()
                .map(|&i| {
                    let r = &s.tables.rows[i];
                    let st = r.stats.as_ref();
                    vec![
                        r.table.catalog.clone(),
                        r.table.schema.clone(),
                        r.table.table.clone(),
                        r.status()
                            .map(|x| x.label().to_string())
                            .unwrap_or_default(),
                        opt(r.health.as_ref().map(|h| h.score)),
                        opt(st.map(|x| x.data_files)),
                        opt(st.map(|x| x.small_files)),
                        opt(st.and_then(|x| x.avg_file_size())),
                        opt(st.map(|x| x.total_bytes)),
                        opt(st.map(|x| x.records)),
                        opt(st.map(|x| x.partitions)),
                        opt(st.map(|x| x.small_file_partitions)),
                        opt(st.map(|x| x.snapshots)),
                        opt(st.map(|x| x.delete_files)),
                        ts(st.and_then(|x| x.last_compaction)),
                        ts(st.and_then(|x| x.last_write)),
                        r.health
                            .as_ref()
                            .map(|h| {
                                h.findings
                                    .iter()
                                    .map(|f| format!("[{}] {}", f.severity.label(), f.message))
                                    .collect::<Vec<_>>()
                                    .join("; ")
                            })
                            .or_else(|| r.error.clone())
                            .unwrap_or_default(),
                    ]
                })
                .collect();
            Some(ExportData {
                view: "tables",
                columns: columns.iter().map(|c| c.to_string()).collect(),
                rows,
            })
        }
        Tab::Partitions => {
            let table = s.partitions.table.as_ref()?;
            let columns = [
                "table",
                "partition",
                "severity",
                "data_files",
                "small_files",
                "avg_file_bytes",
                "total_bytes",
                "records",
                "marked",
            ];
            let rows = s
                .partitions
                .grid
                .index
                .iter()
                .map(|&i| {
                    let r = &s.partitions.rows[i];
                    vec![
                        table.to_string(),
                        r.label.clone(),
                        r.severity.label().to_string(),
                        r.stats.data_files.to_string(),
                        r.stats.small_files.to_string(),
                        r.stats.avg_file_size().to_string(),
                        r.stats.total_bytes.to_string(),
                        r.stats.records.to_string(),
                        s.partitions.marks.contains(&r.label).to_string(),
                    ]
                })
                .collect();
            Some(ExportData {
                view: "partitions",
                columns: columns.iter().map(|c| c.to_string()).collect(),
                rows,
            })
        }
        Tab::Snapshots => {
            let table = s.snapshots.table.as_ref()?;
            let columns = [
                "table",
                "committed_at",
                "snapshot_id",
                "operation",
                "added_data_files",
                "deleted_data_files",
                "total_data_files",
                "total_records",
                "trino_user",
                "trino_query_id",
            ];
            let rows = s
                .snapshots
                .grid
                .index
                .iter()
                .map(|&i| {
                    let r = &s.snapshots.rows[i].info;
                    vec![
                        table.to_string(),
                        r.committed_at.to_rfc3339(),
                        r.snapshot_id.to_string(),
                        r.operation.clone(),
                        opt(r.added_data_files),
                        opt(r.deleted_data_files),
                        opt(r.total_data_files),
                        opt(r.total_records),
                        r.trino_user.clone().unwrap_or_default(),
                        r.trino_query_id.clone().unwrap_or_default(),
                    ]
                })
                .collect();
            Some(ExportData {
                view: "snapshots",
                columns: columns.iter().map(|c| c.to_string()).collect(),
                rows,
            })
        }
        Tab::Dags => None,
    }
}

fn on_command(s: &mut State, cmd: Command) -> Vec<Effect> {
    let h = s.page_height();
    let half = (h / 2).max(1) as isize;
    let mv = |s: &mut State, d: isize| {
        if in_log(s) {
            super::dags::scroll_log(s, d, h);
        } else if let Some(g) = s.grid_mut() {
            g.move_by(d, h);
        }
    };
    match cmd {
        Command::Quit => {
            s.quit = true;
            return vec![Effect::Quit];
        }
        Command::Help => s.popup = Some(Popup::Help),
        Command::Refresh => return refresh(s, true),
        Command::Freeze => {
            s.frozen = !s.frozen;
            s.set_status(
                Level::Info,
                if s.frozen {
                    "auto-refresh frozen (f to resume)"
                } else {
                    "auto-refresh resumed"
                },
            );
        }
        Command::Filter => {
            if s.grid().is_some() || in_log(s) {
                s.prompt = Some(Prompt::Filter(current_filter(s)));
            }
        }
        Command::CommandLine => s.prompt = Some(Prompt::Command(String::new())),
        Command::SortNext | Command::SortReverse => {
            let cols = sort_columns(s.tab);
            if let Some(g) = s.grid_mut() {
                if cmd == Command::SortNext {
                    g.cycle_sort(cols.len());
                } else {
                    g.reverse = !g.reverse;
                }
                let text = format!(
                    "sorted by {}{}",
                    cols.get(g.sort_col).unwrap_or(&""),
                    if g.reverse { " (reversed)" } else { "" }
                );
                reindex_current(s);
                s.set_status(Level::Info, text);
            }
        }
        Command::NextTab => return switch_tab(s, s.tab.next()),
        Command::PrevTab => return switch_tab(s, s.tab.prev()),
        Command::TabTables => return switch_tab(s, Tab::Tables),
        Command::TabPartitions => return switch_tab(s, Tab::Partitions),
        Command::TabSnapshots => return switch_tab(s, Tab::Snapshots),
        Command::TabDags => return switch_tab(s, Tab::Dags),
        Command::Down => mv(s, 1),
        Command::Up => mv(s, -1),
        Command::PageDown => mv(s, h as isize),
        Command::PageUp => mv(s, -(h as isize)),
        Command::HalfDown => mv(s, half),
        Command::HalfUp => mv(s, -half),
        Command::Top => {
            if in_log(s) {
                super::dags::scroll_log(s, isize::MIN / 2, h);
            } else if let Some(g) = s.grid_mut() {
                g.top(h);
            }
        }
        Command::Bottom => {
            if in_log(s) {
                super::dags::scroll_log(s, isize::MAX / 2, h);
            } else if let Some(g) = s.grid_mut() {
                g.bottom(h);
            }
        }
        Command::Enter => {
            if s.tab == Tab::Tables && s.tables.selected().is_some() {
                s.tab = Tab::Partitions;
                return load_partitions(s, false);
            }
            if s.tab == Tab::Dags {
                return super::dags::enter(s);
            }
        }
        Command::Back => {
            if !current_filter(s).is_empty() {
                set_filter(s, "");
            } else if s.tab == Tab::Dags
                && s.dags.log.as_ref().is_some_and(|l| !l.search.is_empty())
                && s.dags.level() == DagLevel::Log
            {
                super::dags::search_log(s, "");
            } else if s.tab == Tab::Dags && super::dags::back(s) {
            } else if matches!(s.tab, Tab::Partitions | Tab::Snapshots) {
                s.tab = Tab::Tables;
            } else if s.status.is_some() {
                s.status = None;
            }
        }
        Command::Mark => {
            if s.tab == Tab::Partitions
                && let Some(label) = s.partitions.selected().map(|r| r.label.clone())
            {
                if !s.partitions.marks.remove(&label) {
                    s.partitions.marks.insert(label);
                }
                s.partitions.grid.move_by(1, h);
            }
        }
        Command::ClearMarks => {
            if !s.partitions.marks.is_empty() {
                let n = s.partitions.marks.len();
                s.partitions.marks.clear();
                s.set_status(Level::Info, format!("cleared {n} marks"));
            }
        }
        Command::Info => {
            let t = match s.tab {
                Tab::Tables => s.tables.selected().map(|r| r.table.clone()),
                _ => s.focus_table().cloned(),
            };
            if let Some(t) = t {
                s.popup = Some(Popup::Info(t));
            }
        }
        Command::Export => return export(s, ExportFormat::Csv),
        Command::Optimize => return plan_maintenance(s, MaintenanceKind::Optimize),
        Command::OptimizeManifests => {
            return plan_maintenance(s, MaintenanceKind::OptimizeManifests);
        }
        Command::ExpireSnapshots | Command::RemoveOrphans => {
            if s.readonly {
                s.set_status(Level::Error, "read-only: maintenance is disabled");
            } else if maintenance_table(s).is_some() {
                let r = if cmd == Command::ExpireSnapshots {
                    RetentionFor::ExpireSnapshots
                } else {
                    RetentionFor::RemoveOrphanFiles
                };
                s.prompt = Some(Prompt::Retention(r, "7d".into()));
            }
        }
        Command::TriggerDag | Command::ClearRun | Command::PauseDag => return dag_command(s, cmd),
        Command::Cancel => {
            let running: Vec<u64> = s
                .jobs
                .list
                .iter()
                .filter(|j| j.running())
                .map(|j| j.id)
                .collect();
            if running.is_empty() {
                s.set_status(Level::Info, "no maintenance is running");
            } else {
                s.set_status(
                    Level::Warn,
                    "cancelling: DELETE sent to Trino, the remaining statements will not run",
                );
                return running.into_iter().map(Effect::CancelJob).collect();
            }
        }
        Command::Queue => s.popup = Some(Popup::Queue),
    }
    Vec::new()
}

/// `t`, `C`, `p`: Airflow writes, each shown for confirmation first.
fn dag_command(s: &mut State, cmd: Command) -> Vec<Effect> {
    if s.readonly {
        s.set_status(Level::Error, "read-only: Airflow writes are disabled");
        return Vec::new();
    }
    if !s.airflow_configured {
        s.set_status(Level::Warn, "Airflow is not configured (--airflow URL)");
        return Vec::new();
    }
    let Some(dag_id) = super::dags::target_dag(s) else {
        s.set_status(
            Level::Warn,
            "no maintenance DAG here: select a DAG, or a table with a mapped DAG",
        );
        return Vec::new();
    };
    match cmd {
        Command::TriggerDag => {
            s.popup = Some(Popup::ConfirmDag(Box::new(super::dags::confirm_trigger(
                s, &dag_id,
            ))));
            Vec::new()
        }
        Command::PauseDag => {
            match super::dags::confirm_pause(s, &dag_id) {
                Some(c) => s.popup = Some(Popup::ConfirmDag(Box::new(c))),
                None => s.set_status(Level::Warn, format!("{dag_id} is not loaded yet")),
            }
            Vec::new()
        }
        _ => {
            // The run to clear: the selected one in the runs view, else the newest failed.
            let run = match (s.tab, s.dags.level()) {
                (Tab::Dags, DagLevel::Runs) => s.dags.selected_run().map(|r| r.run_id.clone()),
                (Tab::Dags, DagLevel::Tasks | DagLevel::Log) => s.dags.run_id.clone(),
                _ => s
                    .dags
                    .failures
                    .get(&dag_id)
                    .and_then(|f| f.as_ref().ok())
                    .map(|f| f.run_id.clone()),
            };
            match run {
                Some(run_id) => {
                    s.set_status(
                        Level::Info,
                        format!("dry run: what clearing {run_id} would run again…"),
                    );
                    vec![Effect::PlanClear { dag_id, run_id }]
                }
                None => {
                    s.set_status(
                        Level::Warn,
                        format!("no failed run of {dag_id} to clear (enter lists its runs)"),
                    );
                    Vec::new()
                }
            }
        }
    }
}

/// One line per finding, for the Info popup and the side panel.
pub fn breakdown(s: &State, t: &TableRef) -> Vec<(Severity, String)> {
    let Some(row) = s.tables.row(t) else {
        return vec![(Severity::Unknown, format!("{t} is not loaded"))];
    };
    let mut out = Vec::new();
    if let Some(h) = &row.health {
        out.push((
            h.status,
            format!("{} — score {}/100", h.status.label(), h.score),
        ));
        for f in &h.findings {
            let pen = if f.penalty > 0 {
                format!(" (−{})", f.penalty)
            } else {
                String::new()
            };
            out.push((
                f.severity,
                format!("[{}] {}{pen}: {}", f.severity.short(), f.rule, f.message),
            ));
        }
        if h.findings.is_empty() {
            out.push((Severity::Ok, "no findings: every rule passes".into()));
        }
    }
    if let Some(st) = &row.stats {
        out.push((Severity::Info, String::new()));
        out.push((
            Severity::Info,
            format!(
                "target {} ({}), {} data files, {} small, avg {}, {} total",
                human_bytes(st.target_file_size),
                if st.target_from_property {
                    "write.target-file-size-bytes"
                } else {
                    "config default"
                },
                st.data_files,
                st.small_files,
                st.avg_file_size()
                    .map(human_bytes)
                    .unwrap_or_else(|| "-".into()),
                human_bytes(st.total_bytes)
            ),
        ));
    }
    if let Some(e) = &row.error {
        out.push((Severity::Unknown, format!("last load failed: {e}")));
    }
    out
}

#[cfg(test)]
pub(crate) mod tests;
