//! The markdown tables of benches/README.md from the JSON files of runs: one table per
//! fleet size, one column per run (its fleet by writer and its start), then for each run
//! and size the statements by kind of each phase.

use serde_json::Value;

/// One table per fleet size the runs share, one column per run.
pub(crate) fn markdown(runs: &[Value]) -> String {
    let mut sizes: Vec<u64> = runs
        .iter()
        .flat_map(|r| r["sizes"].as_array().cloned().unwrap_or_default())
        .filter_map(|s| s["tables"].as_u64())
        .collect();
    sizes.sort_unstable();
    sizes.dedup();
    let mut out = String::new();
    for n in sizes {
        let cols: Vec<(&Value, &Value)> = runs
            .iter()
            .filter_map(|r| {
                r["sizes"]
                    .as_array()?
                    .iter()
                    .find(|s| s["tables"].as_u64() == Some(n))
                    .map(|s| (r, s))
            })
            .collect();
        out.push_str(&format!("#### {n} tables\n\n|  |"));
        for (r, _) in &cols {
            out.push_str(&format!(
                " {} fleet, {} |",
                r["writers"].as_str().unwrap_or("mixed"),
                r["started"].as_str().unwrap_or("?")
            ));
        }
        out.push_str("\n|---|");
        out.push_str(&"---|".repeat(cols.len()));
        out.push('\n');
        for (label, cell) in ROWS {
            out.push_str(&format!("| {label} |"));
            for (r, s) in &cols {
                out.push_str(&format!(" {} |", cell(r, s)));
            }
            out.push('\n');
        }
        out.push('\n');
        for (r, s) in &cols {
            out.push_str(&kinds_table(r, s));
        }
    }
    out
}

/// The phases whose statements are set out by kind, and what their cells say.
const KIND_PHASES: &[(&str, &str)] = &[
    ("cold", "floe's cold scan (TUI)"),
    ("check", "`floe check`"),
    ("script", "the script"),
    ("open", "open floe, the minutes measured"),
];

/// One run's statements by kind at one size: a row a kind, a column a phase; each cell
/// the statements (failed), the tables' metadata they load, and their planning CPU + task
/// CPU on the coordinator.
fn kinds_table(r: &Value, s: &Value) -> String {
    let mut kinds: Vec<String> = KIND_PHASES
        .iter()
        .filter_map(|(k, _)| s[*k]["by_kind"].as_object())
        .flat_map(|m| m.keys().cloned())
        .collect();
    kinds.sort();
    kinds.dedup();
    if kinds.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "Statements by kind, {} fleet, {} tables ({}): statements (failed) · tables' metadata loaded · planning CPU + task CPU\n\n| reads |",
        r["writers"].as_str().unwrap_or("mixed"),
        s["tables"],
        r["started"].as_str().unwrap_or("?")
    );
    for (_, name) in KIND_PHASES {
        out.push_str(&format!(" {name} |"));
    }
    out.push_str("\n|---|");
    out.push_str(&"---|".repeat(KIND_PHASES.len()));
    out.push('\n');
    for kind in kinds.iter().chain(std::iter::once(&"all".to_string())) {
        out.push_str(&format!("| {} |", kind.replace('|', "\\|")));
        for (phase, _) in KIND_PHASES {
            let c = if kind == "all" {
                &s[*phase]["coordinator"]
            } else {
                &s[*phase]["by_kind"][kind]
            };
            out.push_str(&format!(" {} |", kind_cell(c)));
        }
        out.push('\n');
    }
    out.push('\n');
    out
}

fn kind_cell(c: &Value) -> String {
    let Some(n) = c["statements"].as_u64() else {
        return "-".into();
    };
    let failed = c["failed"].as_u64().unwrap_or(0);
    format!(
        "{n}{} · {} · {}",
        if failed > 0 {
            format!(" ({failed} failed)")
        } else {
            String::new()
        },
        c["references"]
            .as_u64()
            .map(|v| v.to_string())
            .unwrap_or_else(|| "-".into()),
        ms(&c["cost_ms"])
    )
}

type Cell = fn(&Value, &Value) -> String;

