//! What an optimize will cost before `y`: its expected duration from the bytes per
//! second earlier optimizes on the same coordinator rewrote — the audit log's own
//! records and the coordinator's query history — with the basis named; and, when that is
//! long, the incremental plan (the partitions whose small files are oldest first).
//!
//! The two sources measure different bytes: the audit log records the bytes of the
//! partitions a statement covered (what a plan counts, [`Plan::bytes`]), the coordinator
//! the bytes an optimize wrote (its small files rewritten, fewer). A rate is never made of
//! both: the audit log's when it has any, the coordinator's otherwise — and then, applied
//! to a plan's bytes, its estimate is an upper bound, never a reason for the incremental
//! plan.
//!
//! Pure, but for [`measure`], which reads the two sources.
//!
//! [`Plan::bytes`]: crate::lakehouse::plan::Plan::bytes

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::audit::{Action, Outcome, Record};
use crate::fmt::{human_bytes, human_duration, thousands};
use crate::lakehouse::model::PartitionStats;
use crate::lakehouse::queries::Lakehouse;
use crate::lakehouse::query_history::{QueryRun, QueryState};

/// Earlier optimizes a rate is measured over (the newest).
pub const RATE_SAMPLES: usize = 5;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum From {
    AuditLog,
    Coordinator,
}

/// One earlier optimize: what it rewrote, in how long.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Sample {
    pub query_id: Option<String>,
    pub at: Option<DateTime<Utc>>,
    pub bytes: u64,
    pub ms: u64,
    pub from: From,
}

/// Bytes rewritten per second over the newest earlier optimizes.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Rate {
    pub bytes_per_sec: f64,
    pub samples: usize,
    pub from_audit: usize,
    pub from_coordinator: usize,
}

/// The measured rate, and what could not be read for it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Measured {
    pub rate: Option<Rate>,
    pub notes: Vec<String>,
}

fn same_target(a: &str, b: &str) -> bool {
    a.trim_end_matches('/') == b.trim_end_matches('/')
}

/// The audit log's succeeded optimize statements on the coordinator at `target` that
/// recorded what they rewrote.
pub fn audit_samples(records: &[Record], target: &str) -> Vec<Sample> {
    records
        .iter()
        .filter(|r| r.action == Action::Optimize && r.outcome == Outcome::Succeeded)
        .filter(|r| same_target(&r.target, target) && r.duration_ms > 0)
        .filter_map(|r| {
            Some(Sample {
                query_id: r.query_id.clone(),
                at: DateTime::parse_from_rfc3339(&r.time)
                    .ok()
                    .map(|t| t.with_timezone(&Utc)),
                bytes: r.bytes_before.filter(|b| *b > 0)?,
                ms: r.duration_ms,
                from: From::AuditLog,
            })
        })
        .collect()
}

/// The coordinator's finished optimizes, by the bytes they wrote.
pub fn coordinator_samples(runs: &[QueryRun]) -> Vec<Sample> {
    runs.iter()
        .filter(|r| r.state == QueryState::Finished)
        .filter_map(|r| {
            Some(Sample {
                query_id: Some(r.query_id.clone()),
                at: r.created,
                bytes: r.physical_written_bytes.filter(|b| *b > 0)?,
                ms: r.elapsed_ms.filter(|m| *m > 0)?,
                from: From::Coordinator,
            })
        })
        .collect()
}

/// The rate of the newest [`RATE_SAMPLES`] samples of one measure: the audit log's (a
/// plan's own measure) when it holds any, else the coordinator's (one per query: the
/// audit log's record of a query the coordinator also keeps counts once).
pub fn rate(mut samples: Vec<Sample>) -> Option<Rate> {
    samples.sort_by_key(|s| s.from != From::AuditLog);
    let mut seen = std::collections::HashSet::new();
    samples.retain(|s| s.query_id.as_ref().is_none_or(|q| seen.insert(q.clone())));
    if samples.iter().any(|s| s.from == From::AuditLog) {
        samples.retain(|s| s.from == From::AuditLog);
    }
    samples.sort_by_key(|s| std::cmp::Reverse(s.at));
    samples.truncate(RATE_SAMPLES);
    let bytes: u64 = samples.iter().map(|s| s.bytes).sum();
    let ms: u64 = samples.iter().map(|s| s.ms).sum();
    (ms > 0 && bytes > 0).then(|| Rate {
        bytes_per_sec: bytes as f64 * 1000.0 / ms as f64,
        samples: samples.len(),
        from_audit: samples.iter().filter(|s| s.from == From::AuditLog).count(),
        from_coordinator: samples
            .iter()
            .filter(|s| s.from == From::Coordinator)
            .count(),
    })
}

/// Seconds to rewrite `bytes` at `rate`.
pub fn seconds(bytes: u64, rate: &Rate) -> u64 {
    (bytes as f64 / rate.bytes_per_sec).ceil().max(1.0) as u64
}

