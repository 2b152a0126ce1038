//! The phases of one fleet size, in the order they run; each returns its record (see
//! `record`), printed as it ends and kept in the run's JSON file.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use floe::health::Severity;
use floe::lakehouse::model::TableRef;
use floe::trino::QueryOptions;
use serde_json::{Value, json};

use crate::driver::Floe;
use crate::lab::lab_python;
use crate::record::{self, Meter, line, record};
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
    // and is the first of its shape, which the lab compiles.
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
        "W: {per:?} per table read, one at a time ({} sampled across the fleet) -> W = {} for {n} tables",
        sampled.len(),
        secs(w)
    );
    w
}

/// The first full scan (cold: no cache): its cost, the time to the first CRITICAL row
/// and, on the stand-in, the server-bound limits.
pub(crate) async fn cold(run: &Run, floe: &mut Floe, w: Duration) -> Value {
    let (lab, n) = (&run.lab, run.n());
    let u = run.user("cold");
    lab.server_time(&u, run.latency).await;
    let _ = std::fs::remove_file(floe.dir.join("stats.json"));
    quiet(lab).await;
    let meter = Meter::start(lab);
    // The scan's wall time ends with its last answer; the cache written after it (in the
    // cycle's pause) is the client's work, in its CPU.
    let (wall, critical) = floe.cycle_timed(lab, &u, 4, true, false).await;
    let (_, cpu) = meter.stop(lab);
    let client = meter.client_ms();
    let qs = lab.queries_of(&u).await;
    let rows = &floe.state.tables.rows;
    let criticals = rows
        .iter()
        .filter(|r| r.status() == Some(Severity::Critical))
        .count();
    let loaded = rows.iter().filter(|r| r.stats().is_some()).count();
    let mut extra = json!({
        "tables": n,
        "loaded": loaded,
        "criticals": criticals,
        "first_critical_s": critical.map(|d| d.as_secs_f64()),
        "first_critical_table": floe.first_critical.as_ref().map(|(t, _)| t.clone()),
        "first_critical_row": floe.first_critical.as_ref().map(|(_, at)| at + 1),
        "errors": rows.iter().filter(|r| r.error().is_some()).count(),
        "client_cpu_ms": client,
    });
    let statuses: Vec<(String, String)> = rows
        .iter()
        .map(|r| {
            (
                format!("{}.{}", r.table.schema, r.table.table),
                r.status().map(|s| s.label()).unwrap_or("?").to_string(),
            )
        })
        .collect();
    extra["verdicts"] = verdicts(lab.expected().as_ref(), &statuses);
    if !lab.real {
        let stmts = qs.len() as f64;
        let lat = run.latency as f64 / 1000.0;
        let limit = w.as_secs_f64().max((w.as_secs_f64() + stmts * lat) / 4.0);
        extra["server_bound_s"] = json!(limit);
        extra["one_server_bound_s"] =
            json!(one_server_bound(stmts, 4, lat, w.as_secs_f64() / n as f64));
    }
    let r = record(lab, wall, cpu, &qs, extra).await;
    println!("{}", line("cold full scan", &r));
    print_kinds(&r);
    println!("  verdicts as expected.json: {}", r["verdicts"]);
    println!(
        "  first CRITICAL row on screen {} after launch{}; {criticals} of {n} tables CRITICAL, {loaded} loaded",
        critical.map(secs).unwrap_or_else(|| "never".into()),
        floe.first_critical
            .as_ref()
            .map(|(t, at)| format!(" ({t}, row {} of the listing)", at + 1))
            .unwrap_or_default()
    );
    lab.clear(&u).await;
    r
}

