//! Fixtures shared by the update tests and the screen snapshots: a clock, table stats
//! of the incident and of a healthy table, a loaded state, partitions, DAGs.

use chrono::{DateTime, TimeZone, Utc};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::action::{Action, Effect};
use super::state::State;
use super::tables::TablesMsg;
use super::update::update;
use crate::lakehouse::model::{PartitionStats, TableRef, TableStats};
use crate::lakehouse::queries::PartitionList;
use crate::refresh::{Answer, Read, ReadKind, RequestId};

pub fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 29, 9, 0, 0).unwrap()
}

pub fn key(c: char) -> Action {
    Action::Key(
        KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE),
        std::time::Instant::now(),
    )
}

pub fn code(c: KeyCode) -> Action {
    Action::Key(
        KeyEvent::new(c, KeyModifiers::NONE),
        std::time::Instant::now(),
    )
}

pub fn ctrl(c: char) -> Action {
    Action::Key(
        KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL),
        std::time::Instant::now(),
    )
}

pub fn tref(s: &str, t: &str) -> TableRef {
    TableRef::new("iceberg", s, t)
}

pub fn incident_stats() -> TableStats {
    TableStats {
        target_file_size: 128 << 20,
        data_files: 2016,
        small_files: 2016,
        total_bytes: 2016 * 3 * 1024,
        records: 201_600,
        partitioned: true,
        partitions: 144,
        small_file_partitions: 72,
        // 14 files a partition: none holds 100 more than its bytes need.
        critical_partitions: 0,
        snapshots: 17,
        oldest_snapshot: Some(t0() - chrono::Duration::days(16)),
        newest_snapshot: Some(t0() - chrono::Duration::hours(9)),
        last_compaction: Some(t0() - chrono::Duration::days(15)),
        last_write: Some(t0() - chrono::Duration::hours(9)),
        writes_since_compaction: 15,
        files_after_compaction: Some(144),
        // The oldest small file still waiting (it survived the last compaction).
        oldest_small_file_at: Some(t0() - chrono::Duration::days(15)),
        ..Default::default()
    }
}

pub fn healthy_stats() -> TableStats {
    TableStats {
        target_file_size: 64 * 1024,
        target_from_property: true,
        data_files: 12,
        small_files: 0,
        total_bytes: 12 * 80 * 1024,
        records: 12_000,
        partitioned: true,
        partitions: 6,
        snapshots: 4,
        oldest_snapshot: Some(t0() - chrono::Duration::days(3)),
        newest_snapshot: Some(t0() - chrono::Duration::hours(20)),
        last_compaction: Some(t0() - chrono::Duration::hours(20)),
        last_write: Some(t0() - chrono::Duration::hours(21)),
        ..Default::default()
    }
}

/// A frame drawn now (what lets a confirmation on screen take its answer).
pub fn drawn(s: &mut State) {
    update(s, Action::Drawn(std::time::Instant::now()));
}

/// The refresh's reads among `fx`, in order.
pub fn reads_in(fx: &[Effect]) -> Vec<(RequestId, Read)> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Read { id, read } => Some((*id, read.clone())),
            _ => None,
        })
        .collect()
}

/// The one read of `kind` among `fx`.
pub fn read_of(fx: &[Effect], kind: ReadKind) -> (RequestId, Read) {
    let found: Vec<_> = reads_in(fx)
        .into_iter()
        .filter(|(_, r)| r.kind() == kind)
        .collect();
    assert_eq!(found.len(), 1, "one {kind:?} read in {fx:?}");
    found.into_iter().next().expect("one")
}

/// Answer the refresh's read `id`.
pub fn answer(s: &mut State, id: RequestId, answer: Answer) -> Vec<Effect> {
    update(s, Action::Tables(TablesMsg::Answer { id, answer }))
}

/// The listing read among `fx` answered with `tables`.
pub fn listed(s: &mut State, fx: &[Effect], tables: Vec<TableRef>) -> Vec<Effect> {
    let (id, _) = read_of(fx, ReadKind::List);
    answer(s, id, Answer::Listed(Ok(tables)))
}

/// `t` read on its own and answered with `stats` (as after a maintenance job).
pub fn reread_with(s: &mut State, t: &TableRef, stats: TableStats) -> Vec<Effect> {
    settle(s, t, Ok(stats))
}

