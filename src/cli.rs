//! The command line: `floe` (the TUI), `floe check`, `floe maintain …`, `floe config …`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::config::{AuthKind, Dur, Overrides};
use crate::report::Format;

#[derive(Parser, Debug)]
#[command(
    name = "floe",
    version,
    about = "Lakehouse triage in the terminal: Iceberg table health through Trino, maintenance DAGs through Airflow",
    after_help = "Exit codes of `floe check`: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.\nLogs: $XDG_STATE_HOME/floe/floe.log"
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Option<Cmd>,
}

#[derive(Args, Debug, Clone, Default)]
pub struct Global {
    /// Config file (default: $FLOE_CONFIG, else $XDG_CONFIG_HOME/floe/config.toml).
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Profile from the config file.
    #[arg(long, global = true, value_name = "NAME")]
    pub profile: Option<String>,
    /// Trino coordinator: http(s)://host:port or trino://user@host:port/catalog?protocol=https.
    #[arg(long, global = true, value_name = "URL")]
    pub trino: Option<String>,
    /// Trino user.
    #[arg(long, global = true, value_name = "NAME")]
    pub user: Option<String>,
    /// Catalog holding the Iceberg tables (default iceberg).
    #[arg(long, global = true, value_name = "NAME")]
    pub catalog: Option<String>,
    /// Schema to watch (repeat for several; default all).
    #[arg(long = "schema", global = true, value_name = "NAME")]
    pub schemas: Vec<String>,
    /// Airflow base URL (enables the DAGs tab and DAG findings).
    #[arg(long, global = true, value_name = "URL")]
    pub airflow: Option<String>,
    /// Airflow user (password from FLOE_AIRFLOW_PASSWORD, password_env or password_command).
    #[arg(long, global = true, value_name = "NAME")]
    pub airflow_user: Option<String>,
    /// Refuse every mutation (optimize, expire, DAG triggers…).
    #[arg(long, global = true)]
    pub readonly: bool,
    /// Auto-refresh interval (minimum 5s).
    #[arg(long, global = true, value_name = "DURATION", value_parser = parse_dur)]
    pub refresh: Option<Dur>,
    /// PEM file of the CA that signed Trino's certificate.
    #[arg(long, global = true, value_name = "FILE")]
    pub ca_file: Option<PathBuf>,
    /// Skip TLS certificate verification (a lab only).
    #[arg(long, global = true)]
    pub insecure_skip_verify: bool,
    /// Trino authentication: none, basic, bearer or oauth2 (over trino.auth).
    #[arg(long, global = true, value_name = "KIND", value_parser = AuthKind::parse)]
    pub auth: Option<AuthKind>,
}

fn parse_dur(s: &str) -> Result<Dur, String> {
    Dur::parse(s)
}

#[derive(Subcommand, Debug)]
pub enum Cmd {
    /// Open the terminal UI (the default).
    Tui,
    /// Evaluate every table and exit 0 OK / 1 WARNING / 2 CRITICAL / 3 UNKNOWN.
    Check(CheckArgs),
    /// Print or run maintenance (optimize, expire snapshots, …) for scripts and cron.
    Maintain(MaintainArgs),
    /// Show the resolved configuration (secrets redacted).
    Config,
    /// Log in to Trino with OAuth2 (auth = "oauth2"): prints a URL to open in a browser,
    /// waits for the login and caches the token for floe and `floe check`.
    Login,
}

#[derive(Args, Debug)]
pub struct CheckArgs {
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Write the report to FILE (atomically) instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Only tables matching this glob over schema.table or table (repeat).
    #[arg(long = "table", value_name = "GLOB")]
    pub tables: Vec<String>,
    /// Overall deadline: past it the check is UNKNOWN (exit 3), naming what was still
    /// running, and its queries are cancelled on Trino.
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = parse_dur)]
    pub timeout: Dur,
}

#[derive(Args, Debug)]
pub struct MaintainArgs {
    #[command(subcommand)]
    pub action: MaintainCmd,
    /// Overall deadline (for cron): past it the running statement is cancelled on Trino
    /// (audited), the rest does not run, and floe exits 124. Default: none.
    #[arg(long, global = true, value_name = "DURATION", value_parser = parse_dur)]
    pub timeout: Option<Dur>,
}

#[derive(Subcommand, Debug)]
pub enum MaintainCmd {
    /// ALTER TABLE … EXECUTE optimize, one statement per partition given.
    Optimize {
        /// [catalog.]schema.table
        table: String,
        /// Partition to compact, as COLUMN=VALUE (repeat; identity partition columns and
        /// transform fields such as filed_at_day=2026-03-02).
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
}

impl Global {
    pub fn overrides(&self) -> Overrides {
        Overrides {
            config: self.config.clone(),
            profile: self.profile.clone(),
            trino: self.trino.clone(),
            user: self.user.clone(),
            catalog: self.catalog.clone(),
            schemas: self.schemas.clone(),
            tables: Vec::new(),
            airflow: self.airflow.clone(),
            airflow_user: self.airflow_user.clone(),
            readonly: self.readonly,
            refresh: self.refresh,
            ca_file: self.ca_file.clone(),
            insecure_skip_verify: self.insecure_skip_verify,
            auth: self.auth,
        }
    }
}
