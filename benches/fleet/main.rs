//! What an open floe costs the coordinator at fleet scale, on the lab's scale scenario,
//! against the sequential script an operator writes, in one run at each fleet size
//! (`FLEET_TABLES`, `300,1000` on the real Trino). Against the real Trino
//! (`FLEET_SERVER=real`, the default when the lab runs one) the costs are the
//! coordinator's own, read back from its query stats (`GET /v1/query/{id}`: planning wall
//! time and CPU, task CPU, elapsed) and from its process (`/proc/<pid>/stat`); against the
//! lab's Python stand-in (`FLEET_SERVER=stand_in`) a fixed server time is injected per
//! statement (`server_time`, 100 ms) and the lab's own work W is measured. Each size runs:
//!
//! - the cold full scan (no cache), with the time from launch to the first CRITICAL row;
//! - the sequential script (`benches/fleet_script.py`, the official `trino` client, two
//!   statements a table), the same tables;
//! - `floe check --format json` over the same tables, cold (the release binary);
//! - steady refreshes with nothing changed: the cost per refresh and per minute;
//! - an hour of open floe: the coordinator's CPU idle, then a few minutes of floe open at
//!   its refresh interval over the unchanged fleet, over idle, extrapolated to an hour;
//! - one row written through the coordinator, then one refresh: whether it read the table;
//! - a warm launch over the cache after one more write: the first frame, and when the
//!   written table was read again.
//!
//! Every phase's statements are kept by kind too: which metadata tables each reads
//! (`kinds`), with the coordinator's planning and task CPU of each kind.
//!
//! The fleet is one of the scale scenario's fleets by writer (`FLEET_WRITERS`: mixed, the
//! catalog `scale`; pyiceberg, `scale_pyiceberg`; trino, `scale_trino`), which the lab
//! serves with `labctl up --scale --fleets …`.
//!
//! Every run writes one JSON file (`FLEET_OUT`, default `target/fleet/`), with the load
//! average and the coordinator's heap at each phase; `FLEET_REPORT=a.json,b.json cargo
//! bench --bench fleet` prints the markdown tables of benches/README.md from runs side by
//! side.
//!
//! Knobs (environment): FLEET_SERVER (real | stand_in), FLEET_WRITERS (mixed | pyiceberg |
//! trino), FLEET_TABLES (sizes, comma-separated), FLEET_SKIP_CHECK, FLEET_SKIP_OPEN,
//! FLEET_SETTLE_S (30), FLEET_IDLE_S (120), FLEET_OPEN_MINUTES (4), FLEET_COLLECT_AFTER_S
//! (240: a phase running longer has its statements read as it runs), FLEET_LATENCY_MS (100, stand-in), FLEET_W_SAMPLE (40), FLEET_STEADY_REFRESHES
//! (3), FLEET_RANK_SLOTS (the slots a cold start's surveys take, 3), FLEET_SKIP_WARMUP (the real
//! coordinator's unmeasured warm-up), FLEET_SKIP_SCRIPT,
//! FLEET_SHAPES (each statement shape alone first), FLEET_STRATEGIES (and
//! FLEET_COMPARE_TABLES, 200: one read a table against UNION ALLs, always on the stand-in),
//! FLEET_PYTHON (the lab venv's python).

use std::time::{Duration, Instant};

use floe::lakehouse::model::TableRef;
use floe::lakehouse::queries::Lakehouse;
use serde_json::{Value, json};

mod compare;
mod cost;
mod driver;
mod kinds;
mod lab;
mod phases;
mod record;
mod report;

use compare::{shapes, strategies};
use driver::Floe;
use lab::Lab;

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
    if let Ok(list) = std::env::var("FLEET_REPORT") {
        let runs: Vec<Value> = list
            .split(',')
            .map(|p| {
                let p = p.trim();
                let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{p}: {e}"));
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{p}: {e}"))
            })
            .collect();
        print!("{}", report::markdown(&runs));
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(bench());
}

fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

/// What every phase of one fleet size shares: the lab, the fleet under test, the
/// injected server time, and the users the phases run as.
struct Run {
    lab: Lab,
    catalog: String,
    tables: Vec<TableRef>,
    latency: u64,
    pid: u32,
    /// A client of its own for the statements the benchmark sends beside floe's.
    probe_lake: Lakehouse,
}

