use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::update;
use crate::app::action::{Action, DagWrite, Effect};
use crate::app::dags::{DagLevel, DagMsg, command as dag_command};
use crate::app::export::ExportFormat;
use crate::app::keymap::Command;
use crate::app::maintenance::MaintenanceMsg;
use crate::app::prompt::{Prompt, RetentionFor};
use crate::app::state::{Level, Popup, State, Tab};
use crate::app::tables::TABLE_SORTS;
use crate::app::tables::TablesMsg;
use crate::app::testing::*;
use crate::lakehouse::model::SnapshotInfo;
use crate::lakehouse::queries::PartitionList;
use crate::ui::breakdown::health_breakdown as breakdown;

fn selected_name(s: &State) -> String {
    s.tables
        .selected()
        .map(|r| r.name.clone())
        .unwrap_or_default()
}

#[test]
fn start_discovers_then_loads_stats_worst_first() {
    let s = loaded();
    // documents (CRITICAL) first, parcels (OK), events (not loaded yet) last.
    let names: Vec<_> = s
        .tables
        .grid
        .index
        .iter()
        .map(|&i| s.tables.rows[i].name.clone())
        .collect();
    assert_eq!(
        names,
        vec!["zoning.documents", "zoning.parcels", "audit.events"]
    );
    assert_eq!(s.tables.pending, 1);
    assert!(s.refresh_in_flight());
}

#[test]
fn navigation_and_vim_keys() {
    let mut s = loaded();
    assert_eq!(selected_name(&s), "zoning.documents");
    update(&mut s, key('j'));
    assert_eq!(selected_name(&s), "zoning.parcels");
    update(&mut s, code(KeyCode::Down));
    update(&mut s, code(KeyCode::Down));
    assert_eq!(selected_name(&s), "audit.events", "stops at the bottom");
    update(&mut s, key('g'));
    assert_eq!(selected_name(&s), "zoning.documents");
    update(&mut s, key('G'));
    assert_eq!(selected_name(&s), "audit.events");
    update(&mut s, ctrl('u'));
    assert_eq!(selected_name(&s), "zoning.documents");
    update(&mut s, code(KeyCode::PageDown));
    assert_eq!(selected_name(&s), "audit.events");
}

#[test]
fn selection_follows_the_table_when_stats_reorder_rows() {
    let mut s = loaded();
    update(&mut s, key('G')); // audit.events, not loaded yet
    let generation = s.tables.generation;
    let mut bloated = healthy_stats();
    bloated.snapshots = 600;
    bloated.oldest_snapshot = Some(t0() - chrono::Duration::days(60));
    update(
        &mut s,
        Action::Tables(TablesMsg::Stats {
            generation,
            table: tref("audit", "events"),
            result: Ok(bloated),
        }),
    );
    assert_eq!(selected_name(&s), "audit.events");
    assert_eq!(
        s.tables.grid.selected, 1,
        "CRITICAL snapshot bloat sorts it second"
    );
}

#[test]
fn filter_live_and_escape_clears() {
    let mut s = loaded();
    update(&mut s, key('/'));
    assert!(matches!(s.prompt, Some(Prompt::Filter(_))));
    for c in "PARC".chars() {
        update(&mut s, key(c));
    }
    assert_eq!(s.tables.grid.len(), 1, "case-insensitive substring");
    assert_eq!(selected_name(&s), "zoning.parcels");
    update(&mut s, code(KeyCode::Enter));
    assert!(s.prompt.is_none());
    assert_eq!(s.tables.grid.len(), 1, "enter keeps the filter");
    update(&mut s, code(KeyCode::Esc));
    assert_eq!(s.tables.grid.len(), 3, "esc clears it");
    update(&mut s, key('/'));
    update(&mut s, key('z'));
    update(&mut s, code(KeyCode::Esc));
    assert!(s.prompt.is_none());
    assert_eq!(s.tables.grid.len(), 3);
}

#[test]
fn sort_cycles_and_reverses() {
    let mut s = loaded();
    update(&mut s, key('s'));
    assert_eq!(s.tables.grid.sort_col, 1);
    let names: Vec<_> = s
        .tables
        .grid
        .index
        .iter()
        .map(|&i| s.tables.rows[i].name.clone())
        .collect();
    assert_eq!(
        names,
        vec!["audit.events", "zoning.documents", "zoning.parcels"]
    );
    assert!(s.status.as_ref().unwrap().text.contains("sorted by table"));
    update(&mut s, key('S'));
    let names: Vec<_> = s
        .tables
        .grid
        .index
        .iter()
        .map(|&i| s.tables.rows[i].name.clone())
        .collect();
    assert_eq!(
        names,
        vec!["zoning.parcels", "zoning.documents", "audit.events"]
    );
    for _ in 0..TABLE_SORTS.len() - 1 {
        update(&mut s, key('s'));
    }
    assert_eq!(s.tables.grid.sort_col, 0, "cycles back to health");
}

#[test]
fn enter_drills_into_partitions_and_loads_them_once() {
    let mut s = loaded();
    let fx = update(&mut s, code(KeyCode::Enter));
    assert_eq!(s.tab, Tab::Partitions);
    assert_eq!(
        fx,
        vec![Effect::LoadPartitions {
            request: 1,
            table: tref("zoning", "documents")
        }]
    );
    // Switching away and back does not reload what is loaded or loading.
    update(&mut s, key('1'));
    let fx = update(&mut s, key('2'));
    assert!(fx.is_empty());
    update(&mut s, code(KeyCode::Esc));
    assert_eq!(s.tab, Tab::Tables, "esc goes back");
    // Another table: a new request replaces the old.
    update(&mut s, key('j'));
    let fx = update(&mut s, code(KeyCode::Enter));
    assert_eq!(
        fx,
        vec![Effect::LoadPartitions {
            request: 2,
            table: tref("zoning", "parcels")
        }]
    );
    // The stale answer for documents is dropped.
    update(
        &mut s,
        Action::Partitions {
            request: 1,
            table: tref("zoning", "documents"),
            result: Ok(PartitionList::default()),
        },
    );
    assert!(s.partitions.load.is_loading());
}

#[test]
fn a_null_partition_and_the_string_null_are_marked_apart() {
    let mut s = loaded();
    update(&mut s, code(KeyCode::Enter));
    let table = tref("zoning", "documents");
    let mut list = partitions(3);
    // NULL, the string 'null', and a value whose text joins two fields' labels.
    list.layout_fields = vec!["district".into()];
    list.partitions[0].values = vec![("district".into(), None)];
    list.partitions[1].values = vec![("district".into(), Some("null".into()))];
    list.partitions[2].values = vec![("district".into(), Some("a/b=c".into()))];
    for p in &mut list.partitions {
        p.small_files = 14;
    }
    update(
        &mut s,
        Action::Partitions {
            request: 1,
            table,
            result: Ok(list),
        },
    );
    let labels: std::collections::BTreeSet<String> =
        s.partitions.rows.iter().map(|r| r.label.clone()).collect();
    assert_eq!(labels.len(), 3, "NULL reads apart from 'null': {labels:?}");
    assert!(labels.contains("district IS NULL"), "{labels:?}");
    // Mark the NULL partition only.
    let null_at = (0..3)
        .find(|&i| {
            s.partitions.rows[s.partitions.grid.index[i]].stats.values[0]
                .1
                .is_none()
        })
        .unwrap();
    for _ in 0..null_at {
        update(&mut s, key('j'));
    }
    update(&mut s, key(' '));
    let marked = s.partitions.marked();
    assert_eq!(marked.len(), 1, "{marked:?}");
    assert_eq!(marked[0].values, vec![("district".to_string(), None)]);
}