/// `t` read on its own and answered with `result`.
pub fn settle(
    s: &mut State,
    t: &TableRef,
    result: Result<TableStats, crate::trino::TrinoError>,
) -> Vec<Effect> {
    let Some(Effect::Read { id, .. }) = crate::app::tables::reload_row(s, t) else {
        panic!("{t} has a row to read");
    };
    answer(s, id, Answer::Table(t.clone(), result))
}

/// A new refresh (whatever was in flight dropped) whose listing answers `tables`.
pub fn relist(s: &mut State, tables: Vec<TableRef>) -> Vec<Effect> {
    s.tables.refresh.abandon();
    let fx = crate::app::tables::refresh(s, false);
    listed(s, &fx, tables)
}

/// The listing of a new refresh (whatever was in flight dropped) answered with `e`.
pub fn list_fails(s: &mut State, e: crate::trino::TrinoError) -> Vec<Effect> {
    s.tables.refresh.abandon();
    let fx = crate::app::tables::refresh(s, false);
    let (id, _) = read_of(&fx, ReadKind::List);
    answer(s, id, Answer::Listed(Err(e)))
}

/// A state that has discovered three tables and loaded two of them: the cold start's
/// survey of the three is still in flight for the third (`audit.events`); the other two
/// were read on their own meanwhile.
pub fn loaded() -> State {
    let mut s = State::new(t0());
    s.conn.profile = "lab".into();
    s.conn.trino_url = "http://127.0.0.1:8080/".into();
    let fx = update(&mut s, Action::Start);
    assert!(matches!(fx[0], Effect::FetchServerInfo));
    let tables = vec![
        tref("zoning", "parcels"),
        tref("zoning", "documents"),
        tref("audit", "events"),
    ];
    let fx = listed(&mut s, &fx, tables);
    // One survey of the three (metadata only).
    let (_, survey) = read_of(&fx, ReadKind::Survey);
    assert_eq!(survey.tables().len(), 3);
    reread_with(&mut s, &tref("zoning", "parcels"), healthy_stats());
    reread_with(&mut s, &tref("zoning", "documents"), incident_stats());
    s
}

/// [`loaded`]'s state with its third table read: the cold start over.
pub fn finish_loading(s: &mut State) -> Vec<Effect> {
    let id = survey_in_flight(s);
    answer(
        s,
        id,
        Answer::Files(vec![(tref("audit", "events"), Ok(healthy_stats()))]),
    )
}

/// The survey [`loaded`] left in flight: its id.
pub fn survey_in_flight(s: &State) -> RequestId {
    s.tables
        .row(&tref("audit", "events"))
        .and_then(|r| r.read.owner)
        .expect("the survey of audit.events is in flight")
}

pub fn partitions(n: usize) -> PartitionList {
    PartitionList {
        target_file_size: 128 << 20,
        layout_fields: vec!["district".into(), "filed_at_day".into()],
        partitions: (0..n)
            .map(|i| PartitionStats {
                values: vec![
                    (
                        "district".into(),
                        Some(["north", "south", "east"][i % 3].into()),
                    ),
                    (
                        "filed_at_day".into(),
                        Some(format!("2026-11-{:02}", 1 + i / 3)),
                    ),
                ],
                data_files: 14 + (i as u64 % 5),
                small_files: if i % 4 == 0 { 3 } else { 14 + (i as u64 % 5) },
                total_bytes: (14 + (i as u64 % 5)) * 3000,
                records: 1400,
                min_file: 2000,
                max_file: 4000,
                delete_files: 0,
                oldest_small_file_at: Some(
                    Utc.with_ymd_and_hms(2026, 11, 1 + (i / 3) as u32 % 28, 6, 0, 0)
                        .unwrap(),
                ),
                spec_id: None,
            })
            .collect(),
    }
}

pub mod dags {
    use super::*;
    use crate::airflow::scan::DagList;
    use crate::airflow::{Dag, DagImportError, LogLine, TaskInstance, TaskLog, TaskState};
    use crate::app::dags::{DagMsg, FailureDetail};
    use crate::health::DagFacts;
    use std::time::Duration;

