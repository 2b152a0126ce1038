//! The documents of both APIs as they come over the wire, and how each becomes its model.
//!
//! They are decoded leniently: unknown fields are ignored (new ones appear in minor
//! releases), every date and duration is optional (v2 runs triggered without a logical date
//! have none; v1 runs carry no duration), states fall back to `Unknown(text)`, and a date the
//! client cannot read becomes `None` instead of failing a whole list.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use super::model::{
    ClearedTask, Connection, Dag, DagImportError, DagRun, DagRunState, RunType, TaskInstance,
    TaskState,
};

/// RFC 3339 (`…Z`, `…+00:00`), with or without fractional seconds.
pub(crate) fn parse_time(text: &str) -> Option<DateTime<Utc>> {
    let t = text.trim();
    if t.is_empty() {
        return None;
    }
    DateTime::parse_from_rfc3339(t)
        .or_else(|_| DateTime::parse_from_str(t, "%Y-%m-%dT%H:%M:%S%.f%z"))
        .or_else(|_| DateTime::parse_from_str(t, "%Y-%m-%d %H:%M:%S%.f%:z"))
        .map(|d| d.with_timezone(&Utc))
        .ok()
}

fn lenient_time<'de, D: Deserializer<'de>>(d: D) -> Result<Option<DateTime<Utc>>, D::Error> {
    let v = Option::<Value>::deserialize(d)?;
    Ok(match v {
        Some(Value::String(s)) => {
            let t = parse_time(&s);
            if t.is_none() {
                tracing::debug!(value = %s, "unreadable Airflow timestamp");
            }
            t
        }
        _ => None,
    })
}

/// Seconds as a duration; `None` for NaN, infinities, negatives and values too large for
/// a `Duration` (a server's number is not trusted).
fn seconds(v: Option<f64>) -> Option<Duration> {
    v.and_then(|s| Duration::try_from_secs_f64(s).ok())
}

fn between(start: Option<DateTime<Utc>>, end: Option<DateTime<Utc>>) -> Option<Duration> {
    let (s, e) = (start?, end?);
    (e - s).to_std().ok()
}

fn nonempty(s: Option<String>) -> Option<String> {
    s.filter(|x| !x.trim().is_empty())
}

#[derive(Deserialize)]
struct WireTag {
    name: String,
}

#[derive(Deserialize)]
pub(crate) struct WireDag {
    dag_id: String,
    #[serde(default)]
    dag_display_name: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    is_paused: Option<bool>,
    #[serde(default)]
    is_active: Option<bool>,
    #[serde(default)]
    is_stale: Option<bool>,
    #[serde(default)]
    has_import_errors: Option<bool>,
    #[serde(default)]
    owners: Option<Vec<String>>,
    #[serde(default)]
    tags: Option<Vec<Option<WireTag>>>,
    #[serde(default)]
    timetable_summary: Option<String>,
    #[serde(default)]
    schedule_interval: Option<Value>,
    #[serde(default)]
    timetable_description: Option<String>,
    #[serde(default, deserialize_with = "lenient_time")]
    next_dagrun_run_after: Option<DateTime<Utc>>,
    #[serde(default, deserialize_with = "lenient_time")]
    next_dagrun_create_after: Option<DateTime<Utc>>,
    #[serde(default, deserialize_with = "lenient_time")]
    next_dagrun_logical_date: Option<DateTime<Utc>>,
    #[serde(default, deserialize_with = "lenient_time")]
    next_dagrun: Option<DateTime<Utc>>,
    #[serde(default)]
    fileloc: Option<String>,
    #[serde(default)]
    relative_fileloc: Option<String>,
    #[serde(default)]
    bundle_name: Option<String>,
}

