//! One statement sent to the real coordinator and what the coordinator recorded of it.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use floe::trino::Client;
use serde_json::{Value, json};

/// The lab's real Trino, from its `lab.json`.
pub(crate) struct Lab {
    url: String,
    http: reqwest::Client,
}

impl Lab {
    pub(crate) fn open() -> Lab {
        let dir = std::env::var_os("FLOE_LAB_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".lab"));
        let text = std::fs::read_to_string(dir.join("lab.json")).unwrap_or_else(|e| {
            panic!("{}: {e}: set FLOE_LAB_DIR to a running lab", dir.display())
        });
        let json: Value = serde_json::from_str(&text).unwrap();
        assert!(
            json["trino"]["real"] == true,
            "the lab runs no real Trino: these figures are the real coordinator's"
        );
        Lab {
            url: json["trino"]["url"].as_str().unwrap().to_string(),
            http: {
                floe::net::install_crypto();
                reqwest::Client::new()
            },
        }
    }

    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// The coordinator's own node status: heap used and available, its uptime (a restart
    /// during a run shows here).
    pub(crate) async fn status(&self) -> Value {
        let v: Value = match self
            .http
            .get(format!("{}/v1/status", self.url))
            .send()
            .await
        {
            Ok(r) => r.json().await.unwrap_or_default(),
            Err(e) => return json!({"error": e.to_string()}),
        };
        json!({
            "uptime": v["uptime"],
            "heap_used": v["heapUsed"],
            "heap_available": v["heapAvailable"],
            "process_cpu_load": v["processCpuLoad"],
        })
    }

    pub(crate) fn client(&self, catalog: &str) -> Client {
        let cfg = floe::trino::ClientConfig {
            url: self.url.parse().unwrap(),
            user: "coord_bench".into(),
            source: "floe-bench".into(),
            catalog: Some(catalog.into()),
            schema: None,
            auth: floe::config::Auth::None,
            tls: floe::config::TlsSettings {
                ca_file: None,
                insecure_skip_verify: false,
            },
            session: Default::default(),
            client_tags: vec![],
            retry: floe::trino::RetryPolicy::default(),
            request_timeout: Duration::from_secs(300),
            connect_timeout: Duration::from_secs(5),
            query_timeout: Some(Duration::from_secs(900)),
        };
        Client::new(cfg).unwrap()
    }
}

/// The 1-, 5- and 15-minute load averages of this machine (the coordinator shares it).
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

/// Send `sql` once and read the coordinator's record of it.
pub(crate) async fn run(
    client: &Client,
    shape: &str,
    set: &str,
    tables: usize,
    sql: &str,
) -> Value {
    let load = loadavg();
    let t0 = Instant::now();
    let result = client.query(sql).await;
    let wall_ms = t0.elapsed().as_millis() as u64;
    let (id, rows, error) = match &result {
        Ok(out) => (Some(out.query_id.clone()), Some(out.rows.len()), None),
        Err(e) => (
            e.query_id().map(str::to_string),
            None,
            Some(format!("{}: {}", e.name(), first_line(&e.to_string()))),
        ),
    };
    let info = match &id {
        Some(id) => client.query_info(id).await.ok(),
        None => None,
    };
    json!({
        "shape": shape,
        "set": set,
        "tables": tables,
        "load": load,
        "wall_ms": wall_ms,
        "query_id": id,
        "result_rows": rows,
        "error": error,
        "state": info.as_ref().map(|i| i.state.clone()),
        "elapsed_ms": info.as_ref().and_then(|i| i.elapsed_ms),
        "queued_ms": info.as_ref().and_then(|i| i.queued_ms),
        "planning_ms": info.as_ref().and_then(|i| i.planning_ms),
        "planning_cpu_ms": info.as_ref().and_then(|i| i.planning_cpu_ms),
        "cpu_ms": info.as_ref().and_then(|i| i.cpu_ms),
        "processed_rows": info.as_ref().and_then(|i| i.processed_rows),
        "processed_bytes": info.as_ref().and_then(|i| i.processed_bytes),
        "physical_input_bytes": info.as_ref().and_then(|i| i.physical_input_bytes),
        "splits": info.as_ref().and_then(|i| i.splits),
        "sql": sql,
    })
}

fn first_line(s: &str) -> String {
    let l = s.lines().next().unwrap_or("");
    l.chars().take(160).collect()
}
