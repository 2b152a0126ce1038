//! Process entry: parse the command line, set up logging, dispatch.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Cmd};
use crate::config::{self, Auth, Settings};
use crate::health::Severity;
use crate::text::sanitize;

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let command = cli.command.unwrap_or(Cmd::Tui);
    if let Some(code) = run_offline(&command, &cli.global) {
        return code;
    }
    let overrides = cli.global.overrides();
    let all = cli.global.all;
    match command {
        Cmd::Check(args) => check(&args, &overrides, all),
        Cmd::Serve(args) => crate::serve::cli(args, &overrides, all),
        Cmd::Login => {
            let Some(settings) = or_report(one_cluster(&overrides, all, "floe login")) else {
                return ExitCode::from(1);
            };
            let _log = init_logging(&settings.log_dir);
            crate::trino::login::cli(&settings)
        }
        Cmd::Config(_) => match one_cluster(&overrides, all, "floe config") {
            Ok(s) => {
                print!("{}", describe(&s));
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("floe: {}", sanitize(&e.to_string()));
                ExitCode::from(1)
            }
        },
        Cmd::Maintain(args) => {
            let Some(settings) = or_report(one_cluster(&overrides, all, "floe maintain")) else {
                return ExitCode::from(1);
            };
            let _log = init_logging(&settings.log_dir);
            let rt = runtime();
            rt.block_on(crate::mutation::maintain_cli::maintain(
                &settings,
                args.action,
                args.timeout.map(|t| t.0),
            ))
        }
        Cmd::Connection(args) => {
            let Some(settings) = or_report(one_cluster(&overrides, all, "floe connection")) else {
                return ExitCode::from(1);
            };
            let _log = init_logging(&settings.log_dir);
            let rt = runtime();
            rt.block_on(crate::mutation::connection::cli(
                &settings,
                &args.id,
                &args.target,
                args.yes,
            ))
        }
        Cmd::Report(args) => {
            let settings = match one_cluster(&overrides, all, "floe report") {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("floe: UNKNOWN: {}", sanitize(&e.to_string()));
                    return ExitCode::from(crate::report::postmortem_cli::UNKNOWN_EXIT);
                }
            };
            let _log = init_logging(&settings.log_dir);
            let rt = runtime();
            rt.block_on(crate::report::postmortem_cli::cli(
                &settings,
                &args.table,
                args.format,
                args.output.as_deref(),
                args.timeout.0,
            ))
        }
        Cmd::Doctor => {
            let settings = one_cluster(&overrides, all, "floe doctor");
            let _log = settings
                .as_ref()
                .ok()
                .and_then(|s| init_logging(&s.log_dir));
            let rt = runtime();
            let mut out = std::io::stdout().lock();
            if rt.block_on(crate::doctor::run(settings, &mut out)) {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Cmd::Completions { .. } | Cmd::Man | Cmd::Complete { .. } => {
            unreachable!("handled by run_offline")
        }
        Cmd::Tui => {
            let settings = match config::load_selection(&overrides, all) {
                Ok(config::Selection::Fleet(fleet)) => {
                    let _log = init_logging(&fleet[0].log_dir);
                    return match crate::runtime::run_fleet(fleet, overrides) {
                        Ok(()) => ExitCode::SUCCESS,
                        Err(e) => {
                            eprintln!("floe: {}", sanitize(&format!("{e:#}")));
                            ExitCode::from(1)
                        }
                    };
                }
                Ok(config::Selection::One(s)) => Ok(*s),
                Err(e) => Err(e),
            };
            let Some(settings) = or_report(settings) else {
                return ExitCode::from(1);
            };
            let _log = init_logging(&settings.log_dir);
            match crate::runtime::run_with(settings, overrides) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("floe: {}", sanitize(&format!("{e:#}")));
                    ExitCode::from(1)
                }
            }
        }
    }
}

