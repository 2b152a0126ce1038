//! Synthetic but realistic data for the benchmarks (shared by the bench binaries).
#![allow(dead_code)]

use chrono::{DateTime, Duration, TimeZone, Utc};
use floe::app::action::Action;
use floe::app::state::{State, Tab};
use floe::app::tables::TablesMsg;
use floe::app::update::update;
use floe::lakehouse::model::{
    PartitionStats, SnapshotInfo, SnapshotOperation, TableRef, TableStats,
};
use floe::lakehouse::queries::PartitionList;
use floe::refresh::{Answer, RequestId};

pub fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 29, 9, 0, 0).unwrap()
}

pub fn tables(n: usize) -> Vec<TableRef> {
    (0..n)
        .map(|i| {
            TableRef::new(
                "iceberg",
                format!("schema_{:02}", i % 10),
                format!("table_{i:04}"),
            )
        })
        .collect()
}

pub fn stats(i: usize) -> TableStats {
    let files = 10 + (i as u64 * 37) % 5000;
    TableStats {
        target_file_size: 128 << 20,
        data_files: files,
        small_files: files * (i as u64 % 4) / 4,
        total_bytes: files * (1 + (i as u64 % 200)) * (1 << 20),
        records: files * 10_000,
        partitioned: !i.is_multiple_of(5),
        partitions: 1 + (i as u64 % 300),
        small_file_partitions: i as u64 % 40,
        critical_partitions: i as u64 % 7,
        snapshots: 5 + (i as u64 % 500),
        oldest_snapshot: Some(now() - Duration::days((i % 60) as i64)),
        newest_snapshot: Some(now() - Duration::hours((i % 48) as i64)),
        last_compaction: (!i.is_multiple_of(3)).then(|| now() - Duration::hours((i % 400) as i64)),
        last_write: Some(now() - Duration::hours((i % 30) as i64)),
        writes_since_compaction: (i % 20) as u64,
        files_after_compaction: Some(files / 2),
        ..Default::default()
    }
}

pub fn partitions(n: usize) -> PartitionList {
    let districts = [
        "north",
        "south",
        "east",
        "west",
        "harbor",
        "midtown",
        "uptown",
        "riverside",
    ];
    PartitionList {
        target_file_size: 128 << 20,
        layout_fields: vec!["district".into(), "filed_at_day".into()],
        partitions: (0..n)
            .map(|i| {
                let day = Utc.with_ymd_and_hms(2020, 1, 1, 0, 0, 0).unwrap()
                    + Duration::days((i / districts.len()) as i64);
                let files = 1 + (i as u64 * 7) % 60;
                PartitionStats {
                    values: vec![
                        (
                            "district".into(),
                            Some(districts[i % districts.len()].into()),
                        ),
                        (
                            "filed_at_day".into(),
                            Some(day.format("%Y-%m-%d").to_string()),
                        ),
                    ],
                    spec_id: None,
                    data_files: files,
                    small_files: files * (i as u64 % 3) / 2,
                    total_bytes: files * 3_000_000,
                    records: files * 1000,
                    min_file: 1_000_000,
                    max_file: 9_000_000,
                    delete_files: 0,
                    oldest_small_file_at: None,
                }
            })
            .collect(),
    }
}

pub fn snapshots(n: usize) -> Vec<SnapshotInfo> {
    (0..n)
        .map(|i| SnapshotInfo {
            committed_at: now() - Duration::minutes((n - i) as i64 * 30),
            snapshot_id: 8_000_000_000_000_000_000 + i as i64,
            parent_id: Some(8_000_000_000_000_000_000 + i as i64 - 1),
            operation: if i % 24 == 0 {
                SnapshotOperation::Replace
            } else {
                SnapshotOperation::Append
            },
            added_data_files: Some(20),
            deleted_data_files: i.is_multiple_of(24).then_some(400),
            total_data_files: Some(100 + (i as u64 % 24) * 20),
            added_records: Some(2000),
            total_records: Some(i as u64 * 2000),
            total_delete_files: Some(0),
            added_files_size: Some(40_000_000),
            removed_files_size: None,
            trino_user: Some("ingest".into()),
            trino_query_id: Some(format!("20261129_000000_{i:05}_bench")),
        })
        .collect()
}

