//! The scheduler alone: what it sends, in which order and windows, how answers settle the
//! tables, and that a refresh always ends, whatever order (or whether) answers come in.

use std::collections::HashSet;
use std::time::Duration;

use chrono::{DateTime, Utc};

use super::*;
use crate::lakehouse::model::TableStats;
use crate::lakehouse::probe::Probe;
use crate::trino::TrinoError;

const MB: u64 = 1 << 20;

use super::testing::{survey_of, t0};

fn t(n: &str) -> TableRef {
    TableRef::new("iceberg", "s", n)
}

/// A complete read of a table of `files` data files, all small.
fn read_of(files: u64) -> TableStats {
    TableStats {
        target_file_size: 128 * MB,
        data_files: files,
        small_files: files,
        total_bytes: files * MB,
        snapshots: 2,
        snapshot_id: Some(7),
        newest_snapshot: Some(t0()),
        ..Default::default()
    }
}

fn probe(id: i64, at: DateTime<Utc>) -> Probe {
    Probe {
        snapshot_id: Some(id),
        committed_at: None,
        snapshots: 0,
        metadata_at: Some(at),
        metadata_files: Some(3),
    }
}

fn failed(name: &str) -> TrinoError {
    TrinoError::Query {
        error_name: name.into(),
        error_code: 0,
        error_type: "USER_ERROR".into(),
        message: "it failed".into(),
        query_id: "q".into(),
        location: None,
    }
}

/// A scheduler and its records, driven as the TUI and `floe check` drive it.
struct Harness {
    r: Refresh,
    recs: VecRecords,
    scan: ScanParams,
    now: DateTime<Utc>,
}

impl Harness {
    fn new(reads: usize) -> Harness {
        Harness {
            r: Refresh::new(
                RefreshPolicy {
                    reads,
                    ..Default::default()
                },
                1,
            ),
            recs: VecRecords::default(),
            scan: ScanParams::default(),
            now: t0(),
        }
    }

    /// Start a refresh and answer its listing with `tables`: the reads it sends.
    fn start(&mut self, manual: bool, tables: &[TableRef]) -> Vec<Request> {
        let (id, read) = self.r.start(self.now, manual, vec![]).expect("not running");
        assert!(matches!(read, Read::List { .. }));
        self.recs.relist(tables);
        self.answer(id, Answer::Listed(Ok(tables.to_vec()))).reads
    }

    fn answer(&mut self, id: RequestId, a: Answer) -> Step {
        let ctx = Ctx {
            now: self.now,
            scan: &self.scan,
            refresh_every: Duration::from_secs(60),
        };
        self.r.answer(id, a, &mut self.recs, ctx)
    }

    fn rec(&self, n: &str) -> &TableRead {
        self.recs.get(&t(n)).expect("a record")
    }

    fn rec_mut(&mut self, n: &str) -> &mut TableRead {
        self.recs.get_mut(&t(n)).expect("a record")
    }
}

fn names(ts: &[TableRef]) -> Vec<&str> {
    ts.iter().map(|t| t.table.as_str()).collect()
}

fn of_kind(reads: &[Request], kind: ReadKind) -> Vec<Request> {
    reads
        .iter()
        .filter(|(_, r)| r.kind() == kind)
        .cloned()
        .collect()
}

/// The tables of `reads` of `kind`, one list per read.
fn tables_of(reads: &[Request], kind: ReadKind) -> Vec<Vec<String>> {
    of_kind(reads, kind)
        .iter()
        .map(|(_, r)| r.tables().iter().map(|t| t.table.clone()).collect())
        .collect()
}

#[test]
fn a_cold_start_surveys_every_table_and_reads_the_files_of_the_worst_first() {
    let mut h = Harness::new(4);
    let tables: Vec<TableRef> = (0..25).map(|i| t(&format!("t{i:02}"))).collect();
    let sent = h.start(false, &tables);
    assert!(h.r.full(), "nothing known: a full read");
    // Nothing to read yet: every slot surveys, ten tables a statement.
    let surveys = of_kind(&sent, ReadKind::Survey);
    assert_eq!(sent.len(), surveys.len(), "{sent:?}");
    let firsts: Vec<String> = tables_of(&sent, ReadKind::Survey)
        .iter()
        .map(|b| b[0].clone())
        .collect();
    assert_eq!(firsts, ["t00", "t10", "t20"]);
    assert_eq!(
        surveys[0].1.tables().len(),
        crate::lakehouse::summary::SURVEY_BATCH
    );
    assert_eq!(surveys[2].1.tables().len(), 5);
    // t03: 5,000 files of 1 MB; t07: 40 of 1 MB; t05: 300 of 200 MB (no small file
    // proved, its files must tell); every other table 3 files: its totals decide it.
    let found = |t: &TableRef| match t.table.as_str() {
        "t03" => survey_of(5000, MB),
        "t07" => survey_of(40, MB),
        "t05" => survey_of(300, 200 * MB),
        "t21" => survey_of(2000, MB),
        _ => survey_of(3, MB),
    };
    let surveyed = |h: &mut Harness, (id, read): &Request| {
        let results = read
            .tables()
            .iter()
            .map(|t| (t.clone(), Ok(found(t))))
            .collect();
        h.answer(*id, Answer::Surveyed(results))
    };
    let step = surveyed(&mut h, &surveys[0]);
    // One slot is free for the reads while surveys remain: the worst proved first,
    // alone (its proved small files could fill a CRITICAL partition).
    assert_eq!(tables_of(&step.reads, ReadKind::Files), [["t03"]]);
    // Decided by their totals: a verdict now, no read of their files.
    assert!(h.rec("t01").stats.as_ref().unwrap().files_unread);
    assert!(h.rec("t01").bound.is_none());
    // t03's totals bound it, they are not its verdict.
    assert!(h.rec("t03").stats.is_none());
    // At least `files − ⌊bytes / small-file line⌋` small files.
    assert_eq!(h.rec("t03").bound.as_ref().unwrap().small_files, 4948);
    assert_eq!(h.r.standing(&t("t03"), h.rec("t03")), Standing::Reading);
    assert_eq!(h.r.standing(&t("t07"), h.rec("t07")), Standing::Queued);
    assert_eq!(h.r.standing(&t("t01"), h.rec("t01")), Standing::Idle);
    let step = surveyed(&mut h, &surveys[2]);
    assert!(step.reads.is_empty(), "the read slot is busy: {step:?}");
    let step = surveyed(&mut h, &surveys[1]);
    // The surveys are over: the reads take every slot, up to FILE_BATCH a statement, a
    // worse table ahead.
    assert_eq!(
        tables_of(&step.reads, ReadKind::Files),
        [["t21", "t07", "t05"]]
    );
    assert!(h.r.running());
    let in_flight: Vec<RequestId> = h.r.in_flight.keys().copied().collect();
    for id in in_flight {
        let tables = h.r.in_flight[&id].tables.clone();
        let step = h.answer(
            id,
            Answer::Files(tables.into_iter().map(|t| (t, Ok(read_of(40)))).collect()),
        );
        assert_eq!(step.ended.is_some(), !h.r.running());
    }
    assert!(!h.r.running(), "every table is in");
    assert!(
        h.recs
            .0
            .iter()
            .all(|(_, r)| r.stats.is_some() && r.bound.is_none())
    );
}