#[test]
fn marks_toggle_move_and_clear() {
    let mut s = loaded();
    update(&mut s, code(KeyCode::Enter));
    let table = tref("zoning", "documents");
    update(
        &mut s,
        Action::Partitions {
            request: 1,
            table: table.clone(),
            result: Ok(partitions(9)),
        },
    );
    assert_eq!(s.partitions.rows.len(), 9);
    let first = s.partitions.selected().unwrap().stats.key();
    update(&mut s, key(' '));
    update(&mut s, key(' '));
    assert_eq!(s.partitions.marks.len(), 2);
    assert!(s.partitions.marks.contains(&first));
    update(&mut s, key('k'));
    update(&mut s, key(' '));
    assert_eq!(
        s.partitions.marks.len(),
        1,
        "space on a marked row unmarks it"
    );
    // Marks survive a reload of the same partitions.
    update(&mut s, key('r'));
    let req = s.partitions.request;
    update(
        &mut s,
        Action::Partitions {
            request: req,
            table: table.clone(),
            result: Ok(partitions(9)),
        },
    );
    assert_eq!(s.partitions.marks.len(), 1);
    update(
        &mut s,
        Action::Key(KeyEvent::new(KeyCode::Char('\\'), KeyModifiers::CONTROL)),
    );
    assert!(s.partitions.marks.is_empty());
}

#[test]
fn partition_severity_follows_the_rules() {
    let mut s = loaded();
    update(&mut s, code(KeyCode::Enter));
    // Eight partitions of 14-18 small files (WARNING, or OK under min_small_files), and
    // one that holds 150 small files of 3 KB: a reader of it alone pays for them.
    let mut list = partitions(8);
    let mut heavy = list.partitions[1].clone();
    heavy.values[1].1 = Some("2026-11-28".into());
    heavy.data_files = 150;
    heavy.small_files = 150;
    heavy.total_bytes = 150 * 3000;
    list.partitions.push(heavy);
    update(
        &mut s,
        Action::Partitions {
            request: 1,
            table: tref("zoning", "documents"),
            result: Ok(list),
        },
    );
    let count = |sev| {
        s.partitions
            .rows
            .iter()
            .filter(|r| r.severity == sev)
            .count()
    };
    use crate::health::Severity;
    assert_eq!(
        (
            count(Severity::Critical),
            count(Severity::Warning),
            count(Severity::Ok)
        ),
        (1, 6, 2)
    );
    assert_eq!(
        s.partitions.selected().unwrap().severity,
        crate::health::Severity::Critical,
        "worst first"
    );
}

#[test]
fn refresh_never_overlaps_and_rows_stay_while_reloading() {
    let mut s = loaded();
    let fx = update(&mut s, key('r'));
    assert!(
        fx.is_empty(),
        "the first refresh is still in flight (one table pending)"
    );
    assert!(s.status.as_ref().unwrap().text.contains("already running"));
    let generation = s.tables.generation;
    update(
        &mut s,
        Action::Tables(TablesMsg::Stats {
            generation,
            table: tref("audit", "events"),
            result: Ok(healthy_stats()),
        }),
    );
    assert!(!s.refresh_in_flight());
    let fx = update(&mut s, key('r'));
    assert!(fx.iter().any(|e| matches!(e, Effect::Discover { .. })));
    assert!(
        s.tables.rows.iter().all(|r| r.stale && r.stats.is_some()),
        "old values stay, marked stale"
    );
    // A result of the previous generation is ignored.
    let before = s
        .tables
        .row(&tref("zoning", "parcels"))
        .unwrap()
        .stats
        .clone();
    update(
        &mut s,
        Action::Tables(TablesMsg::Stats {
            generation,
            table: tref("zoning", "parcels"),
            result: Ok(incident_stats()),
        }),
    );
    assert_eq!(
        s.tables.row(&tref("zoning", "parcels")).unwrap().stats,
        before
    );
}

#[test]
fn auto_refresh_on_tick_unless_frozen() {
    let mut s = loaded();
    let generation = s.tables.generation;
    update(
        &mut s,
        Action::Tables(TablesMsg::Stats {
            generation,
            table: tref("audit", "events"),
            result: Ok(healthy_stats()),
        }),
    );
    let fx = update(&mut s, Action::Tick(t0() + chrono::Duration::seconds(30)));
    assert!(fx.is_empty());
    assert_eq!(s.next_refresh_in(), Some(30));
    update(&mut s, key('f'));
    assert!(s.frozen);
    let fx = update(&mut s, Action::Tick(t0() + chrono::Duration::seconds(61)));
    assert!(fx.is_empty(), "frozen");
    update(&mut s, key('f'));
    let fx = update(&mut s, Action::Tick(t0() + chrono::Duration::seconds(62)));
    assert!(fx.iter().any(|e| matches!(e, Effect::Discover { .. })));
}

#[test]
fn errors_keep_data_and_show_trino_names() {
    let mut s = loaded();
    let generation = s.tables.generation;
    update(
        &mut s,
        Action::Tables(TablesMsg::Stats {
            generation,
            table: tref("audit", "events"),
            result: Err(query_failed(
                "TABLE_NOT_FOUND",
                "line 1:15: Table 'iceberg.audit.events' does not exist",
                "20261129_1",
            )),
        }),
    );
    let st = s.status.as_ref().unwrap();
    assert_eq!(st.level, Level::Error);
    assert!(st.text.contains("TABLE_NOT_FOUND"), "{}", st.text);
    // The next refresh fails to list tables: rows stay.
    update(&mut s, key('r'));
    let generation = s.tables.generation;
    update(
        &mut s,
        Action::Tables(TablesMsg::Discovered {
            generation,
            result: Err(unreachable("http://127.0.0.1:1/v1/statement")),
        }),
    );
    assert_eq!(s.tables.rows.len(), 3);
    assert!(s.tables.rows.iter().all(|r| !r.stale));
    assert!(
        s.status
            .as_ref()
            .unwrap()
            .text
            .contains("connection refused")
    );
    assert!(!s.refresh_in_flight(), "the next refresh retries");
}