impl Rate {
    /// Measured in a plan's own bytes (the partitions' bytes the audit log records): its
    /// estimate of a plan is an estimate. A rate of the bytes optimizes wrote (the
    /// coordinator's) gives an upper bound only.
    pub fn in_plan_measure(&self) -> bool {
        self.from_audit > 0
    }

    /// `the 1.9 MB/s of the last 5 optimizes (3 in the audit log, 2 in the coordinator's history)`.
    pub fn basis(&self) -> String {
        let per = human_bytes(self.bytes_per_sec.round() as u64);
        let what = if self.samples == 1 {
            "the last optimize".to_string()
        } else {
            format!("the last {} optimizes", self.samples)
        };
        let mut from = Vec::new();
        if self.from_audit > 0 {
            from.push(format!("{} in the audit log", self.from_audit));
        }
        if self.from_coordinator > 0 {
            from.push(format!(
                "{} in the coordinator's history",
                self.from_coordinator
            ));
        }
        if self.in_plan_measure() {
            format!("the {per}/s of {what} ({})", from.join(", "))
        } else {
            format!(
                "the {per}/s {what} wrote ({}; a plan counts its partitions' bytes, more than it writes)",
                from.join(", ")
            )
        }
    }
}

/// `~2h40m at the 1.9 MB/s of the last 5 optimizes (…)`, or `first time here: no estimate`.
pub fn eta_text(bytes: u64, rate: Option<&Rate>) -> String {
    match rate {
        Some(r) => format!(
            "{}{} at {}",
            if r.in_plan_measure() { "~" } else { "at most " },
            human_duration(seconds(bytes, r) as i64),
            r.basis()
        ),
        None => "first time here: no estimate".into(),
    }
}

/// The incremental plan's first part: the partitions whose small files are oldest (a
/// partition without that time after those with one, in their order), until they hold
/// `share` of the small files; then the rest.
pub fn split_incremental(
    parts: &[PartitionStats],
    share: f64,
) -> (Vec<PartitionStats>, Vec<PartitionStats>) {
    let mut v: Vec<PartitionStats> = parts.to_vec();
    v.sort_by_key(|p| (p.oldest_small_file_at.is_none(), p.oldest_small_file_at));
    let total: u64 = v.iter().map(|p| p.small_files).sum();
    let want = (total as f64 * share).ceil() as u64;
    let mut held = 0;
    let mut cut = 0;
    for p in &v {
        if held >= want && cut > 0 {
            break;
        }
        held += p.small_files;
        cut += 1;
    }
    let rest = v.split_off(cut);
    (v, rest)
}

/// `12 partitions, 1,004 small files, 1.9 GB`.
pub fn part_text(parts: &[PartitionStats]) -> String {
    let small: u64 = parts.iter().map(|p| p.small_files).sum();
    let bytes: u64 = parts.iter().map(|p| p.total_bytes).sum();
    format!(
        "{} partition{}, {} small files, {}",
        parts.len(),
        if parts.len() == 1 { "" } else { "s" },
        thousands(small),
        human_bytes(bytes)
    )
}

/// What `floe maintain optimize` prints about the cost before it runs.
pub fn cli_lines(plan: &crate::lakehouse::plan::Plan, m: &Measured) -> Vec<String> {
    let mut out = vec![if plan.bytes() > 0 {
        format!("expected: {}", eta_text(plan.bytes(), m.rate.as_ref()))
    } else {
        "expected: no estimate (a whole-table plan does not count its files; a --partition plan does)".into()
    }];
    out.extend(m.notes.iter().map(|n| format!("estimate: {n}")));
    out
}

/// How long [`measure`] waits for the coordinator's history.
pub const MEASURE_WITHIN: std::time::Duration = std::time::Duration::from_secs(5);

