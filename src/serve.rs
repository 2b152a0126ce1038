//! `floe serve`: a long-running exporter. Each configured cluster (one profile, `--all`, a
//! group) is refreshed every `refresh` by the TUI's own cheap refresh (a
//! [`crate::refresh::Refresh`] driven headless, its records kept between refreshes, warm
//! from the stats cache) and its Airflow read as `floe check` reads it; each refresh ends
//! in the cluster's exposition, rendered once. A scrape of `/metrics` never reads a
//! coordinator: it joins the clusters' last expositions (Prometheus text or OpenMetrics, by
//! the `Accept` header) with the exporter's own health, computed then (`floe_up`, the last
//! refresh's age, its cost). `/healthz` says whether it serves.
//!
//! A cluster that cannot be read is UNKNOWN for itself (`floe_up` 0, its tables UNKNOWN)
//! and never holds up the others. SIGHUP reads the config again (a cluster whose Trino and
//! scope are unchanged keeps what it knows); SIGTERM and SIGINT stop it, exit 0.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::config::{self, Overrides, Settings};
use crate::text::sanitize;

mod cluster;
mod exporter;
mod exposition;
mod http;

pub use cluster::{Published, families};
pub use exposition::{Format, negotiate, render};

/// The address `floe serve` listens on unless `--listen` names another: loopback, the
/// port OpenTelemetry's Prometheus exporter registered (9464).
pub const DEFAULT_LISTEN: &str = "127.0.0.1:9464";

/// `floe serve`'s own options (the clusters are the global `--profile` / `--all`).
#[derive(Args, Debug, Clone)]
pub struct ServeArgs {
    /// Address to listen on (a port on every interface: 0.0.0.0:9464).
    #[arg(long, value_name = "ADDR", default_value = DEFAULT_LISTEN)]
    pub listen: SocketAddr,
    /// PEM certificate chain to serve HTTPS with (with --tls-key; read again on SIGHUP).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// File whose first line is the bearer token a scrape of /metrics must send
    /// (`Authorization: Bearer …`; Prometheus' `authorization.credentials_file`). Without
    /// it, FLOE_SERVE_TOKEN; without either, /metrics is open.
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Print every metric floe serves (name, type, labels, help), one a line, and exit
    /// (no config read): what alert rules and dashboards may use.
    #[arg(long)]
    pub list_metrics: bool,
}

/// The environment variable holding the token when `--token-file` is not given.
pub const TOKEN_ENV: &str = "FLOE_SERVE_TOKEN";

/// `floe serve`: exit 0 once stopped by SIGTERM or SIGINT, 1 when it cannot start (the
/// config, the address, the TLS files or the token), naming what failed.
pub fn cli(args: ServeArgs, overrides: &Overrides, all: bool) -> ExitCode {
    if args.list_metrics {
        print!("{}", list_metrics());
        return ExitCode::SUCCESS;
    }
    let fleet = match load(overrides, all) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("floe serve: {}", sanitize(&e.to_string()));
            return ExitCode::from(1);
        }
    };
    let _log = crate::run::init_logging(&fleet[0].log_dir);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let local = tokio::task::LocalSet::new();
    let served = local.block_on(&rt, exporter::run(args, overrides.clone(), all, fleet));
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("floe serve: {}", sanitize(&e));
            ExitCode::from(1)
        }
    }
}

/// `--list-metrics`: `name<TAB>type<TAB>labels (comma-separated)<TAB>help`, one a line,
/// sample names (a counter's with `_total`).
pub fn list_metrics() -> String {
    let mut out = String::new();
    for m in crate::report::metrics::METRICS {
        let kind = match m.kind {
            crate::report::metrics::Kind::Gauge => "gauge",
            crate::report::metrics::Kind::Counter => "counter",
        };
        out.push_str(&format!(
            "{}\t{kind}\t{}\t{}\n",
            m.name,
            m.labels.join(","),
            m.help
        ));
    }
    out
}

/// The clusters the command line and the config select, in the file's order.
fn load(overrides: &Overrides, all: bool) -> Result<Vec<Settings>, config::ConfigError> {
    Ok(match config::load_selection(overrides, all)? {
        config::Selection::One(s) => vec![*s],
        config::Selection::Fleet(v) => v,
    })
}