/// `benches/fleet_script.py` over the run's tables as `user`, to its end: one run a
/// catalog, one after the other, each over its first tables as the fleet takes them (a
/// Delta Lake catalog read the Delta way); what the runs printed, summed (`tables`,
/// `statements`, `wall_s`), or what a failed one said.
async fn run_script(py: &std::path::Path, run: &Run, user: &str) -> Result<Value, String> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/fleet_script.py");
    let mut sum = json!({"tables": 0, "statements": 0, "wall_s": 0.0});
    for catalog in run.lab.catalogs() {
        let n = run.tables.iter().filter(|t| t.catalog == catalog).count();
        if n == 0 {
            continue;
        }
        let delta = run.lab.is_delta(&catalog).then_some("--delta");
        let out = tokio::process::Command::new(py)
            .arg(&path)
            .args([&run.lab.url(), user, &catalog, &n.to_string()])
            .args(delta)
            .output()
            .await
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let v: Value = serde_json::from_str(text.trim())
            .map_err(|_| format!("{catalog}: {text}{}", String::from_utf8_lossy(&out.stderr)))?;
        for k in ["tables", "statements"] {
            sum[k] = json!(sum[k].as_u64().unwrap_or(0) + v[k].as_u64().unwrap_or(0));
        }
        sum["wall_s"] =
            json!(sum["wall_s"].as_f64().unwrap_or(0.0) + v["wall_s"].as_f64().unwrap_or(0.0));
    }
    Ok(sum)
}

/// The operator's sequential script (`benches/fleet_script.py`), the same tables.
pub(crate) async fn script(run: &Run) -> Option<Value> {
    let Some(py) = lab_python() else {
        println!("sequential script skipped: no lab venv python (FLEET_PYTHON)");
        return None;
    };
    let lab = &run.lab;
    let u = run.user("script");
    lab.server_time(&u, run.latency).await;
    quiet(lab).await;
    let meter = Meter::start(lab);
    let (out, kept) = collecting(run, &u, run_script(&py, run, &u)).await;
    let (wall, cpu) = meter.stop(lab);
    let client = meter.client_ms();
    let v = match out {
        Ok(v) => v,
        Err(e) => {
            println!("sequential script failed: {e}");
            return None;
        }
    };
    let qs = all_queries(run, &u, kept).await;
    let r = record(
        lab,
        wall,
        cpu,
        &qs,
        json!({"tables": v["tables"], "script_wall_s": v["wall_s"], "client_cpu_ms": client}),
    )
    .await;
    println!("{}", line("sequential script", &r));
    print_kinds(&r);
    lab.clear(&u).await;
    Some(r)
}

/// The coordinator's warm-up before anything is measured: the script's statements and
/// `floe check`'s over the largest fleet, unrecorded. A coordinator fresh from its start spends its first few
/// hundred statements compiling (the JIT) and filling its metadata caches: measured
/// without it, whichever client goes first pays for both (a 300-table cold scan took
/// 25 s on a fresh coordinator, 10 s after it).
pub(crate) async fn warm_up(run: &Run) {
    let Some(py) = lab_python() else {
        return;
    };
    let u = run.user("warmup");
    let t0 = Instant::now();
    let out = run_script(&py, run, &u).await;
    println!(
        "coordinator warm-up (unmeasured): the script over {} tables, {:.1} s{}",
        run.n(),
        t0.elapsed().as_secs_f64(),
        if out.is_ok() { "" } else { ", failed" }
    );
    run.lab.clear(&u).await;
    // floe's statement shapes too: the first measured phase is floe's, and a coordinator
    // that has not compiled its shapes yet makes it pay for them where the script did not.
    let u = run.user("warmup_floe");
    let home = std::env::temp_dir().join(format!("floe-fleet-bench-{}-warmup", run.pid));
    let t0 = Instant::now();
    let out = check_command(run, &home, &u).output().await;
    println!(
        "coordinator warm-up (unmeasured): floe check over {} tables, {:.1} s{}",
        run.n(),
        t0.elapsed().as_secs_f64(),
        if out.is_ok() { "" } else { ", failed" }
    );
    let _ = std::fs::remove_dir_all(&home);
    run.lab.clear(&u).await;
}