#[test]
fn command_line() {
    let mut s = loaded();
    s.profiles = vec!["lab".into(), "prod".into()];
    let run = |s: &mut State, line: &str| {
        update(s, key(':'));
        for c in line.chars() {
            update(s, key(c));
        }
        update(s, code(KeyCode::Enter))
    };
    run(&mut s, "refresh 30s");
    assert_eq!(s.refresh_every, std::time::Duration::from_secs(30));
    run(&mut s, "refresh 2s");
    assert!(s.status.as_ref().unwrap().text.contains("at least 5s"));
    let fx = run(&mut s, "profile prod");
    assert_eq!(fx, vec![Effect::SwitchProfile("prod".into())]);
    run(&mut s, "profile nope");
    assert!(s.status.as_ref().unwrap().text.contains("lab, prod"));
    run(&mut s, "bogus");
    assert!(
        s.status
            .as_ref()
            .unwrap()
            .text
            .contains("unknown command :bogus")
    );
    let fx = run(&mut s, "schema zoning");
    assert_eq!(s.schemas, vec!["zoning"]);
    assert!(fx.iter().any(
        |e| matches!(e, Effect::Discover { schemas, .. } if schemas == &vec!["zoning".to_string()])
    ));
    let fx = run(&mut s, "export json");
    assert!(matches!(
        &fx[..],
        [Effect::Export {
            format: ExportFormat::Json,
            ..
        }]
    ));
    let fx = run(&mut s, "q");
    assert_eq!(fx, vec![Effect::Quit]);
    assert!(s.quit);
}

#[test]
fn export_is_the_view_as_seen() {
    let mut s = loaded();
    update(&mut s, key('/'));
    update(&mut s, key('d'));
    update(&mut s, key('o'));
    update(&mut s, key('c'));
    update(&mut s, code(KeyCode::Enter));
    let fx = update(&mut s, ctrl('s'));
    let Effect::Export { data, format } = &fx[0] else {
        panic!("{fx:?}")
    };
    assert_eq!(*format, ExportFormat::Csv);
    assert_eq!(data.rows.len(), 1);
    assert_eq!(data.rows[0][2], "documents");
    assert_eq!(data.rows[0][3], "CRITICAL");
    assert!(data.rows[0].last().unwrap().contains("compaction"));
}

#[test]
fn help_and_info_popups_close_with_esc() {
    let mut s = loaded();
    update(&mut s, key('?'));
    assert_eq!(s.popup, Some(Popup::Help));
    update(&mut s, key('j'));
    assert_eq!(
        s.popup,
        Some(Popup::Help),
        "keys do not leak through a popup"
    );
    update(&mut s, code(KeyCode::Esc));
    assert_eq!(s.popup, None);
    update(&mut s, key('i'));
    assert_eq!(s.popup, Some(Popup::Health(tref("zoning", "documents"))));
    let lines = breakdown(&s, &tref("zoning", "documents"));
    assert!(lines.iter().any(|(_, l)| l.contains("compaction_stale")));
    update(&mut s, key('q'));
    assert_eq!(s.popup, None);
    assert!(!s.quit, "q closes the popup first");
}

#[test]
fn readonly_refuses_maintenance() {
    let mut s = loaded();
    s.readonly = true;
    s.keymap = s.keymap.clone().with_readonly(true);
    update(&mut s, key('o'));
    assert!(
        s.status.is_none() || !s.status.as_ref().unwrap().text.contains("not available"),
        "o is not bound at all"
    );
}

#[test]
fn snapshots_tab_loads_and_orders_newest_first() {
    let mut s = loaded();
    let fx = update(&mut s, key('3'));
    assert_eq!(
        fx,
        vec![Effect::LoadSnapshots {
            request: 1,
            table: tref("zoning", "documents")
        }]
    );
    let snaps: Vec<SnapshotInfo> = (0..5)
        .map(|i| SnapshotInfo {
            committed_at: t0() - chrono::Duration::days(5 - i),
            snapshot_id: 100 + i,
            parent_id: None,
            operation: if i == 1 {
                "replace".into()
            } else {
                "append".into()
            },
            added_data_files: Some(10),
            deleted_data_files: if i == 1 { Some(40) } else { None },
            total_data_files: Some(10 * i as u64),
            added_records: None,
            total_records: None,
            total_delete_files: None,
            added_files_size: None,
            removed_files_size: None,
            trino_user: None,
            trino_query_id: None,
        })
        .collect();
    update(
        &mut s,
        Action::Snapshots {
            request: 1,
            table: tref("zoning", "documents"),
            result: Ok(snaps),
        },
    );
    let first = &s.snapshots.rows[s.snapshots.grid.index[0]].info;
    assert_eq!(first.snapshot_id, 104);
}

#[test]
fn terminate_and_ctrl_c_quit() {
    let mut s = loaded();
    assert_eq!(update(&mut s, Action::Terminate), vec![Effect::Quit]);
    let mut s = loaded();
    update(&mut s, key('/'));
    assert_eq!(
        update(&mut s, ctrl('c')),
        vec![Effect::Quit],
        "even from a prompt"
    );
}

#[test]
fn resize_keeps_selection_visible() {
    let mut s = loaded();
    update(&mut s, key('G'));
    update(&mut s, Action::Resize(20, 7));
    let h = s.page_height();
    let g = &s.tables.grid;
    assert!(g.selected >= g.offset && g.selected < g.offset + h);
}

mod maintenance {
    use super::*;
    use crate::app::action::MaintenanceKind;
    use crate::lakehouse::maintenance::{Procedure, TableLayout, parse_partition_entry};
    use crate::maintain::plan::PlanDraft;
    use crate::maintain::run::{StepEvent, StepOutcome};

    pub fn on_partitions() -> State {
        let mut s = loaded();
        update(&mut s, code(KeyCode::Enter));
        update(
            &mut s,
            Action::Partitions {
                request: 1,
                table: tref("zoning", "documents"),
                result: Ok(partitions(6)),
            },
        );
        s
    }

    pub fn draft(s: &State) -> PlanDraft {
        let marked = s
            .partitions
            .rows
            .iter()
            .filter(|r| s.partitions.is_marked(r))
            .map(|r| r.stats.clone())
            .collect();
        PlanDraft {
            table: tref("zoning", "documents"),
            procedure: Procedure::Optimize {
                threshold: 96 << 20,
            },
            layout: TableLayout {
                columns: vec![
                    ("district".into(), "varchar".into()),
                    ("filed_at".into(), "timestamp(6) with time zone".into()),
                ],
                partitioning: vec![
                    parse_partition_entry("district").unwrap(),
                    parse_partition_entry("day(filed_at)").unwrap(),
                ],
                live_specs: Vec::new(),
            },
            partitions: marked,
            note: None,
            grouped: false,
            measured: None,
        }
    }

    fn outcome(ok: bool, after: Option<u64>) -> StepOutcome {
        StepOutcome {
            ok,
            cancelled: false,
            query_id: Some("q1".into()),
            error: (!ok).then(|| "ICEBERG_COMMIT_ERROR: conflict".into()),
            rows: Some(10),
            metrics: Default::default(),
            duration_ms: 1200,
            files_after: after,
            small_after: after,
        }
    }