/// The commands that need no configuration: completion scripts, the man page, the
/// completion helper. `None` for every other command.
fn run_offline(command: &Cmd, global: &crate::cli::Global) -> Option<ExitCode> {
    let mut out = std::io::stdout().lock();
    let written = match command {
        Cmd::Completions { shell } => out.write_all(crate::cli::completions(*shell).as_bytes()),
        Cmd::Man => out.write_all(&crate::cli::man_page()),
        Cmd::Config(crate::cli::ConfigArgs {
            action: Some(crate::cli::ConfigCmd::Schema),
        }) => out.write_all(config::json_schema().as_bytes()),
        Cmd::Complete { what } => match what {
            crate::cli::CompleteWhat::Profiles => crate::cli::profile_names(global)
                .iter()
                .try_for_each(|p| writeln!(out, "{p}")),
            crate::cli::CompleteWhat::Tables => crate::cli::table_names(global)
                .iter()
                .try_for_each(|t| writeln!(out, "{t}")),
        },
        _ => return None,
    };
    // A closed pipe (`floe man | head`) is not an error worth a message.
    Some(match written.and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("floe: {e}");
            ExitCode::from(1)
        }
    })
}

/// `floe check`: one cluster or a fleet, each profile's secrets resolved on its own (one
/// that cannot be loaded is UNKNOWN for its own reason, the others are checked); with
/// `--output` the file is always rewritten, atomically, even when nothing could be
/// loaded, so a textfile never keeps an earlier success.
fn check(args: &crate::cli::CheckArgs, overrides: &config::Overrides, all: bool) -> ExitCode {
    use crate::report::fleet::{run as run_fleet, unloaded};
    let rt = runtime();
    let (timeout, cached) = (args.timeout.0, args.cached_max_age.map(|d| d.0));
    let (text, code, summary) = match config::load_each(overrides, all) {
        Ok(config::Each::One(settings)) => {
            let _log = init_logging(&settings.log_dir);
            let report = rt.block_on(crate::report::check::run_cached(
                &settings,
                &args.tables,
                timeout,
                cached,
            ));
            (
                report.render(args.format),
                report.exit_code(),
                report.summary_line(),
            )
        }
        Ok(config::Each::Fleet(fleet)) => {
            let log_dir = fleet
                .iter()
                .find_map(|(_, s)| s.as_ref().ok())
                .map(|s| s.log_dir.clone());
            let _log = log_dir.map(|d| init_logging(&d));
            let report = rt.block_on(run_fleet(&fleet, &args.tables, timeout, cached));
            (
                report.render(args.format),
                report.exit_code(),
                report.summary_line(),
            )
        }
        Err(e) => {
            // Monitoring needs an exit code in 0-3 whatever happens.
            let asked = match (&overrides.profile, all) {
                (Some(p), _) => p.clone(),
                (None, true) => "all".to_string(),
                (None, false) => "default".to_string(),
            };
            let one = unloaded(&asked, &e);
            let summary = format!("UNKNOWN: {e}");
            let text = match args.format {
                crate::report::Format::Prometheus | crate::report::Format::Json => {
                    one.render(args.format)
                }
                _ => format!("{}\n", sanitize(&summary)),
            };
            (text, Severity::Unknown.exit_code(), summary)
        }
    };
    match &args.output {
        Some(path) => {
            if let Err(e) = write_atomic(path, &text) {
                println!(
                    "UNKNOWN: cannot write the report to {}: {e}",
                    sanitize(&path.display().to_string())
                );
                return ExitCode::from(3);
            }
            println!("{}", sanitize(&summary));
        }
        None => {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(text.as_bytes());
        }
    }
    ExitCode::from(code as u8)
}

/// The settings of the one cluster a command works on: `--all`, `all = true` or a group of
/// profiles is an error that says to name one with `--profile`.
fn one_cluster(
    over: &config::Overrides,
    all: bool,
    what: &str,
) -> Result<Settings, config::ConfigError> {
    match config::load_selection(over, all)? {
        config::Selection::One(s) => Ok(*s),
        config::Selection::Fleet(v) => Err(config::ConfigError::OneCluster {
            what: what.to_string(),
            profiles: v.into_iter().map(|s| s.profile).collect(),
        }),
    }
}

