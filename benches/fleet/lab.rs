//! The lab the benchmark runs against: its control file, its server's control API, the
//! coordinator's record of a user's statements, and floe's clients of it.

use std::path::PathBuf;
use std::time::Duration;

use floe::lakehouse::queries::Lakehouse;
use floe::lakehouse::scan::ScanParams;
use floe::trino::Client;
use serde_json::{Value, json};

/// The lab as its `lab.json` describes it, and which of its Trinos the run measures.
pub(crate) struct Lab {
    pub(crate) json: Value,
    pub(crate) dir: PathBuf,
    pub(crate) http: reqwest::Client,
    /// The real Trino (its costs read from its query stats), not the stand-in.
    pub(crate) real: bool,
}

impl Lab {
    pub(crate) fn open() -> Lab {
        let dir = std::env::var_os("FLOE_LAB_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".lab"));
        let text = std::fs::read_to_string(dir.join("lab.json"))
            .unwrap_or_else(|e| panic!("{}: {e}: `cargo xtask lab up --scale`", dir.display()));
        let json: Value = serde_json::from_str(&text).unwrap();
        let has_real = json["trino"]["real"] == true;
        let real = match std::env::var("FLEET_SERVER").as_deref() {
            Ok("stand_in") => false,
            Ok("real") => {
                assert!(has_real, "FLEET_SERVER=real: the lab runs no real Trino");
                true
            }
            _ => has_real,
        };
        Lab {
            json,
            dir,
            http: {
                floe::net::install_crypto();
                reqwest::Client::new()
            },
            real,
        }
    }

    /// The server under test: the real Trino, or the stand-in (`stand_in`, or `trino`
    /// in a lab without a real one).
    pub(crate) fn server(&self) -> &Value {
        if self.real || self.json["stand_in"].is_null() {
            &self.json["trino"]
        } else {
            &self.json["stand_in"]
        }
    }

    pub(crate) fn url(&self) -> String {
        self.server()["url"].as_str().unwrap().to_string()
    }

    pub(crate) fn control(&self) -> String {
        self.server()["control_url"]
            .as_str()
            .unwrap()
            .trim_end_matches('/')
            .to_string()
    }

    /// The fleet under test, by who wrote its tables (`FLEET_WRITERS`: mixed, pyiceberg,
    /// trino, or delta: the Delta Lake catalog with the Delta fleet; default mixed, the
    /// catalog `scale`). Several, comma-separated (`mixed,delta`), are measured as one
    /// fleet over their catalogs, in one floe view (see `select`).
    pub(crate) fn writers(&self) -> String {
        std::env::var("FLEET_WRITERS").unwrap_or_else(|_| "mixed".into())
    }

    /// The fleets of [`Lab::writers`], in the order named.
    fn fleets(&self) -> Vec<String> {
        self.writers()
            .split(',')
            .map(|w| w.trim().to_string())
            .filter(|w| !w.is_empty())
            .collect()
    }

    /// The lab's record of fleet `w` (`fleets.<w>` in lab.json; a lab of before the
    /// fleets by writer has the mixed one alone, as `scale`).
    fn fleet(&self, w: &str) -> &Value {
        match &self.json["fleets"][w] {
            Value::Null if w == "mixed" => &self.json["scale"],
            v => v,
        }
    }

    /// The catalogs of the fleets under test, in the order named.
    pub(crate) fn catalogs(&self) -> Vec<String> {
        self.fleets()
            .iter()
            .map(|w| {
                self.fleet(w)["catalog"]
                    .as_str()
                    .unwrap_or_else(|| {
                        panic!(
                            "the lab serves no {w} fleet: `python3 tests/lab/labctl.py up --scale --fleets {}`",
                            self.writers()
                        )
                    })
                    .to_string()
            })
            .collect()
    }

    /// What a profile names to read the fleets under test in one view: their catalogs,
    /// comma-separated.
    pub(crate) fn catalog(&self) -> String {
        self.catalogs().join(",")
    }

    /// Whether `catalog` is the lab's Delta Lake catalog with the Delta fleet.
    pub(crate) fn is_delta(&self, catalog: &str) -> bool {
        self.fleet("delta")["catalog"].as_str() == Some(catalog)
    }

    /// Each table's facts and verdict (`tables` by `schema.table`) from the fleets'
    /// expected.json, when the lab names them; a name two fleets share is not compared.
    pub(crate) fn expected(&self) -> Option<Value> {
        let mut tables = serde_json::Map::new();
        let mut shared = Vec::new();
        for w in self.fleets() {
            let path = self.fleet(&w)["expected"].as_str()?;
            let v: Value = serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
            for (k, t) in v["tables"].as_object()?.clone() {
                if tables.insert(k.clone(), t).is_some() {
                    shared.push(k);
                }
            }
        }
        for k in shared {
            tables.remove(&k);
        }
        Some(json!({ "tables": tables }))
    }

    /// Wait until the stand-in beside the real Trino has built its metadata tables (it does
    /// so in the background from its start, over every catalog the lab serves): its Python
    /// would otherwise share the machine's cores with what is measured.
    pub(crate) async fn stand_in_settled(&self) -> &'static str {
        let Some(control) = self.json["stand_in"]["control_url"].as_str() else {
            return "the lab has no stand-in";
        };
        let control = control.trim_end_matches('/').to_string();
        for _ in 0..60 {
            let r = self
                .http
                .post(format!("{control}/engine/prewarm"))
                .json(&json!({"wait": 20}))
                .timeout(Duration::from_secs(60))
                .send()
                .await;
            match r {
                Ok(r) if r.status().is_success() => {
                    let v: Value = r.json().await.unwrap_or_default();
                    if v["done"] == true {
                        return "the stand-in has built its metadata tables";
                    }
                }
                // Not listening: stopped (it is not needed beside the real Trino).
                Err(e) if e.is_connect() => return "the stand-in does not run",
                _ => tokio::time::sleep(Duration::from_secs(1)).await,
            }
        }
        "the stand-in had not built its metadata tables after 20 minutes: measuring anyway"
    }

