//! What one phase cost, as one JSON value: its wall time, its statements by shape with the
//! coordinator's own figures for them (planning wall time and CPU, task CPU, elapsed), the
//! coordinator process's CPU over the phase, its heap and the load average at the end.
//!
//! The coordinator's cost of a statement is its planning CPU plus its task CPU: planning
//! wall time (`planningTime`) also counts the time a planning thread waited for a core,
//! which grows with whatever else runs — a client with four statements in flight on a
//! two-core coordinator sees its planning wall time double without costing more. Both are
//! kept; the process's own CPU (`/proc/<pid>/stat`) over the phase is the figure nothing
//! can hide from (planning, tasks, the HTTP protocol, garbage collection).

use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use crate::lab::Lab;

/// The statement shape of a statement floe (or the script) sent, by its text.
pub(crate) fn shape(sql: &str) -> &'static str {
    if sql.contains("iceberg_tables") || sql.contains("information_schema.tables") {
        "listing"
    } else if sql.contains("system.runtime.queries") {
        "writes read"
    } else if sql.contains(" AS history") || sql.contains("parent_id, summary FROM") {
        "survey"
    } else if sql.contains("partition_fields") {
        "table metadata"
    } else if sql.contains("GROUP BY")
        || sql.contains("trend_files")
        || sql.contains("AS small_files")
    {
        "file read"
    } else if sql.contains("small_sids") || sql.contains("oldest_small_file_at") {
        "small files' age"
    } else if sql.starts_with("SELECT 0 AS i") {
        "change probe"
    } else if sql.contains("$files") || sql.contains("$entries") {
        "script $files"
    } else if sql.contains("$snapshots") {
        "script $snapshots"
    } else {
        "other"
    }
}

/// The coordinator's figures summed over statements.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Sums {
    pub(crate) n: u64,
    pub(crate) failed: u64,
    pub(crate) elapsed_ms: u64,
    pub(crate) planning_ms: u64,
    pub(crate) planning_cpu_ms: u64,
    pub(crate) cpu_ms: u64,
    /// Tables' metadata loaded (`kinds::references`).
    pub(crate) refs: u64,
}

impl Sums {
    fn add(&mut self, q: &Value) {
        let st = &q["stats"];
        let v = |k: &str| st[k].as_u64().unwrap_or(0);
        self.n += 1;
        if q["state"] == "FAILED" || !q["error_name"].is_null() {
            self.failed += 1;
        }
        self.elapsed_ms += v("elapsed_ms");
        self.planning_ms += v("planning_ms");
        self.planning_cpu_ms += v("planning_cpu_ms");
        self.cpu_ms += v("cpu_ms");
        self.refs += crate::kinds::references(q["sql"].as_str().unwrap_or(""));
    }

    /// Planning CPU plus task CPU: what the statements cost the coordinator.
    pub(crate) fn cost_ms(&self) -> u64 {
        self.planning_cpu_ms + self.cpu_ms
    }

    fn json(&self) -> Value {
        json!({
            "statements": self.n,
            "failed": self.failed,
            "elapsed_ms": self.elapsed_ms,
            "planning_ms": self.planning_ms,
            "planning_cpu_ms": self.planning_cpu_ms,
            "cpu_ms": self.cpu_ms,
            "cost_ms": self.cost_ms(),
            "references": self.refs,
        })
    }
}