/// The settings, or the configuration error printed to stderr.
fn or_report(settings: Result<Settings, config::ConfigError>) -> Option<Settings> {
    settings
        .map_err(|e| eprintln!("floe: {}", sanitize(&e.to_string())))
        .ok()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// Logs go to `<state dir>/floe.log`, never to the terminal. `FLOE_LOG` or `RUST_LOG` set
/// the filter (default `floe=info`): targets and levels, `floe=debug,reqwest=info`.
pub fn init_logging(dir: &Path) -> Option<tracing_appender::non_blocking::WorkerGuard> {
    use tracing_subscriber::filter::Targets;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    std::fs::create_dir_all(dir).ok()?;
    // The log holds table names, statements and server errors: readable by its owner only.
    private_file(&dir.join("floe.log")).ok()?;
    let appender = tracing_appender::rolling::never(dir, "floe.log");
    let (writer, guard) = tracing_appender::non_blocking(appender);
    // Targets, not an EnvFilter: its span and field filters are what pulled a regex engine
    // into the release, and a log file of one program needs targets and levels only.
    let parse = |name: &str| std::env::var(name).ok()?.parse::<Targets>().ok();
    let filter = parse("FLOE_LOG")
        .or_else(|| parse("RUST_LOG"))
        .unwrap_or_else(|| Targets::new().with_target("floe", tracing::Level::INFO));
    tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(Scrubbed(writer))
                .with_ansi(false),
        )
        .with(filter)
        .try_init()
        .ok()?;
    Some(guard)
}

/// floe.log's writer: each event arrives as one line, and whatever a server put in it
/// (CR, LF, NUL, bidi controls in an error message) is escaped, so no text forges a line
/// of the log or reorders it on the screen of whoever reads it.
struct Scrubbed<M>(M);

struct ScrubbedWriter<W>(W);

impl<'a, M: tracing_subscriber::fmt::MakeWriter<'a>> tracing_subscriber::fmt::MakeWriter<'a>
    for Scrubbed<M>
{
    type Writer = ScrubbedWriter<M::Writer>;
    fn make_writer(&'a self) -> Self::Writer {
        ScrubbedWriter(self.0.make_writer())
    }
}

impl<W: std::io::Write> std::io::Write for ScrubbedWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write_all(scrub_log_line(buf).as_bytes())?;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

/// One formatted log event as it goes to the file: every unsafe character escaped, line
/// breaks inside it too; only its final newline stays.
pub fn scrub_log_line(buf: &[u8]) -> String {
    let text = String::from_utf8_lossy(buf);
    let (body, end) = match text.strip_suffix('\n') {
        Some(b) => (b, "\n"),
        None => (text.as_ref(), ""),
    };
    let mut out = String::with_capacity(body.len() + 1);
    for c in body.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            c if crate::text::is_unsafe(c) => out.push_str(&crate::text::sanitize(&c.to_string())),
            c => out.push(c),
        }
    }
    out.push_str(end);
    out
}

/// Create `path` if missing, readable and writable by its owner only (0600), and make an
/// existing file so.
pub fn private_file(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
}

/// A check's output is read by other programs (node_exporter's textfile collector): it
/// gets the umask's permissions, as a file written plainly would.
fn write_atomic(path: &Path, text: &str) -> std::io::Result<()> {
    crate::files::write_atomic(path, text.as_bytes(), 0o666)
}