    pub(crate) async fn server_time(&self, user: &str, ms: u64) {
        if self.real {
            return;
        }
        let r = self
            .http
            .post(format!("{}/faults", self.control()))
            .json(&json!({"user": user, "rules": [{"kind": "server_time", "ms": ms}]}))
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "{:?}", r.text().await);
    }

    /// Wait until the lab has built every table's metadata tables (it does so in the
    /// background from its start), so that W is the lab's work per statement, not its
    /// first read of each table.
    pub(crate) async fn prewarmed(&self) {
        for _ in 0..60 {
            let r = self
                .http
                .post(format!("{}/engine/prewarm", self.control()))
                .json(&json!({"wait": 20}))
                .timeout(Duration::from_secs(60))
                .send()
                .await;
            match r {
                Ok(r) if r.status().is_success() => {
                    let v: Value = r.json().await.unwrap_or_default();
                    if v["done"] == true {
                        return;
                    }
                }
                // The engine is still loading.
                _ => tokio::time::sleep(Duration::from_secs(1)).await,
            }
        }
        panic!("the lab did not finish building its metadata tables in 20 minutes");
    }

    pub(crate) async fn clear(&self, user: &str) {
        if self.real {
            return;
        }
        let _ = self
            .http
            .delete(format!("{}/faults?user={user}", self.control()))
            .send()
            .await;
    }

    /// The statements `user` sent, oldest first: from the stand-in's own list, or from
    /// the real coordinator's `system.runtime.queries` with each one's query stats.
    pub(crate) async fn queries_of(&self, user: &str) -> Vec<Value> {
        if self.real {
            return self.real_queries_of(user).await;
        }
        let v: Value = self
            .http
            .get(format!("{}/queries", self.control()))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let list = v.get("queries").cloned().unwrap_or(v);
        list.as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .filter(|q| q["user"] == user)
            .collect()
    }

    pub(crate) async fn real_queries_of(&self, user: &str) -> Vec<Value> {
        let mut kept = std::collections::BTreeMap::new();
        self.collect_queries(user, &mut kept, false).await;
        let mut out: Vec<(String, Value)> = kept.into_values().collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out.into_iter().map(|(_, q)| q).collect()
    }

    /// The statements `user` sent that the coordinator still keeps, with their query stats,
    /// into `kept` (by query id, with the time each was created, for the order); with
    /// `finished_only`, only those that ended (a phase still running: read again later).
    pub(crate) async fn collect_queries(
        &self,
        user: &str,
        kept: &mut std::collections::BTreeMap<String, (String, Value)>,
        finished_only: bool,
    ) {
        let observer = self.client("fleet_observer", "system");
        let sql = format!(
            "SELECT query_id, query, state, error_code, CAST(created AS varchar) AS created \
             FROM system.runtime.queries WHERE \"user\" = '{}' ORDER BY created, query_id",
            user.replace('\'', "''")
        );
        let rows = match observer.client.query(&sql).await {
            Ok(out) => out.rows,
            Err(e) => {
                println!("  reading the coordinator's queries of {user}: {e}");
                return;
            }
        };
        for r in rows {
            let id = r.str("query_id").unwrap_or_default().to_string();
            let state = r.str("state").unwrap_or_default();
            if kept.contains_key(&id) || (finished_only && !matches!(state, "FINISHED" | "FAILED"))
            {
                continue;
            }
            let created = format!("{} {id}", r.str("created").unwrap_or_default());
            let info: Value = match self
                .http
                .get(format!("{}/v1/query/{id}?pruned=true", self.url()))
                .header("X-Trino-User", user)
                .send()
                .await
            {
                Ok(resp) => resp.json().await.unwrap_or_default(),
                Err(_) => Value::Null,
            };
            let st = &info["queryStats"];
            let ms = |k: &str| {
                st[k]
                    .as_str()
                    .and_then(floe::trino::client::query_info::parse_duration_ms)
            };
            let bytes = |k: &str| {
                st[k]
                    .as_str()
                    .and_then(floe::trino::client::query_info::parse_data_size)
            };
            let q = json!({
                "id": id,
                "sql": r.str("query").unwrap_or_default(),
                "state": state,
                "error_name": r.str("error_code"),
                "stats": {
                    "elapsed_ms": ms("elapsedTime"),
                    "planning_ms": ms("planningTime"),
                    "planning_cpu_ms": ms("planningCpuTime"),
                    "cpu_ms": ms("totalCpuTime"),
                    "bytes": bytes("processedInputDataSize"),
                    "rows": st["processedInputPositions"].as_u64(),
                    "splits": st["totalDrivers"].as_u64(),
                }
            });
            kept.insert(id, (created, q));
        }
    }

    /// The real coordinator's process (its PID in `lab.json`), whose CPU the phases read.
    pub(crate) fn coordinator_pid(&self) -> Option<u32> {
        if !self.real {
            return None;
        }
        self.json["trino"]["pid"].as_u64().map(|p| p as u32)
    }

    /// CPU the coordinator's process has used since it started (user + system), from
    /// `/proc/<pid>/stat`: everything it spent, planning, tasks, HTTP and GC alike.
    pub(crate) fn coordinator_cpu_ms(&self) -> Option<u64> {
        let pid = self.coordinator_pid()?;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // The command may hold spaces: the fields after its closing parenthesis.
        let rest = &stat[stat.rfind(')')? + 2..];
        let f: Vec<&str> = rest.split_whitespace().collect();
        let ticks: u64 = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
        // SAFETY: sysconf reads a constant of the running system.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
        Some(ticks * 1000 / hz)
    }

    /// Wait until the coordinator is quiet again: two seconds in which its process used
    /// under 100 ms of CPU (the idle JVM uses 15-20 ms a second once settled), at most a
    /// minute (after a phase of hundreds of statements its background lasts minutes: the
    /// minute is then the pause). Each measured phase starts after it, so the garbage and
    /// the compilations a phase leaves behind are paid less in the next one's figures
    /// (the check ran right after the script's 2,001 statements, and its process CPU
    /// counted what the script had left). The seconds waited, and whether it was quiet.
    pub(crate) async fn quiet(&self) -> (f64, bool) {
        let t0 = std::time::Instant::now();
        let Some(mut last) = self.coordinator_cpu_ms() else {
            return (0.0, false);
        };
        while t0.elapsed() < Duration::from_secs(60) {
            tokio::time::sleep(Duration::from_secs(2)).await;
            let Some(now) = self.coordinator_cpu_ms() else {
                break;
            };
            if now - last < 100 {
                return (t0.elapsed().as_secs_f64(), true);
            }
            last = now;
        }
        (t0.elapsed().as_secs_f64(), false)
    }

    /// The coordinator's heap in use and its limit (`/v1/status`), bytes.
    pub(crate) async fn heap(&self) -> Option<(u64, u64)> {
        if !self.real {
            return None;
        }
        let v: Value = self
            .http
            .get(format!("{}/v1/status", self.url()))
            .header("X-Trino-User", "fleet_observer")
            .send()
            .await
            .ok()?
            .json()
            .await
            .ok()?;
        Some((v["heapUsed"].as_u64()?, v["heapAvailable"].as_u64()?))
    }

    pub(crate) fn client(&self, user: &str, catalog: &str) -> Lakehouse {
        let cfg = floe::trino::ClientConfig {
            url: self.url().parse().unwrap(),
            user: user.into(),
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
            request_timeout: Duration::from_secs(120),
            connect_timeout: Duration::from_secs(5),
            query_timeout: Some(Duration::from_secs(600)),
        };
        Lakehouse::new(Client::new(cfg).unwrap(), catalog, ScanParams::default())
    }
}

pub(crate) fn lab_python() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("FLEET_PYTHON") {
        return Some(PathBuf::from(p));
    }
    let cache = std::env::var_os("FLOE_CACHE_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("XDG_CACHE_HOME").map(|d| PathBuf::from(d).join("floe")))
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/floe")))?;
    std::fs::read_dir(cache.join("venvs"))
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path().join("bin/python"))
        .find(|p| {
            p.exists()
                && p.parent()
                    .and_then(|b| b.parent())
                    .and_then(|v| v.file_name())
                    .is_some_and(|n| n.to_string_lossy().starts_with("lab-"))
        })
}