impl From<WireDag> for Dag {
    fn from(w: WireDag) -> Dag {
        let (schedule, timedelta) = match (&w.timetable_summary, &w.schedule_interval) {
            (Some(s), _) if !s.trim().is_empty() => (Some(s.trim().to_string()), None),
            (_, Some(v)) => v1_schedule(v),
            _ => (None, None),
        };
        let schedule_interval = timedelta.or_else(|| {
            schedule
                .as_deref()
                .and_then(crate::airflow::facts::schedule_interval)
        });
        let mut tags: Vec<String> = w
            .tags
            .into_iter()
            .flatten()
            .flatten()
            .map(|t| t.name)
            .collect();
        tags.sort();
        tags.dedup();
        Dag {
            display_name: nonempty(w.dag_display_name).unwrap_or_else(|| w.dag_id.clone()),
            dag_id: w.dag_id,
            description: nonempty(w.description),
            paused: w.is_paused.unwrap_or(false),
            active: match (w.is_stale, w.is_active) {
                (Some(stale), _) => !stale,
                (None, Some(active)) => active,
                (None, None) => true,
            },
            has_import_errors: w.has_import_errors.unwrap_or(false),
            owners: w.owners.unwrap_or_default(),
            tags,
            schedule,
            schedule_description: nonempty(w.timetable_description),
            schedule_interval,
            next_run: w
                .next_dagrun_run_after
                .or(w.next_dagrun_create_after)
                .or(w.next_dagrun_logical_date)
                .or(w.next_dagrun),
            next_logical_date: w.next_dagrun_logical_date.or(w.next_dagrun),
            fileloc: nonempty(w.fileloc),
            relative_fileloc: nonempty(w.relative_fileloc),
            bundle_name: nonempty(w.bundle_name),
        }
    }
}

/// v1 `schedule_interval`: `{"__type":"CronExpression","value":"@daily"}`,
/// `{"__type":"TimeDelta","days":1,"seconds":0,"microseconds":0}`, `{"__type":"RelativeDelta",…}`.
fn v1_schedule(v: &Value) -> (Option<String>, Option<Duration>) {
    match v["__type"].as_str() {
        Some("CronExpression") => (v["value"].as_str().map(|s| s.trim().to_string()), None),
        Some("TimeDelta") => {
            let days = v["days"].as_i64().unwrap_or(0);
            let secs = v["seconds"].as_i64().unwrap_or(0);
            let micros = v["microseconds"].as_i64().unwrap_or(0);
            let mut parts = Vec::new();
            if days != 0 {
                parts.push(format!("days={days}"));
            }
            if secs != 0 {
                parts.push(format!("seconds={secs}"));
            }
            if micros != 0 {
                parts.push(format!("microseconds={micros}"));
            }
            // Checked: absurd numbers mean no interval floe can read, never a panic.
            let interval = days
                .checked_mul(86_400)
                .and_then(|d| d.checked_add(secs))
                .filter(|total| *total > 0 || micros > 0)
                .and_then(|total| {
                    Duration::from_secs(total.max(0) as u64)
                        .checked_add(Duration::from_micros(micros.max(0) as u64))
                });
            (Some(format!("timedelta({})", parts.join(", "))), interval)
        }
        Some("RelativeDelta") => (Some("relativedelta".into()), None),
        Some(other) => (Some(other.to_string()), None),
        None => (v.as_str().map(str::to_string), None),
    }
}

#[derive(Deserialize)]
pub(crate) struct WireRun {
    dag_id: String,
    #[serde(alias = "run_id")]
    dag_run_id: String,
    #[serde(default)]
    state: Option<String>,
    #[serde(default)]
    run_type: Option<String>,
    #[serde(default, deserialize_with = "lenient_time")]
    logical_date: Option<DateTime<Utc>>,
    #[serde(default, deserialize_with = "lenient_time")]
    execution_date: Option<DateTime<Utc>>,
    #[serde(default, deserialize_with = "lenient_time")]
    run_after: Option<DateTime<Utc>>,
    #[serde(default, deserialize_with = "lenient_time")]
    data_interval_start: Option<DateTime<Utc>>,
    #[serde(default, deserialize_with = "lenient_time")]
    data_interval_end: Option<DateTime<Utc>>,
    #[serde(default, deserialize_with = "lenient_time")]
    queued_at: Option<DateTime<Utc>>,
    #[serde(default, deserialize_with = "lenient_time")]
    start_date: Option<DateTime<Utc>>,
    #[serde(default, deserialize_with = "lenient_time")]
    end_date: Option<DateTime<Utc>>,
    #[serde(default)]
    duration: Option<f64>,
    #[serde(default)]
    triggered_by: Option<String>,
    #[serde(default)]
    external_trigger: Option<bool>,
    #[serde(default)]
    note: Option<String>,
}