/// `floe check --format json` over the run's tables as `u`: the released binary (built by
/// `cargo bench` in the bench profile, `CARGO_BIN_EXE_floe`) with a config of its own
/// pointing at the lab, its state, cache and config directories in `home` (emptied).
fn check_command(run: &Run, home: &std::path::Path, u: &str) -> tokio::process::Command {
    let lab = &run.lab;
    let _ = std::fs::remove_dir_all(home);
    std::fs::create_dir_all(home).unwrap();
    let config = home.join("config.toml");
    std::fs::write(
        &config,
        format!(
            "max_concurrent_queries = 4\n[trino]\nurl = {:?}\nuser = {u:?}\ncatalog = {:?}\n",
            lab.url(),
            run.catalog
        ),
    )
    .unwrap();
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_floe"));
    cmd.arg("--config")
        .arg(&config)
        .args(["check", "--format", "json"])
        .env_remove("FLOE_CONFIG")
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_CACHE_HOME", home.join("cache"))
        .env("XDG_STATE_HOME", home.join("state"))
        .env("XDG_DATA_HOME", home.join("data"));
    for t in &run.tables {
        cmd.arg("--table").arg(format!("{}.{}", t.schema, t.table));
    }
    cmd
}

/// Steady refreshes with nothing changed: what an open floe costs per refresh and per
/// minute at its refresh interval.
pub(crate) async fn steady(run: &Run, floe: &mut Floe) -> Value {
    let lab = &run.lab;
    let k = env_num("FLEET_STEADY_REFRESHES", 3) as usize;
    let mut each = Vec::new();
    for i in 0..k {
        let u = run.user(&format!("steady{i}"));
        lab.server_time(&u, run.latency).await;
        let meter = Meter::start(lab);
        floe.cycle(lab, &u, 4, false, false).await;
        let (wall, cpu) = meter.stop(lab);
        let qs = lab.queries_of(&u).await;
        let r = record(lab, wall, cpu, &qs, json!({})).await;
        println!("{}", line(&format!("steady refresh {}", i + 1), &r));
        print_kinds(&r);
        lab.clear(&u).await;
        each.push(r);
    }
    let refresh_s = floe.state.refresh_every.as_secs_f64().max(1.0);
    let mean = |f: &dyn Fn(&Value) -> f64| each.iter().map(f).sum::<f64>() / each.len() as f64;
    let cost = mean(&|r| r["coordinator"]["cost_ms"].as_f64().unwrap_or(0.0));
    let planning = mean(&|r| r["coordinator"]["planning_ms"].as_f64().unwrap_or(0.0));
    let process = mean(&|r| r["process_cpu_ms"].as_f64().unwrap_or(f64::NAN));
    let per_min = 60.0 / refresh_s;
    println!(
        "  steady, per minute at a {refresh_s:.0} s refresh: cost {:.2} s (planning CPU + task CPU), planning wall {:.2} s, process CPU {:.2} s",
        cost * per_min / 1000.0,
        planning * per_min / 1000.0,
        process * per_min / 1000.0
    );
    json!({
        "refresh_s": refresh_s,
        "refreshes": each,
        "per_minute_cost_ms": cost * per_min,
        "per_minute_planning_ms": planning * per_min,
        "per_minute_process_cpu_ms": process * per_min,
    })
}

/// A write through the coordinator (one row into `table`, as another user), then one
/// steady refresh: whether that refresh read the table again.
pub(crate) async fn written(run: &Run, floe: &mut Floe, table: &TableRef) -> Value {
    let lab = &run.lab;
    let wrote = write_one_row(run, table).await;
    let before = floe
        .state
        .tables
        .row(table)
        .and_then(|r| r.stats())
        .and_then(|s| s.snapshot_id);
    let u = run.user("written");
    lab.server_time(&u, run.latency).await;
    let meter = Meter::start(lab);
    floe.cycle(lab, &u, 4, false, false).await;
    let (wall, cpu) = meter.stop(lab);
    let after = floe
        .state
        .tables
        .row(table)
        .and_then(|r| r.stats())
        .and_then(|s| s.snapshot_id);
    let seen = wrote.is_ok() && after.is_some() && after != before;
    let qs = lab.queries_of(&u).await;
    let r = record(
        lab,
        wall,
        cpu,
        &qs,
        json!({"table": table.to_string(), "write": wrote.err(), "seen_in_one_refresh": seen}),
    )
    .await;
    println!(
        "{}",
        line(&format!("one write to {table}, one refresh"), &r)
    );
    println!(
        "  the written table read again in that refresh: {}",
        if seen { "yes" } else { "NO" }
    );
    lab.clear(&u).await;
    r
}

