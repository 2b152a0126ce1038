//! What a statement returns: its rows and counts, its progress while it runs, and the
//! options of one call.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::value::{Column, Row};
use super::wire::StatementStats;

/// Progress of a running query, from its `stats`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QueryProgress {
    pub query_id: String,
    pub state: String,
    pub scheduled: bool,
    /// Present once the query is scheduled (and the server computes it).
    pub percentage: Option<f64>,
    pub total_splits: u64,
    pub queued_splits: u64,
    pub running_splits: u64,
    pub completed_splits: u64,
    pub processed_rows: u64,
    pub processed_bytes: u64,
    pub physical_written_bytes: u64,
    pub elapsed_ms: u64,
    pub cpu_ms: u64,
    pub info_uri: Option<String>,
}

impl QueryProgress {
    pub(super) fn from_stats(
        id: &str,
        info_uri: &Option<String>,
        s: &StatementStats,
    ) -> QueryProgress {
        QueryProgress {
            query_id: id.to_string(),
            state: s.state.clone(),
            scheduled: s.scheduled,
            percentage: s.progress_percentage,
            total_splits: s.total_splits,
            queued_splits: s.queued_splits,
            running_splits: s.running_splits,
            completed_splits: s.completed_splits,
            processed_rows: s.processed_rows,
            processed_bytes: s.processed_bytes,
            physical_written_bytes: s.physical_written_bytes,
            elapsed_ms: s.elapsed_time_millis,
            cpu_ms: s.cpu_time_millis,
            info_uri: info_uri.clone(),
        }
    }
}

/// The complete answer to a statement.
#[derive(Clone, Debug)]
pub struct QueryOutput {
    pub query_id: String,
    pub info_uri: Option<String>,
    pub columns: Arc<Vec<Column>>,
    pub rows: Vec<Row>,
    pub update_type: Option<String>,
    pub update_count: Option<i64>,
    pub warnings: Vec<String>,
    pub progress: QueryProgress,
    /// Requests answered 429/502/503/504 or failed in transit and replayed.
    pub retries: u32,
}

impl QueryOutput {
    /// `metric_name`/`metric_value` rows (what Trino 481+ returns for table procedures).
    pub fn metrics(&self) -> Option<BTreeMap<String, i64>> {
        let names: Vec<&str> = self.columns.iter().map(|c| c.name.as_str()).collect();
        if names != ["metric_name", "metric_value"] {
            return None;
        }
        Some(
            self.rows
                .iter()
                .filter_map(|r| Some((r.str("metric_name")?.to_string(), r.i64("metric_value")?)))
                .collect(),
        )
    }
}

/// Options of one call.
#[derive(Default)]
pub struct QueryOptions<'a> {
    pub progress: Option<&'a (dyn Fn(&QueryProgress) + Send + Sync)>,
    pub cancel: Option<CancellationToken>,
    /// Overrides the client's query timeout; `Some(None)` means no deadline at all.
    pub deadline: Option<Option<Duration>>,
    /// Extra session properties for this statement only.
    pub session: Vec<(String, String)>,
    /// The statement changes data (`ALTER TABLE … EXECUTE`, DML): its POST is sent again only
    /// after what proves it never started (a refused connection, Trino's own 503 while it
    /// initialises); a 502/504 or a connection lost after sending is
    /// [`TrinoError::MayHaveRun`](super::TrinoError::MayHaveRun).
    pub mutation: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trino::{TrinoType, Value};

    #[test]
    fn metrics_shape() {
        let cols = Arc::new(vec![
            Column {
                name: "metric_name".into(),
                type_text: "varchar".into(),
                ty: TrinoType::Varchar,
            },
            Column {
                name: "metric_value".into(),
                type_text: "bigint".into(),
                ty: TrinoType::BigInt,
            },
        ]);
        let out = QueryOutput {
            query_id: "q".into(),
            info_uri: None,
            columns: cols.clone(),
            rows: vec![Row {
                columns: cols,
                values: vec![
                    Value::Text("rewritten_data_files_count".into()),
                    Value::Int(12),
                ],
            }],
            update_type: Some("ALTER TABLE EXECUTE".into()),
            update_count: None,
            warnings: vec![],
            progress: QueryProgress::default(),
            retries: 0,
        };
        assert_eq!(out.metrics().unwrap()["rewritten_data_files_count"], 12);
    }
}
