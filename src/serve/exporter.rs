//! The exporter as a whole: a task per cluster refreshing it every period, the listener,
//! and the signals. SIGHUP reads the config (and the TLS files and token) again: a profile
//! whose coordinator, user and tables are unchanged keeps its cluster (its records, its
//! refresh, its counters) and takes the new settings at once; a new or changed one starts
//! warm from the stats cache; a removed one stops, its metrics gone. A config that does
//! not load leaves everything as it was and says so (`floe_config_last_reload_successful`
//! 0, the log). SIGTERM and SIGINT stop the refreshes (their statements cancelled on Trino)
//! and the listener, and floe exits 0.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use chrono::Utc;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::watch;

use super::Published;
use super::cluster::{Cluster, scope};
use super::http::Guard;
use super::{Format, ServeArgs};
use crate::config::{Overrides, Settings};

/// One cluster's task and what it publishes.
struct Slot {
    scope: (String, String, String, String, Vec<String>, Vec<String>),
    published: Arc<RwLock<Arc<Published>>>,
    settings: watch::Sender<Settings>,
    task: tokio::task::JoinHandle<()>,
}

/// What the listener reads: the clusters' publications, the guard, the last reload.
pub struct State {
    slots: RwLock<Vec<Slot>>,
    guard: RwLock<Arc<Guard>>,
    reload_ok: AtomicBool,
}

impl State {
    pub fn guard(&self) -> Arc<Guard> {
        self.guard.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn published(&self) -> Vec<Arc<Published>> {
        let slots = self.slots.read().unwrap_or_else(|e| e.into_inner());
        slots
            .iter()
            .map(|s| {
                s.published
                    .read()
                    .unwrap_or_else(|e| e.into_inner())
                    .clone()
            })
            .collect()
    }

    /// The exposition of every cluster's last refresh, now.
    pub fn exposition(&self, format: Format) -> String {
        super::render(
            &self.published(),
            format,
            Utc::now(),
            self.reload_ok.load(Ordering::Relaxed),
        )
    }

    /// `/healthz`: serving, and each cluster's state in a line.
    pub fn health(&self) -> String {
        let mut out = String::from("ok: floe serve\n");
        for p in self.published() {
            let state = match p.up {
                None => "no refresh ended yet".to_string(),
                Some(true) => format!("up: {}", p.summary),
                Some(false) => format!("down: {}", p.summary),
            };
            out.push_str(&format!("{}: {state}\n", p.profile));
        }
        if !self.reload_ok.load(Ordering::Relaxed) {
            out.push_str("the last SIGHUP could not load the config (see floe.log)\n");
        }
        crate::text::sanitize(&out).into_owned()
    }
}

/// Serve until SIGTERM or SIGINT.
pub async fn run(
    args: ServeArgs,
    overrides: Overrides,
    all: bool,
    fleet: Vec<Settings>,
) -> Result<(), String> {
    let guard = Guard::load(&args)?;
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", args.listen))?;
    let mut slots = Vec::new();
    for s in fleet {
        slots.push(start(Cluster::new(s)?));
    }
    let state = Arc::new(State {
        slots: RwLock::new(slots),
        guard: RwLock::new(Arc::new(guard)),
        reload_ok: AtomicBool::new(true),
    });
    let mut hangup = signal(SignalKind::hangup()).map_err(|e| format!("SIGHUP: {e}"))?;
    let mut term = signal(SignalKind::terminate()).map_err(|e| format!("SIGTERM: {e}"))?;
    let mut int = signal(SignalKind::interrupt()).map_err(|e| format!("SIGINT: {e}"))?;
    let (stop, stopped) = watch::channel(false);
    let server = tokio::spawn(super::http::serve(listener, state.clone(), stopped));
    announce(&args, &state);
    loop {
        tokio::select! {
            _ = hangup.recv() => reload(&state, &args, &overrides, all),
            _ = term.recv() => break,
            _ = int.recv() => break,
        }
    }
    tracing::info!("floe serve: stopping");
    let _ = stop.send(true);
    let slots = std::mem::take(&mut *state.slots.write().unwrap_or_else(|e| e.into_inner()));
    for s in &slots {
        s.task.abort();
    }
    for s in slots {
        let _ = s.task.await;
    }
    let _ = server.await;
    // The aborted refreshes sent DELETE for their statements: a moment for those requests.
    tokio::time::sleep(Duration::from_millis(500)).await;
    Ok(())
}

/// The line `floe serve` prints once listening (stderr: the journal's, a terminal's).
fn announce(args: &ServeArgs, state: &State) {
    let scheme = if state.guard().tls.is_some() {
        "https"
    } else {
        "http"
    };
    let profiles: Vec<String> = state
        .published()
        .iter()
        .map(|p| p.profile.clone())
        .collect();
    let line = format!(
        "floe serve: listening on {scheme}://{}/metrics for {} cluster{} ({})",
        args.listen,
        profiles.len(),
        if profiles.len() == 1 { "" } else { "s" },
        profiles.join(", ")
    );
    tracing::info!("{line}");
    eprintln!("{}", crate::text::sanitize(&line));
}

/// A task refreshing `cluster` every period, publishing each refresh.
fn start(cluster: Cluster) -> Slot {
    let published = Arc::new(RwLock::new(cluster.published()));
    let (settings, changes) = watch::channel(cluster.settings().clone());
    let scope = scope(cluster.settings());
    // A local task (the exporter runs in a `LocalSet`): the refresh's futures borrow
    // across their awaits in ways the compiler cannot prove `Send` for every lifetime.
    let task = tokio::task::spawn_local(cycle(cluster, published.clone(), changes));
    Slot {
        scope,
        published,
        settings,
        task,
    }
}

/// Refresh, publish, wait for the period (taking new settings while waiting); again.
async fn cycle(
    mut cluster: Cluster,
    out: Arc<RwLock<Arc<Published>>>,
    mut changes: watch::Receiver<Settings>,
) {
    changes.mark_unchanged();
    loop {
        let started = tokio::time::Instant::now();
        cluster.refresh().await;
        *out.write().unwrap_or_else(|e| e.into_inner()) = cluster.published();
        loop {
            let next = started + cluster.settings().refresh;
            tokio::select! {
                _ = tokio::time::sleep_until(next) => break,
                changed = changes.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    let s = changes.borrow_and_update().clone();
                    if let Err(e) = cluster.reconfigure(s) {
                        tracing::warn!("floe serve: {e}");
                    }
                    *out.write().unwrap_or_else(|e| e.into_inner()) = cluster.published();
                }
            }
        }
    }
}