    /// A scheduled run of compact_documents due at `at`, with only its dates of schedule.
    pub fn scheduled_run(
        run_id: String,
        at: DateTime<Utc>,
        state: crate::airflow::DagRunState,
    ) -> crate::airflow::DagRun {
        crate::airflow::DagRun {
            dag_id: "compact_documents".into(),
            run_id,
            state,
            run_type: crate::airflow::RunType::Scheduled,
            logical_date: Some(at),
            run_after: Some(at),
            data_interval_start: None,
            data_interval_end: None,
            queued_at: None,
            start_date: None,
            end_date: None,
            duration: None,
            triggered_by: None,
            external_trigger: None,
            note: None,
        }
    }

    pub fn dag(id: &str, table: &str, paused: bool) -> Dag {
        Dag {
            dag_id: id.into(),
            display_name: id.into(),
            description: None,
            paused,
            active: true,
            has_import_errors: false,
            owners: vec!["data-platform".into()],
            tags: vec!["maintenance".into(), table.into()],
            schedule: Some("@daily".into()),
            schedule_description: None,
            schedule_interval: Some(Duration::from_secs(86_400)),
            next_run: Some(t0() + chrono::Duration::hours(15)),
            next_logical_date: None,
            fileloc: None,
            relative_fileloc: None,
            bundle_name: None,
        }
    }

    pub fn list() -> DagList {
        DagList {
            version: "3.3.2".into(),
            api: crate::airflow::ApiVersion::V2,
            health: None,
            dags: vec![
                dag("compact_documents", "iceberg.zoning.documents", false),
                dag("compact_parcels", "iceberg.zoning.parcels", false),
                dag("expire_snapshots", "iceberg.audit.events", true),
            ],
            import_errors: vec![DagImportError {
                id: Some(1),
                filename: "broken_dag.py".into(),
                bundle_name: Some("dags-folder".into()),
                timestamp: None,
                stack_trace: "Traceback (most recent call last):\nModuleNotFoundError: No module named 'lakehouse_maintenance_helpers'\n".into(),
            }],
        }
    }

    pub const ERROR: &str = "ConnectionError: optimize of iceberg.zoning.documents failed: could not connect to Trino at trino-old.internal:8080 (connection trino_documents)";

    pub fn failing_facts() -> DagFacts {
        DagFacts {
            dag_id: "compact_documents".into(),
            guessed: false,
            paused: false,
            import_error: None,
            last_run_state: Some(crate::airflow::DagRunState::Failed),
            active_run: None,
            last_run_at: Some(t0() - chrono::Duration::hours(9)),
            last_success_at: None,
            failed_runs: 14,
            failing_task: Some("compact".into()),
            error_line: Some(ERROR.into()),
            expected_interval: Duration::from_secs(86_400),
            code: None,
        }
    }

    pub fn ok_facts(id: &str) -> DagFacts {
        DagFacts {
            dag_id: id.into(),
            last_run_state: Some(crate::airflow::DagRunState::Success),
            active_run: None,
            last_success_at: Some(t0() - chrono::Duration::hours(8)),
            failed_runs: 0,
            failing_task: None,
            error_line: None,
            ..failing_facts()
        }
    }

    /// The loaded state with Airflow: DAGs listed, facts in, the failing task's log read.
    pub fn with_dags() -> State {
        let mut s = loaded();
        s.airflow_configured = true;
        let fx = update(&mut s, key('r'));
        // The first refresh is still pending one table: no new table refresh, but the DAG
        // list loads on its first refresh.
        assert!(
            fx.iter().any(|e| matches!(e, Effect::LoadDags { .. })),
            "{fx:?}"
        );
        let generation = s.dags.generation;
        let fx = update(
            &mut s,
            Action::Dags(DagMsg::Loaded {
                generation,
                result: Ok(list()),
            }),
        );
        assert_eq!(
            fx.iter()
                .filter(|e| matches!(e, Effect::LoadDagFacts { .. }))
                .count(),
            3
        );
        let fx = update(
            &mut s,
            Action::Dags(DagMsg::Facts {
                generation,
                dag_id: "compact_documents".into(),
                result: Ok(failing_facts()),
            }),
        );
        // The failing task's log, and the DAG's code (it maintains a table floe lists).
        assert_eq!(
            fx[0],
            Effect::LoadFailure {
                dag_id: "compact_documents".into()
            }
        );
        assert!(
            matches!(&fx[1..], [Effect::LoadDagCode { dag, known: None }] if dag.dag_id == "compact_documents"),
            "{fx:?}"
        );
        update(
            &mut s,
            Action::Dags(DagMsg::Facts {
                generation,
                dag_id: "compact_parcels".into(),
                result: Ok(ok_facts("compact_parcels")),
            }),
        );
        let mut paused = ok_facts("expire_snapshots");
        paused.paused = true;
        paused.last_run_state = None;
        paused.last_success_at = None;
        update(
            &mut s,
            Action::Dags(DagMsg::Facts {
                generation,
                dag_id: "expire_snapshots".into(),
                result: Ok(paused),
            }),
        );
        let log = TaskLog {
            lines: vec![
                LogLine {
                    timestamp: None,
                    level: Some("info".into()),
                    text: "running on trino-old.internal:8080".into(),
                    error: false,
                },
                LogLine {
                    timestamp: None,
                    level: Some("error".into()),
                    text: "Task failed with exception".into(),
                    error: true,
                },
                LogLine {
                    timestamp: None,
                    level: Some("error".into()),
                    text: ERROR.into(),
                    error: true,
                },
            ],
            error_line: Some(ERROR.into()),
            continuation_token: None,
        };
        update(
            &mut s,
            Action::Dags(DagMsg::Failure {
                dag_id: "compact_documents".into(),
                result: Ok(Some(FailureDetail {
                    run_id: "scheduled__2026-11-29T00:00:00+00:00".into(),
                    task_id: "compact".into(),
                    try_number: 1,
                    log,
                })),
            }),
        );
        s
    }