/// The statements of a phase by shape, and all of them.
pub(crate) fn sums(qs: &[Value]) -> (Sums, Vec<(&'static str, Sums)>) {
    let mut all = Sums::default();
    let mut by: std::collections::BTreeMap<&'static str, Sums> = Default::default();
    for q in qs {
        all.add(q);
        by.entry(shape(q["sql"].as_str().unwrap_or("")))
            .or_default()
            .add(q);
    }
    (all, by.into_iter().collect())
}

/// The statements of a phase by kind: what each reads (`kinds::kind`).
pub(crate) fn by_kind(qs: &[Value]) -> Vec<(String, Sums)> {
    let mut by: std::collections::BTreeMap<String, Sums> = Default::default();
    for q in qs {
        by.entry(crate::kinds::kind(q["sql"].as_str().unwrap_or("")))
            .or_default()
            .add(q);
    }
    by.into_iter().collect()
}

/// A phase being measured: the coordinator's CPU and the clock at its start.
pub(crate) struct Meter {
    t0: Instant,
    cpu0: Option<u64>,
    client0: u64,
}

/// The CPU this process and its waited-for children have used (user + system), in ms:
/// the client's side of a phase (the TUI runs in this process; `floe check` and the
/// script are children).
fn client_cpu_ms() -> u64 {
    let of = |who| {
        // SAFETY: getrusage only writes the struct it is given.
        let mut u: libc::rusage = unsafe { std::mem::zeroed() };
        unsafe { libc::getrusage(who, &mut u) };
        let ms = |t: libc::timeval| t.tv_sec as u64 * 1000 + t.tv_usec as u64 / 1000;
        ms(u.ru_utime) + ms(u.ru_stime)
    };
    of(libc::RUSAGE_SELF) + of(libc::RUSAGE_CHILDREN)
}

impl Meter {
    pub(crate) fn start(lab: &Lab) -> Meter {
        Meter {
            t0: Instant::now(),
            cpu0: lab.coordinator_cpu_ms(),
            client0: client_cpu_ms(),
        }
    }

    /// The client's CPU since the start (this process and the children it waited for).
    pub(crate) fn client_ms(&self) -> u64 {
        client_cpu_ms().saturating_sub(self.client0)
    }

    /// The phase ended now: its wall time and the coordinator process's CPU over it
    /// (read before anything else is sent, so the bench's own reads are not in it).
    pub(crate) fn stop(&self, lab: &Lab) -> (Duration, Option<u64>) {
        let wall = self.t0.elapsed();
        let cpu = match (self.cpu0, lab.coordinator_cpu_ms()) {
            (Some(a), Some(b)) => Some(b.saturating_sub(a)),
            _ => None,
        };
        (wall, cpu)
    }
}

/// One phase's record: `extra` (the phase's own figures) with the wall time, the process
/// CPU, the statements `qs` by shape, the heap and the load average.
pub(crate) async fn record(
    lab: &Lab,
    wall: Duration,
    process_cpu_ms: Option<u64>,
    qs: &[Value],
    extra: Value,
) -> Value {
    let (all, by) = sums(qs);
    let mut m = match extra {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    m.insert("wall_s".into(), json!(wall.as_secs_f64()));
    m.insert("process_cpu_ms".into(), json!(process_cpu_ms));
    m.insert("coordinator".into(), all.json());
    m.insert(
        "by_shape".into(),
        Value::Object(by.iter().map(|(k, s)| (k.to_string(), s.json())).collect()),
    );
    m.insert(
        "by_kind".into(),
        Value::Object(
            by_kind(qs)
                .into_iter()
                .map(|(k, s)| (k, s.json()))
                .collect(),
        ),
    );
    if let Some((used, max)) = lab.heap().await {
        m.insert("heap_used".into(), json!(used));
        m.insert("heap_max".into(), json!(max));
    }
    m.insert("load".into(), json!(loadavg()));
    Value::Object(m)
}

/// One line of what a phase cost, for the run's own output.
pub(crate) fn line(name: &str, r: &Value) -> String {
    let c = &r["coordinator"];
    format!(
        "{name}: {:.2} s, {} statements ({} failed); coordinator: planning {:.2} s wall / {:.2} s CPU, tasks {:.2} s CPU, cost {:.2} s; process CPU {}{}",
        r["wall_s"].as_f64().unwrap_or(f64::NAN),
        c["statements"],
        c["failed"],
        ms(&c["planning_ms"]),
        ms(&c["planning_cpu_ms"]),
        ms(&c["cpu_ms"]),
        ms(&c["cost_ms"]),
        r["process_cpu_ms"]
            .as_u64()
            .map(|v| format!("{:.2} s", v as f64 / 1000.0))
            .unwrap_or_else(|| "-".into()),
        r["client_cpu_ms"]
            .as_u64()
            .map(|v| format!("; the client's CPU {:.2} s", v as f64 / 1000.0))
            .unwrap_or_default(),
    )
}

fn ms(v: &Value) -> f64 {
    v.as_u64().unwrap_or(0) as f64 / 1000.0
}

pub(crate) fn loadavg() -> [f64; 3] {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let mut it = text
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(f64::NAN));
    [
        it.next().unwrap_or(f64::NAN),
        it.next().unwrap_or(f64::NAN),
        it.next().unwrap_or(f64::NAN),
    ]
}
