//! The phases of one run, in the order they run.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use floe::health::Severity;
use floe::lakehouse::model::TableRef;
use floe::runtime::initial_state;
use floe::trino::QueryOptions;
use serde_json::Value;

use crate::cost::{cost, print_cost};
use crate::driver::Floe;
use crate::lab::lab_python;
use crate::{Run, env_num, secs};

/// The wall time of `n` statements sent by `c` clients that each spend `lat` per statement
/// waiting (the injected server time) and queue for a server doing one statement's own
/// work `s` at a time: exact mean value analysis of that closed queue. The server-bound
/// limit max(W, (W + n·lat)/c) assumes the server's work for the `c` statements in flight
/// overlaps freely; a server that does one at a time (the lab: one Python process) makes
/// them queue, and this is the best any client can do against it.
pub(crate) fn one_server_bound(n: f64, c: usize, lat: f64, s: f64) -> f64 {
    let (mut queued, mut throughput) = (0.0, 0.0);
    for k in 1..=c {
        let response = s * (1.0 + queued);
        throughput = k as f64 / (lat + response);
        queued = throughput * response;
    }
    n / throughput
}

/// W (the stand-in): the lab's own work, one statement at a time, no injected latency,
/// over tables spread evenly across the fleet (the first ones by name are one schema's
/// few kinds), scaled to the fleet.
pub(crate) async fn measure_w(run: &Run) -> Duration {
    let sample = env_num("FLEET_W_SAMPLE", 40) as usize;
    let n = run.n();
    let step = (n / sample.max(1)).max(1);
    let sampled: Vec<&TableRef> = run.tables.iter().step_by(step).take(sample).collect();
    // Each sampled statement runs once untimed first: that one learns the table's layout
    // (with the next tables listed) and is the first of its shape, which the lab compiles.
    let mut spent = Duration::ZERO;
    for t in &sampled {
        run.probe_lake.table_stats(t).await.unwrap();
        let t0 = Instant::now();
        run.probe_lake.table_stats(t).await.unwrap();
        spent += t0.elapsed();
    }
    let per = spent / sampled.len().max(1) as u32;
    let w = per * n as u32;
    println!(
        "W: {per:?} per health statement, one at a time ({} sampled across the fleet) -> W = {} for {n} tables",
        sampled.len(),
        secs(w)
    );
    w
}

/// The first full scan (cold: no cache), with the time to the first CRITICAL row and,
/// on the stand-in, against the server-bound limits; its wall time.
pub(crate) async fn first_scan(run: &Run, floe: &mut Floe, w: Duration) -> Duration {
    let (lab, n) = (&run.lab, run.n());
    let u = run.user("full");
    lab.server_time(&u, run.latency).await;
    let (wall, critical) = floe.cycle_timed(lab, &u, 4, true, false).await;
    let qs = lab.queries_of(&u).await;
    let c = cost(&qs);
    let rows = &floe.state.tables.rows;
    let criticals = rows
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
        "  cold cache, ranking in {} of 4 slots: first CRITICAL row on screen {} after launch{} ({criticals} of {n} tables CRITICAL)",
        floe.rank_slots,
        critical.map(secs).unwrap_or_else(|| "never".into()),
        floe.first_critical
            .as_ref()
            .map(|(t, at)| format!(": {t}, row {} of the listing", at + 1))
            .unwrap_or_default()
    );
    print_cost(lab, &qs);
    if !lab.real {
        let stmts = c.statements as f64;
        let lat = run.latency as f64 / 1000.0;
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
    let loaded = rows.iter().filter(|r| r.stats.is_some()).count();
    println!("  {loaded} of {n} tables loaded");
    lab.clear(&u).await;
    wall
}

/// The operator's sequential script, same lab, same server time, against floe's `wall`.
pub(crate) async fn sequential_script(run: &Run, wall: Duration) {
    let Some(py) = lab_python() else {
        println!("sequential script skipped: no lab venv python (FLEET_PYTHON)");
        return;
    };
    let lab = &run.lab;
    let u = run.user("script");
    lab.server_time(&u, run.latency).await;
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/fleet_script.py");
    let out = tokio::process::Command::new(&py)
        .arg(&script)
        .args([&lab.url(), &u, &run.catalog, &run.n().to_string()])
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
                let (mut el, mut cpu, mut plan) = (0u64, 0u64, 0u64);
                for q in &qs {
                    el += q["stats"]["elapsed_ms"].as_u64().unwrap_or(0);
                    cpu += q["stats"]["cpu_ms"].as_u64().unwrap_or(0);
                    plan += q["stats"]["planning_ms"].as_u64().unwrap_or(0);
                }
                println!(
                    "    script: {} statements; elapsed {:.2} s, planning {:.2} s, cpu {:.2} s on the coordinator (planning + cpu {:.2} s)",
                    qs.len(),
                    el as f64 / 1000.0,
                    plan as f64 / 1000.0,
                    cpu as f64 / 1000.0,
                    (plan + cpu) as f64 / 1000.0
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

/// Steady state: a refresh with nothing changed, what an open floe costs per cycle.
pub(crate) async fn steady(run: &Run, floe: &mut Floe) {
    let (lab, n) = (&run.lab, run.n());
    let u = run.user("steady");
    lab.server_time(&u, run.latency).await;
    let wall = floe.cycle(lab, &u, 4, false, false).await;
    let qs = lab.queries_of(&u).await;
    let c = cost(&qs);
    let batch = floe.state.tables.policy.probe_batch;
    println!(
        "steady refresh, nothing changed: {} for {} statements ({} discovery, {} probes, {} health; bound ceil({n}/{batch}) + 1 = {}); scans: {}",
        secs(wall),
        c.statements,
        c.discovery,
        c.probes,
        c.health,
        n.div_ceil(batch) + 1,
        c.scans
    );
    print_cost(lab, &qs);
    lab.clear(&u).await;
}

/// One table written between refreshes (the stand-in only: on the real Trino the scale
/// tables are the shared seed, never written): an optimize of the table with the most
/// small files (one with none to rewrite would commit nothing).
pub(crate) async fn one_written(run: &Run, floe: &mut Floe) {
    let lab = &run.lab;
    let written = floe
        .state
        .tables
        .rows
        .iter()
        .filter(|r| r.stats.as_ref().is_some_and(|s| s.partitioned))
        .max_by_key(|r| r.stats.as_ref().map(|s| s.small_files))
        .map(|r| r.table.clone())
        .unwrap_or_else(|| run.tables[0].clone());
    let before = run.probe_lake.probe(std::slice::from_ref(&written)).await;
    let writer = lab.client(&run.user("writer"), &run.catalog);
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
    let after = run.probe_lake.probe(std::slice::from_ref(&written)).await;
    println!(
        "  {written}: probe {:?} -> {:?}",
        before[0].1.as_ref().ok(),
        after[0].1.as_ref().ok()
    );
    let u = run.user("written");
    lab.server_time(&u, run.latency).await;
    let wall = floe.cycle(lab, &u, 4, false, false).await;
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

/// A relaunch: the first frame painted from the stats cache the scans wrote.
pub(crate) fn relaunch(run: &Run, floe: &Floe) {
    let settings = floe.settings(&run.lab, &run.user("relaunch"), 4);
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
        "relaunch: first frame {first_frame:?} after start with {painted} of {} tables from the cache ({} bytes)",
        run.n(),
        std::fs::metadata(&settings.stats_cache)
            .map(|m| m.len())
            .unwrap_or(0)
    );
}