    #[test]
    fn optimize_marked_partitions_needs_an_explicit_y() {
        let mut s = on_partitions();
        update(&mut s, key(' '));
        update(&mut s, key(' '));
        let fx = update(&mut s, key('o'));
        let [
            Effect::PlanMaintenance {
                table,
                kind: MaintenanceKind::Optimize,
                epoch: _,
                partitions: Some(p),
            },
        ] = &fx[..]
        else {
            panic!("{fx:?}")
        };
        assert_eq!(table, &tref("zoning", "documents"));
        assert_eq!(p.len(), 2, "the marked partitions");
        let d = draft(&s);
        let epoch = s.conn.epoch;
        update(
            &mut s,
            Action::Maintenance(MaintenanceMsg::PlanReady(epoch, Ok(d))),
        );
        let Some(Popup::Confirm(c)) = &s.popup else {
            panic!("no confirm popup")
        };
        assert_eq!(c.plan.steps.len(), 2);
        // Enter is not yes.
        let fx = update(&mut s, code(KeyCode::Enter));
        assert!(fx.is_empty() && s.popup.is_none());
        assert!(s.status.as_ref().unwrap().text.contains("nothing was run"));
        let d = draft(&s);
        let epoch = s.conn.epoch;
        update(
            &mut s,
            Action::Maintenance(MaintenanceMsg::PlanReady(epoch, Ok(d))),
        );
        update(&mut s, key('g'));
        let Some(Popup::Confirm(c)) = &s.popup else {
            panic!()
        };
        assert_eq!(c.plan.steps.len(), 1, "grouped");
        assert!(c.plan.steps[0].sql.contains("\"$partition\" IN"));
        update(&mut s, key('g'));
        let fx = update(&mut s, key('y'));
        let [Effect::RunPlan { job, plan }] = &fx[..] else {
            panic!("{fx:?}")
        };
        assert_eq!(plan.steps.len(), 2);
        assert!(s.jobs.running_on(&tref("zoning", "documents")).is_some());
        // A second optimize on the same table is refused while the first runs.
        let fx = update(&mut s, key('o'));
        assert!(fx.is_empty());
        assert!(
            s.status
                .as_ref()
                .unwrap()
                .text
                .contains("one mutation per table")
        );
        // Progress, then results; the partition's mark goes once it is compacted.
        let job = *job;
        let first = (plan.steps[0].spec_id, plan.steps[0].targets[0].clone());
        assert!(s.partitions.marks.contains(&first));
        update(
            &mut s,
            Action::Maintenance(MaintenanceMsg::Step {
                job,
                event: StepEvent::Started { step: 0 },
            }),
        );
        update(
            &mut s,
            Action::Maintenance(MaintenanceMsg::Step {
                job,
                event: StepEvent::Finished {
                    step: 0,
                    outcome: outcome(true, Some(1)),
                },
            }),
        );
        assert!(!s.partitions.marks.contains(&first));
        assert!(
            s.status.as_ref().unwrap().text.contains("files"),
            "{:?}",
            s.status
        );
        let fx = update(
            &mut s,
            Action::Maintenance(MaintenanceMsg::Done {
                job,
                result: Ok(()),
            }),
        );
        assert!(
            fx.iter().any(|e| matches!(e, Effect::LoadStats { .. })),
            "the table row is re-read"
        );
        assert!(
            fx.iter()
                .any(|e| matches!(e, Effect::LoadPartitions { .. })),
            "its partitions too"
        );
        assert!(s.jobs.running_on(&tref("zoning", "documents")).is_none());
    }

    #[test]
    fn failures_and_cancel_stop_the_queue() {
        let mut s = on_partitions();
        update(&mut s, key(' '));
        update(&mut s, key(' '));
        let d = draft(&s);
        let epoch = s.conn.epoch;
        update(
            &mut s,
            Action::Maintenance(MaintenanceMsg::PlanReady(epoch, Ok(d))),
        );
        let fx = update(&mut s, key('y'));
        let Effect::RunPlan { job, .. } = fx[0].clone() else {
            panic!()
        };
        assert_eq!(update(&mut s, key('c')), vec![Effect::CancelJob(job)]);
        update(
            &mut s,
            Action::Maintenance(MaintenanceMsg::Step {
                job,
                event: StepEvent::Finished {
                    step: 0,
                    outcome: outcome(false, None),
                },
            }),
        );
        assert_eq!(s.status.as_ref().unwrap().level, Level::Error);
        assert!(
            s.status
                .as_ref()
                .unwrap()
                .text
                .contains("ICEBERG_COMMIT_ERROR")
        );
        update(
            &mut s,
            Action::Maintenance(MaintenanceMsg::Done {
                job,
                result: Err(
                    "ICEBERG_COMMIT_ERROR: conflict; 1 remaining statement(s) not run".into(),
                ),
            }),
        );
        let j = s.jobs.list.last().unwrap();
        assert!(matches!(
            j.steps[1],
            crate::app::maintenance::StepStatus::Skipped
        ));
        assert!(
            j.line(s.now)
                .starts_with("✗ optimize documents failed after 0 of 2")
        );
    }

    #[test]
    fn expire_asks_for_a_retention_then_plans() {
        let mut s = loaded();
        update(&mut s, key('x'));
        assert!(
            matches!(s.prompt, Some(Prompt::Retention(RetentionFor::ExpireSnapshots, ref t)) if t == "7d")
        );
        update(&mut s, code(KeyCode::Backspace));
        update(&mut s, code(KeyCode::Backspace));
        update(&mut s, key('1'));
        update(&mut s, key('d'));
        let fx = update(&mut s, code(KeyCode::Enter));
        assert_eq!(
            fx,
            vec![Effect::PlanMaintenance {
                epoch: s.conn.epoch,
                table: tref("zoning", "documents"),
                kind: MaintenanceKind::ExpireSnapshots {
                    retention_secs: 86_400
                },
                partitions: None
            }]
        );
    }

    #[test]
    fn readonly_refuses_in_update_as_well_as_in_the_keymap() {
        let mut s = on_partitions();
        s.readonly = true;
        // The keymap has no o in read-only mode…
        s.keymap = s.keymap.clone().with_readonly(true);
        assert!(update(&mut s, key('o')).is_empty());
        // …and a plan that arrives anyway is not offered.
        let d = draft(&s);
        let epoch = s.conn.epoch;
        update(
            &mut s,
            Action::Maintenance(MaintenanceMsg::PlanReady(epoch, Ok(d))),
        );
        assert!(s.popup.is_none());
        assert!(s.status.as_ref().unwrap().text.contains("read-only"));
    }
}

pub mod dags {
    use super::*;
    use crate::airflow::{DagRun, DagRunState, LogLine, RunType, TaskLog, TaskState};
    pub use crate::app::testing::dags::*;
    use std::time::Duration;

    fn run(state: DagRunState, id: &str) -> DagRun {
        DagRun {
            dag_id: "compact_documents".into(),
            run_id: id.into(),
            state,
            run_type: RunType::Scheduled,
            logical_date: None,
            run_after: Some(t0()),
            data_interval_start: None,
            data_interval_end: None,
            queued_at: None,
            start_date: Some(t0() - chrono::Duration::hours(9)),
            end_date: Some(t0() - chrono::Duration::hours(9) + chrono::Duration::seconds(8)),
            duration: Some(Duration::from_secs(8)),
            triggered_by: None,
            external_trigger: None,
            note: None,
        }
    }