/// The reads in flight, as requests (what a test answers next).
fn in_flight(h: &Harness) -> Vec<Request> {
    h.r.in_flight
        .iter()
        .map(|(id, s)| {
            let read = match s.kind {
                ReadKind::Files => Read::Files(
                    s.tables
                        .iter()
                        .map(|t| crate::lakehouse::queries::FileItem::of(t.clone(), read_of(1)))
                        .collect(),
                ),
                ReadKind::Survey => Read::Survey(s.tables.clone()),
                ReadKind::Probe => Read::Probe(s.tables.clone()),
                _ => Read::Table(s.tables[0].clone()),
            };
            (*id, read)
        })
        .collect()
}

#[test]
fn the_surveys_never_take_the_last_read_slot() {
    let window = |reads, survey_slots| {
        RefreshPolicy {
            reads,
            survey_slots,
            ..Default::default()
        }
        .survey_window()
    };
    assert_eq!(window(4, DEFAULT_SURVEY_SLOTS), (3, 1));
    assert_eq!(window(2, DEFAULT_SURVEY_SLOTS), (1, 1));
    assert_eq!(window(8, DEFAULT_SURVEY_SLOTS), (3, 5));
    assert_eq!(window(4, 1), (1, 3), "one survey slot, as a knob can ask");
    assert_eq!(window(4, 9), (3, 1));
    // A single slot: the surveys run beside it rather than never.
    assert_eq!(window(1, DEFAULT_SURVEY_SLOTS), (1, 1));
    assert_eq!(window(0, 0), (1, 1));
}

#[test]
fn the_file_reads_go_most_excess_files_first_then_the_unranked_then_the_rest() {
    let mut q: std::collections::VecDeque<TableRef> =
        ["a", "b", "c", "d", "e"].iter().map(|n| t(n)).collect();
    let rank = [(t("b"), 0), (t("c"), 7), (t("e"), 40), (t("d"), 7)]
        .into_iter()
        .collect();
    pass::rank_queue(&mut q, &rank);
    // Equal ranks keep their order (c before d).
    assert_eq!(names(q.make_contiguous()), ["e", "c", "d", "a", "b"]);
}

/// Every table read fully once, then a steady refresh that probes them all.
fn steady(h: &mut Harness, tables: &[TableRef]) -> Vec<Request> {
    cold(h, tables);
    h.r.policy.full_every = Some(Duration::from_secs(60));
    h.start(false, tables)
}

/// Every table read fully once by a cold start; the clock a minute on.
fn cold(h: &mut Harness, tables: &[TableRef]) {
    let mut waiting = h.start(false, tables);
    while let Some((id, read)) = waiting.pop() {
        let results = read
            .tables()
            .iter()
            .map(|t| (t.clone(), Ok(read_of(3))))
            .collect();
        waiting.extend(h.answer(id, Answer::Files(results)).reads);
    }
    assert!(!h.r.running());
    for (_, r) in &mut h.recs.0 {
        r.probe = Some(probe(7, t0()));
        r.stats.as_mut().unwrap().metadata_at = Some(t0());
    }
    h.now += chrono::Duration::minutes(1);
}

