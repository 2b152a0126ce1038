//! The command line: `floe` (the TUI), `floe check`, `floe maintain …`, `floe config …`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::config::{AuthKind, Dur, Overrides};
use crate::report::Format;

/// `floe --version`: the version, the git commit it was built from, the build date, the
/// target and the glibc it was linked for (the oldest glibc it starts on).
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("FLOE_GIT_COMMIT"),
    " ",
    env!("FLOE_BUILD_DATE"),
    ", ",
    env!("FLOE_TARGET"),
    ", glibc ",
    env!("FLOE_GLIBC"),
    ")"
);

#[derive(Parser, Debug)]
#[command(
    name = "floe",
    version = VERSION,
    about = "Lakehouse triage in the terminal: Iceberg table health through Trino, maintenance DAGs through Airflow",
    after_help = "Exit codes of `floe check` and `floe report`: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.\nLogs: $XDG_STATE_HOME/floe/floe.log"
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
    /// Profile from the config file, or a group of profiles (`[groups]`) read at once.
    #[arg(long, global = true, value_name = "NAME")]
    pub profile: Option<String>,
    /// Every profile of the config file at once (the TUI and `floe check`), each with its
    /// own Trino and Airflow.
    #[arg(long, global = true)]
    pub all: bool,
    /// Trino coordinator: http(s)://host:port or trino://user@host:port/catalog?protocol=https.
    #[arg(long, global = true, value_name = "URL")]
    pub trino: Option<String>,
    /// Trino user.
    #[arg(long, global = true, value_name = "NAME")]
    pub user: Option<String>,
    /// Catalog of the tables, Iceberg or Delta Lake (default: every Iceberg and Delta Lake
    /// catalog of the cluster, iceberg first); several, comma-separated, are read in one
    /// view (iceberg,delta); `*` adds every other one of the cluster (iceberg,*).
    #[arg(long, global = true, value_name = "NAME[,NAME…]")]
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
    /// Draw ASCII only: borders, charts and symbols (default: when the locale is not UTF-8).
    #[arg(long, global = true)]
    pub ascii: bool,
    /// Auto-refresh interval (minimum 5s).
    #[arg(long, global = true, value_name = "DURATION", value_parser = Dur::parse)]
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

#[derive(Subcommand, Debug)]
pub enum Cmd {
    /// Open the terminal UI (the default).
    Tui,
    /// Evaluate every table and exit 0 OK / 1 WARNING / 2 CRITICAL / 3 UNKNOWN.
    Check(CheckArgs),
    /// Print or run maintenance (optimize, expire snapshots, …) for scripts and cron.
    Maintain(MaintainArgs),
    /// Write one table's incident as a postmortem: findings with their reasons, the
    /// timeline of snapshots and DAG runs, the DAG's failing task and error line, the
    /// audited maintenance actions, the coordinator. Exit 0 OK / 1 WARNING / 2 CRITICAL
    /// (the table's status), 3 when it could not be made.
    Report(ReportArgs),
    /// Point an Airflow connection at another host and port (HOST:PORT, or the host and
    /// port of a pasted trino:// URI): prints the change as a diff; with --yes writes those
    /// two fields only (the password is never read, sent or changed), audited, and tests
    /// the connection again. Exit 0 when written and its test passes, 1 otherwise.
    Connection(ConnectionArgs),
    /// Serve every cluster's health to Prometheus (/metrics, text or OpenMetrics) and
    /// /healthz, from the TUI's cheap refresh every `refresh`: a scrape never reads a
    /// coordinator. SIGHUP reloads the config; SIGTERM stops it (exit 0).
    Serve(ServeArgs),
    /// Show the resolved configuration (secrets redacted), or the config file's JSON Schema.
    Config(ConfigArgs),
    /// Log in to Trino with OAuth2 (auth = "oauth2"): prints a URL to open in a browser,
    /// waits for the login and caches the token for floe and `floe check`.
    Login,
    /// Check the setup step by step (config, Trino, Airflow, audit log, terminal), each with
    /// what was measured and the fix; exit 0 when every check passes, 1 otherwise.
    Doctor,
    /// Print a shell completion script (e.g. `floe completions bash > ~/.local/share/bash-completion/completions/floe`).
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff) to stdout: `floe man | man -l -`.
    Man,
    /// Values for dynamic shell completion (called by the completion scripts).
    #[command(name = "__complete", hide = true)]
    Complete {
        #[arg(value_enum)]
        what: CompleteWhat,
    },
}

#[derive(Args, Debug, Default)]
pub struct ConfigArgs {
    #[command(subcommand)]
    pub action: Option<ConfigCmd>,
}

#[derive(Subcommand, Debug)]
pub enum ConfigCmd {
    /// Print the JSON Schema of config.toml (editors read it through the file's `#:schema` line).
    Schema,
}