/// `floe config`: the resolved settings, secrets shown only as their presence.
pub fn describe(s: &Settings) -> String {
    let auth = match &s.trino.auth {
        Auth::None => "none".to_string(),
        Auth::Basic { .. } => "basic (password set)".to_string(),
        Auth::Bearer { .. } => "bearer (token set)".to_string(),
        Auth::OAuth2(o) => format!("oauth2 (token cache {})", o.cache_dir.display()),
    };
    let mut out = String::new();
    out.push_str(&format!(
        "config file: {}\nprofile: {}{}\n",
        s.file
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "(none)".into()),
        s.profile,
        if s.profiles.is_empty() {
            String::new()
        } else {
            format!(" (defined: {})", s.profiles.join(", "))
        }
    ));
    out.push_str(&format!(
        "trino: {} user={} catalog={} schemas={} auth={auth}{}{}\n",
        s.trino.url,
        s.trino.user,
        s.trino.catalog,
        if s.trino.schemas.is_empty() {
            "(all)".into()
        } else {
            s.trino.schemas.join(",")
        },
        s.trino
            .tls
            .ca_file
            .as_ref()
            .map(|p| format!(" ca_file={}", p.display()))
            .unwrap_or_default(),
        if s.trino.tls.insecure_skip_verify {
            " insecure_skip_verify"
        } else {
            ""
        },
    ));
    match &s.airflow {
        Some(a) => out.push_str(&format!(
            "airflow: {} user={} api={:?} dag_tags={} dag_ids={}{}\n",
            a.url,
            a.user.as_deref().unwrap_or("-"),
            a.api,
            a.dag_tags.join(","),
            a.dag_ids.join(","),
            if a.password.is_some() {
                " (password set)"
            } else if a.token.is_some() {
                " (token set)"
            } else {
                ""
            },
        )),
        None => out.push_str("airflow: (not configured)\n"),
    }
    out.push_str(&format!(
        "readonly: {}\nrefresh: {}\nmax_concurrent_queries: {}\nprobe_batch: {}\nfull_refresh_every: {}\nquery_timeout: {}\nstats cache: {}\n",
        s.readonly,
        humantime::format_duration(s.refresh),
        s.max_concurrent_queries,
        s.probe_batch,
        match s.full_refresh_every {
            Some(d) => humantime::format_duration(d).to_string(),
            None => "never".into(),
        },
        humantime::format_duration(s.query_timeout),
        s.stats_cache.display()
    ));
    let h = &s.health;
    out.push_str(&format!(
        "health: target_file_size={} small_file_ratio={} min_small_files={} compaction_warn={} compaction_critical={} snapshot_retention={} max_snapshots={}\n",
        h.target_file_size,
        h.small_file_ratio,
        h.min_small_files,
        humantime::format_duration(h.compaction_warn),
        humantime::format_duration(h.compaction_critical),
        humantime::format_duration(h.snapshot_retention),
        h.max_snapshots
    ));
    for m in &s.maintenance {
        out.push_str(&format!("maintenance: {} -> {}\n", m.table, m.dag_id));
    }
    out.push_str(&format!(
        "audit log: {}\nexports: {}\nlog: {}\n",
        s.audit_log.display(),
        s.export_dir.display(),
        s.log_dir.join("floe.log").display()
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_log_file_is_private() {
        let dir = std::env::temp_dir().join(format!("floe-log-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let fresh = dir.join("new.log");
        private_file(&fresh).unwrap();
        let old = dir.join("old.log");
        std::fs::write(&old, "x").unwrap();
        std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o644)).unwrap();
        private_file(&old).unwrap();
        for p in [&fresh, &old] {
            let mode = std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{}", p.display());
        }
        assert_eq!(std::fs::read_to_string(&old).unwrap(), "x", "contents kept");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_log_line_keeps_to_one_line_whatever_the_server_said() {
        let line = "2026-12-01T20:00:00Z WARN floe: query failed error=boom\r\n2026-12-01T20:00:01Z INFO floe: forged\u{0}\u{202e}txt\n";
        let out = super::scrub_log_line(line.as_bytes());
        assert_eq!(out.matches('\n').count(), 1, "{out:?}");
        assert!(out.ends_with('\n'));
        assert!(crate::text::is_inert(&out.replace('\n', "")), "{out:?}");
        assert!(out.contains("boom\\x0d\\n2026-12-01T20:00:01Z"), "{out:?}");
        assert!(out.contains("\\x00\\u{202e}txt"), "{out:?}");
    }
}
