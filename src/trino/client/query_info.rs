//! The coordinator's record of one query (`GET /v1/query/{id}?pruned=true`): what it
//! cost (elapsed, queued, CPU, splits, bytes read and written) and the tables it read.
//! Trino writes durations and sizes in airlift's forms (`4.20m`, `97.91ms`, `18569B`,
//! `1.50GB`); they are parsed here, once.

use serde_json::Value as Json;

use super::Client;
use crate::trino::error::TrinoError;

/// A table a query read, as the coordinator names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueryInput {
    pub catalog: String,
    pub schema: String,
    pub table: String,
}

/// One query as the coordinator recorded it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QueryInfo {
    pub query_id: String,
    pub state: String,
    pub elapsed_ms: Option<u64>,
    pub queued_ms: Option<u64>,
    /// The coordinator's planning of it (`planningTime`), inside `elapsed_ms`: wall time,
    /// which grows with whatever else the coordinator's cores do meanwhile.
    pub planning_ms: Option<u64>,
    /// The CPU the coordinator spent planning it (`planningCpuTime`): what the planning
    /// cost it, whatever else ran beside.
    pub planning_cpu_ms: Option<u64>,
    pub cpu_ms: Option<u64>,
    /// Drivers, one per split.
    pub splits: Option<u64>,
    pub physical_input_bytes: Option<u64>,
    pub physical_written_bytes: Option<u64>,
    /// What its tasks read (`processedInputDataSize`, `processedInputPositions`): for a
    /// metadata table, the rows and bytes the connector produced from it.
    pub processed_bytes: Option<u64>,
    pub processed_rows: Option<u64>,
    /// Trino's progress of a running query (`progressPercentage`, 0-100), once scheduled.
    pub progress: Option<f64>,
    pub inputs: Vec<QueryInput>,
}

/// Milliseconds of an airlift duration (`97.91ms`, `4.20m`, `1.35us`, `2.00s`).
pub fn parse_duration_ms(s: &str) -> Option<u64> {
    let s = s.trim();
    let split = s.find(|c: char| c.is_ascii_alphabetic())?;
    let (num, unit) = s.split_at(split);
    let v: f64 = num.trim().parse().ok()?;
    let ms = match unit {
        "ns" => v / 1e6,
        "us" => v / 1e3,
        "ms" => v,
        "s" => v * 1e3,
        "m" => v * 60e3,
        "h" => v * 3600e3,
        "d" => v * 86_400e3,
        _ => return None,
    };
    (ms.is_finite() && ms >= 0.0).then_some(ms.round() as u64)
}

/// Bytes of an airlift data size (`18569B`, `1.2kB`, `3.50MB`; binary multiples).
pub fn parse_data_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let split = s.find(|c: char| c.is_ascii_alphabetic())?;
    let (num, unit) = s.split_at(split);
    let v: f64 = num.trim().parse().ok()?;
    let mult = match unit {
        "B" => 1.0,
        "kB" => 1024.0,
        "MB" => 1024.0 * 1024.0,
        "GB" => 1024.0 * 1024.0 * 1024.0,
        "TB" => 1024.0f64.powi(4),
        "PB" => 1024.0f64.powi(5),
        _ => return None,
    };
    let b = v * mult;
    (b.is_finite() && b >= 0.0).then_some(b.round() as u64)
}