/// What `floe __complete` lists.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompleteWhat {
    /// Profile names from the config file.
    Profiles,
    /// Table names the config file names (`[[maintenance]]`, `trino.tables`), for
    /// `floe maintain` and `floe report`.
    Tables,
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
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = Dur::parse)]
    pub timeout: Dur,
    /// Use a table's stats from the TUI's cache when read at most DURATION ago, instead
    /// of reading them again (default: never; a check reads everything fresh).
    #[arg(long, value_name = "DURATION", value_parser = Dur::parse)]
    pub cached_max_age: Option<Dur>,
}

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// [catalog.]schema.table
    pub table: String,
    /// Output format.
    #[arg(long, value_enum, default_value = "markdown")]
    pub format: crate::report::postmortem_cli::PostmortemFormat,
    /// Write the report to FILE (atomically, readable by its owner only) instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Overall deadline: past it floe exits 3 (UNKNOWN) and writes nothing.
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = Dur::parse)]
    pub timeout: Dur,
}

#[derive(Args, Debug)]
pub struct ConnectionArgs {
    /// The Airflow connection id.
    pub id: String,
    /// HOST:PORT, or a trino://user@host:port/catalog URI (only its host and port are written).
    pub target: String,
    /// Write it (without --yes the diff is printed and nothing is touched).
    #[arg(long)]
    pub yes: bool,
}

#[derive(Args, Debug)]
pub struct MaintainArgs {
    #[command(subcommand)]
    pub action: MaintainCmd,
    /// Overall deadline (for cron): past it the running statement is cancelled on Trino
    /// (audited), the rest does not run, and floe exits 124. Default: none.
    #[arg(long, global = true, value_name = "DURATION", value_parser = Dur::parse)]
    pub timeout: Option<Dur>,
}

/// `floe maintain`'s procedures: defined beside their handler (`mutation::maintain_cli`).
pub use crate::mutation::maintain_cli::MaintainCmd;
/// `floe serve`'s options: defined beside the exporter (`serve`).
pub use crate::serve::ServeArgs;

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
            ascii: self.ascii,
            refresh: self.refresh,
            ca_file: self.ca_file.clone(),
            insecure_skip_verify: self.insecure_skip_verify,
            auth: self.auth,
        }
    }
}

/// The clap command tree, for the completion scripts and the man page.
pub fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

/// `floe completions SHELL`: clap's script for the shell, plus dynamic completion of
/// `--profile` from the config file (through `floe __complete profiles`) where the shell
/// allows it.
pub fn completions(shell: clap_complete::Shell) -> String {
    use clap_complete::Shell;
    let mut cmd = command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "floe", &mut out);
    let mut script = String::from_utf8_lossy(&out).into_owned();
    match shell {
        Shell::Bash => script.push_str(BASH_PROFILES),
        Shell::Zsh => {
            // clap leaves --profile to file completion; name the profiles instead.
            script = script
                .lines()
                .map(|l| {
                    if l.starts_with("'--profile=") {
                        l.replace(":_default'", ":_floe_profiles'")
                    } else {
                        l.to_string()
                    }
                })
                .collect::<Vec<_>>()
                .join("\n")
                + "\n";
            // The helper goes before the script's last lines, which run or register _floe.
            let at = script
                .find("\nif [ \"$funcstack[1]\" = \"_floe\" ]")
                .map_or(script.len(), |i| i + 1);
            script.insert_str(at, ZSH_PROFILES);
        }
        Shell::Fish => script.push_str(FISH_PROFILES),
        _ => {}
    }
    script
}

const BASH_PROFILES: &str = r#"
# Profile names come from the config file (the one --config names, else the default).
_floe_profiles() {
    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}"
    if [[ "$prev" == "--profile" ]]; then
        local i config=()
        for (( i = 1; i < COMP_CWORD; i++ )); do
            if [[ "${COMP_WORDS[i]}" == "--config" && $(( i + 1 )) -lt COMP_CWORD ]]; then
                config=(--config "${COMP_WORDS[i+1]}")
            fi
        done
        COMPREPLY=( $(compgen -W "$("${COMP_WORDS[0]}" "${config[@]}" __complete profiles 2>/dev/null)" -- "$cur") )
        return 0
    fi
    # floe maintain ACTION <table>, floe report <table>: the tables the config names.
    if [[ ( " ${COMP_WORDS[*]:1:COMP_CWORD-1} " == *" maintain "* && "$prev" =~ ^(optimize|expire-snapshots|remove-orphan-files|optimize-manifests)$ ) || "$prev" == "report" ]]; then
        local i config=()
        for (( i = 1; i < COMP_CWORD; i++ )); do
            if [[ "${COMP_WORDS[i]}" == "--config" && $(( i + 1 )) -lt COMP_CWORD ]]; then
                config=(--config "${COMP_WORDS[i+1]}")
            fi
        done
        COMPREPLY=( $(compgen -W "$("${COMP_WORDS[0]}" "${config[@]}" __complete tables 2>/dev/null)" -- "$cur") )
        return 0
    fi
    _floe "$@"
}
if [[ "${BASH_VERSINFO[0]}" -eq 4 && "${BASH_VERSINFO[1]}" -ge 4 || "${BASH_VERSINFO[0]}" -gt 4 ]]; then
    complete -F _floe_profiles -o nosort -o bashdefault -o default floe