#[test]
fn a_steady_refresh_probes_in_batches_and_reads_again_only_what_changed() {
    let mut h = Harness::new(4);
    h.r.policy.probe_batch = 2;
    let tables = [t("a"), t("b"), t("c"), t("d")];
    let sent = steady(&mut h, &tables);
    assert!(!h.r.full());
    // The coordinator's writes first (what changed), then all slots but one probe.
    let kinds: Vec<ReadKind> = sent.iter().map(|(_, r)| r.kind()).collect();
    assert_eq!(kinds, [ReadKind::Writes, ReadKind::Probe, ReadKind::Probe]);
    assert_eq!(
        tables_of(&sent, ReadKind::Probe),
        [vec!["a", "b"], vec!["c", "d"]]
    );
    let (writes, _) = of_kind(&sent, ReadKind::Writes)[0].clone();
    let step = h.answer(writes, Answer::Written(Ok(Default::default())));
    assert!(step.reads.is_empty());
    let probes = of_kind(&sent, ReadKind::Probe);
    let step = h.answer(
        probes[0].0,
        Answer::Probed(vec![
            (t("a"), Ok(probe(8, t0() + chrono::Duration::seconds(30)))),
            (t("b"), Ok(probe(7, t0()))),
        ]),
    );
    // Only the changed table is read again, on its own (its probe said a new metadata
    // file).
    assert_eq!(tables_of(&step.reads, ReadKind::Table), [["a"]]);
    assert_eq!(step.settled, [t("b")], "b unchanged keeps its stats");
    assert!(h.rec("b").stats.is_some() && !h.rec("b").cached);
    let step = h.answer(
        probes[1].0,
        Answer::Probed(vec![
            (t("c"), Ok(probe(7, t0()))),
            (t("d"), Ok(probe(7, t0()))),
        ]),
    );
    assert!(step.reads.is_empty() && step.ended.is_none());
    let (read, _) = of_kind(&in_flight(&h), ReadKind::Table)[0].clone();
    let step = h.answer(read, Answer::Table(t("a"), Ok(read_of(3))));
    assert!(step.ended.is_some(), "{step:?}");
    // Nothing changed since: the next refresh reads no table again.
    h.now += chrono::Duration::minutes(1);
    let sent = h.start(false, &tables);
    for (id, read) in sent {
        let step = match read {
            Read::Writes { .. } => h.answer(id, Answer::Written(Ok(Default::default()))),
            Read::Probe(ts) => {
                let results = ts
                    .iter()
                    .map(|x| {
                        let p = h.recs.get(x).unwrap().probe.unwrap_or(probe(7, t0()));
                        (x.clone(), Ok(p))
                    })
                    .collect();
                h.answer(id, Answer::Probed(results))
            }
            other => panic!("{other:?}"),
        };
        assert!(
            of_kind(&step.reads, ReadKind::Survey).is_empty(),
            "{step:?}"
        );
    }
    assert!(!h.r.running());
}

#[test]
fn a_failing_probe_is_that_tables_error_only_and_it_keeps_its_last_verdict() {
    let mut h = Harness::new(4);
    let tables = [t("a"), t("b")];
    let sent = steady(&mut h, &tables);
    let (probe_id, _) = of_kind(&sent, ReadKind::Probe)[0].clone();
    h.answer(
        probe_id,
        Answer::Probed(vec![
            (t("a"), Err(failed("TABLE_NOT_FOUND"))),
            (t("b"), Ok(probe(7, t0()))),
        ]),
    );
    assert!(h.rec("a").error.is_some());
    assert!(h.rec("a").stats.is_some(), "its last stats stay");
    assert!(h.rec("b").error.is_none());
}

#[test]
fn only_a_manual_refresh_lists_with_relearned_layouts_and_reads_everything() {
    let mut h = Harness::new(4);
    let (_, read) = h.r.start(h.now, false, vec![]).unwrap();
    assert_eq!(
        read,
        Read::List {
            schemas: vec![],
            relearn: false,
            reuse: false
        }
    );
    assert!(
        h.r.start(h.now, true, vec![]).is_none(),
        "one refresh at a time"
    );
    h.r.abandon();
    let (_, read) = h.r.start(h.now, true, vec![]).unwrap();
    assert_eq!(
        read,
        Read::List {
            schemas: vec![],
            relearn: true,
            reuse: false
        }
    );
    assert!(h.r.full());
}

#[test]
fn the_full_read_is_due_by_wall_time_never_by_a_count_of_refreshes() {
    let every = Some(Duration::from_secs(3600));
    assert!(full_due(None, every, t0()));
    assert!(!full_due(
        Some(t0()),
        every,
        t0() + chrono::Duration::minutes(59)
    ));
    assert!(full_due(
        Some(t0()),
        every,
        t0() + chrono::Duration::minutes(60)
    ));
    assert!(!full_due(
        Some(t0()),
        None,
        t0() + chrono::Duration::days(9)
    ));
}

/// The defect the refresh's redesign was for: a table read on its own (a maintenance job
/// ended) while the refresh reads it too. Before, the runtime's slot aborted the first
/// read, whose answer never came, and the refresh never ended: floe never refreshed again.
/// Every order the answers can come in ends the refresh, and the newest read settles.
#[test]
fn a_table_read_again_while_the_refresh_reads_it_ends_the_refresh_in_every_order() {
    for order in [[0, 1], [1, 0]] {
        let mut h = Harness::new(4);
        let tables = [t("a"), t("b")];
        let sent = steady(&mut h, &tables);
        let (writes, _) = of_kind(&sent, ReadKind::Writes)[0].clone();
        h.answer(writes, Answer::Written(Ok(Default::default())));
        let (p, _) = of_kind(&sent, ReadKind::Probe)[0].clone();
        let step = h.answer(
            p,
            Answer::Probed(vec![
                (t("a"), Ok(probe(8, t0() + chrono::Duration::seconds(5)))),
                (t("b"), Ok(probe(8, t0() + chrono::Duration::seconds(5)))),
            ]),
        );
        // Both changed: surveyed together.
        let (survey, _) = of_kind(&step.reads, ReadKind::Survey)[0].clone();
        // The job on `a` ends: its row is read again while its survey is in flight.
        let (reload, read) = h.r.reload(&t("a"), &mut h.recs).unwrap();
        assert_eq!(read, Read::Table(t("a")));
        let answers = [
            (
                survey,
                Answer::Surveyed(vec![
                    (t("a"), Ok(survey_of(5000, MB))),
                    (t("b"), Ok(survey_of(3, MB))),
                ]),
            ),
            (reload, Answer::Table(t("a"), Ok(read_of(9)))),
        ];
        let mut ended = false;
        for i in order {
            let (id, a) = answers[i].clone();
            ended |= h.answer(id, a).ended.is_some();
        }
        assert!(
            ended && !h.r.running(),
            "order {order:?}: the refresh ended"
        );
        assert_eq!(h.r.in_flight(), 0);
        // The table's own read settles it; the survey's answer no longer does.
        assert_eq!(h.rec("a").stats.as_ref().unwrap().data_files, 9);
        assert!(h.rec("a").bound.is_none());
        // And the next refresh starts.
        h.now += chrono::Duration::minutes(1);
        assert!(h.r.start(h.now, false, vec![]).is_some());
    }
}

