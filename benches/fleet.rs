//! What an open floe costs the coordinator at fleet scale, on the lab's 1,000-table scale
//! scenario with a fixed server time injected per statement (`server_time`, 100 ms), as
//! a real coordinator has. `cargo xtask bench` (or `cargo bench --bench fleet` with the
//! scale lab up) prints, per phase, the wall time and the statements (and metadata scans,
//! when the lab reports them) it cost:
//!
//! - the lab's own work W, one statement at a time (a sample, scaled to the fleet), once
//!   the lab has built every table's metadata tables (it does from its start);
//! - the first full scan, against the server-bound limit max(W, (W + n·latency) / c);
//! - the sequential script an operator writes with the official `trino` client
//!   (`benches/fleet_script.py`), in the same run;
//! - a steady refresh with nothing changed, and one after one table was written;
//! - a relaunch: the first frame painted from the stats cache;
//! - one health statement per table against a UNION ALL of K tables' health aggregates
//!   and against more statements in flight.
//!
//! Knobs (environment): FLEET_TABLES (1000), FLEET_LATENCY_MS (100), FLEET_W_SAMPLE (40),
//! FLEET_COMPARE_TABLES (200), FLEET_SKIP_SCRIPT, FLEET_PYTHON (the lab venv's python).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use floe::app::action::Action;
use floe::app::runtime::{Runtime, initial_state};
use floe::app::state::State;
use floe::app::tables::TablesMsg;
use floe::app::update::{refresh, update};
use floe::config;
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
}

impl Lab {
    fn open() -> Lab {
        let dir = std::env::var_os("FLOE_LAB_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".lab"));
        let text = std::fs::read_to_string(dir.join("lab.json"))
            .unwrap_or_else(|e| panic!("{}: {e}: `cargo xtask lab up --scale`", dir.display()));
        Lab {
            json: serde_json::from_str(&text).unwrap(),
            dir,
            http: reqwest::Client::new(),
        }
    }

    fn url(&self) -> String {
        self.json["trino"]["url"].as_str().unwrap().to_string()
    }

    fn control(&self) -> String {
        self.json["trino"]["control_url"]
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
        let _ = self
            .http
            .delete(format!("{}/faults?user={user}", self.control()))
            .send()
            .await;
    }

    async fn queries_of(&self, user: &str) -> Vec<Value> {
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
        let settings = self.settings(lab, user, concurrency);
        if start {
            self.state = initial_state(&settings, true).unwrap();
        }
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut rt = Runtime::new(settings.clone(), config::Overrides::default(), tx).unwrap();
        let t0 = Instant::now();
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
        }
        let wall = t0.elapsed();
        // The cache write of the refresh's end.
        tokio::time::sleep(Duration::from_millis(300)).await;
        while let Ok(a) = rx.try_recv() {
            let fx = update(&mut self.state, a);
            rt.run(fx);
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        wall
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
    let n = env_num("FLEET_TABLES", 1000) as usize;
    let latency = env_num("FLEET_LATENCY_MS", 100);
    let sample = env_num("FLEET_W_SAMPLE", 40) as usize;
    let compare = env_num("FLEET_COMPARE_TABLES", 200) as usize;
    let pid = std::process::id();
    let user = |phase: &str| format!("fleet_{phase}_{pid}");
    let dir = std::env::temp_dir().join(format!("floe-fleet-bench-{pid}"));
    std::fs::create_dir_all(&dir).unwrap();
    println!(
        "fleet benchmark: lab {} ({}), catalog {catalog}, {n} tables, {latency} ms server time per statement",
        lab.url(),
        lab.dir.display()
    );

    let t0 = Instant::now();
    lab.prewarmed().await;
    println!(
        "the lab built every table's metadata tables ({} waited)",
        secs(t0.elapsed())
    );
    let probe_lake = lab.client(&user("w"), &catalog);
    let all = probe_lake.discover(&[], &[]).await.unwrap();
    let tables: Vec<TableRef> = all.into_iter().take(n).collect();
    let n = tables.len();

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
    let w = per * n as u32;
    println!(
        "W: {per:?} per health statement, one at a time ({} sampled across the fleet) -> W = {} for {n} tables",
        sampled.len(),
        secs(w)
    );

    // The first full scan (cold: no cache).
    let mut floe = Floe {
        state: State::new(chrono::Utc::now()),
        dir: dir.clone(),
        limit: n,
    };
    let u = user("full");
    lab.server_time(&u, latency).await;
    let wall = floe.cycle(&lab, &u, 4, true, false).await;
    let c = cost(&lab.queries_of(&u).await);
    let stmts = c.statements as f64;
    let lat = latency as f64 / 1000.0;
    let limit = |conc: f64| w.as_secs_f64().max((w.as_secs_f64() + stmts * lat) / conc);
    println!(
        "first full scan, 4 in flight: {} for {} statements ({} discovery, {} layouts, {} health, {} failed and retried); scans: {}; server-bound limit {:.2} s -> ratio {:.2}",
        secs(wall),
        c.statements,
        c.discovery,
        c.layouts,
        c.health,
        c.failed,
        c.scans,
        limit(4.0),
        wall.as_secs_f64() / limit(4.0)
    );
    let queueing = one_server_bound(stmts, 4, lat, w.as_secs_f64() / n as f64);
    println!(
        "  against a server doing one statement's work at a time (4 clients, mean value analysis): {queueing:.2} s -> ratio {:.2}",
        wall.as_secs_f64() / queueing
    );
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
    let c = cost(&lab.queries_of(&u).await);
    println!(
        "steady refresh, nothing changed: {} for {} statements ({} discovery, {} probes, {} health; bound ceil({n}/50)+1 = {}); scans: {}",
        secs(wall),
        c.statements,
        c.discovery,
        c.probes,
        c.health,
        n.div_ceil(50) + 1,
        c.scans
    );
    lab.clear(&u).await;

    // One table written between refreshes: an optimize of the table with the most small
    // files (one with none to rewrite would commit nothing).
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
        "  {written}: snapshots {:?} -> {:?}",
        snapshots_before[0].1.as_ref().map(|p| p.snapshots),
        snapshots_after[0].1.as_ref().map(|p| p.snapshots)
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

    // One statement per table vs K tables per statement vs more in flight.
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
        let lake = lab.client(&u, &catalog);
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
        println!(
            "  one statement per table, {conc} in flight: {} ({ok}/{m} ok, {} statements)",
            secs(t0.elapsed()),
            lab.queries_of(&u).await.len()
        );
        lab.clear(&u).await;
    }
    for k in [10usize, 50] {
        let u = user(&format!("union_k{k}"));
        lab.server_time(&u, latency).await;
        let lake = lab.client(&u, &catalog);
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
        println!(
            "  UNION ALL of {k} health aggregates, 4 in flight: {} ({}/{m} ok, {} statements)",
            secs(t0.elapsed()),
            results.iter().sum::<usize>(),
            lab.queries_of(&u).await.len()
        );
        lab.clear(&u).await;
    }
    let _ = std::fs::remove_dir_all(&dir);
}
