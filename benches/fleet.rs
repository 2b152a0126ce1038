//! What an open floe costs the coordinator at fleet scale, on the lab's 1,000-table scale
//! scenario. Against the real Trino (`FLEET_SERVER=real`, the default when the lab runs
//! one) the costs are the coordinator's own, read back from its query stats
//! (`GET /v1/query/{id}`: elapsed, planning, CPU, processed bytes and rows, splits); against
//! the lab's Python stand-in (`FLEET_SERVER=stand_in`) a fixed server time is injected per
//! statement (`server_time`, 100 ms) and the lab's own work W is measured. `cargo xtask
//! bench` (or `cargo bench --bench fleet` with the scale lab up) prints, per phase, the wall
//! time and the statements it cost:
//!
//! - (stand-in) the lab's own work W, one statement at a time, scaled to the fleet;
//! - (real) each statement shape floe sends (listing, layout batch, change probe, health,
//!   partitions, snapshots), run alone: what the coordinator spends on one;
//! - the first full scan (cold: no cache), with the time from launch to the first CRITICAL
//!   row, and (stand-in) against the server-bound limit max(W, (W + n·latency) / c);
//! - the sequential script an operator writes with the official `trino` client
//!   (`benches/fleet_script.py`), in the same run;
//! - a steady refresh with nothing changed: what an open floe costs the coordinator per
//!   cycle; (stand-in) and one after one table was written;
//! - a relaunch: the first frame painted from the stats cache;
//! - (`FLEET_STRATEGIES`, always on the stand-in) one health statement per table against a
//!   UNION ALL of K tables' health aggregates and against more statements in flight.
//!
//! Knobs (environment): FLEET_SERVER (real | stand_in), FLEET_TABLES (300 on the real
//! Trino, 1000 on the stand-in), FLEET_LATENCY_MS (100, stand-in), FLEET_W_SAMPLE (40),
//! FLEET_COMPARE_TABLES (200), FLEET_RANK_SLOTS (the slots a cold start ranks in, 3),
//! FLEET_SKIP_SCRIPT, FLEET_STRATEGIES, FLEET_SHAPE_BATCHES
//! (the widths the shapes are measured at, `10,50`), FLEET_SKIP_SHAPES, FLEET_PYTHON (the
//! lab venv's python).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use floe::app::action::Action;
use floe::app::runtime::{Runtime, initial_state};
use floe::app::state::State;
use floe::app::tables::TablesMsg;
use floe::app::update::{refresh, update};
use floe::config;
use floe::health::Severity;
use floe::lakehouse::model::TableRef;
use floe::lakehouse::queries::{Lakehouse, Layout, parse_stats, stats_sql};
use floe::trino::{Client, QueryOptions};
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::mpsc;

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    // `cargo test --all-targets` runs bench targets once as tests; this one needs the
    // scale scenario, which only `cargo xtask bench` brings up.
    if !std::env::args().any(|a| a == "--bench") {
        println!("the fleet benchmark runs under `cargo bench` (cargo xtask bench)");
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(bench());
}

struct Lab {
    json: Value,
    dir: PathBuf,
    http: reqwest::Client,
    /// The real Trino (its costs read from its query stats), not the stand-in.
    real: bool,
}

