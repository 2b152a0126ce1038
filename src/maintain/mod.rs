//! Maintenance: the audit log, the plan runner shared by the TUI and the CLI, and
//! `floe maintain …` for scripts and cron.

pub mod audit;
pub mod commit;
pub mod connection;
pub mod eta;
pub mod plan;
pub mod run;

use crate::text::sanitize;
use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::cli::MaintainCmd;
use crate::config::Settings;
use crate::fmt::{human_bytes, thousands};
use crate::lakehouse::maintenance::{Plan, Procedure, optimize_plan, table_plan};
use crate::lakehouse::model::{PartitionStats, TableRef};
use crate::lakehouse::queries::Lakehouse;
use crate::trino::{Client, TrinoError};
use crate::units::{Bytes, Dur};
use audit::AuditLog;
use run::{RunContext, StepEvent, Stop, run_plan_until};

pub fn context(s: &Settings) -> RunContext {
    RunContext {
        profile: s.profile.clone(),
        user: s.trino.user.clone(),
        target: s.trino.url.to_string(),
        readonly: s.readonly,
        audit: AuditLog::new(s.audit_log.clone()),
    }
}

/// The small-file threshold floe uses for a table: `small_file_ratio` × its target
/// (the table property `write.target-file-size-bytes`, else the config's default).
pub async fn small_file_threshold(lake: &Lakehouse, t: &TableRef) -> Result<u64, TrinoError> {
    let props = lake.properties(t).await?;
    let target = props
        .iter()
        .find(|(k, _)| k == "write.target-file-size-bytes")
        .and_then(|(_, v)| v.trim().parse::<u64>().ok())
        .unwrap_or(lake.health.target_file_size);
    Ok(lake.health.small_threshold(target))
}

/// One `--partition` spec: `COLUMN=VALUE` (the value exactly, `region=null` is the
/// string `'null'`) or `COLUMN IS NULL` (SQL NULL), joined by `/`.
pub fn parse_partition_spec(spec: &str) -> Result<Vec<(String, Option<String>)>, String> {
    spec.split('/')
        .map(|kv| {
            if let Some((k, v)) = kv.split_once('=') {
                return Ok((k.trim().to_string(), Some(v.to_string())));
            }
            let t = kv.trim();
            let lower = t.to_ascii_lowercase();
            match lower.strip_suffix("is null") {
                Some(k) if k.ends_with(char::is_whitespace) && !k.trim().is_empty() => {
                    Ok((t[..k.trim_end().len()].to_string(), None))
                }
                _ => Err(format!(
                    "--partition {spec:?}: expected COLUMN=VALUE or COLUMN IS NULL, joined by /"
                )),
            }
        })
        .collect()
}

/// A `--partition` spec's trailing ` (spec N)`, as the Partitions tab labels a partition
/// of a table whose live files span several partition specs: the spec text before it and
/// N.
fn split_spec_id(spec: &str) -> Result<(&str, Option<i32>), String> {
    let t = spec.trim_end();
    let Some(open) = t.strip_suffix(')').and_then(|rest| rest.rfind(" (spec ")) else {
        return Ok((spec, None));
    };
    let id = t[open + " (spec ".len()..t.len() - 1]
        .trim()
        .parse::<i32>()
        .map_err(|_| format!("--partition {spec:?}: \"(spec N)\" takes a spec id"))?;
    Ok((&t[..open], Some(id)))
}