const ROWS: &[(&str, Cell)] = &[
    ("load average at start, at the end", |r, _| {
        format!("{} → {}", load(&r["load_start"]), load(&r["load_end"]))
    }),
    ("floe's cold full scan, wall", |_, s| {
        secs(&s["cold"]["wall_s"])
    }),
    ("the sequential script, wall", |_, s| {
        secs(&s["script"]["wall_s"])
    }),
    ("floe faster than the script (wall)", |_, s| {
        ratio(&s["script"]["wall_s"], &s["cold"]["wall_s"])
    }),
    (
        "coordinator cost, floe's cold scan (planning CPU + task CPU)",
        |_, s| ms(&s["cold"]["coordinator"]["cost_ms"]),
    ),
    ("coordinator cost, the script", |_, s| {
        ms(&s["script"]["coordinator"]["cost_ms"])
    }),
    ("floe's planning + task CPU over the script's", |_, s| {
        ratio(
            &s["cold"]["coordinator"]["cost_ms"],
            &s["script"]["coordinator"]["cost_ms"],
        )
    }),
    (
        "planning wall time + task CPU, floe / the script",
        |_, s| {
            format!(
                "{} / {}",
                ms_sum(&s["cold"]["coordinator"], &["planning_ms", "cpu_ms"]),
                ms_sum(&s["script"]["coordinator"], &["planning_ms", "cpu_ms"])
            )
        },
    ),
    (
        "the coordinator process's CPU, floe / the script",
        |_, s| {
            format!(
                "{} / {}",
                ms(&s["cold"]["process_cpu_ms"]),
                ms(&s["script"]["process_cpu_ms"])
            )
        },
    ),
    (
        "the coordinator process's CPU, floe's cold scan over the script's",
        |_, s| ratio(&s["cold"]["process_cpu_ms"], &s["script"]["process_cpu_ms"]),
    ),
    ("`floe check`'s cold scan, wall", |_, s| {
        secs(&s["check"]["wall_s"])
    }),
    ("`floe check` faster than the script (wall)", |_, s| {
        ratio(&s["script"]["wall_s"], &s["check"]["wall_s"])
    }),
    (
        "`floe check`: planning CPU + task CPU, and over the script's",
        |_, s| {
            format!(
                "{} ({})",
                ms(&s["check"]["coordinator"]["cost_ms"]),
                ratio(
                    &s["check"]["coordinator"]["cost_ms"],
                    &s["script"]["coordinator"]["cost_ms"]
                )
            )
        },
    ),
    (
        "`floe check`: the coordinator process's CPU, and over the script's",
        |_, s| {
            format!(
                "{} ({})",
                ms(&s["check"]["process_cpu_ms"]),
                ratio(
                    &s["check"]["process_cpu_ms"],
                    &s["script"]["process_cpu_ms"]
                )
            )
        },
    ),
    ("`floe check`: statements (failed)", |_, s| {
        let c = &s["check"]["coordinator"];
        if c["statements"].is_null() {
            return "-".into();
        }
        format!("{} ({})", c["statements"], c["failed"])
    }),
    ("verdicts as expected.json, TUI / `floe check`", |_, s| {
        format!(
            "{} / {}",
            agreed(&s["cold"]["verdicts"]),
            agreed(&s["check"]["verdicts"])
        )
    }),
    ("statements, floe / the script", |_, s| {
        format!(
            "{} ({}) / {}",
            s["cold"]["coordinator"]["statements"],
            shapes(&s["cold"]["by_shape"]),
            s["script"]["coordinator"]["statements"]
        )
    }),
    ("first CRITICAL row on screen, cold launch", |_, s| {
        let c = &s["cold"];
        match c["first_critical_s"].as_f64() {
            Some(t) => format!(
                "{t:.2} s ({}, row {})",
                c["first_critical_table"].as_str().unwrap_or("?"),
                c["first_critical_row"]
            ),
            None => "none".into(),
        }
    }),
    (
        "steady refresh, nothing changed: statements each",
        |_, s| {
            s["steady"]["refreshes"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|r| r["coordinator"]["statements"].to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .unwrap_or_else(|| "-".into())
        },
    ),
    (
        "steady cost a minute (planning CPU + task CPU; planning wall; process CPU)",
        |_, s| {
            let st = &s["steady"];
            format!(
                "{} ({}; {}) at a {} s refresh",
                ms(&st["per_minute_cost_ms"]),
                ms(&st["per_minute_planning_ms"]),
                ms(&st["per_minute_process_cpu_ms"]),
                st["refresh_s"]
            )
        },
    ),
    (
        "the coordinator idle: process CPU a minute (load average then)",
        |_, s| {
            let o = &s["open"];
            if o.is_null() {
                return "-".into();
            }
            format!(
                "{} ({})",
                ms(&o["idle_cpu_ms_per_minute"]),
                load(&o["idle_load"])
            )
        },
    ),
    (
        "floe open at its refresh: process CPU over idle a minute (refreshes, statements)",
        |_, s| {
            let o = &s["open"];
            if o.is_null() {
                return "-".into();
            }
            format!(
                "{} ({} refreshes of {} s, {} statements)",
                ms(&o["over_idle_ms_per_minute"]),
                o["refreshes"],
                o["refresh_s"],
                o["coordinator"]["statements"]
            )
        },
    ),
    (
        "an hour of open floe (process CPU over idle) / one run of the script (process CPU; over idle)",
        |_, s| {
            let o = &s["open"];
            let sc = &s["script"];
            let idle = o["idle_cpu_ms_per_minute"].as_f64();
            let script_over = match (sc["process_cpu_ms"].as_f64(), sc["wall_s"].as_f64(), idle) {
                (Some(c), Some(w), Some(i)) => Value::from(c - i * w / 60.0),
                _ => Value::Null,
            };
            format!(
                "{} / {}; {}",
                ms(&o["hour_over_idle_ms"]),
                ms(&sc["process_cpu_ms"]),
                ms(&script_over)
            )
        },
    ),
    (
        "an hour of open floe over one run of the script (process CPU)",
        |_, s| {
            ratio(
                &s["open"]["hour_over_idle_ms"],
                &s["script"]["process_cpu_ms"],
            )
        },
    ),
    (
        "a write through the coordinator read in the next refresh",
        |_, s| match s["written"]["seen_in_one_refresh"].as_bool() {
            Some(true) => format!(
                "yes ({} statements)",
                s["written"]["coordinator"]["statements"]
            ),
            Some(false) => "NO".into(),
            None => "-".into(),
        },
    ),
    ("warm launch: first frame from the cache", |_, s| {
        match s["warm"]["first_frame_ms"].as_f64() {
            Some(v) => format!("{v:.1} ms ({} tables)", s["warm"]["painted"]),
            None => "-".into(),
        }
    }),
    (
        "warm launch: the table written since, read again after",
        |_, s| secs(&s["warm"]["changed_reread_s"]),
    ),
    (
        "coordinator heap after the cold scan, the script",
        |_, s| {
            format!(
                "{} / {}",
                gb(&s["cold"]["heap_used"]),
                gb(&s["script"]["heap_used"])
            )
        },
    ),
];

fn agreed(v: &Value) -> String {
    match (v["agree"].as_u64(), v["compared"].as_u64()) {
        (Some(a), Some(c)) => format!("{a} of {c}"),
        _ => "-".into(),
    }
}

fn load(v: &Value) -> String {
    v.as_array()
        .map(|a| {
            a.iter()
                .map(|x| format!("{:.1}", x.as_f64().unwrap_or(f64::NAN)))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|| "-".into())
}

fn secs(v: &Value) -> String {
    v.as_f64()
        .map(|s| format!("{s:.2} s"))
        .unwrap_or_else(|| "-".into())
}

fn ms(v: &Value) -> String {
    v.as_f64()
        .map(|m| format!("{:.2} s", m / 1000.0))
        .unwrap_or_else(|| "-".into())
}

fn ms_sum(v: &Value, keys: &[&str]) -> String {
    let total: f64 = keys.iter().filter_map(|k| v[*k].as_f64()).sum();
    format!("{:.2} s", total / 1000.0)
}

fn ratio(num: &Value, den: &Value) -> String {
    match (num.as_f64(), den.as_f64()) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}×", a / b),
        _ => "-".into(),
    }
}

fn gb(v: &Value) -> String {
    v.as_f64()
        .map(|b| format!("{:.2} GB", b / 1e9))
        .unwrap_or_else(|| "-".into())
}

fn shapes(v: &Value) -> String {
    v.as_object()
        .map(|m| {
            m.iter()
                .map(|(k, s)| format!("{} {k}", s["statements"]))
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}