else
    complete -F _floe_profiles -o bashdefault -o default floe
fi
"#;

const ZSH_PROFILES: &str = r#"(( $+functions[_floe_profiles] )) ||
_floe_profiles() {
    local -a profiles config
    local i
    for (( i = 1; i < ${#words}; i++ )); do
        [[ ${words[i]} == --config ]] && config=(--config "${words[i+1]}")
    done
    profiles=(${(f)"$(${words[1]} $config __complete profiles 2>/dev/null)"})
    _describe -t profiles 'profile' profiles
}
"#;

const FISH_PROFILES: &str = "complete -c floe -l profile -x -a '(floe __complete profiles 2>/dev/null)'
complete -c floe -n '__fish_seen_subcommand_from optimize expire-snapshots remove-orphan-files optimize-manifests report' -x -a '(floe __complete tables 2>/dev/null)'
";

/// `floe man`: the man page, roff — one page, each subcommand's options in a COMMANDS
/// section after the global ones.
pub fn man_page() -> Vec<u8> {
    let cmd = command();
    let mut out = Vec::new();
    let man = clap_mangen::Man::new(cmd.clone()).title("FLOE");
    man.render(&mut out).expect("writing to a Vec cannot fail");
    out.extend_from_slice(b".SH COMMANDS\n");
    man_commands(&cmd, "floe", &mut out);
    out
}

fn man_commands(cmd: &clap::Command, path: &str, out: &mut Vec<u8>) {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("{path} {}", sub.get_name());
        let heading = name.replace('-', "\\-");
        out.extend_from_slice(format!(".SS \"{heading}\"\n").as_bytes());
        let mut section = Vec::new();
        let man = clap_mangen::Man::new(sub.clone());
        man.render_description_section(&mut section)
            .and_then(|()| {
                if sub.get_arguments().any(|a| !a.is_hide_set()) {
                    man.render_options_section(&mut section)
                } else {
                    Ok(())
                }
            })
            .expect("writing to a Vec cannot fail");
        // Their own section headings become paragraphs under this subsection.
        for line in String::from_utf8_lossy(&section).lines() {
            if line.starts_with(".SH ") {
                out.extend_from_slice(b".PP\n");
            } else {
                out.extend_from_slice(line.as_bytes());
                out.push(b'\n');
            }
        }
        man_commands(sub, &name, out);
    }
}

/// The config file as TOML, read without resolving anything (completion must never fail).
fn config_table(global: &Global) -> Option<toml::Table> {
    let path = global
        .config
        .clone()
        .or_else(|| {
            std::env::var_os("FLOE_CONFIG")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        })
        .unwrap_or_else(|| crate::config::Dirs::system().config.join("config.toml"));
    std::fs::read_to_string(&path).ok()?.parse().ok()
}

/// `floe __complete tables`: the tables the config file names — `[[maintenance]]` tables
/// and glob-free `tables` entries, top level and per profile — without the catalog when
/// it is the default one's.
pub fn table_names(global: &Global) -> Vec<String> {
    let Some(t) = config_table(global) else {
        return Vec::new();
    };
    let mut names = std::collections::BTreeSet::new();
    let mut add = |v: &toml::Value| {
        if let Some(s) = v.as_str().filter(|s| !s.contains(['*', '?'])) {
            names.insert(s.strip_prefix("iceberg.").unwrap_or(s).to_string());
        }
    };
    if let Some(m) = t.get("maintenance").and_then(|m| m.as_array()) {
        for e in m {
            if let Some(v) = e.get("table") {
                add(v);
            }
        }
    }
    let tables_of = |trino: Option<&toml::Value>| -> Vec<toml::Value> {
        trino
            .and_then(|tr| tr.get("tables"))
            .and_then(|v| v.as_array())
            .cloned()
            .unwrap_or_default()
    };
    for v in tables_of(t.get("trino")) {
        add(&v);
    }
    if let Some(p) = t.get("profiles").and_then(|p| p.as_table()) {
        for prof in p.values() {
            for v in tables_of(prof.get("trino")) {
                add(&v);
            }
        }
    }
    names.into_iter().collect()
}

/// `floe __complete profiles`: the profile names of the config file, read without
/// resolving anything else (a broken profile must not stop its neighbours completing).
pub fn profile_names(global: &Global) -> Vec<String> {
    match config_table(global)
        .as_ref()
        .and_then(|t| t.get("profiles"))
    {
        Some(toml::Value::Table(p)) => p.keys().cloned().collect(),
        _ => Vec::new(),
    }
}