    #[test]
    fn failing_dags_come_first_and_feed_the_tables() {
        let s = with_dags();
        let first = &s.dags.rows[s.dags.grid.index[0]];
        assert_eq!(first.dag.dag_id, "compact_documents");
        assert_eq!(first.tables, vec!["iceberg.zoning.documents"]);
        // The table row carries the DAG's facts (guessed from its tag) and the correlation.
        let docs = s.tables.row(&tref("zoning", "documents")).unwrap();
        assert!(docs.dag.as_ref().unwrap().guessed);
        let h = docs.health.as_ref().unwrap();
        let f = h
            .findings
            .iter()
            .find(|f| f.rule == crate::health::Rule::StaleDagFailing)
            .expect("correlation finding");
        assert!(
            f.message.contains("trino-old.internal:8080"),
            "{}",
            f.message
        );
        assert_eq!(s.dags.import_errors.len(), 1);
    }

    #[test]
    fn configured_mapping_wins_over_the_guess() {
        let mut s = loaded();
        s.airflow_configured = true;
        s.maintenance = vec![crate::config::MaintenanceMapping {
            table: "iceberg.zoning.documents".into(),
            dag_id: "compact_parcels".into(),
            interval: None,
        }];
        update(&mut s, key('r'));
        let g = s.dags.generation;
        update(
            &mut s,
            Action::Dags(DagMsg::Loaded {
                generation: g,
                result: Ok(list()),
            }),
        );
        assert_eq!(
            s.dags.mapping[&tref("zoning", "documents")].dag_id,
            "compact_parcels"
        );
        assert!(!s.dags.mapping[&tref("zoning", "documents")].guessed);
    }

    #[test]
    fn drill_down_to_the_log_which_opens_on_the_error() {
        let mut s = with_dags();
        update(&mut s, key('4'));
        let fx = update(&mut s, code(KeyCode::Enter));
        assert_eq!(
            fx,
            vec![Effect::LoadRuns {
                dag_id: "compact_documents".into()
            }]
        );
        assert_eq!(s.dags.level(), DagLevel::Runs);
        let runs = vec![
            run(DagRunState::Failed, "scheduled__2026-11-29T00:00:00+00:00"),
            run(DagRunState::Failed, "scheduled__2026-11-28T00:00:00+00:00"),
        ];
        update(
            &mut s,
            Action::Dags(DagMsg::Runs {
                dag_id: "compact_documents".into(),
                result: Ok(runs),
            }),
        );
        let fx = update(&mut s, code(KeyCode::Enter));
        assert_eq!(
            fx,
            vec![Effect::LoadTasks {
                dag_id: "compact_documents".into(),
                run_id: "scheduled__2026-11-29T00:00:00+00:00".into()
            }]
        );
        let tasks = vec![
            task("check_table", TaskState::Success, 1),
            task("report", TaskState::UpstreamFailed, 0),
            task("compact", TaskState::Failed, 1),
        ];
        update(
            &mut s,
            Action::Dags(DagMsg::Tasks {
                dag_id: "compact_documents".into(),
                run_id: "scheduled__2026-11-29T00:00:00+00:00".into(),
                result: Ok(tasks),
            }),
        );
        assert_eq!(
            s.dags.selected_task().unwrap().task_id,
            "compact",
            "the failed task is on top"
        );
        let fx = update(&mut s, code(KeyCode::Enter));
        let [
            Effect::LoadLog {
                task_id,
                try_number: 1,
                ..
            },
        ] = &fx[..]
        else {
            panic!("{fx:?}")
        };
        assert_eq!(task_id, "compact");
        let mut lines: Vec<LogLine> = (0..50)
            .map(|i| LogLine {
                timestamp: None,
                level: Some("info".into()),
                text: format!("line {i}"),
                error: false,
            })
            .collect();
        lines.push(LogLine {
            timestamp: None,
            level: Some("error".into()),
            text: ERROR.into(),
            error: true,
        });
        let log = TaskLog {
            lines,
            error_line: Some(ERROR.into()),
            continuation_token: None,
        };
        update(
            &mut s,
            Action::Dags(DagMsg::Log {
                dag_id: "compact_documents".into(),
                run_id: "scheduled__2026-11-29T00:00:00+00:00".into(),
                task_id: "compact".into(),
                try_number: 1,
                result: Ok(log),
            }),
        );
        assert_eq!(
            s.dags.log.as_ref().unwrap().scroll,
            48,
            "opens at the error"
        );
        // / searches the log; esc clears the search, then goes back up.
        update(&mut s, key('/'));
        for c in "line 7".chars() {
            update(&mut s, key(c));
        }
        update(&mut s, code(KeyCode::Enter));
        assert_eq!(s.dags.log.as_ref().unwrap().scroll, 6);
        update(&mut s, key('g'));
        assert_eq!(s.dags.log.as_ref().unwrap().scroll, 0);
        update(&mut s, code(KeyCode::Esc));
        assert_eq!(s.dags.level(), DagLevel::Log, "first esc clears the search");
        update(&mut s, code(KeyCode::Esc));
        assert_eq!(s.dags.level(), DagLevel::Tasks);
        update(&mut s, code(KeyCode::Esc));
        update(&mut s, code(KeyCode::Esc));
        assert_eq!(s.dags.level(), DagLevel::List);
    }

    #[test]
    fn trigger_pause_and_clear_are_confirmed_and_refused_when_read_only() {
        let mut s = with_dags();
        // From the Tables tab, t targets the table's maintenance DAG.
        update(&mut s, key('t'));
        let Some(Popup::ConfirmDag(c)) = &s.popup else {
            panic!("no confirm")
        };
        assert_eq!(
            c.action,
            DagWrite::Trigger {
                dag_id: "compact_documents".into()
            }
        );
        assert!(
            c.lines.iter().any(|l| l.contains("trino-old.internal")),
            "{:?}",
            c.lines
        );
        assert!(
            update(&mut s, code(KeyCode::Enter)).is_empty(),
            "enter is not yes"
        );
        update(&mut s, key('t'));
        assert_eq!(
            update(&mut s, key('y')),
            vec![Effect::WriteDag(DagWrite::Trigger {
                dag_id: "compact_documents".into()
            })]
        );
        // C clears the newest failed run, after a dry run.
        let fx = update(&mut s, key('C'));
        assert_eq!(
            fx,
            vec![Effect::PlanClear {
                dag_id: "compact_documents".into(),
                run_id: "scheduled__2026-11-29T00:00:00+00:00".into()
            }]
        );
        let outcome = crate::airflow::ClearOutcome {
            dry_run: true,
            scope: crate::airflow::ClearScope::OnlyFailed,
            tasks: vec![crate::airflow::ClearedTask {
                task_id: "compact".into(),
                map_index: -1,
                state: Some(TaskState::Failed),
            }],
            run: None,
        };
        update(
            &mut s,
            Action::Dags(DagMsg::ClearPlanned {
                dag_id: "compact_documents".into(),
                run_id: "scheduled__2026-11-29T00:00:00+00:00".into(),
                result: Ok(outcome),
            }),
        );
        let Some(Popup::ConfirmDag(c)) = &s.popup else {
            panic!()
        };
        assert!(c.lines.iter().any(|l| l.contains("compact (failed)")));
        let fx = update(&mut s, key('y'));
        assert!(matches!(
            &fx[..],
            [Effect::WriteDag(DagWrite::Clear {
                only_failed: true,
                ..
            })]
        ));
        // p on the DAGs tab toggles pause on the selected DAG.
        update(&mut s, key('4'));
        update(&mut s, key('j'));
        update(&mut s, key('p'));
        let Some(Popup::ConfirmDag(c)) = &s.popup else {
            panic!()
        };
        assert_eq!(
            c.action,
            DagWrite::SetPaused {
                dag_id: "expire_snapshots".into(),
                paused: false
            }
        );
        update(&mut s, key('n'));
        // Read-only: the keys are gone, and update refuses anyway.
        s.readonly = true;
        s.keymap = s.keymap.clone().with_readonly(true);
        assert!(update(&mut s, key('t')).is_empty());
        assert!(s.popup.is_none());
        assert!(dag_command(&mut s, Command::TriggerDag).is_empty());
        assert!(s.status.as_ref().unwrap().text.contains("read-only"));
    }