/// Partitions matching `k=v[/k=v…][ (spec N)]` specs (each spec may name a subset of the
/// fields; `k IS NULL` matches NULL, `k=null` the string `'null'`; ` (spec N)` only the
/// partitions of partition spec N, each its own partition).
pub fn select_partitions(
    all: &[PartitionStats],
    specs: &[String],
) -> Result<Vec<PartitionStats>, String> {
    let mut out = Vec::new();
    for spec in specs {
        // Only a table listed with specs has the suffix (a value may end like one).
        let (text, spec_id) = if all.iter().any(|p| p.spec_id.is_some()) {
            split_spec_id(spec)?
        } else {
            (spec.as_str(), None)
        };
        let wanted = parse_partition_spec(text)?;
        if let Some(p) = all.first() {
            for (k, _) in &wanted {
                if !p.values.iter().any(|(n, _)| n == k) {
                    let fields: Vec<&str> = p.values.iter().map(|(n, _)| n.as_str()).collect();
                    return Err(format!(
                        "--partition {spec:?}: the table has no partition field {k:?} (fields: {})",
                        fields.join(", ")
                    ));
                }
            }
        }
        let matches: Vec<&PartitionStats> = all
            .iter()
            .filter(|p| {
                spec_id.is_none_or(|id| p.spec_id == Some(id))
                    && wanted
                        .iter()
                        .all(|(k, v)| p.values.iter().any(|(n, val)| n == k && val == v))
            })
            .collect();
        if matches.is_empty() {
            let hint = wanted
                .iter()
                .find(|(_, v)| v.as_deref().is_some_and(|v| v.eq_ignore_ascii_case("null")))
                .map(|(k, _)| {
                    format!(
                        " (a NULL value is spelled '{k} IS NULL'; {k}=null is the string 'null')"
                    )
                })
                .unwrap_or_default();
            return Err(format!(
                "--partition {spec:?} matches no partition holding data files{hint}"
            ));
        }
        // Within one spec, each partition is its own (a predicate over some fields would
        // select the other specs' partitions too).
        if spec_id.is_some() || wanted.len() == all.first().map(|p| p.values.len()).unwrap_or(0) {
            out.extend(matches.into_iter().cloned());
        } else {
            // A subset of the fields: one statement over all of them, counted together.
            let mut agg = PartitionStats {
                values: wanted.clone(),
                data_files: 0,
                small_files: 0,
                total_bytes: 0,
                records: 0,
                min_file: u64::MAX,
                max_file: 0,
                delete_files: 0,
                oldest_small_file_at: None,
                spec_id: None,
            };
            for p in matches {
                agg.data_files += p.data_files;
                agg.small_files += p.small_files;
                agg.total_bytes += p.total_bytes;
                agg.records += p.records;
                agg.min_file = agg.min_file.min(p.min_file);
                agg.max_file = agg.max_file.max(p.max_file);
            }
            out.push(agg);
        }
    }
    Ok(out)
}

async fn build_plan(lake: &Lakehouse, s: &Settings, cmd: &MaintainCmd) -> Result<Plan, String> {
    let name = match cmd {
        MaintainCmd::Optimize { table, .. }
        | MaintainCmd::ExpireSnapshots { table, .. }
        | MaintainCmd::RemoveOrphanFiles { table, .. }
        | MaintainCmd::OptimizeManifests { table, .. } => table,
    };
    let t = TableRef::parse(
        name,
        &s.trino.catalog,
        s.trino.schemas.first().map(String::as_str),
    )?;
    let retention = |text: &str| -> Result<u64, String> {
        Dur::parse(text)
            .map(|d| d.0.as_secs())
            .map_err(|e| format!("--retention: {e}"))
    };
    Ok(match cmd {
        MaintainCmd::Optimize {
            partitions,
            threshold,
            ..
        } => {
            let threshold = match threshold {
                Some(text) => {
                    Bytes::parse(text)
                        .map_err(|e| format!("--threshold: {e}"))?
                        .0
                }
                None => plan::threshold_of(lake, &t).await?,
            };
            if partitions.is_empty() {
                optimize_plan(&t, &Default::default(), &[], threshold, false)?
            } else {
                let layout = plan::layout_with_specs(lake, &t).await?;
                let all = plan::partitions_of(lake, &t).await?;
                let chosen = select_partitions(&all.partitions, partitions)?;
                optimize_plan(&t, &layout, &chosen, threshold, false)?
            }
        }
        MaintainCmd::ExpireSnapshots { retention: r, .. } => table_plan(
            &t,
            Procedure::ExpireSnapshots {
                retention_secs: retention(r)?,
            },
        ),
        MaintainCmd::RemoveOrphanFiles { retention: r, .. } => table_plan(
            &t,
            Procedure::RemoveOrphanFiles {
                retention_secs: retention(r)?,
            },
        ),
        MaintainCmd::OptimizeManifests { .. } => table_plan(&t, Procedure::OptimizeManifests),
    })
}

/// The exit code of a run stopped by `--timeout` (as timeout(1) has it).
pub const TIMEOUT_EXIT: u8 = 124;