impl From<WireRun> for DagRun {
    fn from(w: WireRun) -> DagRun {
        DagRun {
            dag_id: w.dag_id,
            run_id: w.dag_run_id,
            state: DagRunState::parse(w.state.as_deref().unwrap_or("none")),
            run_type: RunType::parse(w.run_type.as_deref().unwrap_or("none")),
            logical_date: w.logical_date.or(w.execution_date),
            run_after: w.run_after,
            data_interval_start: w.data_interval_start,
            data_interval_end: w.data_interval_end,
            queued_at: w.queued_at,
            start_date: w.start_date,
            end_date: w.end_date,
            duration: seconds(w.duration).or_else(|| between(w.start_date, w.end_date)),
            triggered_by: nonempty(w.triggered_by),
            external_trigger: w.external_trigger,
            note: nonempty(w.note),
        }
    }
}

#[derive(Deserialize)]
pub(crate) struct WireTaskInstance {
    #[serde(default)]
    dag_id: String,
    #[serde(default, alias = "run_id")]
    dag_run_id: String,
    task_id: String,
    #[serde(default)]
    map_index: Option<i64>,
    #[serde(default)]
    state: Option<String>,
    #[serde(default)]
    try_number: Option<i64>,
    #[serde(default)]
    max_tries: Option<i64>,
    #[serde(default, deserialize_with = "lenient_time")]
    start_date: Option<DateTime<Utc>>,
    #[serde(default, deserialize_with = "lenient_time")]
    end_date: Option<DateTime<Utc>>,
    #[serde(default)]
    duration: Option<f64>,
    #[serde(default)]
    hostname: Option<String>,
    #[serde(default)]
    operator_name: Option<String>,
    #[serde(default)]
    operator: Option<String>,
    #[serde(default)]
    pool: Option<String>,
    #[serde(default)]
    queue: Option<String>,
    #[serde(default)]
    note: Option<String>,
}

impl From<WireTaskInstance> for TaskInstance {
    fn from(w: WireTaskInstance) -> TaskInstance {
        let state = nonempty(w.state).map(|s| TaskState::parse(&s));
        let duration = if state.as_ref().is_some_and(|s| *s == TaskState::Running) {
            // After a clear, v2 keeps the previous try's duration while the new try runs.
            None
        } else {
            seconds(w.duration).or_else(|| between(w.start_date, w.end_date))
        };
        TaskInstance {
            dag_id: w.dag_id,
            run_id: w.dag_run_id,
            task_id: w.task_id,
            map_index: w.map_index.unwrap_or(-1),
            state,
            try_number: w.try_number.unwrap_or(0).clamp(0, u32::MAX as i64) as u32,
            max_tries: w.max_tries.map(|n| n.clamp(0, u32::MAX as i64) as u32),
            start_date: w.start_date,
            end_date: w.end_date,
            duration,
            hostname: nonempty(w.hostname),
            operator: nonempty(w.operator_name).or(nonempty(w.operator)),
            pool: nonempty(w.pool),
            queue: nonempty(w.queue),
            note: nonempty(w.note),
        }
    }
}

#[derive(Deserialize)]
pub(crate) struct WireImportError {
    #[serde(default)]
    import_error_id: Option<i64>,
    #[serde(default)]
    filename: Option<String>,
    #[serde(default)]
    bundle_name: Option<String>,
    #[serde(default, deserialize_with = "lenient_time")]
    timestamp: Option<DateTime<Utc>>,
    #[serde(default)]
    stack_trace: Option<String>,
}

