//! `floe maintain …`: the plan drafted as the TUI drafts it, printed (with its ETA) and
//! touching nothing without `--yes`; with it, run with progress on stderr, stopped by a
//! signal or `--timeout`, every statement audited.

use crate::text::sanitize;
use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::contention::Others;
use super::draft::{self, MaintenanceKind, Over, PlanError};
use super::run::{StepEvent, Stop, run_plan_watched};
use super::{context, eta};
use crate::config::Settings;
use crate::fmt::{human_bytes, thousands};
use crate::lakehouse::model::TableRef;
use crate::lakehouse::plan::Plan;
use crate::lakehouse::queries::Lakehouse;
use crate::trino::Client;
use crate::units::{Bytes, Dur};

/// The procedures `floe maintain` runs, as its command line spells them (clap's
/// subcommands of `floe maintain`, see `crate::cli`).
#[derive(clap::Subcommand, Debug)]
pub enum MaintainCmd {
    /// ALTER TABLE … EXECUTE optimize, one statement per partition given.
    Optimize {
        /// [catalog.]schema.table
        table: String,
        /// Partition to compact, as COLUMN=VALUE (repeat; identity partition columns and
        /// transform fields such as filed_at_day=2026-03-02), fields joined by `/`. A NULL
        /// value is spelled `COLUMN IS NULL`; `COLUMN=null` is the string 'null'.
        #[arg(long = "partition", value_name = "COL=VALUE")]
        partitions: Vec<String>,
        /// Rewrite files below this size (default: floe's small-file threshold for the table).
        #[arg(long, value_name = "SIZE")]
        threshold: Option<String>,
        /// Run it (without --yes the plan is printed and nothing is touched).
        #[arg(long)]
        yes: bool,
    },
    /// ALTER TABLE … EXECUTE expire_snapshots(retention_threshold => …).
    ExpireSnapshots {
        table: String,
        #[arg(long, value_name = "DURATION", default_value = "7d")]
        retention: String,
        #[arg(long)]
        yes: bool,
    },
    /// ALTER TABLE … EXECUTE remove_orphan_files(retention_threshold => …).
    RemoveOrphanFiles {
        table: String,
        #[arg(long, value_name = "DURATION", default_value = "7d")]
        retention: String,
        #[arg(long)]
        yes: bool,
    },
    /// ALTER TABLE … EXECUTE optimize_manifests.
    OptimizeManifests {
        table: String,
        #[arg(long)]
        yes: bool,
    },
    /// CALL <catalog>.system.vacuum(…) of a Delta Lake table: removes the files no
    /// version newer than the retention references.
    Vacuum {
        table: String,
        #[arg(long, value_name = "DURATION", default_value = "7d")]
        retention: String,
        #[arg(long)]
        yes: bool,
    },
}

impl MaintainCmd {
    /// The table named on the command line.
    fn table(&self) -> &str {
        match self {
            MaintainCmd::Optimize { table, .. }
            | MaintainCmd::ExpireSnapshots { table, .. }
            | MaintainCmd::RemoveOrphanFiles { table, .. }
            | MaintainCmd::OptimizeManifests { table, .. }
            | MaintainCmd::Vacuum { table, .. } => table,
        }
    }

    /// `--yes`: run it.
    fn yes(&self) -> bool {
        match self {
            MaintainCmd::Optimize { yes, .. }
            | MaintainCmd::ExpireSnapshots { yes, .. }
            | MaintainCmd::RemoveOrphanFiles { yes, .. }
            | MaintainCmd::OptimizeManifests { yes, .. }
            | MaintainCmd::Vacuum { yes, .. } => *yes,
        }
    }

    fn table_ref(&self, s: &Settings) -> Result<TableRef, PlanError> {
        Ok(TableRef::parse(
            self.table(),
            &s.trino.catalog,
            s.trino.schemas.first().map(String::as_str),
        )?)
    }
}