/// An answer to a read the value does not await (another connection's, or one dropped by
/// a new scope) changes nothing: ids are never reused.
#[test]
fn an_answer_to_another_connections_read_is_not_taken() {
    let mut h = Harness::new(4);
    let tables = [t("a")];
    let sent = h.start(false, &tables);
    let (id, _) = sent[0].clone();
    let other = RequestId { epoch: 2, ..id };
    let step = h.answer(other, Answer::Files(vec![(t("a"), Ok(read_of(9)))]));
    assert!(step.settled.is_empty() && h.rec("a").stats.is_none());
    // A new scope drops what was in flight; its answer later is not taken either.
    h.r.abandon();
    let step = h.answer(id, Answer::Files(vec![(t("a"), Ok(read_of(9)))]));
    assert!(step.settled.is_empty() && h.rec("a").stats.is_none());
    let (next, _) = h.r.start(h.now, false, vec![]).unwrap();
    assert!(next.n > id.n, "numbers go on: {next:?} after {id:?}");
}

/// A bound is what a survey proved: never the verdict, never cached; a failed file read
/// keeps the last good verdict with its age.
#[test]
fn a_failed_file_read_keeps_the_last_good_verdict_and_drops_the_bound() {
    let mut h = Harness::new(4);
    let tables = [t("a")];
    let sent = steady(&mut h, &tables);
    let _ = sent;
    h.r.abandon();
    // `r`: a full read; the survey proves a bound, the file read fails.
    let before = h.rec("a").clone();
    let sent = h.start(true, &tables);
    let (survey, _) = sent[0].clone();
    let step = h.answer(
        survey,
        Answer::Surveyed(vec![(t("a"), Ok(survey_of(5000, MB)))]),
    );
    assert_eq!(
        h.rec("a").stats,
        before.stats,
        "the verdict is still the last read"
    );
    assert!(h.rec("a").bound.is_some());
    let (files, _) = of_kind(&step.reads, ReadKind::Files)[0].clone();
    let step = h.answer(
        files,
        Answer::Files(vec![(t("a"), Err(failed("GENERIC_INTERNAL_ERROR")))]),
    );
    assert!(step.ended.is_some());
    let a = h.rec("a");
    assert_eq!(a.stats, before.stats);
    assert_eq!(a.read_at, before.read_at, "marked with its age");
    assert!(a.bound.is_none() && a.error.is_some());
}

#[test]
fn a_write_the_coordinator_ran_is_surveyed_first_without_a_probe() {
    let mut h = Harness::new(4);
    h.r.policy.probe_batch = 10;
    let tables: Vec<TableRef> = (0..100).map(|i| t(&format!("t{i:03}"))).collect();
    let sent = steady(&mut h, &tables);
    assert_eq!(
        of_kind(&sent, ReadKind::Probe).len(),
        3,
        "all slots but one probe"
    );
    let (writes, _) = of_kind(&sent, ReadKind::Writes)[0].clone();
    let step = h.answer(
        writes,
        Answer::Written(Ok(crate::lakehouse::recent_writes::RecentWrites {
            names: vec![vec!["s".into(), "t077".into()]],
            newest: Some(t0()),
            created: vec![],
        })),
    );
    // The written table is read at once in the slot the probes leave.
    assert_eq!(tables_of(&step.reads, ReadKind::Table), [["t077"]]);
    // …and not probed.
    let probed: Vec<String> =
        h.r.pass
            .as_ref()
            .unwrap()
            .probes_left()
            .into_iter()
            .map(|t| t.table)
            .collect();
    assert!(!probed.contains(&"t077".to_string()));
}

/// The probe saw the write first and the table's read went out; the writes' answer that
/// names it comes after: the table is not read a second time (on the real Trino 476, every
/// table written by another client was read twice when the probe answered first).
#[test]
fn a_write_whose_table_a_probe_already_had_read_again_is_not_read_twice() {
    let mut h = Harness::new(4);
    h.r.policy.probe_batch = 2;
    let tables = [t("a"), t("b"), t("c")];
    let sent = steady(&mut h, &tables);
    let probes = of_kind(&sent, ReadKind::Probe);
    let step = h.answer(
        probes[0].0,
        Answer::Probed(vec![
            (t("a"), Ok(probe(8, t0() + chrono::Duration::seconds(30)))),
            (t("b"), Ok(probe(7, t0()))),
        ]),
    );
    assert_eq!(tables_of(&step.reads, ReadKind::Table), [["a"]]);
    let (writes, _) = of_kind(&sent, ReadKind::Writes)[0].clone();
    let step = h.answer(
        writes,
        Answer::Written(Ok(crate::lakehouse::recent_writes::RecentWrites {
            names: vec![vec!["s".into(), "a".into()], vec!["s".into(), "c".into()]],
            newest: Some(t0()),
            created: vec![],
        })),
    );
    // c, whose probe is still out, is read for the write; a is not read again.
    assert_eq!(tables_of(&step.reads, ReadKind::Table), [["c"]], "{step:?}");
    let tables: Vec<Vec<String>> = in_flight(&h)
        .iter()
        .filter(|(_, r)| r.kind() != ReadKind::Probe)
        .map(|(_, r)| r.tables().iter().map(|x| x.table.clone()).collect())
        .collect();
    assert_eq!(tables, [["a"], ["c"]], "one read each");
}