/// `floe maintain …`: without `--yes` print the plan and touch nothing; with it, run
/// with progress on stderr, exit non-zero on failure, audit every statement.
pub async fn cli(settings: &Settings, cmd: MaintainCmd, timeout: Option<Duration>) -> ExitCode {
    let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
    let yes = match &cmd {
        MaintainCmd::Optimize { yes, .. }
        | MaintainCmd::ExpireSnapshots { yes, .. }
        | MaintainCmd::RemoveOrphanFiles { yes, .. }
        | MaintainCmd::OptimizeManifests { yes, .. } => *yes,
    };
    let client = match Client::from_settings(&settings.trino, settings.query_timeout) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("floe: {}", sanitize(&e.to_string()));
            return ExitCode::from(1);
        }
    };
    let lake = Lakehouse::new(
        client,
        settings.trino.catalog.clone(),
        settings.health.clone(),
    );
    if let Err(e) = lake.connect().await {
        eprintln!("floe: {}", sanitize(&e.to_string()));
        return ExitCode::from(1);
    }
    let planned = match deadline {
        Some(d) => match tokio::time::timeout_at(d, build_plan(&lake, settings, &cmd)).await {
            Ok(r) => r,
            Err(_) => {
                eprintln!(
                    "floe: --timeout {} reached while reading the table to plan; nothing ran",
                    humantime::format_duration(timeout.unwrap_or_default())
                );
                return ExitCode::from(TIMEOUT_EXIT);
            }
        },
        None => build_plan(&lake, settings, &cmd).await,
    };
    let plan = match planned {
        Ok(p) => p,
        Err(e) => {
            eprintln!("floe: {}", sanitize(&e.to_string()));
            return ExitCode::from(1);
        }
    };
    print!("{}", sanitize(&plan.to_string()));
    // The estimate informs the operator's choice before `--yes`; with `--yes` there is no
    // choice left, and the run sends no statement but its own (a slow history read would
    // only delay the fix, before its signals and its --timeout are armed).
    if !yes && matches!(cmd, MaintainCmd::Optimize { .. }) {
        let audit = audit::AuditLog::new(settings.audit_log.clone()).read();
        let m = eta::measure(&lake, &audit).await;
        for line in eta::cli_lines(&plan, &m) {
            println!("-- {}", sanitize(&line));
        }
    }
    if !yes {
        println!(
            "-- not run: add --yes to execute{}",
            if settings.readonly {
                " (and leave read-only mode)"
            } else {
                ""
            }
        );
        return ExitCode::SUCCESS;
    }
    let ctx = context(settings);
    let stop = Stop::new();
    // 130 after SIGINT, 143 after SIGTERM; 0 while no signal came.
    let signalled = Arc::new(AtomicU8::new(0));
    if let Err(e) = watch_signals(stop.clone(), signalled.clone()) {
        eprintln!("floe: {}", sanitize(&e.to_string()));
        return ExitCode::from(1);
    }
    let timed_out = Arc::new(AtomicBool::new(false));
    if let Some(d) = deadline {
        let (stop, timed_out) = (stop.clone(), timed_out.clone());
        tokio::spawn(async move {
            tokio::time::sleep_until(d).await;
            timed_out.store(true, Ordering::SeqCst);
            stop.cancel();
        });
    }
    let on_event = event_printer(&plan);
    match run_plan_until(&lake, &plan, &ctx, &stop, &on_event).await {
        Ok(out) => {
            say(&format!(
                "floe: {} statement(s) succeeded; audit log {}",
                out.len(),
                ctx.audit.path().display()
            ));
            ExitCode::SUCCESS
        }
        Err(e) => {
            say(&format!("floe: {}", sanitize(&e.to_string())));
            if timed_out.load(Ordering::SeqCst) && signalled.load(Ordering::SeqCst) == 0 {
                say(&format!(
                    "floe: --timeout {} reached: the running statement was cancelled on Trino and the rest did not run",
                    humantime::format_duration(timeout.unwrap_or_default())
                ));
                return ExitCode::from(TIMEOUT_EXIT);
            }
            match signalled.load(Ordering::SeqCst) {
                0 if stop.is_stopped() => ExitCode::from(130),
                0 => ExitCode::from(1),
                code => ExitCode::from(code),
            }
        }
    }
}