/// The parts of a query info document floe reads; `None` when it is not one.
pub fn parse_query_info(doc: &Json) -> Option<QueryInfo> {
    let query_id = doc.get("queryId")?.as_str()?.to_string();
    let stats = doc.get("queryStats");
    let dur = |k: &str| {
        stats
            .and_then(|s| s.get(k))
            .and_then(Json::as_str)
            .and_then(parse_duration_ms)
    };
    let size = |k: &str| {
        stats
            .and_then(|s| s.get(k))
            .and_then(Json::as_str)
            .and_then(parse_data_size)
    };
    let inputs = doc
        .get("inputs")
        .and_then(Json::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|i| {
                    Some(QueryInput {
                        catalog: i.get("catalogName")?.as_str()?.to_string(),
                        schema: i.get("schema")?.as_str()?.to_string(),
                        table: i.get("table")?.as_str()?.to_string(),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    Some(QueryInfo {
        query_id,
        state: doc
            .get("state")
            .and_then(Json::as_str)
            .unwrap_or_default()
            .to_string(),
        elapsed_ms: dur("elapsedTime"),
        queued_ms: dur("queuedTime"),
        planning_ms: dur("planningTime"),
        planning_cpu_ms: dur("planningCpuTime"),
        cpu_ms: dur("totalCpuTime"),
        splits: stats
            .and_then(|s| s.get("totalDrivers"))
            .and_then(Json::as_u64),
        physical_input_bytes: size("physicalInputDataSize"),
        physical_written_bytes: size("physicalWrittenDataSize"),
        processed_bytes: size("processedInputDataSize"),
        processed_rows: stats
            .and_then(|s| s.get("processedInputPositions"))
            .and_then(Json::as_u64),
        progress: stats
            .and_then(|s| s.get("progressPercentage"))
            .and_then(Json::as_f64)
            .filter(|p| p.is_finite() && (0.0..=100.0).contains(p)),
        inputs,
    })
}

impl Client {
    /// `GET /v1/query/{id}?pruned=true`: the coordinator's record of a query it still
    /// keeps. A query it no longer keeps is [`TrinoError::Http`] 410; one the user may not
    /// see is [`TrinoError::Auth`] 403.
    pub async fn query_info(&self, query_id: &str) -> Result<QueryInfo, TrinoError> {
        let mut url = self.endpoint("v1/query/")?;
        url.path_segments_mut()
            .map_err(|()| TrinoError::Config(format!("bad Trino URL {}", self.url())))?
            .pop_if_empty()
            .push(query_id);
        url.query_pairs_mut().append_pair("pruned", "true");
        let text = self.get_document(&url).await?;
        let malformed = |m: String| TrinoError::Malformed {
            url: url.to_string(),
            message: m,
        };
        let doc: Json = serde_json::from_str(&text)
            .map_err(|e| malformed(format!("not a Trino query info document: {e}")))?;
        parse_query_info(&doc).ok_or_else(|| malformed("a query info without a queryId".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn airlift_units() {
        assert_eq!(parse_duration_ms("97.91ms"), Some(98));
        assert_eq!(parse_duration_ms("4.20m"), Some(252_000));
        assert_eq!(parse_duration_ms("1.35us"), Some(0));
        assert_eq!(parse_duration_ms("2.00s"), Some(2_000));
        assert_eq!(parse_duration_ms("1.50h"), Some(5_400_000));
        assert_eq!(parse_duration_ms("fast"), None);
        assert_eq!(parse_duration_ms("3parsecs"), None);
        assert_eq!(parse_data_size("18569B"), Some(18_569));
        assert_eq!(parse_data_size("1.50kB"), Some(1_536));
        assert_eq!(parse_data_size("2MB"), Some(2 * 1024 * 1024));
        assert_eq!(parse_data_size("-1B"), None);
        assert_eq!(parse_data_size("12XB"), None);
    }

    #[test]
    fn reads_stats_and_inputs() {
        let doc: Json = serde_json::json!({
            "queryId": "20261201_194137_00014_m5ieq",
            "state": "FINISHED",
            "queryStats": {
                "elapsedTime": "4.20m", "queuedTime": "3.03ms", "planningTime": "1.50s",
                "planningCpuTime": "640.00ms", "totalCpuTime": "12.00s", "processedInputDataSize": "2.00kB",
                "processedInputPositions": 2004,
                "totalDrivers": 18000, "physicalInputDataSize": "35.16GB",
                "physicalWrittenDataSize": "0B"
            },
            "inputs": [{"connectorName": "iceberg", "catalogName": "iceberg",
                        "schema": "zoning", "table": "documents", "columns": []}]
        });
        let q = parse_query_info(&doc).unwrap();
        assert_eq!(q.elapsed_ms, Some(252_000));
        assert_eq!(q.queued_ms, Some(3));
        assert_eq!(q.planning_ms, Some(1_500));
        assert_eq!(q.planning_cpu_ms, Some(640));
        assert_eq!(q.cpu_ms, Some(12_000));
        assert_eq!(q.processed_bytes, Some(2_048));
        assert_eq!(q.processed_rows, Some(2_004));
        assert_eq!(q.splits, Some(18_000));
        assert_eq!(q.physical_input_bytes, Some(37_752_762_532));
        assert_eq!(q.physical_written_bytes, Some(0));
        assert_eq!(
            q.inputs,
            vec![QueryInput {
                catalog: "iceberg".into(),
                schema: "zoning".into(),
                table: "documents".into()
            }]
        );
        assert!(parse_query_info(&serde_json::json!({"state": "FINISHED"})).is_none());
    }
}
