//! Fixtures of the refresh's tests and of the screens' that drive it.

use chrono::{DateTime, TimeZone, Utc};

use crate::lakehouse::model::TableStats;
use crate::lakehouse::summary::{Survey, Totals};

pub fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 29, 9, 0, 0).unwrap()
}

/// What a survey finds of a table of `files` data files of `each` bytes, its newest
/// snapshot `7`.
pub fn survey_of(files: u64, each: u64) -> Survey {
    let totals = Totals {
        snapshots: 2,
        snapshot_id: Some(7),
        committed_at: Some(t0()),
        oldest_snapshot: Some(t0()),
        data_files: Some(files),
        files_size: Some(files * each),
        delete_files: Some(0),
        records: Some(files * 10),
        position_deletes: Some(0),
        equality_deletes: Some(0),
        ..Default::default()
    };
    Survey {
        totals,
        stats: TableStats {
            snapshots: 2,
            snapshot_id: Some(7),
            oldest_snapshot: Some(t0()),
            newest_snapshot: Some(t0()),
            ..Default::default()
        },
        meta: None,
        props: Some(crate::lakehouse::summary::Props::default()),
        history: Vec::new(),
        complete: false,
        long_history: false,
        removed_by_newest: Some(0),
    }
}