/// The run's progress on stderr, one line per event (the progress of a running statement
/// at most once a second), every server string sanitised.
fn event_printer(plan: &Plan) -> impl Fn(StepEvent) + Send + Sync {
    let n = plan.steps.len();
    let last_print = Mutex::new(Instant::now());
    let steps = plan.steps.clone();
    move |ev: StepEvent| {
        let mut err = std::io::stderr().lock();
        match ev {
            StepEvent::Started { step } => {
                let _ = writeln!(
                    err,
                    "{}",
                    sanitize(&format!(
                        "[{}/{n}] {}",
                        step + 1,
                        steps[step].partition.as_deref().unwrap_or("table")
                    ))
                );
            }
            StepEvent::Progress { step, progress: p } => {
                let mut last = last_print.lock().unwrap_or_else(|e| e.into_inner());
                if last.elapsed().as_millis() >= 1000 {
                    *last = Instant::now();
                    let _ = writeln!(
                        err,
                        "{}",
                        sanitize(&format!(
                            "[{}/{n}]   {} {} splits {}/{} rows {} written {} ({:.0}s) query {}",
                            step + 1,
                            p.state,
                            p.percentage
                                .map(|x| format!("{x:.0}%"))
                                .unwrap_or_else(|| "-".into()),
                            p.completed_splits,
                            p.total_splits,
                            thousands(p.processed_rows),
                            human_bytes(p.physical_written_bytes),
                            p.elapsed_ms as f64 / 1000.0,
                            p.query_id
                        ))
                    );
                }
            }
            StepEvent::AuditFailed { step, error } => {
                let _ = writeln!(
                    err,
                    "{}",
                    sanitize(&format!("[{}/{n}] AUDIT LOG FAILED: {error}", step + 1))
                );
            }
            StepEvent::Finished { step, outcome: o } => {
                let what = if o.ok {
                    let mut s = "done".to_string();
                    if let Some(r) = o.rows {
                        s.push_str(&format!(", rows {r}"));
                    }
                    for (k, v) in &o.metrics {
                        s.push_str(&format!(", {k} {v}"));
                    }
                    if let Some(after) = o.files_after {
                        s.push_str(&format!(", files {} -> {after}", steps[step].files));
                    }
                    s
                } else if o.cancelled {
                    "cancelled".to_string()
                } else {
                    format!("FAILED: {}", o.error.as_deref().unwrap_or(""))
                };
                let query = match &o.query_id {
                    Some(q) if !what.contains(q.as_str()) => format!(" (query {q})"),
                    _ => String::new(),
                };
                let _ = writeln!(
                    err,
                    "{}",
                    sanitize(&format!(
                        "[{}/{n}] {what} in {:.1}s{query}",
                        step + 1,
                        o.duration_ms as f64 / 1000.0
                    ))
                );
            }
        }
    }
}

/// A line on stderr that cannot fail: after SIGHUP the terminal may be gone, and
/// `eprintln!` would panic instead of letting the cancel and the audit finish.
fn say(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// SIGINT (ctrl-c) cancels the running statement on Trino (audited `cancelled`), SIGTERM
/// and SIGHUP (the SSH session dropped) interrupt it (audited `interrupted`); the run then
/// ends with 130, 143 or 129. A second signal while the cancel is under way exits at once.
fn watch_signals(stop: Stop, signalled: Arc<AtomicU8>) -> Result<(), String> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut int = signal(SignalKind::interrupt()).map_err(|e| format!("SIGINT handler: {e}"))?;
    let mut term = signal(SignalKind::terminate()).map_err(|e| format!("SIGTERM handler: {e}"))?;
    let mut hup = signal(SignalKind::hangup()).map_err(|e| format!("SIGHUP handler: {e}"))?;
    tokio::spawn(async move {
        let code = tokio::select! {
            _ = int.recv() => 130,
            _ = term.recv() => 143,
            _ = hup.recv() => 129,
        };
        signalled.store(code, Ordering::SeqCst);
        if code == 130 {
            stop.cancel();
        } else {
            stop.interrupt();
        }
        say(&format!(
            "floe: cancelling on Trino (DELETE sent); {} again exits at once",
            if code == 130 { "ctrl-c" } else { "a signal" }
        ));
        let again = tokio::select! {
            _ = int.recv() => 130,
            _ = term.recv() => 143,
            _ = hup.recv() => 129,
        };
        say("floe: exiting without waiting for Trino to confirm the cancel");
        std::process::exit(again);
    });
    Ok(())
}