impl Run {
    fn n(&self) -> usize {
        self.tables.len()
    }

    fn user(&self, phase: &str) -> String {
        format!("fleet_{phase}_{}_{}", self.n(), self.pid)
    }
}

async fn bench() {
    let lab = Lab::open();
    let catalog = lab.catalog();
    let sizes: Vec<usize> = std::env::var("FLEET_TABLES")
        .unwrap_or_else(|_| if lab.real { "300,1000" } else { "1000" }.into())
        .split(',')
        .filter_map(|n| n.trim().parse().ok())
        .collect();
    let latency = if lab.real {
        0
    } else {
        env_num("FLEET_LATENCY_MS", 100)
    };
    let pid = std::process::id();
    let started = chrono::Utc::now();
    println!(
        "fleet benchmark: {} {} ({}), catalog {catalog}, sizes {sizes:?}{}",
        if lab.real { "real Trino" } else { "stand-in" },
        lab.url(),
        lab.dir.display(),
        if lab.real {
            String::new()
        } else {
            format!(", {latency} ms server time per statement")
        }
    );
    let load_start = record::loadavg();
    println!("load average at start: {load_start:?}");
    let catalogs = lab.catalogs();
    let probe_lake = lab.client(&format!("fleet_w_{pid}"), &catalogs[0]);
    if lab.real {
        let t0 = Instant::now();
        let said = lab.stand_in_settled().await;
        println!("{said} ({} waited)", secs(t0.elapsed()));
    }
    if !lab.real {
        let t0 = Instant::now();
        lab.prewarmed().await;
        println!(
            "the lab built every table's metadata tables ({} waited)",
            secs(t0.elapsed())
        );
    }
    let mut lists = Vec::new();
    for c in &catalogs {
        let lake = lab.client(&format!("fleet_w_{pid}"), c);
        lists.push((lab.is_delta(c), lake.discover(&[], &[]).await.unwrap()));
    }
    let mut run = Run {
        lab,
        catalog,
        tables: Vec::new(),
        latency,
        pid,
        probe_lake,
    };
    if run.lab.real && std::env::var_os("FLEET_SKIP_WARMUP").is_none() {
        run.tables = select(&lists, sizes.iter().copied().max().unwrap_or(0));
        phases::warm_up(&run).await;
    }
    let mut per_size = Vec::new();
    for &n in &sizes {
        run.tables = select(&lists, n);
        println!("\n== {} tables", run.n());
        per_size.push(one_size(&run).await);
    }
    let load_end = record::loadavg();
    println!("load average at the end: {load_end:?}");
    if !run.lab.real || std::env::var_os("FLEET_STRATEGIES").is_some() {
        run.tables = select(&lists, sizes.last().copied().unwrap_or(0));
        let compare = env_num("FLEET_COMPARE_TABLES", 200) as usize;
        let dir = std::env::temp_dir().join(format!("floe-fleet-bench-{pid}-strategies"));
        std::fs::create_dir_all(&dir).unwrap();
        let floe = Floe::new(dir.clone(), &run.tables);
        let user = |phase: &str| run.user(phase);
        strategies(
            &run.lab,
            &run.lab.catalogs()[0],
            &floe,
            &run.tables,
            compare,
            run.latency,
            &user,
        )
        .await;
        let _ = std::fs::remove_dir_all(&dir);
    }
    let doc = json!({
        "started": started.to_rfc3339(),
        "writers": run.lab.writers(),
        "catalog": run.catalog,
        "server": if run.lab.real { "real" } else { "stand_in" },
        "trino": run.lab.json["trino"]["version"],
        "heap": run.lab.json["trino"]["heap"],
        "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        "load_start": load_start,
        "load_end": load_end,
        "sizes": per_size,
    });
    let out = std::env::var_os("FLEET_OUT")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/fleet")
        });
    std::fs::create_dir_all(&out).unwrap();
    let file = out.join(format!(
        "fleet-{}-{}.json",
        run.lab.writers().replace(',', "+"),
        started.format("%Y%m%dT%H%M%SZ")
    ));
    std::fs::write(&file, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    println!("\nwritten: {}", file.display());
}

