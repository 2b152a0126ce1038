//! What a phase cost: statements by shape and, on the real Trino, the coordinator's own
//! figures for them.

use serde_json::Value;

use crate::lab::Lab;

/// The statement shape of a statement floe sent, by its text.
pub(crate) fn shape(sql: &str) -> &'static str {
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
pub(crate) fn coordinator_cost(qs: &[Value]) -> Vec<String> {
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

pub(crate) fn print_cost(lab: &Lab, qs: &[Value]) {
    if lab.real {
        for l in coordinator_cost(qs) {
            println!("    {l}");
        }
    }
}