#[test]
fn a_refresh_that_cost_the_coordinator_over_its_budget_probes_fewer_tables() {
    let mut h = Harness::new(4);
    h.r.policy.budget = Some(Duration::from_secs(2));
    let tables: Vec<TableRef> = (0..100).map(|i| t(&format!("t{i:03}"))).collect();
    cold(&mut h, &tables);
    h.r.policy.full_every = Some(Duration::from_secs(600));
    let sent = h.start(false, &tables);
    let probed: usize = of_kind(&sent, ReadKind::Probe)
        .iter()
        .map(|(_, r)| r.tables().len())
        .sum::<usize>()
        + h.r.pass.as_ref().unwrap().probes_left().len();
    // At a minute's refresh every table within ten minutes: ten a refresh.
    assert_eq!(probed, 10);
    h.r.abandon();
    // Eight seconds a minute spent: a quarter as many, a batch every fourth refresh.
    let c = |ms| crate::trino::Cost {
        planning_ms: ms,
        ..Default::default()
    };
    h.r.record_cost(h.now - chrono::Duration::minutes(2), c(0));
    h.r.record_cost(h.now, c(16_000));
    let probed: Vec<usize> = (0..4)
        .map(|_| {
            let (id, _) = h.r.start(h.now, false, vec![]).unwrap();
            let sent = h.answer(id, Answer::Listed(Ok(tables.clone()))).reads;
            let n = of_kind(&sent, ReadKind::Probe)
                .iter()
                .map(|(_, r)| r.tables().len())
                .sum::<usize>()
                + h.r.pass.as_ref().unwrap().probes_left().len();
            h.r.abandon();
            n
        })
        .collect();
    assert_eq!(probed, [0, 0, 0, 10]);
}

/// Tables that must be probed (a failed read) go every refresh, and their statement's
/// free places carry the rotation's owed tables rather than wait for a whole batch.
#[test]
fn the_tables_a_refresh_must_probe_carry_the_rotations_owed_ones_in_their_batch() {
    let mut h = Harness::new(4);
    let tables: Vec<TableRef> = (0..30).map(|i| t(&format!("t{i:02}"))).collect();
    cold(&mut h, &tables);
    h.r.policy.full_every = Some(Duration::from_secs(360));
    for (t, r) in &mut h.recs.0 {
        if t.table == "t07" || t.table == "t19" {
            r.error = Some(failed("TABLE_NOT_FOUND"));
        }
    }
    // Five owed a refresh: with the two that must go, one statement of seven.
    let sent = h.start(false, &tables);
    let probes = tables_of(&sent, ReadKind::Probe);
    assert_eq!(probes.len(), 1, "{probes:?}");
    assert_eq!(probes[0].len(), 7, "{probes:?}");
    assert!(probes[0].iter().any(|x| x == "t07") && probes[0].iter().any(|x| x == "t19"));
}

/// 300 tables to look at within the default hour at a minute's refresh: five a minute,
/// sent as one statement of ten every other minute; within the hour, every table.
#[test]
fn the_probe_rotation_sends_whole_batches_and_looks_at_every_table_within_the_hour() {
    let mut h = Harness::new(4);
    let tables: Vec<TableRef> = (0..300).map(|i| t(&format!("t{i:03}"))).collect();
    cold(&mut h, &tables);
    assert_eq!(h.r.policy.probe_batch, 10);
    let mut probed = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..60 {
        let at = h.now;
        steady_once(&mut h, &tables, "", (&[], &[]));
        let now: Vec<String> = h
            .recs
            .0
            .iter()
            .filter(|(_, r)| r.checked_at == Some(at))
            .map(|(t, _)| t.table.clone())
            .collect();
        probed.push(now.len());
        seen.extend(now);
    }
    assert_eq!(probed[..6], [0, 10, 0, 10, 0, 10]);
    assert_eq!(probed.iter().sum::<usize>(), 300);
    assert_eq!(seen.len(), 300, "every table once");
}

/// However the answers of a cold start interleave (surveys, file reads, every one in a
/// shuffled order), the refresh ends once, with every table settled.
#[test]
fn a_cold_start_of_many_tables_ends_whatever_order_the_answers_come_in() {
    for seed in 0..20u64 {
        let mut h = Harness::new(4);
        let tables: Vec<TableRef> = (0..57).map(|i| t(&format!("t{i:02}"))).collect();
        let mut waiting = h.start(false, &tables);
        let mut ended = 0;
        let mut rng = seed;
        while !waiting.is_empty() {
            rng = rng
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let (id, read) = waiting.remove((rng >> 33) as usize % waiting.len());
            let answer = match &read {
                Read::Survey(ts) => Answer::Surveyed(
                    ts.iter()
                        .enumerate()
                        .map(|(i, x)| {
                            let s = if (i + seed as usize).is_multiple_of(3) {
                                survey_of(500, MB)
                            } else {
                                survey_of(3, MB)
                            };
                            (x.clone(), Ok(s))
                        })
                        .collect(),
                ),
                Read::Files(items) => Answer::Files(
                    items
                        .iter()
                        .map(|i| (i.table.clone(), Ok(read_of(500))))
                        .collect(),
                ),
                other => panic!("{other:?}"),
            };
            let step = h.answer(id, answer);
            ended += usize::from(step.ended.is_some());
            waiting.extend(step.reads);
        }
        assert_eq!(ended, 1, "seed {seed}");
        assert!(!h.r.running());
        assert!(
            h.recs.0.iter().all(|(_, r)| r.stats.is_some()),
            "seed {seed}"
        );
    }
}