    #[test]
    fn the_dag_list_refreshes_at_five_times_the_interval() {
        let mut s = with_dags();
        let g = s.tables.generation;
        update(
            &mut s,
            Action::Tables(TablesMsg::Stats {
                generation: g,
                table: tref("audit", "events"),
                result: Ok(healthy_stats()),
            }),
        );
        update(&mut s, key('4'));
        assert!(
            !s.refresh_in_flight(),
            "pending {} load {:?}",
            s.tables.pending,
            s.tables.load
        );
        // One refresh interval later: only the selected DAG is re-read.
        let fx = update(&mut s, Action::Tick(t0() + chrono::Duration::seconds(61)));
        assert!(
            !fx.iter().any(|e| matches!(e, Effect::LoadDags { .. })),
            "{fx:?}"
        );
        assert_eq!(
            fx.iter()
                .filter(|e| matches!(e, Effect::LoadDagFacts { .. }))
                .count(),
            1
        );
        // Five intervals after the last full read: everything.
        let g = s.tables.generation;
        let tables: Vec<_> = s.tables.rows.iter().map(|r| r.table.clone()).collect();
        update(
            &mut s,
            Action::Tables(TablesMsg::Discovered {
                generation: g,
                result: Ok(tables.clone()),
            }),
        );
        for t in tables {
            update(
                &mut s,
                Action::Tables(TablesMsg::Stats {
                    generation: g,
                    table: t,
                    result: Ok(healthy_stats()),
                }),
            );
        }
        let fx = update(&mut s, Action::Tick(t0() + chrono::Duration::seconds(301)));
        assert!(
            fx.iter().any(|e| matches!(e, Effect::LoadDags { .. })),
            "{fx:?}"
        );
        assert!(fx.iter().any(|e| matches!(e, Effect::CheckConnections)));
    }
}

#[test]
fn a_trino_login_url_stays_in_the_status_line_until_the_login_ends() {
    use crate::trino::LoginEvent;
    let mut s = loaded();
    let url = "https://trino.example:8443/oauth2/token/initiate/abc";
    let open = LoginEvent::Open {
        url: url.parse().unwrap(),
        coordinator: "https://trino.example:8443/".parse().unwrap(),
        user: "carol".into(),
        timeout: std::time::Duration::from_secs(300),
    };
    assert!(update(&mut s, Action::TrinoLogin(open)).is_empty());
    let m = s.status.clone().unwrap();
    assert_eq!(m.level, Level::Warn, "not an Info that fades");
    assert!(m.text.contains(url) && m.text.contains("5m"), "{}", m.text);
    let later = s.now + chrono::Duration::seconds(60);
    update(&mut s, Action::Tick(later));
    assert!(s.status.as_ref().unwrap().text.contains(url));
    let done = LoginEvent::Done {
        expires_at: later + chrono::Duration::hours(1),
    };
    update(&mut s, Action::TrinoLogin(done));
    let m = s.status.clone().unwrap();
    assert_eq!(m.level, Level::Info);
    assert!(m.text.contains("login done"), "{}", m.text);
    update(
        &mut s,
        Action::TrinoLogin(LoginEvent::Failed("access_denied".into())),
    );
    let m = s.status.clone().unwrap();
    assert_eq!(m.level, Level::Error);
    assert!(m.text.contains("access_denied"));
}

/// The detail tabs follow the table the operator opened; the Tables selection stays on its
/// table (by key) through re-sorts, refreshes and filters.
mod context {
    use super::*;

    fn order(s: &State) -> Vec<String> {
        s.tables
            .grid
            .index
            .iter()
            .map(|&i| s.tables.rows[i].name.clone())
            .collect()
    }

    /// A refresh whose discovery lists `tables` and whose stats say `stats` per table.
    fn refresh_with(
        s: &mut State,
        tables: &[(&str, &str)],
        stats: Vec<crate::lakehouse::model::TableStats>,
    ) {
        update(s, key('r'));
        let generation = s.tables.generation;
        let refs: Vec<_> = tables.iter().map(|(a, b)| tref(a, b)).collect();
        update(
            s,
            Action::Tables(TablesMsg::Discovered {
                generation,
                result: Ok(refs.clone()),
            }),
        );
        for (t, st) in refs.into_iter().zip(stats) {
            update(
                s,
                Action::Tables(TablesMsg::Stats {
                    generation,
                    table: t,
                    result: Ok(st),
                }),
            );
        }
    }

    fn bloated() -> crate::lakehouse::model::TableStats {
        let mut b = healthy_stats();
        b.snapshots = 600;
        b.oldest_snapshot = Some(t0() - chrono::Duration::days(60));
        b
    }

    #[test]
    fn snapshots_follow_the_opened_table_after_a_refresh_re_sorts_the_list() {
        let mut s = loaded();
        assert_eq!(
            selected_name(&s),
            "zoning.documents",
            "worst first, untouched"
        );
        update(&mut s, code(KeyCode::Enter));
        assert_eq!(s.tab, Tab::Partitions);
        // Optimized meanwhile: documents is healthy now, events is the worst.
        refresh_with(
            &mut s,
            &[
                ("zoning", "parcels"),
                ("zoning", "documents"),
                ("audit", "events"),
            ],
            vec![healthy_stats(), healthy_stats(), bloated()],
        );
        assert_eq!(order(&s)[0], "audit.events", "the list re-sorted");
        let fx = update(&mut s, key('3'));
        assert_eq!(
            fx,
            vec![Effect::LoadSnapshots {
                request: 1,
                table: tref("zoning", "documents")
            }]
        );
        assert_eq!(s.focus_table(), Some(&tref("zoning", "documents")));
        // Back on Tables, the selection is still on the opened table.
        update(&mut s, key('1'));
        assert_eq!(selected_name(&s), "zoning.documents");
    }

    #[test]
    fn a_refresh_on_the_partitions_tab_reloads_the_opened_table() {
        let mut s = loaded();
        update(&mut s, code(KeyCode::Enter));
        let fx = update(&mut s, key('r'));
        assert!(
            fx.contains(&Effect::LoadPartitions {
                request: 2,
                table: tref("zoning", "documents")
            }),
            "{fx:?}"
        );
    }