impl From<WireImportError> for DagImportError {
    fn from(w: WireImportError) -> DagImportError {
        DagImportError {
            id: w.import_error_id,
            filename: w.filename.unwrap_or_default(),
            bundle_name: nonempty(w.bundle_name),
            timestamp: w.timestamp,
            stack_trace: w.stack_trace.unwrap_or_default(),
        }
    }
}

#[derive(Deserialize)]
pub(crate) struct WireConnection {
    connection_id: String,
    #[serde(default)]
    conn_type: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    host: Option<String>,
    #[serde(default)]
    login: Option<String>,
    #[serde(default)]
    schema: Option<String>,
    #[serde(default)]
    port: Option<i64>,
    #[serde(default)]
    extra: Option<String>,
    /// v2 lists a stored password as `"***"` (null when there is none); v1 never shows it.
    #[serde(default, deserialize_with = "present")]
    password: Option<serde_json::Value>,
}

/// A field that is there, `null` included (`Some(Value::Null)`); absent, `None`.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// One connection document as Airflow answers it (a read, or a write's answer).
pub fn decode_connection(text: &str) -> Result<Connection, serde_json::Error> {
    serde_json::from_str::<WireConnection>(text).map(Connection::from)
}

impl From<WireConnection> for Connection {
    fn from(w: WireConnection) -> Connection {
        // A masked value in the extra is a secret too; without the password field (v1) the
        // answer says nothing either way.
        let masked_extra = w.extra.as_deref().is_some_and(|e| e.contains("***"));
        let secret = match &w.password {
            Some(serde_json::Value::String(p)) => Some(!p.is_empty() || masked_extra),
            Some(serde_json::Value::Null) => Some(masked_extra),
            _ => None,
        };
        Connection {
            connection_id: w.connection_id,
            conn_type: w.conn_type.unwrap_or_default(),
            description: nonempty(w.description),
            host: nonempty(w.host),
            login: nonempty(w.login),
            schema: nonempty(w.schema),
            port: w.port.and_then(|p| u16::try_from(p).ok()),
            extra: nonempty(w.extra),
            secret,
        }
    }
}

impl Connection {
    /// The body of `POST …/connections/test`: the fields the server needs to build the hook.
    /// v2 rejects unknown fields, so only the connection's own fields are sent.
    pub(crate) fn test_body(&self) -> Value {
        let mut m = serde_json::Map::new();
        m.insert("connection_id".into(), self.connection_id.clone().into());
        m.insert("conn_type".into(), self.conn_type.clone().into());
        let mut opt = |k: &str, v: &Option<String>| {
            if let Some(v) = v {
                m.insert(k.into(), v.clone().into());
            }
        };
        opt("description", &self.description);
        opt("host", &self.host);
        opt("login", &self.login);
        opt("schema", &self.schema);
        opt("extra", &self.extra);
        if let Some(p) = self.port {
            m.insert("port".into(), p.into());
        }
        Value::Object(m)
    }
}

/// v1 clear dry runs list references, not task instances:
/// `{"dag_id","dag_run_id","execution_date","task_id"}`.
#[derive(Deserialize)]
pub(crate) struct WireTaskRef {
    task_id: String,
    #[serde(default)]
    map_index: Option<i64>,
    #[serde(default)]
    state: Option<String>,
}

impl From<WireTaskRef> for ClearedTask {
    fn from(w: WireTaskRef) -> ClearedTask {
        ClearedTask {
            task_id: w.task_id,
            map_index: w.map_index.unwrap_or(-1),
            state: nonempty(w.state).map(|s| TaskState::parse(&s)),
        }
    }
}

/// What [`decode_documents`] read out of one response body.
#[doc(hidden)]
#[derive(Debug, Default)]
pub struct Documents {
    pub dags: Vec<Dag>,
    pub runs: Vec<DagRun>,
    pub tasks: Vec<TaskInstance>,
    pub import_errors: Vec<DagImportError>,
    pub connections: Vec<Connection>,
    pub cleared: Vec<ClearedTask>,
    pub version: Option<super::model::ServerVersion>,
    pub health: Option<super::model::AirflowHealth>,
}