/// One row into `table` through the coordinator, as the bench's writer.
async fn write_one_row(run: &Run, table: &TableRef) -> Result<(), String> {
    let writer = run.lab.client(&run.user("writer"), &table.catalog);
    // (the Delta fleet's tables, delta-rs's: order_id, region, amount, note)
    let sql = if run.lab.is_delta(&table.catalog) {
        format!(
            "INSERT INTO {} (order_id, region, amount, note) VALUES (0, 'emea', 0, 'fleet bench')",
            table.sql()
        )
    } else {
        format!(
            "INSERT INTO {} (id, region, ts, amount, note) VALUES (0, 'emea', current_timestamp, 0, 'fleet bench')",
            table.sql()
        )
    };
    writer
        .client
        .execute(&sql, QueryOptions::default())
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// A relaunch over the cache the earlier phases wrote, after one more write: the first
/// frame painted from the cache, and the warm start's first refresh to its end, with the
/// time until the written table was read again.
pub(crate) async fn warm(run: &Run, floe: &mut Floe, table: &TableRef) -> Value {
    let lab = &run.lab;
    let wrote = write_one_row(run, table).await;
    let u = run.user("warm");
    lab.server_time(&u, run.latency).await;
    let meter = Meter::start(lab);
    let w = floe.warm_launch(lab, &u, table).await;
    let (wall, cpu) = meter.stop(lab);
    let qs = lab.queries_of(&u).await;
    let r = record(
        lab,
        wall,
        cpu,
        &qs,
        json!({
            "first_frame_ms": w.first_frame.as_secs_f64() * 1000.0,
            "painted": w.painted,
            "table": table.to_string(),
            "write": wrote.err(),
            "changed_reread_s": w.reread.map(|d| d.as_secs_f64()),
        }),
    )
    .await;
    println!("{}", line("warm launch, its first refresh", &r));
    println!(
        "  first frame {:.1} ms with {} tables from the cache; the written table read again {} after launch",
        w.first_frame.as_secs_f64() * 1000.0,
        w.painted,
        w.reread.map(secs).unwrap_or_else(|| "never".into())
    );
    lab.clear(&u).await;
    r
}

/// The statements of a record by kind, one line each, for the run's own output.
pub(crate) fn print_kinds(r: &Value) {
    if let Some(m) = r["by_kind"].as_object() {
        for (k, s) in m {
            println!(
                "    {k}: {} statements ({} failed), {} references; planning CPU + task CPU {:.2} s",
                s["statements"],
                s["failed"],
                s["references"],
                s["cost_ms"].as_f64().unwrap_or(0.0) / 1000.0
            );
        }
    }
}

/// floe's verdicts against the fleet's expected.json (`verdict.status`: the small-file and
/// staleness rules at the generation time; "OK" there is anything below WARNING here).
pub(crate) fn verdicts(expected: Option<&Value>, got: &[(String, String)]) -> Value {
    let Some(exp) = expected else {
        return Value::Null;
    };
    let (mut agree, mut compared) = (0, 0);
    let mut differ = Vec::new();
    for (key, status) in got {
        let Some(want) = exp["tables"][key]["verdict"]["status"].as_str() else {
            continue;
        };
        compared += 1;
        let got_class = match status.as_str() {
            "OK" | "INFO" => "OK",
            other => other,
        };
        if got_class == want {
            agree += 1;
        } else {
            differ.push(format!("{key}: {status}, expected {want}"));
        }
    }
    differ.sort();
    json!({"compared": compared, "agree": agree, "differ": differ.iter().take(20).collect::<Vec<_>>(), "differ_count": differ.len()})
}

/// Runs `fut` (a phase whose statements may outlive the coordinator's history: it keeps a
/// finished statement 5 minutes when more than 100 are kept) while reading `user`'s
/// finished statements once a minute from `FLEET_COLLECT_AFTER_S` (240 s) on; what it
/// read, by query id. A phase shorter than that is not touched.
async fn collecting<F: std::future::Future>(
    run: &Run,
    user: &str,
    fut: F,
) -> (
    F::Output,
    std::collections::BTreeMap<String, (String, Value)>,
) {
    let mut kept = std::collections::BTreeMap::new();
    if !run.lab.real {
        return (fut.await, kept);
    }
    let after = Duration::from_secs(env_num("FLEET_COLLECT_AFTER_S", 240));
    let mut next = tokio::time::Instant::now() + after;
    tokio::pin!(fut);
    loop {
        tokio::select! {
            out = &mut fut => return (out, kept),
            _ = tokio::time::sleep_until(next) => {
                run.lab.collect_queries(user, &mut kept, true).await;
                next += Duration::from_secs(60);
            }
        }
    }
}

/// What `collecting` kept and what the coordinator still keeps, oldest first.
async fn all_queries(
    run: &Run,
    user: &str,
    mut kept: std::collections::BTreeMap<String, (String, Value)>,
) -> Vec<Value> {
    if !run.lab.real {
        return run.lab.queries_of(user).await;
    }
    run.lab.collect_queries(user, &mut kept, false).await;
    let mut out: Vec<(String, Value)> = kept.into_values().collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out.into_iter().map(|(_, q)| q).collect()
}

/// `floe check --format json` over the same tables, cold: the released binary (built by
/// `cargo bench` in the bench profile, `CARGO_BIN_EXE_floe`) with a config of its own
/// pointing at the lab, its state, cache and config directories in `dir`, the tables named
/// by `--table` (the check reads the whole listing and keeps these: the same listing
/// statement as for the whole catalog).
pub(crate) async fn check(run: &Run, dir: &std::path::Path) -> Value {
    let lab = &run.lab;
    let u = run.user("check");
    let mut cmd = check_command(run, &dir.join("check"), &u);
    quiet(lab).await;
    let meter = Meter::start(lab);
    let (out, kept) = collecting(run, &u, cmd.output()).await;
    let (wall, cpu) = meter.stop(lab);
    let client = meter.client_ms();
    let out = out.unwrap();
    let qs = all_queries(run, &u, kept).await;
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    let tables = report["tables"].as_array().cloned().unwrap_or_default();
    let statuses: Vec<(String, String)> = tables
        .iter()
        .map(|t| {
            (
                format!(
                    "{}.{}",
                    t["schema"].as_str().unwrap_or(""),
                    t["table"].as_str().unwrap_or("")
                ),
                t["status"].as_str().unwrap_or("?").to_string(),
            )
        })
        .collect();
    let mut by_status = std::collections::BTreeMap::<String, u64>::new();
    for (_, s) in &statuses {
        *by_status.entry(s.clone()).or_default() += 1;
    }
    let expected = lab.expected();
    let r = record(
        lab,
        wall,
        cpu,
        &qs,
        json!({
            "tables": tables.len(),
            "exit": out.status.code(),
            "status": report["status"],
            "fatal": report["fatal"],
            "by_status": by_status,
            "verdicts": verdicts(expected.as_ref(), &statuses),
            "client_cpu_ms": client,
            "stderr": String::from_utf8_lossy(&out.stderr).chars().take(2000).collect::<String>(),
        }),
    )
    .await;
    println!("{}", line("floe check --format json", &r));
    println!(
        "  {} tables reported (exit {:?}): {by_status:?}; verdicts as expected.json: {}",
        tables.len(),
        out.status.code(),
        r["verdicts"]
    );
    print_kinds(&r);
    r
}

/// An hour of open floe: the coordinator process's CPU with nothing sent (idle, after a
/// pause for what the phases before left running), then with floe open at its refresh
/// interval (the default 60 s) over the unchanged fleet for `FLEET_OPEN_MINUTES` (4), a
/// refresh at each interval as the TUI's tick sends it, then idle again; over the quieter
/// idle window, a minute and an hour.
pub(crate) async fn open(run: &Run, floe: &mut Floe) -> Value {
    let lab = &run.lab;
    let settle = Duration::from_secs(env_num("FLEET_SETTLE_S", 30));
    let idle_for = Duration::from_secs(env_num("FLEET_IDLE_S", 120));
    let minutes = env_num("FLEET_OPEN_MINUTES", 4).max(1);
    tokio::time::sleep(settle).await;
    let meter = Meter::start(lab);
    tokio::time::sleep(idle_for).await;
    let (idle_wall, idle_cpu) = meter.stop(lab);
    let load_idle = record::loadavg();
    let idle_per_min = idle_cpu.map(|c| c as f64 * 60.0 / idle_wall.as_secs_f64());
    let refresh = floe.state.refresh_every.max(Duration::from_secs(1));
    let u = run.user("open");
    let meter = Meter::start(lab);
    let t0 = tokio::time::Instant::now();
    let n = ((minutes * 60) as f64 / refresh.as_secs_f64())
        .round()
        .max(1.0) as u32;
    for k in 0..n {
        tokio::time::sleep_until(t0 + refresh * k).await;
        floe.cycle(lab, &u, 4, false, false).await;
    }
    tokio::time::sleep_until(t0 + refresh * n).await;
    let (wall, cpu) = meter.stop(lab);
    // The coordinator idle again after floe closed: the JVM's own background (collections,
    // expiring history) decays from the phases before, and the window before the open one
    // alone measured more than the open one (14-25 s a minute against 6.6-9.8). The
    // quieter of the two is the baseline: what is left over it is floe's, at most.
    let meter = Meter::start(lab);
    tokio::time::sleep(idle_for).await;
    let (after_wall, after_cpu) = meter.stop(lab);
    let idle_after_per_min = after_cpu.map(|c| c as f64 * 60.0 / after_wall.as_secs_f64());
    let idle_before_per_min = idle_per_min;
    let idle_per_min = match (idle_before_per_min, idle_after_per_min) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let qs = lab.queries_of(&u).await;
    let mins = wall.as_secs_f64() / 60.0;
    let over_idle = match (cpu, idle_per_min) {
        (Some(c), Some(i)) => Some(c as f64 - i * mins),
        _ => None,
    };
    let r = record(
        lab,
        wall,
        cpu,
        &qs,
        json!({
            "refresh_s": refresh.as_secs_f64(),
            "refreshes": n,
            "idle_wall_s": idle_wall.as_secs_f64(),
            "idle_cpu_ms": idle_cpu,
            "idle_cpu_ms_per_minute": idle_per_min,
            "idle_before_cpu_ms_per_minute": idle_before_per_min,
            "idle_after_cpu_ms_per_minute": idle_after_per_min,
            "idle_load": load_idle,
            "over_idle_ms": over_idle,
            "over_idle_ms_per_minute": over_idle.map(|o| o / mins),
            "hour_over_idle_ms": over_idle.map(|o| o / mins * 60.0),
        }),
    )
    .await;
    println!(
        "{}",
        line(&format!("floe open {mins:.1} min, {n} refreshes"), &r)
    );
    println!(
        "  coordinator idle: {} CPU a minute (before {}, after {}); open floe over idle: {} a minute, {} an hour",
        idle_per_min
            .map(|v| format!("{:.2} s", v / 1000.0))
            .unwrap_or_else(|| "-".into()),
        idle_before_per_min
            .map(|v| format!("{:.2} s", v / 1000.0))
            .unwrap_or_else(|| "-".into()),
        idle_after_per_min
            .map(|v| format!("{:.2} s", v / 1000.0))
            .unwrap_or_else(|| "-".into()),
        r["over_idle_ms_per_minute"]
            .as_f64()
            .map(|v| format!("{:.2} s", v / 1000.0))
            .unwrap_or_else(|| "-".into()),
        r["hour_over_idle_ms"]
            .as_f64()
            .map(|v| format!("{:.1} s", v / 1000.0))
            .unwrap_or_else(|| "-".into()),
    );
    print_kinds(&r);
    r
}

/// Wait for a quiet coordinator before a measured phase (`Lab::quiet`), and say so.
async fn quiet(lab: &crate::lab::Lab) {
    match lab.quiet().await {
        (s, true) => println!("  (the coordinator quiet after {s:.0} s)"),
        (s, false) => println!("  (the coordinator still busy after {s:.0} s: measured anyway)"),
    }
}