/// SIGHUP: the config, the TLS files and the token read again, applied only when all load.
fn reload(state: &State, args: &ServeArgs, overrides: &Overrides, all: bool) {
    let loaded = super::load(overrides, all)
        .map_err(|e| e.to_string())
        .and_then(|fleet| {
            // Every new cluster's clients are built before anything changes.
            for s in &fleet {
                crate::trino::Client::from_settings(&s.trino, s.query_timeout)
                    .map_err(|e| format!("profile {}: {e}", s.profile))?;
            }
            Ok((fleet, Guard::load(args)?))
        });
    let (fleet, guard) = match loaded {
        Ok(l) => l,
        Err(e) => {
            tracing::error!("floe serve: SIGHUP: the config was not reloaded: {e}");
            state.reload_ok.store(false, Ordering::Relaxed);
            return;
        }
    };
    *state.guard.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(guard);
    let mut slots = state.slots.write().unwrap_or_else(|e| e.into_inner());
    let mut old: Vec<Slot> = std::mem::take(&mut *slots);
    for s in fleet {
        let same = old.iter().position(|o| o.scope == scope(&s));
        match same {
            Some(i) => {
                let slot = old.remove(i);
                slot.settings.send_replace(s);
                slots.push(slot);
            }
            None => match Cluster::new(s) {
                Ok(c) => slots.push(start(c)),
                Err(e) => tracing::error!("floe serve: SIGHUP: {e}"),
            },
        }
    }
    for gone in old {
        tracing::info!(profile = %gone.scope.0, "floe serve: SIGHUP: no longer served");
        gone.task.abort();
    }
    state.reload_ok.store(true, Ordering::Relaxed);
    tracing::info!(
        clusters = slots.len(),
        "floe serve: SIGHUP: the config reloaded"
    );
}