    pub fn task(id: &str, state: TaskState, try_number: u32) -> TaskInstance {
        TaskInstance {
            dag_id: "compact_documents".into(),
            run_id: "scheduled__2026-11-29T00:00:00+00:00".into(),
            task_id: id.into(),
            map_index: -1,
            state: Some(state),
            try_number,
            max_tries: None,
            start_date: Some(t0() - chrono::Duration::hours(9)),
            end_date: None,
            duration: Some(Duration::from_millis(2300)),
            hostname: Some("vm".into()),
            operator: None,
            pool: None,
            queue: None,
            note: None,
        }
    }
}

/// A statement Trino reported FAILED, as the client returns it
/// (`NAME: message (query id)`).
pub fn query_failed(name: &str, message: &str, query_id: &str) -> crate::trino::TrinoError {
    crate::trino::TrinoError::Query {
        query_id: query_id.into(),
        error_name: name.into(),
        error_code: 0,
        error_type: "USER_ERROR".into(),
        message: message.into(),
        location: None,
    }
}

/// A coordinator that refused the connection at `url`.
pub fn unreachable(url: &str) -> crate::trino::TrinoError {
    crate::trino::TrinoError::Transport {
        url: url.into(),
        message: "connection refused".into(),
    }
}

/// The qualified name of the Tables tab's selected row.
/// Another profile, as a switch to it arrives (writable, Airflow configured).
pub fn profile_view(name: &str) -> crate::app::action::ProfileView {
    crate::app::action::ProfileView {
        profile: name.into(),
        trino_url: "http://other:8080/".into(),
        readonly: false,
        refresh: std::time::Duration::from_secs(60),
        schemas: vec![],
        health: Default::default(),
        airflow_url: Some("http://other-airflow:8080/".into()),
        maintenance: vec![],
        warnings: Vec::new(),
        cached: Vec::new(),
    }
}

pub fn selected_name(s: &State) -> String {
    s.tables
        .selected()
        .map(|r| r.name.clone())
        .unwrap_or_default()
}

/// A maintenance plan over the incident table's partitions.
pub mod plans {
    use super::*;
    use crate::lakehouse::plan::{Procedure, TableLayout, parse_partition_entry};
    use crate::mutation::draft::PlanDraft;

    /// The Partitions tab of the incident table, its six partitions loaded.
    pub fn on_partitions() -> State {
        let mut s = loaded();
        update(&mut s, code(KeyCode::Enter));
        update(
            &mut s,
            Action::Partitions(crate::app::partitions::PartitionsMsg::Loaded {
                request: 1,
                table: tref("zoning", "documents"),
                result: Ok(partitions(6)),
            }),
        );
        s
    }

    /// The optimize plan of the marked partitions.
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
                format: Default::default(),
            },
            partitions: marked,
            note: None,
            grouped: false,
            measured: None,
            writer_partitions: crate::lakehouse::plan::DEFAULT_WRITER_PARTITIONS,
        }
    }
}