#[test]
fn a_listing_that_fails_ends_the_refresh() {
    let mut h = Harness::new(4);
    let (id, _) = h.r.start(h.now, false, vec![]).unwrap();
    let step = h.answer(id, Answer::Listed(Err(failed("CATALOG_NOT_FOUND"))));
    assert!(step.ended.is_some() && !h.r.running());
    assert!(h.r.start(h.now, false, vec![]).is_some());
}

#[test]
fn a_probe_decides_by_the_newest_metadata_file() {
    let mut st = read_of(3);
    let at = t0() - chrono::Duration::hours(1);
    st.metadata_at = Some(at);
    assert!(same_snapshot(&st, &probe(1, at)));
    // A property, schema or spec change or an expiry: a newer metadata file, however the
    // snapshots look.
    assert!(!same_snapshot(
        &st,
        &probe(1, at + chrono::Duration::milliseconds(1))
    ));
    // Stats read without the metadata log (a survey's) are of the probe's snapshot when
    // they name its current snapshot id, and of no snapshot when they name none.
    st.metadata_at = None;
    st.snapshot_id = None;
    assert!(!same_snapshot(&st, &probe(1, at)));
    st.snapshot_id = Some(1);
    assert!(same_snapshot(&st, &probe(1, at)));
    st.snapshot_id = Some(2);
    assert!(!same_snapshot(&st, &probe(1, at)));
}

#[test]
fn the_first_probe_after_a_survey_keeps_its_stats_and_gives_them_the_metadata_log() {
    let mut h = Harness::new(4);
    let tables = [t("a")];
    steady(&mut h, &tables);
    h.r.abandon();
    {
        let a = h.rec_mut("a");
        // What a survey leaves: no metadata log, the newest snapshot's id.
        let st = a.stats.as_mut().unwrap();
        st.metadata_at = None;
        st.metadata_files = None;
        a.probe = None;
    }
    let at = t0() - chrono::Duration::minutes(5);
    let sent = h.start(false, &tables);
    let (p, _) = of_kind(&sent, ReadKind::Probe)[0].clone();
    let mut seen = probe(7, at);
    seen.metadata_files = Some(240);
    let step = h.answer(p, Answer::Probed(vec![(t("a"), Ok(seen))]));
    assert!(
        of_kind(&step.reads, ReadKind::Survey).is_empty(),
        "{step:?}"
    );
    let st = h.rec("a").stats.clone().unwrap();
    assert_eq!((st.metadata_at, st.metadata_files), (Some(at), Some(240)));
}

/// A steady refresh over `tables`, every read answered: the probes find every table gone
/// (`gone` is `*`) or all unchanged, the coordinator's writes name `written`, of which `created` were
/// created. Whether its listing took the last one.
fn steady_once(
    h: &mut Harness,
    tables: &[TableRef],
    gone: &str,
    (written, created): (&[&str], &[&str]),
) -> bool {
    let names = |n: &[&str]| -> Vec<Vec<String>> {
        n.iter()
            .map(|n| vec!["s".to_string(), n.to_string()])
            .collect()
    };
    let (id, read) = h.r.start(h.now, false, vec![]).expect("not running");
    let Read::List { reuse, .. } = read else {
        panic!("{read:?}")
    };
    h.recs.relist(tables);
    let mut waiting = h.answer(id, Answer::Listed(Ok(tables.to_vec()))).reads;
    while let Some((id, read)) = waiting.pop() {
        let answer = match read {
            Read::Probe(ts) => Answer::Probed(
                ts.into_iter()
                    .map(|t| {
                        let r = if gone == "*" {
                            Err(failed("TABLE_NOT_FOUND"))
                        } else {
                            Ok(probe(7, t0()))
                        };
                        (t, r)
                    })
                    .collect(),
            ),
            Read::Writes { .. } => {
                Answer::Written(Ok(crate::lakehouse::recent_writes::RecentWrites {
                    names: names(written),
                    newest: Some(h.now),
                    created: names(created),
                }))
            }
            other => Answer::Files(
                other
                    .tables()
                    .into_iter()
                    .map(|t| (t, Ok(read_of(3))))
                    .collect(),
            ),
        };
        waiting.extend(h.answer(id, answer).reads);
    }
    assert!(!h.r.running(), "the refresh ended");
    h.now += chrono::Duration::minutes(1);
    reuse
}

#[test]
fn a_steady_refresh_lists_again_after_five_minutes_a_new_table_written_or_one_gone() {
    let mut h = Harness::new(4);
    let tables: Vec<TableRef> = (0..3).map(|i| t(&format!("t{i}"))).collect();
    cold(&mut h, &tables);
    // Every table probed at every refresh (a probe finds the one gone).
    h.r.policy.full_every = Some(Duration::from_secs(60));
    let listed: Vec<bool> = (0..6)
        .map(|_| steady_once(&mut h, &tables, "", (&[], &[])))
        .collect();
    // Listed at 0 (the cold start) and 5 minutes on.
    assert_eq!(listed, [true, true, true, true, false, true]);
    // Writes to tables the listing lacks (another catalog's, say) list nothing.
    assert!(steady_once(&mut h, &tables, "", (&["t1", "other"], &[])));
    assert!(steady_once(&mut h, &tables, "", (&[], &[])));
    // A table created through the coordinator: a CREATE names no listed table.
    assert!(steady_once(&mut h, &tables, "", (&["new"], &["new"])));
    let listed = steady_once(&mut h, &tables, "", (&[], &[]));
    assert!(!listed, "listed for the new table");
    let replaced = steady_once(&mut h, &tables, "", (&["t1"], &["t1"]));
    assert!(replaced, "a listed table replaced lists nothing");
    // A table a probe cannot find.
    assert!(steady_once(&mut h, &tables, "*", (&[], &[])));
    assert!(
        !steady_once(&mut h, &tables, "", (&[], &[])),
        "listed for the table gone"
    );
    // A manual refresh lists.
    let (_, read) = h.r.start(h.now, true, vec![]).unwrap();
    assert!(matches!(read, Read::List { reuse: false, .. }));
}