impl Lab {
    fn open() -> Lab {
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
            http: reqwest::Client::new(),
            real,
        }
    }

    /// The server under test: the real Trino, or the stand-in (`stand_in`, or `trino`
    /// in a lab without a real one).
    fn server(&self) -> &Value {
        if self.real || self.json["stand_in"].is_null() {
            &self.json["trino"]
        } else {
            &self.json["stand_in"]
        }
    }

    fn url(&self) -> String {
        self.server()["url"].as_str().unwrap().to_string()
    }

    fn control(&self) -> String {
        self.server()["control_url"]
            .as_str()
            .unwrap()
            .trim_end_matches('/')
            .to_string()
    }

    fn catalog(&self) -> String {
        self.json["scale"]["catalog"]
            .as_str()
            .expect("the lab runs without the scale scenario: `cargo xtask lab up --scale`")
            .to_string()
    }

    async fn server_time(&self, user: &str, ms: u64) {
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
    async fn prewarmed(&self) {
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

    async fn clear(&self, user: &str) {
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
    async fn queries_of(&self, user: &str) -> Vec<Value> {
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

    async fn real_queries_of(&self, user: &str) -> Vec<Value> {
        let observer = self.client("fleet_observer", "system");
        let sql = format!(
            "SELECT query_id, query, state, error_code FROM system.runtime.queries \
             WHERE \"user\" = '{}' ORDER BY created, query_id",
            user.replace('\'', "''")
        );
        let rows = observer.client.query(&sql).await.unwrap().rows;
        let mut out = Vec::with_capacity(rows.len());
        for r in rows {
            let id = r.str("query_id").unwrap_or_default().to_string();
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
            out.push(json!({
                "id": id,
                "sql": r.str("query").unwrap_or_default(),
                "state": r.str("state").unwrap_or_default(),
                "error_name": r.str("error_code"),
                "stats": {
                    "elapsed_ms": ms("elapsedTime"),
                    "planning_ms": ms("planningTime"),
                    "cpu_ms": ms("totalCpuTime"),
                    "bytes": bytes("processedInputDataSize"),
                    "rows": st["processedInputPositions"].as_u64(),
                    "splits": st["totalDrivers"].as_u64(),
                }
            }));
        }
        out
    }

    fn client(&self, user: &str, catalog: &str) -> Lakehouse {
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
        Lakehouse::new(Client::new(cfg).unwrap(), catalog, Default::default())
    }
}

/// The statement shape of a statement floe sent, by its text.
fn shape(sql: &str) -> &'static str {
    if sql.contains("iceberg_tables") || sql.contains("information_schema") {
        "listing"
    } else if sql.contains("partition_fields") {
        "layout batch"
    } else if sql.starts_with("SELECT 0 AS i") {
        "change probe"
    } else if sql.contains("trend_files") {
        "health"
    } else if sql.contains("$files") || sql.contains("$entries") {
        "partitions"
    } else if sql.contains("$snapshots") {
        "snapshots"
    } else {
        "other"
    }
}

/// The coordinator's cost of `qs` (real Trino only), per statement shape: statements, and
/// the sum and mean of elapsed, planning and CPU time, processed bytes and rows, splits.
fn coordinator_cost(qs: &[Value]) -> Vec<String> {
    let mut by: std::collections::BTreeMap<&str, (u64, [u64; 6])> = Default::default();
    const KEYS: [&str; 6] = [
        "elapsed_ms",
        "planning_ms",
        "cpu_ms",
        "bytes",
        "rows",
        "splits",
    ];
    for q in qs {
        let e = by
            .entry(shape(q["sql"].as_str().unwrap_or("")))
            .or_default();
        e.0 += 1;
        for (i, k) in KEYS.iter().enumerate() {
            e.1[i] += q["stats"][k].as_u64().unwrap_or(0);
        }
    }
    let total = by.values().fold((0u64, [0u64; 6]), |mut acc, (n, v)| {
        acc.0 += n;
        for (a, x) in acc.1.iter_mut().zip(v) {
            *a += x;
        }
        acc
    });
    let line = |name: &str, n: u64, v: &[u64; 6]| {
        let m = |x: u64| x as f64 / n.max(1) as f64;
        format!(
            "{name}: {n} statements; elapsed {:.2} s (mean {:.0} ms), planning {:.2} s (mean {:.0} ms), \
             cpu {:.2} s (mean {:.0} ms), processed {} B / {} rows (mean {:.0} B / {:.0} rows), splits {} (mean {:.1})",
            v[0] as f64 / 1000.0,
            m(v[0]),
            v[1] as f64 / 1000.0,
            m(v[1]),
            v[2] as f64 / 1000.0,
            m(v[2]),
            v[3],
            v[4],
            m(v[3]),
            m(v[4]),
            v[5],
            m(v[5]),
        )
    };
    let mut out: Vec<String> = by.iter().map(|(k, (n, v))| line(k, *n, v)).collect();
    if by.len() > 1 {
        out.push(line("all", total.0, &total.1));
    }
    out
}

fn print_cost(lab: &Lab, qs: &[Value]) {
    if lab.real {
        for l in coordinator_cost(qs) {
            println!("    {l}");
        }
    }
}

/// What a phase cost the lab: statements by kind and metadata scans, when reported.
#[derive(Default, Debug)]
struct Cost {
    statements: usize,
    discovery: usize,
    /// Statements learning the layouts of the listed tables (`$manifests`).
    layouts: usize,
    probes: usize,
    health: usize,
    /// Statements that failed (a health statement retried in its unpartitioned form).
    failed: usize,
    scans: String,
}

fn cost(qs: &[Value]) -> Cost {
    let mut c = Cost {
        statements: qs.len(),
        ..Default::default()
    };
    // Per metadata table (`$entries`, `$snapshots`, …): scans in all, and the most one
    // statement made of one table's.
    let mut scans: std::collections::BTreeMap<String, (u64, u64)> = Default::default();
    let mut reported = false;
    for q in qs {
        let sql = q["sql"].as_str().unwrap_or("");
        if sql.contains("iceberg_tables") || sql.contains("information_schema") {
            c.discovery += 1;
        } else if sql.contains("partition_fields") {
            c.layouts += 1;
        } else if sql.starts_with("SELECT 0 AS i") {
            c.probes += 1;
        } else if sql.contains("$files") || sql.contains("$entries") {
            c.health += 1;
        }
        if q["state"] == "FAILED" || !q["error_name"].is_null() {
            c.failed += 1;
        }
        if let Some(obj) = q.get("scans").and_then(Value::as_object) {
            reported = true;
            for (k, v) in obj {
                let kind = k.rsplit_once('$').map_or("table", |(_, m)| m).to_string();
                let n = v.as_u64().unwrap_or(0);
                let e = scans.entry(format!("${kind}")).or_default();
                e.0 += n;
                e.1 = e.1.max(n);
            }
        }
    }
    c.scans = if reported {
        scans
            .iter()
            .map(|(k, (total, most))| format!("{k} {total} (at most {most} per statement)"))
            .collect::<Vec<_>>()
            .join(", ")
    } else {
        "not reported by this lab".into()
    };
    c
}

/// The TUI's state and runtime, driven as its event loop drives them, as one user.
struct Floe {
    state: State,
    dir: PathBuf,
    limit: usize,
    /// The slots a cold start's ranking takes (`FLEET_RANK_SLOTS`).
    rank_slots: usize,
    /// The first CRITICAL row of the last timed cycle, and its place in the listing.
    first_critical: Option<(String, usize)>,
}

impl Floe {
    fn settings(&self, lab: &Lab, user: &str, concurrency: usize) -> config::Settings {
        let path = self.dir.join(format!("{user}.toml"));
        std::fs::write(
            &path,
            format!(
                "max_concurrent_queries = {concurrency}\n[trino]\nurl = {:?}\nuser = {user:?}\ncatalog = {:?}\n",
                lab.url(),
                lab.catalog()
            ),
        )
        .unwrap();
        let mut s = config::load(&config::Overrides {
            config: Some(path),
            ..Default::default()
        })
        .unwrap();
        s.stats_cache = self.dir.join("stats.json");
        s
    }

    /// One refresh as `user` to its end; its wall time.
    async fn cycle(
        &mut self,
        lab: &Lab,
        user: &str,
        concurrency: usize,
        start: bool,
        manual: bool,
    ) -> Duration {
        self.cycle_timed(lab, user, concurrency, start, manual)
            .await
            .0
    }

    /// One refresh as `user` to its end: its wall time from launch (state built, the
    /// runtime started) and the time until a CRITICAL row was first on screen.
    async fn cycle_timed(
        &mut self,
        lab: &Lab,
        user: &str,
        concurrency: usize,
        start: bool,
        manual: bool,
    ) -> (Duration, Option<Duration>) {
        let settings = self.settings(lab, user, concurrency);
        let t0 = Instant::now();
        if start {
            self.state = initial_state(&settings, true).unwrap();
            self.state.tables.policy.rank_slots = self.rank_slots;
        }
        self.first_critical = None;
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut rt = Runtime::new(settings.clone(), config::Overrides::default(), tx).unwrap();
        let mut critical = None;
        let fx = if start {
            update(&mut self.state, Action::Start)
        } else {
            refresh(&mut self.state, manual)
        };
        rt.run(fx);
        while self.state.refresh_in_flight() {
            let mut a = rx.recv().await.expect("the runtime is alive");
            // The fleet under test: the first `limit` tables the catalog lists.
            if let Action::Tables(TablesMsg::Discovered {
                result: Ok(tables), ..
            }) = &mut a
            {
                tables.truncate(self.limit);
            }
            let fx = update(&mut self.state, a);
            rt.run(fx);
            if critical.is_none()
                && let Some(at) = self
                    .state
                    .tables
                    .rows
                    .iter()
                    .position(|r| r.status() == Some(Severity::Critical))
            {
                critical = Some(t0.elapsed());
                self.first_critical = Some((self.state.tables.rows[at].table.to_string(), at));
            }
        }
        let wall = t0.elapsed();
        // The cache write of the refresh's end.
        tokio::time::sleep(Duration::from_millis(300)).await;
        while let Ok(a) = rx.try_recv() {
            let fx = update(&mut self.state, a);
            rt.run(fx);
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        (wall, critical)
    }
}

fn lab_python() -> Option<PathBuf> {
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

/// The wall time of `n` statements sent by `c` clients that each spend `lat` per statement
/// waiting (the injected server time) and queue for a server doing one statement's own
/// work `s` at a time: exact mean value analysis of that closed queue. The server-bound
/// limit max(W, (W + n·lat)/c) assumes the server's work for the `c` statements in flight
/// overlaps freely; a server that does one at a time (the lab: one Python process) makes
/// them queue, and this is the best any client can do against it.
fn one_server_bound(n: f64, c: usize, lat: f64, s: f64) -> f64 {
    let (mut queued, mut throughput) = (0.0, 0.0);
    for k in 1..=c {
        let response = s * (1.0 + queued);
        throughput = k as f64 / (lat + response);
        queued = throughput * response;
    }
    n / throughput
}

fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

async fn bench() {
    let lab = Lab::open();
    let catalog = lab.catalog();
    let n = env_num("FLEET_TABLES", if lab.real { 300 } else { 1000 }) as usize;
    let latency = if lab.real {
        0
    } else {
        env_num("FLEET_LATENCY_MS", 100)
    };
    let sample = env_num("FLEET_W_SAMPLE", 40) as usize;
    let compare = env_num("FLEET_COMPARE_TABLES", 200) as usize;
    let pid = std::process::id();
    let user = |phase: &str| format!("fleet_{phase}_{pid}");
    let dir = std::env::temp_dir().join(format!("floe-fleet-bench-{pid}"));
    std::fs::create_dir_all(&dir).unwrap();
    if lab.real {
        println!(
            "fleet benchmark: real Trino {} ({}), catalog {catalog}, {n} tables; costs from the coordinator's query stats",
            lab.url(),
            lab.dir.display()
        );
    } else {
        println!(
            "fleet benchmark: stand-in {} ({}), catalog {catalog}, {n} tables, {latency} ms server time per statement",
            lab.url(),
            lab.dir.display()
        );
    }
    if let Ok(l) = std::fs::read_to_string("/proc/loadavg") {
        println!("load average at start: {}", l.trim());
    }

    let probe_lake = lab.client(&user("w"), &catalog);
    let mut w = Duration::ZERO;
    if !lab.real {
        let t0 = Instant::now();
        lab.prewarmed().await;
        println!(
            "the lab built every table's metadata tables ({} waited)",
            secs(t0.elapsed())
        );
    }
    let all = probe_lake.discover(&[], &[]).await.unwrap();
    let tables: Vec<TableRef> = all.into_iter().take(n).collect();
    let n = tables.len();

    if lab.real {
        if std::env::var_os("FLEET_SKIP_SHAPES").is_none() {
            shapes(&lab, &catalog, &tables, &user("shapes")).await;
        }
    } else {
        // W: the lab's own work, one statement at a time, no injected latency, over tables
        // spread evenly across the fleet (the first ones by name are one schema's few kinds).
        let step = (n / sample.max(1)).max(1);
        let sampled: Vec<&TableRef> = tables.iter().step_by(step).take(sample).collect();
        // Each sampled statement runs once untimed first: that one learns the table's layout
        // (with the next tables listed) and is the first of its shape, which the lab compiles.
        let mut spent = Duration::ZERO;
        for t in &sampled {
            probe_lake.table_stats(t).await.unwrap();
            let t0 = Instant::now();
            probe_lake.table_stats(t).await.unwrap();
            spent += t0.elapsed();
        }
        let per = spent / sampled.len().max(1) as u32;
        w = per * n as u32;
        println!(
            "W: {per:?} per health statement, one at a time ({} sampled across the fleet) -> W = {} for {n} tables",
            sampled.len(),
            secs(w)
        );
    }

    // The first full scan (cold: no cache).
    let rank_slots = env_num(
        "FLEET_RANK_SLOTS",
        floe::app::tables::DEFAULT_RANK_SLOTS as u64,
    ) as usize;
    let mut floe = Floe {
        state: State::new(chrono::Utc::now()),
        dir: dir.clone(),
        limit: n,
        rank_slots,
        first_critical: None,
    };
    let u = user("full");
    lab.server_time(&u, latency).await;
    let (wall, critical) = floe.cycle_timed(&lab, &u, 4, true, false).await;
    let qs = lab.queries_of(&u).await;
    let c = cost(&qs);
    let criticals = floe
        .state
        .tables
        .rows
        .iter()
        .filter(|r| r.status() == Some(Severity::Critical))
        .count();
    println!(
        "first full scan, 4 in flight: {} for {} statements ({} discovery, {} layouts, {} probes, {} health, {} failed and retried); scans: {}",
        secs(wall),
        c.statements,
        c.discovery,
        c.layouts,
        c.probes,
        c.health,
        c.failed,
        c.scans,
    );
    println!(
        "  cold cache, ranking in {rank_slots} of 4 slots: first CRITICAL row on screen {} after launch{} ({criticals} of {n} tables CRITICAL)",
        critical.map(secs).unwrap_or_else(|| "never".into()),
        floe.first_critical
            .as_ref()
            .map(|(t, at)| format!(": {t}, row {} of the listing", at + 1))
            .unwrap_or_default()
    );
    print_cost(&lab, &qs);
    if !lab.real {
        let stmts = c.statements as f64;
        let lat = latency as f64 / 1000.0;
        let limit = w.as_secs_f64().max((w.as_secs_f64() + stmts * lat) / 4.0);
        println!(
            "  server-bound limit {limit:.2} s -> ratio {:.2}",
            wall.as_secs_f64() / limit
        );
        let queueing = one_server_bound(stmts, 4, lat, w.as_secs_f64() / n as f64);
        println!(
            "  against a server doing one statement's work at a time (4 clients, mean value analysis): {queueing:.2} s -> ratio {:.2}",
            wall.as_secs_f64() / queueing
        );
    }
    let loaded = floe
        .state
        .tables
        .rows
        .iter()
        .filter(|r| r.stats.is_some())
        .count();
    println!("  {loaded} of {n} tables loaded");
    lab.clear(&u).await;

    // The operator's sequential script, same lab, same server time.
    if std::env::var_os("FLEET_SKIP_SCRIPT").is_none() {
        match lab_python() {
            Some(py) => {
                let u = user("script");
                lab.server_time(&u, latency).await;
                let script =
                    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/fleet_script.py");
                let out = tokio::process::Command::new(&py)
                    .arg(&script)
                    .args([&lab.url(), &u, &catalog, &n.to_string()])
                    .output()
                    .await
                    .unwrap();
                let text = String::from_utf8_lossy(&out.stdout);
                match serde_json::from_str::<Value>(text.trim()) {
                    Ok(v) => {
                        let s = v["wall_s"].as_f64().unwrap_or(f64::NAN);
                        println!(
                            "sequential trino-python script: {s:.2} s for {} statements -> floe is {:.1}x faster",
                            v["statements"],
                            s / wall.as_secs_f64()
                        );
                        if lab.real {
                            let qs = lab.queries_of(&u).await;
                            let (mut el, mut cpu) = (0u64, 0u64);
                            for q in &qs {
                                el += q["stats"]["elapsed_ms"].as_u64().unwrap_or(0);
                                cpu += q["stats"]["cpu_ms"].as_u64().unwrap_or(0);
                            }
                            println!(
                                "    script: {} statements; elapsed {:.2} s, cpu {:.2} s on the coordinator",
                                qs.len(),
                                el as f64 / 1000.0,
                                cpu as f64 / 1000.0
                            );
                        }
                    }
                    Err(_) => println!(
                        "sequential script failed: {}{}",
                        text,
                        String::from_utf8_lossy(&out.stderr)
                    ),
                }
                lab.clear(&u).await;
            }
            None => println!("sequential script skipped: no lab venv python (FLEET_PYTHON)"),
        }
    }

    // Steady state: nothing changed.
    let u = user("steady");
    lab.server_time(&u, latency).await;
    let wall = floe.cycle(&lab, &u, 4, false, false).await;
    let qs = lab.queries_of(&u).await;
    let c = cost(&qs);
    println!(
        "steady refresh, nothing changed: {} for {} statements ({} discovery, {} probes, {} health; bound ceil({n}/{}) + 1 = {}); scans: {}",
        secs(wall),
        c.statements,
        c.discovery,
        c.probes,
        c.health,
        floe.state.tables.policy.probe_batch,
        n.div_ceil(floe.state.tables.policy.probe_batch) + 1,
        c.scans
    );
    print_cost(&lab, &qs);
    lab.clear(&u).await;

    // One table written between refreshes (the stand-in only: on the real Trino the scale
    // tables are the shared seed, never written): an optimize of the table with the most
    // small files (one with none to rewrite would commit nothing).
    if !lab.real {
        let written = floe
            .state
            .tables
            .rows
            .iter()
            .filter(|r| r.stats.as_ref().is_some_and(|s| s.partitioned))
            .max_by_key(|r| r.stats.as_ref().map(|s| s.small_files))
            .map(|r| r.table.clone())
            .unwrap_or_else(|| tables[0].clone());
        let written = &written;
        let snapshots_before = probe_lake.probe(std::slice::from_ref(written)).await;
        let writer = lab.client(&user("writer"), &catalog);
        let wrote = writer
            .client
            .execute(
                &format!(
                    "ALTER TABLE {} EXECUTE optimize(file_size_threshold => '96MB')",
                    written.sql()
                ),
                QueryOptions::default(),
            )
            .await;
        let snapshots_after = probe_lake.probe(std::slice::from_ref(written)).await;
        println!(
            "  {written}: probe {:?} -> {:?}",
            snapshots_before[0].1.as_ref().ok(),
            snapshots_after[0].1.as_ref().ok()
        );
        let u = user("written");
        lab.server_time(&u, latency).await;
        let wall = floe.cycle(&lab, &u, 4, false, false).await;
        let c = cost(&lab.queries_of(&u).await);
        println!(
            "one table written ({}): {} for {} statements ({} probes, {} health)",
            match &wrote {
                Ok(_) => format!("optimize of {written}"),
                Err(e) => format!("the write failed: {e}"),
            },
            secs(wall),
            c.statements,
            c.probes,
            c.health
        );
        lab.clear(&u).await;
    }

    // Relaunch: the first frame from the cache.
    let settings = floe.settings(&lab, &user("relaunch"), 4);
    let t0 = Instant::now();
    let mut st = initial_state(&settings, true).unwrap();
    let entries = floe::cache::load(
        &settings.stats_cache,
        &settings.profile,
        settings.trino.url.as_str(),
    );
    floe::app::tables::warm_start(&mut st, entries);
    st.size = (160, 48);
    let mut term = ratatui::Terminal::new(ratatui::backend::TestBackend::new(160, 48)).unwrap();
    term.draw(|f| floe::ui::draw(f, &st)).unwrap();
    let first_frame = t0.elapsed();
    let painted = st.tables.rows.iter().filter(|r| r.stats.is_some()).count();
    println!(
        "relaunch: first frame {first_frame:?} after start with {painted} of {n} tables from the cache ({} bytes)",
        std::fs::metadata(&settings.stats_cache)
            .map(|m| m.len())
            .unwrap_or(0)
    );
    if let Ok(l) = std::fs::read_to_string("/proc/loadavg") {
        println!("load average at the end: {}", l.trim());
    }

    if !lab.real || std::env::var_os("FLEET_STRATEGIES").is_some() {
        strategies(&lab, &catalog, &floe, &tables, compare, latency, &user).await;
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Each statement shape floe sends, run alone on the real coordinator over tables spread
/// across the fleet: what the coordinator spends on one of each.
async fn shapes(lab: &Lab, catalog: &str, tables: &[TableRef], u: &str) {
    let lake = lab.client(u, catalog);
    let _ = lake.connect().await;
    let _ = lake.discover(&[], &[]).await;
    let step = (tables.len() / 5).max(1);
    let spread: Vec<TableRef> = tables.iter().step_by(step).take(5).cloned().collect();
    let widths: Vec<usize> = std::env::var("FLEET_SHAPE_BATCHES")
        .unwrap_or_else(|_| "10,50".into())
        .split(',')
        .filter_map(|w| w.trim().parse().ok())
        .collect();
    for &b in &widths {
        println!("  shapes: layout batch and probe of {b}");
        let batch: Vec<TableRef> = tables.iter().take(b).cloned().collect();
        let _ = lake
            .client
            .query(&floe::lakehouse::probe::layout_sql(
                &batch,
                "partition_summaries",
            ))
            .await;
        let _ = lake.probe(&batch).await;
    }
    for t in &spread {
        println!("  shapes: health, partitions, snapshots of {t}");
        let _ = lake.table_stats(t).await;
        let _ = lake.partitions(t).await;
        let _ = lake.snapshots(t).await;
    }
    let qs = lab.queries_of(u).await;
    println!(
        "statement shapes, each alone on the coordinator (batches of {widths:?} tables; health, partitions, snapshots of {} tables):",
        spread.len()
    );
    for q in &qs {
        let sql = q["sql"].as_str().unwrap_or("");
        let kind = shape(sql);
        if kind == "other" {
            continue;
        }
        let width = sql.matches("UNION ALL").count() + 1;
        let st = &q["stats"];
        println!(
            "    {kind}{}: elapsed {} ms, planning {} ms, cpu {} ms, processed {} B / {} rows, {} splits{}",
            if matches!(kind, "layout batch" | "change probe") {
                format!(" of {width}")
            } else {
                String::new()
            },
            st["elapsed_ms"],
            st["planning_ms"],
            st["cpu_ms"],
            st["bytes"],
            st["rows"],
            st["splits"],
            match q["error_name"].as_str() {
                Some(e) => format!(" (failed: {e})"),
                None => String::new(),
            }
        );
    }
    for l in coordinator_cost(&qs) {
        println!("    {l}");
    }
}

/// One health statement per table vs K tables per statement vs more in flight.
async fn strategies(
    lab: &Lab,
    catalog: &str,
    floe: &Floe,
    tables: &[TableRef],
    compare: usize,
    latency: u64,
    user: &dyn Fn(&str) -> String,
) {
    let subset: Vec<TableRef> = tables.iter().take(compare).cloned().collect();
    let layout_of = |t: &TableRef| match floe.state.tables.row(t).and_then(|r| r.stats.as_ref()) {
        Some(s) if !s.partitioned => Layout::Unpartitioned,
        _ => Layout::PartitionColumn,
    };
    let layouts: std::collections::HashMap<TableRef, Layout> =
        subset.iter().map(|t| (t.clone(), layout_of(t))).collect();
    let layouts = &layouts;
    let m = subset.len();
    println!("strategies over {m} tables, {latency} ms server time per statement:");
    for conc in [4usize, 8, 16] {
        let u = user(&format!("per_table_c{conc}"));
        lab.server_time(&u, latency).await;
        let lake = lab.client(&u, catalog);
        // As for the batches: every table's layout known (no statement fails).
        lake.remember_layouts(layouts.iter().map(|(t, l)| (t.clone(), *l)));
        let t0 = Instant::now();
        let ok = futures::stream::iter(subset.clone())
            .map(|t| {
                let lake = lake.clone();
                async move { lake.table_stats(&t).await.is_ok() }
            })
            .buffer_unordered(conc)
            .filter(|ok| futures::future::ready(*ok))
            .count()
            .await;
        let qs = lab.queries_of(&u).await;
        println!(
            "  one statement per table, {conc} in flight: {} ({ok}/{m} ok, {} statements)",
            secs(t0.elapsed()),
            qs.len()
        );
        print_cost(lab, &qs);
        lab.clear(&u).await;
    }
    for k in [10usize, 50] {
        let u = user(&format!("union_k{k}"));
        lab.server_time(&u, latency).await;
        let lake = lab.client(&u, catalog);
        let t0 = Instant::now();
        let batches: Vec<Vec<TableRef>> = subset.chunks(k).map(|c| c.to_vec()).collect();
        let results = futures::stream::iter(batches)
            .map(|b| {
                let lake = lake.clone();
                async move {
                    let sql = b
                        .iter()
                        .enumerate()
                        .map(|(i, t)| {
                            format!(
                                "SELECT {i} AS i, h.* FROM ({}) h",
                                stats_sql(t, &lake.health, layouts[t], lake.meta_tables())
                            )
                        })
                        .collect::<Vec<_>>()
                        .join("\nUNION ALL\n");
                    match lake.client.query(&sql).await {
                        Ok(out) => out
                            .rows
                            .iter()
                            .filter(|r| parse_stats(r, Layout::Unpartitioned).is_ok())
                            .count(),
                        Err(e) => {
                            eprintln!("  UNION ALL of {k}: {e}");
                            0
                        }
                    }
                }
            })
            .buffer_unordered(4)
            .collect::<Vec<usize>>()
            .await;
        let qs = lab.queries_of(&u).await;
        println!(
            "  UNION ALL of {k} health aggregates, 4 in flight: {} ({}/{m} ok, {} statements)",
            secs(t0.elapsed()),
            results.iter().sum::<usize>(),
            qs.len()
        );
        print_cost(lab, &qs);
        lab.clear(&u).await;
    }
}