/// The fleet of `n` tables: of one catalog its first `n` as listed; over several (each
/// listed, with whether it is Delta Lake's), the Delta Lake catalogs' first third of `n`
/// at most, shared between them, and the Iceberg catalogs' first of the rest, shared
/// evenly (the last takes what the others leave), in the catalogs' order.
fn select(lists: &[(bool, Vec<TableRef>)], n: usize) -> Vec<TableRef> {
    if let [(_, only)] = lists {
        return only.iter().take(n).cloned().collect();
    }
    let deltas = lists.iter().filter(|(d, _)| *d).count();
    let icebergs = lists.len() - deltas;
    let mut quota: Vec<usize> = lists
        .iter()
        .map(|(d, l)| if *d { l.len().min(n / 3 / deltas) } else { 0 })
        .collect();
    let mut rest = n - quota.iter().sum::<usize>();
    let mut left = icebergs;
    for (q, (d, l)) in quota.iter_mut().zip(lists) {
        if !*d {
            let share = if left == 1 { rest } else { rest / left };
            *q = l.len().min(share);
            rest -= *q;
            left -= 1;
        }
    }
    lists
        .iter()
        .zip(quota)
        .flat_map(|((_, l), q)| l.iter().take(q).cloned())
        .collect()
}

/// Every phase at one fleet size; its record.
async fn one_size(run: &Run) -> Value {
    let dir = std::env::temp_dir().join(format!("floe-fleet-bench-{}-{}", run.pid, run.n()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut w = Duration::ZERO;
    if run.lab.real {
        if std::env::var_os("FLEET_SHAPES").is_some() {
            shapes(
                &run.lab,
                &run.lab.catalogs()[0],
                &run.tables,
                &run.user("shapes"),
            )
            .await;
        }
    } else {
        w = phases::measure_w(run).await;
    }
    let mut floe = Floe::new(dir.clone(), &run.tables);
    let cold = phases::cold(run, &mut floe, w).await;
    // The check before the script: a coordinator keeps every finished query's record for
    // `query.min-expire-age` (15 min by default, 5 in the lab), and after the script's
    // 601-2,001 statements it stayed busy with them for minutes (the check measured
    // after it cost 52-60 s of process CPU at 1,000 tables, 35 s before it). What the
    // script's statements cost the coordinator after it ends is the script's.
    let check = if run.lab.real && std::env::var_os("FLEET_SKIP_CHECK").is_none() {
        Some(phases::check(run, &dir).await)
    } else {
        None
    };
    let script = if std::env::var_os("FLEET_SKIP_SCRIPT").is_none() {
        phases::script(run).await
    } else {
        None
    };
    if let Some(s) = &script {
        let (f, sc) = (&cold, s);
        // floe's figure over the script's: under 1 where floe spends less.
        let ratio = |k: &dyn Fn(&Value) -> Option<f64>| match (k(f), k(sc)) {
            (Some(a), Some(b)) if b > 0.0 => format!("{:.2}", a / b),
            _ => "-".into(),
        };
        println!(
            "  floe over the script: wall {}, coordinator planning + task CPU {}, its process CPU {}",
            ratio(&|r| r["wall_s"].as_f64()),
            ratio(&|r| r["coordinator"]["cost_ms"].as_f64()),
            ratio(&|r| r["process_cpu_ms"].as_f64()),
        );
    }
    let steady = phases::steady(run, &mut floe).await;
    // Before the writes below: an hour of open floe is measured on the unchanged fleet.
    let open = if run.lab.real && std::env::var_os("FLEET_SKIP_OPEN").is_none() {
        Some(phases::open(run, &mut floe).await)
    } else {
        None
    };
    // The table written: the first listed, which every size holds.
    let target = run.tables[0].clone();
    let written = if run.lab.real {
        Some(phases::written(run, &mut floe, &target).await)
    } else {
        None
    };
    let warm = phases::warm(run, &mut floe, &target).await;
    let _ = std::fs::remove_dir_all(&dir);
    json!({
        "tables": run.n(),
        "cold": cold,
        "script": script,
        "check": check,
        "steady": steady,
        "open": open,
        "written": written,
        "warm": warm,
    })
}