#[test]
fn a_catalog_of_slow_surveys_never_holds_every_slot_while_anothers_tables_wait() {
    let mut h = Harness::new(4);
    let of = |c: &str, i: usize| TableRef::new(c, "s", format!("t{i:02}"));
    // The slow catalog listed first (its statements never answer in this test).
    let tables: Vec<TableRef> = (0..30)
        .map(|i| of("delta", i))
        .chain((0..30).map(|i| of("iceberg", i)))
        .collect();
    let mut sent = h.start(false, &tables);
    let catalog_of = |r: &Request| r.1.tables()[0].catalog.clone();
    for r in of_kind(&sent, ReadKind::Survey) {
        let cs: HashSet<String> = r.1.tables().iter().map(|t| t.catalog.clone()).collect();
        assert_eq!(cs.len(), 1, "one catalog a statement: {r:?}");
    }
    let mut surveyed = 0;
    while surveyed < 30 {
        let flying: Vec<Request> =
            h.r.in_flight
                .iter()
                .filter(|(_, s)| s.kind == ReadKind::Survey)
                .map(|(id, s)| (*id, Read::Survey(s.tables.clone())))
                .collect();
        let slow = flying.iter().filter(|r| catalog_of(r) == "delta").count();
        let fast_sent: usize = flying
            .iter()
            .filter(|r| catalog_of(r) == "iceberg")
            .map(|r| r.1.tables().len())
            .sum();
        // While tables of the fast catalog wait, the slow one has its share of the slots.
        if surveyed + fast_sent < 30 {
            assert!(
                slow <= 2,
                "the slow catalog holds {slow} of 4 slots: {flying:?}"
            );
        }
        let Some(fast) = flying.iter().find(|r| catalog_of(r) == "iceberg") else {
            panic!(
                "no survey of the other catalog in flight after {surveyed} of its tables; sent {sent:?}"
            );
        };
        let results = fast
            .1
            .tables()
            .into_iter()
            .map(|t| (t, Ok(survey_of(3, MB))))
            .collect();
        surveyed += fast.1.tables().len();
        sent = h.answer(fast.0, Answer::Surveyed(results)).reads;
    }
    assert_eq!(surveyed, 30, "every table of the fast catalog surveyed");
}

/// The catalogs of a cold start's first surveys over `delta` tables of one catalog
/// listed first, then `iceberg` of another, with four read slots.
fn first_surveys(delta: usize, iceberg: usize) -> (Vec<String>, Vec<Request>, Harness) {
    let mut h = Harness::new(4);
    let of = |c: &str, i: usize| TableRef::new(c, "s", format!("t{i:03}"));
    let tables: Vec<TableRef> = (0..delta)
        .map(|i| of("delta", i))
        .chain((0..iceberg).map(|i| of("iceberg", i)))
        .collect();
    let sent = h.start(false, &tables);
    let catalogs = of_kind(&sent, ReadKind::Survey)
        .iter()
        .map(|r| r.1.tables()[0].catalog.clone())
        .collect();
    (catalogs, sent, h)
}

#[test]
fn a_catalog_with_more_tables_to_survey_takes_the_slot_two_catalogs_tie_for() {
    // The smaller catalog listed first: 20 tables against 30.
    let (catalogs, sent, _) = first_surveys(20, 30);
    // The larger catalog first; then each below its share in turn (20 against 30
    // queued gives two and two: the fourth goes to the smaller, 2 of its 10 left
    // against 3 of the larger's 10).
    assert_eq!(
        catalogs,
        ["iceberg", "delta", "iceberg", "delta"],
        "{sent:?}"
    );
}

#[test]
fn a_catalog_takes_the_share_of_the_slots_its_share_of_the_tables_gives() {
    // The smaller catalog listed first: 100 tables against 200.
    let (catalogs, sent, _) = first_surveys(100, 200);
    // Of four slots, three to the catalog with two thirds of the tables (taking turns
    // gave each two, and the larger one's tables waited behind the smaller's).
    assert_eq!(
        catalogs,
        ["iceberg", "delta", "iceberg", "iceberg"],
        "{sent:?}"
    );
}

/// Answer every survey of `reads` with three small files a table (settled by its
/// totals): the reads that answers send.
fn survey_all(h: &mut Harness, reads: &[Request]) -> Vec<Request> {
    let mut sent = Vec::new();
    for (id, read) in of_kind(reads, ReadKind::Survey) {
        let results = read
            .tables()
            .into_iter()
            .map(|t| (t, Ok(survey_of(3, MB))))
            .collect();
        sent.extend(h.answer(id, Answer::Surveyed(results)).reads);
    }
    sent
}