    #[test]
    fn the_selection_stays_on_its_table_when_a_rediscovery_reorders_rows() {
        let mut s = loaded();
        update(&mut s, key('j'));
        assert_eq!(selected_name(&s), "zoning.parcels");
        // The catalog lists the tables in another order: data indices change.
        refresh_with(
            &mut s,
            &[
                ("audit", "events"),
                ("zoning", "parcels"),
                ("zoning", "documents"),
            ],
            vec![bloated(), healthy_stats(), incident_stats()],
        );
        assert_eq!(selected_name(&s), "zoning.parcels");
        // A sort change and a filter keep it too.
        update(&mut s, key('s'));
        assert_eq!(selected_name(&s), "zoning.parcels");
        update(&mut s, key('/'));
        for c in "zoning".chars() {
            update(&mut s, key(c));
        }
        update(&mut s, code(KeyCode::Enter));
        assert_eq!(selected_name(&s), "zoning.parcels");
        let fx = update(&mut s, key('3'));
        assert_eq!(
            fx,
            vec![Effect::LoadSnapshots {
                request: 1,
                table: tref("zoning", "parcels")
            }]
        );
    }

    #[test]
    fn moving_on_the_tables_tab_then_opening_another_table_follows_it() {
        let mut s = loaded();
        update(&mut s, code(KeyCode::Enter));
        update(&mut s, key('1'));
        update(&mut s, key('j'));
        let fx = update(&mut s, key('3'));
        assert_eq!(
            fx,
            vec![Effect::LoadSnapshots {
                request: 1,
                table: tref("zoning", "parcels")
            }]
        );
        // g: back to following the worst row.
        update(&mut s, key('1'));
        update(&mut s, key('g'));
        refresh_with(
            &mut s,
            &[
                ("zoning", "parcels"),
                ("zoning", "documents"),
                ("audit", "events"),
            ],
            vec![healthy_stats(), healthy_stats(), bloated()],
        );
        assert_eq!(selected_name(&s), "audit.events");
    }
}

/// `y` copies the selection with OSC 52 (the runtime writes the sequence); `Y` the SQL.
mod copy {
    use super::*;

    fn copied(fx: &[Effect]) -> &str {
        match fx {
            [Effect::Copy(text)] => text,
            _ => panic!("no copy: {fx:?}"),
        }
    }

    #[test]
    fn tables_copy_the_quoted_name_and_say_so() {
        let mut s = loaded();
        let fx = update(&mut s, key('y'));
        assert_eq!(copied(&fx), r#""iceberg"."zoning"."documents""#);
        let m = s.status.as_ref().unwrap();
        assert_eq!(m.level, Level::Info);
        assert!(m.text.contains("copied table name"), "{}", m.text);
    }

    #[test]
    fn partitions_copy_the_predicate_of_the_selected_partition() {
        let mut s = maintenance::on_partitions();
        let label = s.partitions.selected().unwrap().label.clone();
        let fx = update(&mut s, key('y'));
        assert_eq!(copied(&fx), format!("\"$partition\" = '{label}'"));
        assert!(
            s.status
                .as_ref()
                .unwrap()
                .text
                .contains("partition predicate")
        );
    }

    #[test]
    fn snapshots_copy_the_id_then_the_query_that_wrote_it() {
        let mut s = loaded();
        update(&mut s, key('3'));
        let info = SnapshotInfo {
            committed_at: t0(),
            snapshot_id: 4242,
            parent_id: None,
            operation: "replace".into(),
            added_data_files: None,
            deleted_data_files: None,
            total_data_files: None,
            added_records: None,
            total_records: None,
            total_delete_files: None,
            added_files_size: None,
            removed_files_size: None,
            trino_user: None,
            trino_query_id: Some("20261129_120000_00001_abcde".into()),
        };
        update(
            &mut s,
            Action::Snapshots {
                request: 1,
                table: tref("zoning", "documents"),
                result: Ok(vec![info]),
            },
        );
        let fx = update(&mut s, key('y'));
        assert_eq!(copied(&fx), "4242");
        assert!(s.status.as_ref().unwrap().text.contains("y again"));
        let fx = update(&mut s, key('y'));
        assert_eq!(copied(&fx), "20261129_120000_00001_abcde");
        let fx = update(&mut s, key('y'));
        assert_eq!(copied(&fx), "4242", "and back");
    }

    #[test]
    fn dags_copy_the_id_then_the_failing_error_line_once_drilled_in() {
        let mut s = dags::with_dags();
        update(&mut s, key('4'));
        let fx = update(&mut s, key('y'));
        assert_eq!(copied(&fx), "compact_documents");
        update(&mut s, code(KeyCode::Enter));
        let fx = update(&mut s, key('y'));
        assert_eq!(copied(&fx), dags::ERROR);
        assert!(
            s.status
                .as_ref()
                .unwrap()
                .text
                .contains("copied error line")
        );
    }

    #[test]
    fn the_confirm_popup_copies_its_sql_with_capital_y_and_stays_open() {
        let mut s = maintenance::on_partitions();
        update(&mut s, key(' '));
        update(&mut s, key(' '));
        update(&mut s, key('o'));
        let d = maintenance::draft(&s);
        let epoch = s.conn.epoch;
        update(
            &mut s,
            Action::Maintenance(MaintenanceMsg::PlanReady(epoch, Ok(d))),
        );
        let fx = update(&mut s, key('Y'));
        let sql = copied(&fx).to_string();
        assert_eq!(sql.matches("EXECUTE optimize").count(), 2, "{sql}");
        assert!(!sql.contains('\n'), "one line: {sql}");
        assert!(matches!(s.popup, Some(Popup::Confirm(_))), "still asking");
        assert!(
            s.status
                .as_ref()
                .unwrap()
                .text
                .contains("SQL (2 statements)")
        );
        // y still runs it.
        let fx = update(&mut s, key('y'));
        assert!(matches!(&fx[..], [Effect::RunPlan { .. }]), "{fx:?}");
    }

    #[test]
    fn capital_y_outside_the_confirm_popup_copies_nothing() {
        let mut s = loaded();
        assert!(update(&mut s, key('Y')).is_empty());
    }

    #[test]
    fn a_popup_copies_the_error_it_shows() {
        let mut s = loaded();
        let generation = s.tables.generation;
        let hostile = query_failed("TABLE_NOT_FOUND", &crate::text::hostile_sample(), "q1");
        update(
            &mut s,
            Action::Tables(TablesMsg::Stats {
                generation,
                table: tref("audit", "events"),
                result: Err(hostile),
            }),
        );
        s.popup = Some(Popup::Health(tref("audit", "events")));
        let fx = update(&mut s, key('y'));
        let text = copied(&fx);
        assert!(text.starts_with("TABLE_NOT_FOUND"), "{text}");
        assert!(
            crate::text::is_inert(text) && !text.contains('\n'),
            "{text:?}"
        );
        assert!(crate::text::is_inert(&s.status.as_ref().unwrap().text));
    }
}

#[test]
fn a_table_whose_re_read_failed_says_so_and_is_not_green() {
    let mut s = loaded();
    let parcels = tref("zoning", "parcels");
    let row = |s: &State| {
        s.tables
            .rows
            .iter()
            .find(|r| r.table == parcels)
            .cloned()
            .unwrap()
    };
    assert_eq!(row(&s).status(), Some(crate::health::Severity::Ok));
    let generation = s.tables.generation;
    update(
        &mut s,
        Action::Tables(TablesMsg::Stats {
            generation,
            table: parcels.clone(),
            result: Err(query_failed(
                "PERMISSION_DENIED",
                "Access Denied: Cannot select from table",
                "q1",
            )),
        }),
    );
    let r = row(&s);
    assert!(r.stats.is_some(), "the last good figures stay");
    assert_eq!(r.status(), Some(crate::health::Severity::Unknown));
    let mut term = ratatui::Terminal::new(ratatui::backend::TestBackend::new(160, 20)).unwrap();
    term.draw(|f| crate::ui::draw(f, &s)).unwrap();
    let screen: String = term
        .backend()
        .buffer()
        .content()
        .iter()
        .map(|c| c.symbol())
        .collect();
    assert!(
        screen.contains("UNKN    100 zoning.parcels ! re-"),
        "the row says it is not current: {screen}"
    );
}

#[test]
fn verdicts_age_with_the_clock_between_reads() {
    let mut s = loaded();
    let parcels = tref("zoning", "parcels");
    let health = |s: &State| {
        s.tables
            .rows
            .iter()
            .find(|r| r.table == parcels)
            .and_then(|r| r.health.clone())
            .unwrap()
    };
    let before = health(&s);
    let later = t0() + chrono::Duration::days(30);
    update(&mut s, Action::Tick(later));
    let after = health(&s);
    let row = s.tables.rows.iter().find(|r| r.table == parcels).unwrap();
    assert_eq!(
        after,
        crate::health::evaluate(
            row.stats.as_ref().unwrap(),
            row.dag.as_ref(),
            &s.health,
            later
        ),
        "evaluated against the tick's clock"
    );
    assert_ne!(
        after, before,
        "a month without a write or a compaction shows"
    );
}

/// `start_tab = "auto"`: open on Triage, and move to Tables once the first refresh is in
/// only when nothing needs attention; a tab the operator chose is never left on its own.
#[test]
fn auto_start_stays_on_triage_with_incidents_and_leaves_it_without() {
    let start = |stats: crate::lakehouse::model::TableStats, touch: bool| {
        let mut s = State::new(t0());
        s.tab = Tab::Triage;
        s.auto_start = true;
        update(&mut s, Action::Start);
        if touch {
            update(&mut s, key('4'));
            update(&mut s, key('0'));
        }
        let generation = s.tables.generation;
        update(
            &mut s,
            Action::Tables(TablesMsg::Discovered {
                generation,
                result: Ok(vec![tref("zoning", "documents")]),
            }),
        );
        assert_eq!(s.tab, Tab::Triage, "still reading");
        update(
            &mut s,
            Action::Tables(TablesMsg::Stats {
                generation,
                table: tref("zoning", "documents"),
                result: Ok(stats),
            }),
        );
        s
    };
    let s = start(incident_stats(), false);
    assert_eq!(s.tab, Tab::Triage, "the incident is where to start");
    assert!(!s.triage.incidents.is_empty());
    let s = start(healthy_stats(), false);
    assert_eq!(s.tab, Tab::Tables, "nothing to triage: the tables");
    let s = start(healthy_stats(), true);
    assert_eq!(s.tab, Tab::Triage, "the operator's choice stays");
}

mod optimize_cost {
    use super::maintenance::{draft, on_partitions};
    use super::*;
    use crate::maintain::eta::{Measured, Rate};

