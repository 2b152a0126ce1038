//! The figures of one or more runs as the table in benches/README.md.

use serde_json::Value;

fn ms(v: &Value) -> String {
    match v.as_u64() {
        None => "—".into(),
        Some(x) if x < 1000 => format!("{x} ms"),
        Some(x) if x < 10_000 => format!("{:.2} s", x as f64 / 1000.0),
        Some(x) => format!("{:.1} s", x as f64 / 1000.0),
    }
}

fn count(v: &Value) -> String {
    match v.as_u64() {
        None => "—".into(),
        Some(x) if x >= 10_000 => format!("{}k", x / 1000),
        Some(x) => x.to_string(),
    }
}

fn bytes(v: &Value) -> String {
    match v.as_u64() {
        None => "—".into(),
        Some(x) if x < 10 * 1024 => format!("{x} B"),
        Some(x) if x < 10 << 20 => format!("{} kB", x / 1024),
        Some(x) => format!("{} MB", x >> 20),
    }
}

/// One measurement: elapsed / planning (its CPU) / task CPU · processed rows, bytes ·
/// splits (load).
pub(crate) fn cell(r: &Value) -> String {
    let load = r["load"][0].as_f64().unwrap_or(f64::NAN);
    let head = format!(
        "{} / {} ({}) / {}",
        ms(&r["elapsed_ms"]),
        ms(&r["planning_ms"]),
        ms(&r["planning_cpu_ms"]),
        ms(&r["cpu_ms"])
    );
    match r["error"].as_str() {
        Some(e) => format!(
            "fails ({}) after {} ({load:.1})",
            e.split(':').next().unwrap_or(e),
            head
        ),
        None => format!(
            "{head} · {} rows, {} · {} splits ({load:.1})",
            count(&r["processed_rows"]),
            bytes(&r["processed_bytes"]),
            count(&r["splits"])
        ),
    }
}

pub(crate) fn print_row(r: &Value) {
    println!(
        "  {:>9} ×{:<2} {:<52} {}",
        r["set"].as_str().unwrap_or(""),
        r["tables"],
        r["shape"].as_str().unwrap_or(""),
        cell(r)
    );
}

fn key(r: &Value) -> (String, u64, String) {
    (
        r["set"].as_str().unwrap_or("").to_string(),
        r["tables"].as_u64().unwrap_or(0),
        r["shape"].as_str().unwrap_or("").to_string(),
    )
}

/// The load averages (1 minute) a run's statements were sent at: lowest and highest.
fn load_range(run: &Value) -> (f64, f64) {
    let loads: Vec<f64> = run["rows"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["load"][0].as_f64())
        .collect();
    let lo = loads.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = loads.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (lo, hi)
}

/// The markdown table of `runs` side by side, rows in the first run's order.
pub(crate) fn markdown(runs: &[Value]) -> String {
    let mut out = String::new();
    for (n, run) in runs.iter().enumerate() {
        let (lo, hi) = load_range(run);
        out.push_str(&format!(
            "- run {}: {} to {}, load average (1 min) {lo:.1}-{hi:.1}; coordinator heap used {} before, {} after (uptime {} → {})\n",
            n + 1,
            run["started"].as_str().unwrap_or(""),
            run["finished"].as_str().unwrap_or(""),
            bytes(&run["server"]["before"]["heap_used"]),
            bytes(&run["server"]["after"]["heap_used"]),
            run["server"]["before"]["uptime"].as_str().unwrap_or("?"),
            run["server"]["after"]["uptime"].as_str().unwrap_or("?"),
        ));
    }
    if let Some(first) = runs.first() {
        for s in first["sets"].as_array().into_iter().flatten() {
            let tables: Vec<String> = s["tables"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|t| format!("{} ({})", t["table"].as_str().unwrap_or(""), t["files"]))
                .collect();
            out.push_str(&format!(
                "- set `{}` (live files): {}\n",
                s["name"].as_str().unwrap_or(""),
                tables.join(", ")
            ));
        }
    }
    out.push_str(
        "\nelapsed / planning (its CPU) / task CPU · processed rows, bytes · splits (1-minute load average)\n\n",
    );
    out.push_str("| set | tables | read |");
    for n in 0..runs.len() {
        out.push_str(&format!(" run {} |", n + 1));
    }
    out.push_str("\n|---|---|---|");
    for _ in runs {
        out.push_str("---|");
    }
    out.push('\n');
    let Some(first) = runs.first() else {
        return out;
    };
    for r in first["rows"].as_array().into_iter().flatten() {
        let k = key(r);
        out.push_str(&format!("| {} | {} | {} |", k.0, k.1, k.2));
        for run in runs {
            let found = run["rows"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|x| key(x) == k);
            out.push_str(&format!(" {} |", found.map_or("—".into(), cell)));
        }
        out.push('\n');
    }
    out
}