/// The plan of a `floe maintain` command, from the one drafter (`draft::draft`).
async fn build_plan(
    lake: &Lakehouse,
    s: &Settings,
    cmd: &MaintainCmd,
) -> Result<(Plan, Others), PlanError> {
    let t = cmd.table_ref(s)?;
    let retention = |text: &str| -> Result<u64, PlanError> {
        Dur::parse(text)
            .map(|d| d.0.as_secs())
            .map_err(|source| PlanError::Argument {
                flag: "--retention",
                source,
            })
    };
    let (kind, over, threshold) = match cmd {
        MaintainCmd::Optimize {
            partitions,
            threshold,
            ..
        } => {
            let threshold = threshold
                .as_deref()
                .map(|text| {
                    Bytes::parse(text)
                        .map(|b| b.0)
                        .map_err(|source| PlanError::Argument {
                            flag: "--threshold",
                            source,
                        })
                })
                .transpose()?;
            let over = if partitions.is_empty() {
                Over::Whole
            } else {
                Over::Named(partitions.clone())
            };
            (MaintenanceKind::Optimize, over, threshold)
        }
        MaintainCmd::ExpireSnapshots { retention: r, .. } => (
            MaintenanceKind::ExpireSnapshots {
                retention_secs: retention(r)?,
            },
            Over::Whole,
            None,
        ),
        MaintainCmd::RemoveOrphanFiles { retention: r, .. } => (
            MaintenanceKind::RemoveOrphanFiles {
                retention_secs: retention(r)?,
            },
            Over::Whole,
            None,
        ),
        MaintainCmd::OptimizeManifests { .. } => {
            (MaintenanceKind::OptimizeManifests, Over::Whole, None)
        }
        MaintainCmd::Vacuum { retention: r, .. } => (
            MaintenanceKind::Vacuum {
                retention_secs: retention(r)?,
            },
            Over::Whole,
            None,
        ),
    };
    // Nobody else writes the table now (any client): else nothing is planned.
    let mut unread = Vec::new();
    let others = others_of(s, &t, &mut unread).await;
    unread.extend(draft::unwritten(lake, &others, &t).await?);
    let d = draft::draft(lake, t, kind, over, threshold).await?;
    let mut plan = d.build(d.grouped)?;
    plan.notes.extend(unread);
    Ok((plan, others))
}

/// Who else may write `t`: the Airflow of the settings, when configured, and the table's
/// maintenance DAGs; what could not be read to tell goes to `unread`.
async fn others_of(s: &Settings, t: &TableRef, unread: &mut Vec<String>) -> Others {
    let Some(a) = s.airflow.as_ref() else {
        return Others::default();
    };
    match crate::airflow::AirflowClient::connect(a).await {
        Ok(c) => Others::of(Some(c), &s.maintenance, t, unread).await,
        Err(e) => {
            unread.push(format!(
                "maintenance DAGs not checked for a running task: Airflow at {}: {e}",
                a.url
            ));
            Others::default()
        }
    }
}

/// The exit code of a run stopped by `--timeout` (as timeout(1) has it).
pub const TIMEOUT_EXIT: u8 = 124;

/// `floe maintain …`: without `--yes` print the plan and touch nothing; with it, run
/// with progress on stderr, exit non-zero on failure, audit every statement.
pub async fn maintain(
    settings: &Settings,
    cmd: MaintainCmd,
    timeout: Option<Duration>,
) -> ExitCode {
    let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
    let yes = cmd.yes();
    // The table's own catalog (it may name another than the profile's): its connector
    // says how it is read and maintained.
    let catalog = match cmd.table_ref(settings) {
        Ok(t) => t.catalog,
        Err(e) => {
            eprintln!("floe: {}", sanitize(&e.to_string()));
            return ExitCode::from(1);
        }
    };
    let client = match Client::from_settings(&settings.trino, settings.query_timeout) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("floe: {}", sanitize(&e.to_string()));
            return ExitCode::from(1);
        }
    };
    let lake = Lakehouse::new(client, catalog, settings.health.clone());
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
    let (plan, others) = match planned {
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
        let m = draft::measured(&lake, settings.audit_log.clone()).await;
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
    match run_plan_watched(&lake, &plan, &ctx, &others, &stop, &on_event).await {
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
                    if let Some(m) = crate::mutation::run::metrics_text(&o.metrics) {
                        s.push_str(&format!(", {m}"));
                    }
                    if let Some(after) = o.files_after {
                        s.push_str(&format!(", files {} -> {after}", steps[step].files));
                    }
                    s
                } else if o.cancelled {
                    "cancelled".to_string()
                } else {
                    format!(
                        "FAILED: {}",
                        o.error
                            .as_ref()
                            .map(ToString::to_string)
                            .unwrap_or_default()
                    )
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
fn watch_signals(stop: Stop, signalled: Arc<AtomicU8>) -> Result<(), SignalError> {
    use tokio::signal::unix::{SignalKind, signal};
    let handler = |kind: SignalKind, name: &'static str| {
        signal(kind).map_err(|source| SignalError { name, source })
    };
    let mut int = handler(SignalKind::interrupt(), "SIGINT")?;
    let mut term = handler(SignalKind::terminate(), "SIGTERM")?;
    let mut hup = handler(SignalKind::hangup(), "SIGHUP")?;
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

/// A signal whose handler could not be installed.
#[derive(Debug, thiserror::Error)]
#[error("{name} handler: {source}")]
struct SignalError {
    name: &'static str,
    source: std::io::Error,
}