/// Read the rate of the optimizes this coordinator ran: the audit log's and the
/// coordinator's own history (what cannot be read is a note, not an error).
pub async fn measure(lake: &Lakehouse, audit: &[Record]) -> Measured {
    let target = lake.client.url().to_string();
    let mut samples = audit_samples(audit, &target);
    let mut notes = Vec::new();
    // The estimate never holds up the confirmation: a history that does not answer in time
    // is a note (dropping the read cancels it on the coordinator).
    match tokio::time::timeout(MEASURE_WITHIN, lake.optimize_runs()).await {
        Ok(Ok(crate::lakehouse::query_history::TableQueries::Runs { runs, .. })) => {
            samples.extend(coordinator_samples(&runs))
        }
        Ok(Ok(crate::lakehouse::query_history::TableQueries::Unavailable { reason })) => {
            notes.push(reason)
        }
        Ok(Err(e)) => notes.push(format!(
            "the coordinator's optimizes could not be read: {e}"
        )),
        Err(_) => notes.push(format!(
            "the coordinator's query history did not answer within {}s",
            MEASURE_WITHIN.as_secs()
        )),
    }
    Measured {
        rate: rate(samples),
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn sample(id: &str, min: i64, mb: u64, secs: u64, from: From) -> Sample {
        Sample {
            query_id: Some(id.into()),
            at: Some(
                Utc.with_ymd_and_hms(2026, 11, 29, 8, 0, 0).unwrap()
                    + chrono::Duration::minutes(min),
            ),
            bytes: mb << 20,
            ms: secs * 1000,
            from,
        }
    }

    #[test]
    fn the_rate_of_the_newest_optimizes_with_its_basis() {
        let v = vec![
            sample("q1", 1, 1000, 1, From::Coordinator), // oldest: left out
            sample("q2", 2, 100, 50, From::AuditLog),
            sample("q2", 2, 100, 60, From::Coordinator), // the same query: once
            sample("q3", 3, 100, 50, From::AuditLog),
            sample("q4", 4, 100, 50, From::Coordinator),
            sample("q5", 5, 100, 50, From::AuditLog),
            sample("q6", 6, 100, 50, From::Coordinator),
        ];
        // The audit log's, in a plan's own measure: the coordinator's are left out.
        let r = rate(v.clone()).unwrap();
        assert_eq!(r.samples, 3);
        assert_eq!((r.from_audit, r.from_coordinator), (3, 0));
        assert_eq!(r.bytes_per_sec.round() as u64, 2 << 20);
        assert_eq!(
            eta_text(19_600 << 20, Some(&r)),
            "~2h43m at the 2.0 MB/s of the last 3 optimizes (3 in the audit log)"
        );
        // The coordinator's only (q2 among them, 60 s): the newest five, an upper bound.
        let coordinator: Vec<Sample> = v
            .into_iter()
            .filter(|s| s.from == From::Coordinator)
            .chain([
                sample("q7", 7, 100, 50, From::Coordinator),
                sample("q8", 8, 100, 50, From::Coordinator),
            ])
            .collect();
        let r = rate(coordinator).unwrap();
        assert_eq!((r.samples, r.from_audit, r.from_coordinator), (5, 0, 5));
        assert!(!r.in_plan_measure());
        assert_eq!(
            eta_text(19_600 << 20, Some(&r)),
            "at most 2h49m at the 1.9 MB/s the last 5 optimizes wrote (5 in the coordinator's history; a plan counts its partitions' bytes, more than it writes)"
        );
        assert_eq!(eta_text(1 << 30, None), "first time here: no estimate");
        assert!(rate(Vec::new()).is_none());
    }

    #[test]
    fn audit_records_count_on_their_own_coordinator_only() {
        let rec = |target: &str, outcome: &str, bytes: Option<u64>| {
            let mut r = Record::now("p", "floe", target, Action::Optimize, "ALTER TABLE …");
            r.outcome = Outcome::parse(outcome);
            r.duration_ms = 10_000;
            r.bytes_before = bytes;
            r
        };
        let v = vec![
            rec("http://t:8080/", "succeeded", Some(10 << 20)),
            rec("http://t:8080", "succeeded", Some(10 << 20)),
            rec("http://other:8080/", "succeeded", Some(10 << 20)),
            rec("http://t:8080/", "failed", Some(10 << 20)),
            rec("http://t:8080/", "succeeded", None),
        ];
        assert_eq!(audit_samples(&v, "http://t:8080/").len(), 2);
    }

    #[test]
    fn the_incremental_plan_takes_the_oldest_small_files_first() {
        let p = |name: &str, small: u64, day: Option<u32>| PartitionStats {
            values: vec![("d".into(), Some(name.into()))],
            data_files: small,
            small_files: small,
            total_bytes: small << 20,
            records: 0,
            min_file: 0,
            max_file: 0,
            delete_files: 0,
            oldest_small_file_at: day.map(|d| Utc.with_ymd_and_hms(2026, 11, d, 0, 0, 0).unwrap()),
            spec_id: None,
        };
        let parts = vec![
            p("new", 500, Some(20)),
            p("unknown", 100, None),
            p("old", 300, Some(2)),
            p("mid", 300, Some(10)),
        ];
        let (first, rest) = split_incremental(&parts, 0.5);
        let names = |v: &[PartitionStats]| v.iter().map(|p| p.label()).collect::<Vec<_>>();
        assert_eq!(names(&first), vec!["d=old", "d=mid"]);
        assert_eq!(names(&rest), vec!["d=new", "d=unknown"]);
        assert_eq!(part_text(&first), "2 partitions, 600 small files, 600 MB");
        let (all, none) = split_incremental(&parts, 1.0);
        assert_eq!((all.len(), none.len()), (4, 0));
    }
}
