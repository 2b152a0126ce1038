//! Trino's `QueryResults` document, decoded leniently: everything but `id` is optional,
//! unknown fields are ignored, missing stats default to zero.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value as Json;

use super::types::TypeSignature;

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueryResults {
    pub id: String,
    #[serde(default)]
    pub info_uri: Option<String>,
    #[serde(default)]
    pub partial_cancel_uri: Option<String>,
    #[serde(default)]
    pub next_uri: Option<String>,
    #[serde(default)]
    pub columns: Option<Vec<WireColumn>>,
    #[serde(default)]
    pub data: Option<Data>,
    #[serde(default)]
    pub stats: StatementStats,
    #[serde(default)]
    pub error: Option<QueryError>,
    #[serde(default)]
    pub warnings: Vec<Warning>,
    #[serde(default)]
    pub update_type: Option<String>,
    #[serde(default)]
    pub update_count: Option<i64>,
}

/// `data`: rows in the direct protocol; an object when the server spooled the result
/// (only when a client asks for it, which floe never does).
#[derive(Debug, Clone)]
pub enum Data {
    Rows(Vec<Vec<Json>>),
    Spooled,
}

impl<'de> Deserialize<'de> for Data {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Data;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array of rows or a spooled-data object")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Data, A::Error> {
                let mut rows = Vec::with_capacity(seq.size_hint().unwrap_or(0));
                while let Some(r) = seq.next_element::<Vec<Json>>()? {
                    rows.push(r);
                }
                Ok(Data::Rows(rows))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Data, A::Error> {
                while map
                    .next_entry::<de::IgnoredAny, de::IgnoredAny>()?
                    .is_some()
                {}
                Ok(Data::Spooled)
            }
            fn visit_unit<E>(self) -> Result<Data, E> {
                Ok(Data::Rows(Vec::new()))
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WireColumn {
    pub name: String,
    #[serde(rename = "type", default)]
    pub type_text: String,
    #[serde(default)]
    pub type_signature: Option<TypeSignature>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct StatementStats {
    pub state: String,
    pub queued: bool,
    pub scheduled: bool,
    pub progress_percentage: Option<f64>,
    pub running_percentage: Option<f64>,
    pub nodes: u64,
    pub total_splits: u64,
    pub queued_splits: u64,
    pub running_splits: u64,
    pub completed_splits: u64,
    pub cpu_time_millis: u64,
    /// The coordinator's planning of the statement (469+).
    pub planning_time_millis: Option<u64>,
    pub wall_time_millis: u64,
    pub queued_time_millis: u64,
    pub elapsed_time_millis: u64,
    pub processed_rows: u64,
    pub processed_bytes: u64,
    pub physical_input_bytes: u64,
    pub physical_written_bytes: u64,
    pub peak_memory_bytes: u64,
    pub spilled_bytes: u64,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct QueryError {
    pub message: String,
    pub error_code: i64,
    pub error_name: String,
    pub error_type: String,
    pub error_location: Option<ErrorLocation>,
    pub failure_info: Option<Json>,
}

#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", default)]
pub struct ErrorLocation {
    pub line_number: u32,
    pub column_number: u32,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Warning {
    #[serde(rename = "warningCode")]
    pub warning_code: Option<WarningCode>,
    pub message: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct WarningCode {
    pub code: i64,
    pub name: String,
}

/// `GET /v1/info`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ServerInfo {
    pub node_id: Option<String>,
    pub state: Option<String>,
    pub node_version: NodeVersion,
    pub environment: Option<String>,
    pub coordinator: Option<bool>,
    pub starting: bool,
    pub uptime: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct NodeVersion {
    pub version: String,
}

impl ServerInfo {
    /// The release number: `480`, `479` from `cloudera-0.479.1-…`; None for `testversion`.
    pub fn version_number(&self) -> Option<u32> {
        let v = self.node_version.version.trim();
        if let Ok(n) = v.parse::<u32>() {
            return Some(n);
        }
        // The first number of three digits or more (vendor builds embed the release).
        v.split(|c: char| !c.is_ascii_digit())
            .filter(|p| p.len() >= 3)
            .find_map(|p| p.parse::<u32>().ok())
    }

    /// `uptime` (an airlift duration such as `15.77d`, `2.10h`, `38.50s`) in seconds.
    pub fn uptime_secs(&self) -> Option<f64> {
        self.uptime.as_deref().and_then(parse_airlift_duration)
    }
}

/// Airlift `Duration` text: a number followed by ns, us, ms, s, m, h or d.
pub fn parse_airlift_duration(text: &str) -> Option<f64> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (num, unit) = t.split_at(split);
    let n: f64 = num.parse().ok()?;
    let mult = match unit.trim() {
        "ns" => 1e-9,
        "us" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        "m" => 60.0,
        "h" => 3600.0,
        "d" => 86_400.0,
        _ => return None,
    };
    Some(n * mult)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queued_page_from_a_real_recording() {
        // First answer to POST /v1/statement (Presto-era keys included and ignored).
        let page: QueryResults = serde_json::from_str(
            r#"{"id":"20210817_140827_00000_arvdv","infoUri":"http://coordinator:8080/ui/query.html?20210817_140827_00000_arvdv",
            "nextUri":"http://coordinator:8080/v1/statement/queued/20210817_140827_00000_arvdv/ab/1",
            "stats":{"state":"QUEUED","queued":true,"scheduled":false,"nodes":0,"totalSplits":0,"queuedSplits":0,"runningSplits":0,
            "completedSplits":0,"cpuTimeMillis":0,"wallTimeMillis":0,"queuedTimeMillis":0,"elapsedTimeMillis":0,"processedRows":0,
            "processedBytes":0,"peakMemoryBytes":0,"spilledBytes":0,"userTimeMillis":0},"warnings":[],"taskDownloadUris":[]}"#,
        )
        .unwrap();
        assert_eq!(page.stats.state, "QUEUED");
        assert!(page.columns.is_none() && page.data.is_none());
        assert!(page.next_uri.unwrap().contains("/queued/"));
    }

    #[test]
    fn running_page_with_progress() {
        let page: QueryResults = serde_json::from_str(
            r#"{"id":"20220507_204009_00318_z589m","infoUri":"https://c:8443/ui/query.html?x",
            "partialCancelUri":"https://c:8443/v1/statement/executing/partialCancel/x/1/y/1",
            "nextUri":"https://c:8443/v1/statement/executing/x/y/1",
            "columns":[{"name":"activity_date","type":"date","typeSignature":{"rawType":"date","arguments":[]}}],
            "data":[["2019-10-03"]],
            "stats":{"state":"RUNNING","queued":false,"scheduled":true,"nodes":2,"totalSplits":7,"queuedSplits":0,"runningSplits":1,
            "completedSplits":6,"cpuTimeMillis":32,"wallTimeMillis":143,"queuedTimeMillis":8,"elapsedTimeMillis":39369,
            "processedRows":521,"processedBytes":96423,"physicalInputBytes":96423,"peakMemoryBytes":638,"spilledBytes":0,
            "rootStage":{"stageId":"0","state":"RUNNING","done":false,"subStages":[]},"progressPercentage":85.71428571428571},
            "warnings":[]}"#,
        )
        .unwrap();
        assert_eq!(page.stats.completed_splits, 6);
        assert!((page.stats.progress_percentage.unwrap() - 85.714).abs() < 0.01);
        match page.data.unwrap() {
            Data::Rows(r) => assert_eq!(r.len(), 1),
            Data::Spooled => panic!(),
        }
    }

    #[test]
    fn failed_page_from_trino_360() {
        let page: QueryResults = serde_json::from_str(
            r#"{"id":"x","infoUri":"u","stats":{"state":"FAILED","queued":false,"scheduled":false},
            "error":{"errorCode":1,"errorLocation":{"columnNumber":15,"lineNumber":1},"errorName":"SYNTAX_ERROR",
            "errorType":"USER_ERROR","failureInfo":{"message":"line 1:15: Schema must be specified when session schema is not set",
            "stack":[],"suppressed":[],"type":"io.trino.spi.TrinoException"},
            "message":"line 1:15: Schema must be specified when session schema is not set"},"warnings":[]}"#,
        )
        .unwrap();
        let e = page.error.unwrap();
        assert_eq!(e.error_name, "SYNTAX_ERROR");
        assert_eq!(
            e.error_location,
            Some(ErrorLocation {
                line_number: 1,
                column_number: 15
            })
        );
    }

    #[test]
    fn minimal_and_spooled_pages() {
        let page: QueryResults = serde_json::from_str(r#"{"id":"q"}"#).unwrap();
        assert_eq!(page.stats.state, "");
        let page: QueryResults =
            serde_json::from_str(r#"{"id":"q","data":{"encoding":"json","segments":[]}}"#).unwrap();
        assert!(matches!(page.data, Some(Data::Spooled)));
        assert!(
            serde_json::from_str::<QueryResults>(r#"{"id":"q","stats":{"state":"RUN"#).is_err()
        );
    }

    #[test]
    fn server_info() {
        let info: ServerInfo = serde_json::from_str(
            r#"{"nodeVersion":{"version":"466"},"environment":"test","coordinator":true,"starting":false,"uptime":"1.00m"}"#,
        )
        .unwrap();
        assert_eq!(info.version_number(), Some(466));
        assert_eq!(info.uptime_secs(), Some(60.0));
        let mut i = info.clone();
        i.node_version.version = "cloudera-0.479.1-b12".into();
        assert_eq!(i.version_number(), Some(479));
        i.node_version.version = "testversion".into();
        assert_eq!(i.version_number(), None);
        assert_eq!(parse_airlift_duration("15.77d"), Some(15.77 * 86_400.0));
        assert!((parse_airlift_duration("218.17us").unwrap() - 218.17e-6).abs() < 1e-12);
        assert_eq!(parse_airlift_duration("soon"), None);
    }
}