    fn measured(bytes_per_sec: f64) -> Measured {
        Measured {
            rate: Some(Rate {
                bytes_per_sec,
                samples: 5,
                from_audit: 3,
                from_coordinator: 2,
            }),
            notes: Vec::new(),
        }
    }

    /// Six marked partitions drafted with `m`, on the confirm popup (drawn).
    fn confirming(m: Option<Measured>) -> State {
        let mut s = on_partitions();
        for _ in 0..6 {
            update(&mut s, key(' '));
        }
        let mut d = draft(&s);
        assert_eq!(d.partitions.len(), 6);
        d.measured = m;
        let epoch = s.conn.epoch;
        update(
            &mut s,
            Action::Maintenance(MaintenanceMsg::PlanReady(epoch, Ok(d))),
        );
        update(&mut s, Action::Drawn);
        s
    }

    fn confirm(s: &State) -> &crate::app::maintenance::Confirm {
        match &s.popup {
            Some(Popup::Confirm(c)) => c,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_confirmation_says_how_long_and_on_what_basis() {
        let s = confirming(Some(measured(1_000_000.0)));
        let c = confirm(&s);
        assert_eq!(c.cost.len(), 1, "short: no incremental plan: {:?}", c.cost);
        assert!(
            c.cost[0].starts_with("expected: ~1s at the 977 KB/s of the last 5 optimizes (3 in the audit log, 2 in the coordinator's history)"),
            "{:?}",
            c.cost
        );
        let s = confirming(Some(Measured {
            rate: None,
            notes: vec!["user floe may not read the coordinator's query history".into()],
        }));
        assert_eq!(
            confirm(&s).cost,
            vec![
                "expected: first time here: no estimate",
                "estimate: user floe may not read the coordinator's query history"
            ]
        );
        // Not an optimize, or not measured: nothing said.
        assert!(confirm(&confirming(None)).cost.is_empty());
    }

    #[test]
    fn a_long_optimize_offers_the_incremental_plan_and_the_operator_chooses() {
        let mut s = confirming(Some(measured(10.0)));
        let c = confirm(&s).clone();
        assert_eq!(c.plan.steps.len(), 6);
        assert!(c.cost[0].starts_with("expected: ~"), "{:?}", c.cost);
        assert!(
            c.cost[1].starts_with(
                "over 30m: the incremental plan runs the oldest small files first — part 1: "
            ) && c.cost[1].ends_with("; i: part 1 only"),
            "{:?}",
            c.cost
        );
        update(&mut s, key('i'));
        let part1 = confirm(&s).clone();
        assert!(part1.incremental);
        assert!(part1.plan.steps.len() < 6, "{}", part1.plan.steps.len());
        assert!(
            part1.cost[0]
                .starts_with("incremental, part 1 of 2 (the oldest small files, 50% of them): "),
            "{:?}",
            part1.cost
        );
        assert!(part1.cost[1].starts_with("part 2, for a later run: "));
        // `y` runs part 1 only.
        let fx = update(&mut s, key('y'));
        let [Effect::RunPlan { plan, .. }] = &fx[..] else {
            panic!("{fx:?}")
        };
        assert_eq!(plan.steps.len(), part1.plan.steps.len());
        // The oldest small files first: the earliest day of the six partitions.
        assert!(
            plan.steps[0].sql.contains("2026-11-01"),
            "{}",
            plan.steps[0].sql
        );
        // `i` again is the whole plan.
        let mut s = confirming(Some(measured(10.0)));
        update(&mut s, key('i'));
        update(&mut s, key('i'));
        assert_eq!(confirm(&s).plan.steps.len(), 6);
        assert!(!confirm(&s).incremental);
    }
}