/// The answer to one of the refresh's reads, as the runtime sends it.
pub fn answer(id: RequestId, answer: Answer) -> Action {
    Action::Tables(TablesMsg::Answer { id, answer })
}

/// A state holding `n_tables` loaded tables, `n_partitions` partitions of the first
/// table and `n_snapshots` of its snapshots, on the given tab.
pub fn loaded_state(n_tables: usize, n_partitions: usize, n_snapshots: usize, tab: char) -> State {
    let mut s = State::new(now());
    s.conn.profile = "bench".into();
    s.conn.trino_url = "http://127.0.0.1:8080/".into();
    update(&mut s, Action::Resize(160, 48));
    let fx = update(&mut s, Action::Start);
    let ts = tables(n_tables);
    let list = fx
        .iter()
        .find_map(|e| match e {
            floe::app::action::Effect::Read { id, .. } => Some(*id),
            _ => None,
        })
        .expect("the listing");
    update(&mut s, answer(list, Answer::Listed(Ok(ts.clone()))));
    for (i, t) in ts.iter().enumerate() {
        let Some(floe::app::action::Effect::Read { id, .. }) =
            floe::app::tables::reload_row(&mut s, t)
        else {
            panic!("{t} has a row");
        };
        update(&mut s, answer(id, Answer::Table(t.clone(), Ok(stats(i)))));
    }
    let first = s.tables.selected().unwrap().table.clone();
    update(&mut s, key('2'));
    let req = s.partitions.detail.request;
    update(
        &mut s,
        Action::Partitions(floe::app::partitions::PartitionsMsg::Loaded {
            request: req,
            table: first.clone(),
            result: Ok(partitions(n_partitions)),
        }),
    );
    update(&mut s, key('3'));
    let req = s.snapshots.detail.request;
    update(
        &mut s,
        Action::Snapshots(floe::app::snapshots::SnapshotsMsg::Loaded {
            request: req,
            table: first,
            result: Ok(snapshots(n_snapshots)),
        }),
    );
    update(&mut s, key(tab));
    assert_eq!(
        s.tab,
        match tab {
            '1' => Tab::Tables,
            '2' => Tab::Partitions,
            '3' => Tab::Snapshots,
            _ => Tab::Dags,
        }
    );
    s
}

pub fn key(c: char) -> Action {
    // The event loop stamps a key when it reads it; the stamp is not `update`'s work, so
    // every key of a bench carries the same one (a clock read is a fifth of a navigation
    // key's cost).
    static AT: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    Action::Key(
        crossterm::event::KeyEvent::new(
            crossterm::event::KeyCode::Char(c),
            crossterm::event::KeyModifiers::NONE,
        ),
        *AT.get_or_init(std::time::Instant::now),
    )
}

/// The report of one cluster of `n` tables (the fixture's stats, each judged by the default
/// health rules): what `floe serve` publishes after a refresh.
pub fn report(profile: &str, n: usize, now: DateTime<Utc>) -> floe::report::Report {
    use floe::report::{Report, TableReport, TrinoInfo};
    let cfg = floe::config::HealthConfig::default();
    let tables = tables(n)
        .into_iter()
        .enumerate()
        .map(|(i, t)| {
            let st = stats(i);
            TableReport {
                table: t,
                health: floe::health::evaluate(&st, None, &cfg, now),
                stats: Some(st),
                error: None,
                dag: None,
                format: None,
            }
        })
        .collect();
    Report {
        generated_at: now,
        profile: profile.to_string(),
        trino: TrinoInfo {
            url: "http://trino:8080/".into(),
            version: Some("476".into()),
            uptime_seconds: Some(3600.0),
        },
        airflow: None,
        tables,
        dags: vec![],
        findings: vec![],
        connections: vec![],
        fatal: None,
        warnings: vec![],
    }
}