/// One response body read every way the client reads Airflow documents: as each paginated
/// collection (`dags`, `dag_runs`, `task_instances`, `import_errors`, `connections`), as
/// each single document, as a version and a health document, each into its model. An item
/// that does not decode is skipped, as the client would refuse it. Public so the fuzz
/// targets can reach it.
#[doc(hidden)]
pub fn decode_documents(text: &str) -> Result<Documents, serde_json::Error> {
    fn items<W: serde::de::DeserializeOwned, M: From<W>>(v: &Value, key: &str, out: &mut Vec<M>) {
        if let Some(Value::Array(list)) = v.get(key) {
            for item in list {
                if let Ok(w) = serde_json::from_value::<W>(item.clone()) {
                    out.push(M::from(w));
                }
            }
        }
    }
    fn single<W: serde::de::DeserializeOwned, M: From<W>>(v: &Value, out: &mut Vec<M>) {
        if let Ok(w) = serde_json::from_value::<W>(v.clone()) {
            out.push(M::from(w));
        }
    }
    let v: Value = serde_json::from_str(text)?;
    let mut d = Documents::default();
    items::<WireDag, _>(&v, "dags", &mut d.dags);
    items::<WireRun, _>(&v, "dag_runs", &mut d.runs);
    items::<WireTaskInstance, _>(&v, "task_instances", &mut d.tasks);
    items::<WireTaskRef, _>(&v, "task_instances", &mut d.cleared);
    items::<WireImportError, _>(&v, "import_errors", &mut d.import_errors);
    items::<WireConnection, _>(&v, "connections", &mut d.connections);
    single::<WireDag, _>(&v, &mut d.dags);
    single::<WireRun, _>(&v, &mut d.runs);
    single::<WireTaskInstance, _>(&v, &mut d.tasks);
    single::<WireImportError, _>(&v, &mut d.import_errors);
    single::<WireConnection, _>(&v, &mut d.connections);
    d.version = serde_json::from_value(v.clone()).ok();
    if v.is_object() {
        d.health = Some(super::model::AirflowHealth::from_value(&v));
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Inputs that panicked the airflow_wire fuzz target.

    #[test]
    fn a_run_duration_too_large_for_a_duration_is_unknown() {
        for text in [1e300, f64::MAX, 1.8446744073709552e19] {
            let doc = format!(r#"{{"dag_id":"d","dag_run_id":"r","duration":{text:e}}}"#);
            let d = decode_documents(&doc).unwrap();
            assert_eq!(d.runs.len(), 1);
            assert_eq!(d.runs[0].duration, None);
        }
        let d = decode_documents(r#"{"dag_id":"d","dag_run_id":"r","duration":-1}"#).unwrap();
        assert_eq!(d.runs[0].duration, None);
        let d = decode_documents(r#"{"dag_id":"d","dag_run_id":"r","duration":1.5}"#).unwrap();
        assert_eq!(d.runs[0].duration, Some(Duration::from_millis(1500)));
    }

    #[test]
    fn a_timedelta_schedule_that_overflows_has_no_interval() {
        for doc in [
            r#"{"dag_id":"d","schedule_interval":{"__type":"TimeDelta","days":9223372036854775807}}"#,
            r#"{"dag_id":"d","schedule_interval":{"__type":"TimeDelta","days":106751991167300,"seconds":86399,"microseconds":9223372036854775807}}"#,
            r#"{"dag_id":"d","schedule_interval":{"__type":"TimeDelta","days":1,"seconds":9223372036854775807}}"#,
        ] {
            let d = decode_documents(doc).unwrap();
            assert_eq!(d.dags.len(), 1);
            assert_eq!(d.dags[0].schedule_interval, None, "{doc}");
        }
        let d = decode_documents(
            r#"{"dag_id":"d","schedule_interval":{"__type":"TimeDelta","days":1,"seconds":30,"microseconds":0}}"#,
        )
        .unwrap();
        assert_eq!(
            d.dags[0].schedule_interval,
            Some(Duration::from_secs(86_430))
        );
    }
}
