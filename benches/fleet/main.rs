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

use std::time::{Duration, Instant};

use floe::app::state::State;
use floe::lakehouse::model::TableRef;
use floe::lakehouse::queries::Lakehouse;

mod compare;
mod cost;
mod driver;
mod lab;
mod phases;

use compare::{shapes, strategies};
use driver::Floe;
use lab::Lab;
use phases::{first_scan, measure_w, one_written, relaunch, sequential_script, steady};

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

fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

/// What every phase of one benchmark run shares: the lab, the fleet under test, the
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
        format!("fleet_{phase}_{}", self.pid)
    }
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
    let pid = std::process::id();
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
    print_load("at start");
    let probe_lake = lab.client(&format!("fleet_w_{pid}"), &catalog);
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
    let run = Run {
        lab,
        catalog,
        tables,
        latency,
        pid,
        probe_lake,
    };

    let mut w = Duration::ZERO;
    if run.lab.real {
        if std::env::var_os("FLEET_SKIP_SHAPES").is_none() {
            shapes(&run.lab, &run.catalog, &run.tables, &run.user("shapes")).await;
        }
    } else {
        w = measure_w(&run).await;
    }
    let mut floe = Floe {
        state: State::new(chrono::Utc::now()),
        dir: dir.clone(),
        limit: run.n(),
        rank_slots: env_num(
            "FLEET_RANK_SLOTS",
            floe::app::tables::DEFAULT_RANK_SLOTS as u64,
        ) as usize,
        first_critical: None,
    };
    let wall = first_scan(&run, &mut floe, w).await;
    if std::env::var_os("FLEET_SKIP_SCRIPT").is_none() {
        sequential_script(&run, wall).await;
    }
    steady(&run, &mut floe).await;
    if !run.lab.real {
        one_written(&run, &mut floe).await;
    }
    relaunch(&run, &floe);
    print_load("at the end");
    if !run.lab.real || std::env::var_os("FLEET_STRATEGIES").is_some() {
        let compare = env_num("FLEET_COMPARE_TABLES", 200) as usize;
        let user = |phase: &str| run.user(phase);
        strategies(
            &run.lab,
            &run.catalog,
            &floe,
            &run.tables,
            compare,
            run.latency,
            &user,
        )
        .await;
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn print_load(when: &str) {
    if let Ok(l) = std::fs::read_to_string("/proc/loadavg") {
        println!("load average {when}: {}", l.trim());
    }
}