#[test]
fn a_catalogs_tables_are_surveyed_while_anothers_listing_is_awaited() {
    let mut h = Harness::new(4);
    let of = |c: &str, i: usize| TableRef::new(c, "s", format!("t{i:03}"));
    let iceberg: Vec<TableRef> = (0..25).map(|i| of("iceberg", i)).collect();
    let delta: Vec<TableRef> = (0..12).map(|i| of("delta", i)).collect();
    let (list, _) = h.r.start(h.now, false, vec![]).expect("not running");
    // The Iceberg catalog's listing answers first: its tables are surveyed at once.
    h.recs.add(&iceberg);
    let step = h.answer(list, Answer::ListedPart(iceberg.clone()));
    let mut sent = step.reads;
    assert_eq!(tables_of(&sent, ReadKind::Survey).len(), 3, "{sent:?}");
    assert!(h.r.expects(list), "the listing is still awaited");
    assert!(step.ended.is_none());
    // A survey answered before the whole listing: the refresh goes on.
    let first = sent.remove(0);
    sent.extend(survey_all(&mut h, &[first]));
    assert!(h.r.running());
    // The whole listing: the other catalog's tables are queued, the first's not again.
    let all: Vec<TableRef> = delta.iter().chain(&iceberg).cloned().collect();
    h.recs.relist(&all);
    let step = h.answer(list, Answer::Listed(Ok(all.clone())));
    assert!(!h.r.expects(list));
    sent.extend(step.reads);
    let mut surveyed: Vec<TableRef> = iceberg[..10].to_vec();
    let mut ended = 0;
    while !sent.is_empty() {
        let batch = std::mem::take(&mut sent);
        for (_, r) in of_kind(&batch, ReadKind::Survey) {
            surveyed.extend(r.tables());
        }
        for (id, _) in of_kind(&batch, ReadKind::Survey) {
            let found = h.r.in_flight[&id].tables.clone();
            let results = found.into_iter().map(|t| (t, Ok(survey_of(3, MB))));
            let step = h.answer(id, Answer::Surveyed(results.collect()));
            ended += usize::from(step.ended.is_some());
            sent.extend(step.reads);
        }
    }
    surveyed.sort();
    let mut expected = all.clone();
    expected.sort();
    assert_eq!(surveyed, expected, "every table surveyed, once");
    assert_eq!(ended, 1);
    assert!(!h.r.running());
}

#[test]
fn a_listing_that_fails_after_a_catalogs_part_reads_nothing_more() {
    let mut h = Harness::new(4);
    let iceberg: Vec<TableRef> = (0..60).map(|i| t(&format!("t{i:02}"))).collect();
    let (list, _) = h.r.start(h.now, false, vec![]).expect("not running");
    h.recs.add(&iceberg);
    let sent = h.answer(list, Answer::ListedPart(iceberg.clone())).reads;
    assert_eq!(of_kind(&sent, ReadKind::Survey).len(), 4, "{sent:?}");
    // The other catalog's listing failed: what is queued is dropped, what is in flight
    // ends the refresh.
    let step = h.answer(list, Answer::Listed(Err(failed("CATALOG_NOT_FOUND"))));
    assert!(step.reads.is_empty(), "{:?}", step.reads);
    assert!(step.ended.is_none(), "four surveys still in flight");
    let mut ended = Vec::new();
    for (id, read) in sent {
        let results = read.tables().into_iter().map(|t| (t, Ok(survey_of(3, MB))));
        let step = h.answer(id, Answer::Surveyed(results.collect()));
        assert!(step.reads.is_empty(), "{:?}", step.reads);
        ended.extend(step.ended);
    }
    assert_eq!(ended.len(), 1);
    assert!(ended[0].listing_failed);
    assert_eq!(h.r.standing(&t("t55"), h.rec("t55")), Standing::Idle);
}

#[test]
fn a_steady_refresh_waits_for_the_whole_listing() {
    let mut h = Harness::new(4);
    let tables: Vec<TableRef> = (0..20).map(|i| t(&format!("t{i:02}"))).collect();
    let sent = h.start(false, &tables);
    let more = survey_all(&mut h, &sent);
    assert!(more.is_empty() && !h.r.running(), "{more:?}");
    // A steady refresh that lists (the manual flag is not set, nothing is stale: the
    // listing is reused, as a statement it would be the same).
    h.now += chrono::Duration::seconds(60);
    let (list, _) = h.r.start(h.now, false, vec![]).expect("not running");
    assert!(!h.r.full());
    let step = h.answer(list, Answer::ListedPart(tables[..10].to_vec()));
    assert!(step.reads.is_empty(), "{:?}", step.reads);
    assert!(h.r.expects(list));
}

#[test]
fn a_catalogs_last_tables_never_wait_while_another_holds_every_slot() {
    // 100 Delta tables (slow surveys) beside 20 Iceberg ones: the Iceberg catalog's
    // share is one slot of four.
    let (catalogs, sent, mut h) = first_surveys(100, 20);
    assert_eq!(catalogs, ["delta", "iceberg", "delta", "delta"], "{sent:?}");
    // Its first ten are in; ten are left against the Delta catalog's 70. By shares the
    // Delta catalog would take the free slot, and all four: the Iceberg tables' last
    // batch would wait for a Delta survey to end (10 s in the lab's trace).
    let iceberg = of_kind(&sent, ReadKind::Survey)
        .into_iter()
        .find(|(_, r)| r.tables()[0].catalog == "iceberg")
        .expect("an Iceberg survey");
    let next = survey_all(&mut h, &[iceberg]);
    let surveys = tables_of(&next, ReadKind::Survey);
    assert_eq!(surveys.len(), 1, "{next:?}");
    let (_, read) = &of_kind(&next, ReadKind::Survey)[0];
    assert_eq!(read.tables()[0].catalog, "iceberg", "{next:?}");
}
