//! Project tasks: `cargo xtask lab up|down|status`, `cargo xtask test`, `cargo xtask demo`,
//! `cargo xtask bench`, `cargo xtask fuzz`, `cargo xtask dist`, `cargo xtask package-check`.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

use background::{Background, TestBuild};

mod background;
mod dist;
mod elf;
mod fuzz;
mod matrix;
mod package;
mod rpm;
mod tools;

use dist::dist;
use fuzz::fuzz;
use package::package_check;

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace")
        .to_path_buf()
}

pub fn lab_dir() -> PathBuf {
    std::env::var_os("FLOE_LAB_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join(".lab"))
}

pub fn cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("FLOE_CACHE_DIR") {
        return PathBuf::from(d);
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache")
        });
    base.join("floe")
}

const USAGE: &str = "usage: cargo xtask <task>

  lab up [--trino 476|483|476,483] [--scale] [--airflow2] [--no-airflow] [--full]
                 start the lab (Trino-protocol server over an Iceberg warehouse, Airflow)
  lab down       stop every process the lab started
  lab status     show what runs
  test [--keep-lab] [--trino 476,483] [--fuzz|--no-fuzz] [-- CARGO_TEST_ARGS]
                 the whole suite: the lab's own tests that read what floe's tests
                 write, then floe's unit, snapshot and integration tests against the
                 lab (brought up and down as needed) with the lab's other tests beside,
                 the integration tests on the first real Trino of --trino (default both,
                 476 first), then the version-sensitive subjects on each other one,
                 then a 20 s smoke of every fuzz target: under CI, with --fuzz, or once
                 the fuzz build is cached (a first build is the nightly toolchain,
                 cargo-fuzz and ~5-8 min of release builds; --no-fuzz skips it always)
  demo [--keep-lab] [--all]
                 bring the lab up and open floe on the seed incident; --all opens
                 floe --all over the lab's two clusters (the real Trino with Airflow 3,
                 the second cluster with Airflow 2)
  bench [-- CRITERION_ARGS]
                 benchmarks (the scale scenario is brought up for the Trino ones)
  fuzz [SECS] [TARGET...]
                 run every fuzz target (or the ones named) SECS seconds each (default 60)
                 with cargo-fuzz on the nightly toolchain, both installed when missing;
                 fails when a target crashes, times out or runs out of memory
  dist [--out DIR]
                 the release for glibc 2.17 and later (cargo-zigbuild; zig, cargo-zigbuild,
                 cargo-deb and cargo-generate-rpm installed into the cache when missing):
                 the binary checked (size, symbol versions, libraries, --version), then
                 floe-<version>-<target>.tar.gz, the .deb, the .rpm and SHA256SUMS in DIR
                 (default <target dir>/packages)
  package-check [--dir DIR]
                 as root, with the lab up: install the .deb from DIR (dpkg -i), run the
                 installed floe --version, man floe, its bash completion and floe doctor
                 against the lab, then remove it (dpkg -r) and check nothing is left";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("lab") => lab(&args[1..]).map(|_| ()),
        Some("test") => test(&args[1..]),
        Some("demo") => demo(&args[1..]),
        Some("bench") => bench(&args[1..]),
        Some("fuzz") => fuzz(&args[1..]),
        Some("dist") => dist(&args[1..]),
        Some("package-check") => package_check(&args[1..]),
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e}");
            ExitCode::FAILURE
        }
    }
}

fn labctl(args: &[String]) -> Result<(), String> {
    let status = Command::new("python3")
        .arg(root().join("tests/lab/labctl.py"))
        .args(args)
        .current_dir(root())
        .status()
        .map_err(|e| format!("cannot run python3 (needed for the lab): {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("labctl {} failed ({status})", args.join(" ")))
    }
}

fn lab(args: &[String]) -> Result<bool, String> {
    match args.first().map(String::as_str) {
        Some("up" | "down" | "status") => {
            labctl(args)?;
            Ok(true)
        }
        _ => Err(format!("unknown lab command {:?}\n{USAGE}", args.first())),
    }
}

pub fn lab_json() -> Result<serde_json::Value, String> {
    let p = lab_dir().join("lab.json");
    let text = std::fs::read_to_string(&p)
        .map_err(|e| format!("{}: {e} (is the lab up?)", p.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", p.display()))
}

fn lab_running() -> bool {
    lab_dir().join("lab.json").exists()
}

/// The lab's Python venv (built by labctl from the pinned lock, keyed by its hash).
fn lab_python() -> Result<PathBuf, String> {
    if let Ok(j) = lab_json()
        && let Some(v) = j.get("venv").and_then(|v| v.as_str())
    {
        return Ok(PathBuf::from(v).join("bin/python"));
    }
    let lock = root().join("tests/lab/requirements.lock");
    let out = Command::new("sha256sum")
        .arg(&lock)
        .output()
        .map_err(|e| format!("sha256sum {}: {e}", lock.display()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let hash = text.split_whitespace().next().unwrap_or("");
    if hash.len() < 12 {
        return Err(format!("cannot hash {}", lock.display()));
    }
    Ok(cache_dir()
        .join("venvs")
        .join(format!("lab-{}", &hash[..12]))
        .join("bin/python"))
}

pub fn run(cmd: &mut Command, what: &str) -> Result<(), String> {
    let t = Instant::now();
    eprintln!("xtask: {what}");
    let status = cmd.status().map_err(|e| format!("{what}: {e}"))?;
    eprintln!(
        "xtask: {what}: {} in {:.0}s",
        if status.success() { "ok" } else { "FAILED" },
        t.elapsed().as_secs_f64()
    );
    if status.success() {
        Ok(())
    } else {
        Err(format!("{what} failed ({status})"))
    }
}

/// The real Trino releases `cargo xtask test` runs on by default: the first is the lab's
/// primary (every subject), the others run [`MATRIX_SUBJECTS`].
const TEST_TRINOS: &str = "476,483";

/// The integration subjects whose outcome depends on the real Trino's release and that
/// read no other server of the lab's (the fault proxy and the Airflow DAGs follow the
/// primary): run again on every other release the lab runs (`FLOE_LAB_TRINO`). Measured
/// on 483 beside another lab: servers 200 s; staleness, wrong_target and bounded_reads
/// together 99 s (bounded_reads passes there too, and is left to the primary).
pub const MATRIX_SUBJECTS: &[&str] = &["servers::", "trino_tls::", "staleness::", "wrong_target::"];

/// The integration subjects that mostly wait (on Airflow's runs, Prometheus' evaluations, a
/// refresh period, a timeout) and share no DAG, user or file with the others: they run one
/// after the other beside the rest of the suite, which skips them. In the suite's name
/// order two of them at once left a core idle, and they were its tail. Airflow 3's story
/// stays in the suite's order: its DAG run's writes to Airflow 3's SQLite database held
/// the worker-side connection tests (early in the suite) past their 30 s busy timeout.
pub const WAITING_SUBJECTS: &[&str] = &[
    "loop_lab::airflow_2_from_the_first_screen_to_the_verified_fix",
    "serve::an_idle_exporter_costs_the_coordinator_what_an_idle_tui_costs",
    "serve::a_real_prometheus_alerts_on_the_seed_and_the_alerts_end_after_the_fix",
    "tui_faults::config_hung_password_command_times_out_naming_the_key",
    "dag_watch::a_run_airflow_answers_404_about_is_not_polled_again",
];

/// The value of `--name VALUE` among `args` (before any `--`).
fn flag_value(args: &[String], name: &str) -> Option<String> {
    let args: Vec<&String> = args.iter().take_while(|a| *a != "--").collect();
    args.iter()
        .position(|a| *a == name)
        .and_then(|i| args.get(i + 1).map(|v| v.to_string()))
}

fn test(args: &[String]) -> Result<(), String> {
    let keep = args.iter().any(|a| a == "--keep-lab");
    let trinos = flag_value(args, "--trino").unwrap_or_else(|| TEST_TRINOS.to_string());
    let others: Vec<String> = trinos
        .split(',')
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .skip(1)
        .map(str::to_string)
        .collect();
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    let no_fuzz = args.iter().any(|a| a == "--no-fuzz");
    let with_fuzz = !no_fuzz && (ci || args.iter().any(|a| a == "--fuzz") || fuzz::fuzz_built());
    let cargo_args: Vec<String> = args
        .iter()
        .skip_while(|a| *a != "--")
        .skip(1)
        .cloned()
        .collect();
    let started_here = !lab_running();
    // The test build needs no lab: it runs while the lab comes up and pytest runs (on a
    // new machine the lab's first start is mostly downloads and waiting for servers).
    let mut build = TestBuild::start(&cargo_args);
    if let Err(e) = labctl(&[
        "up".into(),
        "--airflow2".into(),
        "--trino".into(),
        trinos.clone(),
    ]) {
        drop(build);
        return Err(e);
    }
    let result = (|| {
        let mut failures = Vec::new();
        let py = lab_python()?;
        let pytest = |marker: &str| {
            let mut cmd = Command::new(&py);
            cmd.args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", marker])
                .arg("tests/lab/tests")
                .current_dir(root())
                .env("FLOE_LAB_DIR", lab_dir());
            cmd
        };
        // The lab's tests that read what floe's tests write, before them: beside the end of
        // the test build and the version-sensitive subjects on the other real Trinos (those
        // read and write only their own coordinator), since alone they left a core idle
        // (1.04 of the 2 busy, on a new machine).
        let before = Background::start(
            &mut pytest("not beside_suite"),
            "the lab's own tests that read what floe's tests write (pytest -m 'not beside_suite')",
            "pytest-before",
        );
        // A failed build is reported by the `cargo test` below, which builds again.
        build.wait();
        // The version-sensitive subjects on each other real Trino of the lab, beside.
        let matrix = matrix::Matrix::start(&others);
        // The subjects that mostly wait, beside, when the whole suite runs.
        let waiting = cargo_args.is_empty().then(matrix::waiting);
        if let Err(e) = before.and_then(Background::wait) {
            failures.push(e);
        }
        // The lab's tests that read and write only what they make themselves run beside
        // floe's tests (they wait on their servers more than they compute: 0.6 of a core).
        let beside = Background::start(
            &mut pytest("beside_suite"),
            "the lab's own tests that run beside floe's (pytest -m beside_suite)",
            "pytest-beside",
        );
        if let Err(e) = run(
            Command::new(env!("CARGO"))
                // Every test binary runs even when one fails: one run names every failure.
                .args(["test", "--workspace", "--all-targets", "--no-fail-fast"])
                .args(&cargo_args)
                // Skipped only where they run beside: a run that did not start leaves them here.
                .args(waiting.iter().filter(|w| w.is_ok()).flat_map(|_| {
                    std::iter::once("--").chain(WAITING_SUBJECTS.iter().flat_map(|n| ["--skip", n]))
                }))
                .current_dir(root())
                .env("FLOE_LAB_DIR", lab_dir())
                .env("CI", std::env::var("CI").unwrap_or_else(|_| "true".into())),
            "floe's tests (cargo test)",
        ) {
            failures.push(e);
        }
        match matrix {
            Ok(m) => failures.extend(m.wait()),
            Err(e) => failures.push(format!("the version-sensitive subjects: {e}")),
        }
        if let Some(Err(e)) = waiting.map(|w| w.and_then(Background::wait)) {
            failures.push(e);
        }
        if let Err(e) = beside.and_then(Background::wait) {
            failures.push(e);
        }
        if let Err(e) = run(
            Command::new(env!("CARGO"))
                .args(["test", "--workspace", "--doc"])
                .current_dir(root()),
            "doc tests",
        ) {
            failures.push(e);
        }
        if with_fuzz {
            if let Err(e) = fuzz(&["20".to_string()]) {
                failures.push(format!("fuzz smoke: {e}"));
            }
        } else if !no_fuzz {
            eprintln!(
                "xtask: the fuzz smoke is not run: its build is not cached yet (cargo xtask test --fuzz builds it once, ~8 min; CI always runs it)"
            );
        }
        if failures.is_empty() {
            Ok(())
        } else {
            Err(failures.join("; "))
        }
    })();
    if started_here && !keep {
        let _ = labctl(&["down".into()]);
    }
    result
}

fn demo(args: &[String]) -> Result<(), String> {
    let keep = args.iter().any(|a| a == "--keep-lab");
    let all = args.iter().any(|a| a == "--all");
    let started_here = !lab_running();
    let mut up = vec!["up".to_string()];
    if all {
        up.push("--airflow2".into());
    }
    labctl(&up)?;
    let result = (|| {
        let j = lab_json()?;
        let config = if all {
            write_fleet_config(&j)?
        } else {
            write_demo_config(&j)?
        };
        run(
            Command::new(env!("CARGO"))
                .args(["build", "--quiet", "--bin", "floe"])
                .current_dir(root()),
            "building floe",
        )?;
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| root().join("target"));
        let bin = target.join("debug/floe");
        let password = |key: &str| j[key]["password"].as_str().unwrap_or("admin").to_string();
        // The incident's dashboard keeps refreshing while the demo runs, so its query's next
        // run after a compaction shows the gain (`labctl dashboard`; the lab ran it at start).
        let dashboard = start_dashboard()?;
        let status = Command::new(&bin)
            .arg("--config")
            .arg(&config)
            .env("FLOE_LAB_AIRFLOW_PASSWORD", password("airflow"))
            .env("FLOE_LAB_AIRFLOW2_PASSWORD", password("airflow2"))
            .env("XDG_STATE_HOME", lab_dir().join("state"))
            .env("XDG_DATA_HOME", lab_dir().join("data"))
            .stdin(Stdio::inherit())
            .stdout(Stdio::inherit())
            .stderr(Stdio::inherit())
            .status()
            .map_err(|e| format!("{}: {e}", bin.display()));
        stop_dashboard(dashboard);
        let status = status?;
        if status.success() {
            Ok(())
        } else {
            Err(format!("floe exited with {status}"))
        }
    })();
    if started_here && !keep {
        let _ = labctl(&["down".into()]);
    } else {
        eprintln!("xtask: the lab keeps running; `cargo xtask lab down` stops it");
    }
    result
}

/// How often the demo's dashboard runs its query.
const DASHBOARD_EVERY_S: &str = "60";

/// `labctl dashboard --every 60` in the background, its lines in the lab's log dir (the
/// terminal is floe's).
fn start_dashboard() -> Result<std::process::Child, String> {
    let log_path = lab_dir().join("logs/dashboard.log");
    let log =
        std::fs::File::create(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
    let err = log
        .try_clone()
        .map_err(|e| format!("{}: {e}", log_path.display()))?;
    Command::new("python3")
        .arg(root().join("tests/lab/labctl.py"))
        .args(["dashboard", "--every", DASHBOARD_EVERY_S])
        .current_dir(root())
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(err)
        .spawn()
        .map_err(|e| format!("cannot run python3 (the lab's dashboard): {e}"))
}

/// Stops the dashboard started for the demo (SIGTERM to its PID, then waits for it).
fn stop_dashboard(mut child: std::process::Child) {
    let pid = child.id().to_string();
    let stopped = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .is_ok_and(|s| s.success());
    if !stopped {
        let _ = child.kill();
    }
    let _ = child.wait();
}

fn toml_str(s: &str) -> String {
    serde_json::to_string(s).expect("strings serialize")
}

/// A config file for the lab: its Trino, its Airflow, and the table→DAG mapping of the
/// incident (the other DAGs are matched by their tags and shown as guessed).
pub fn write_demo_config(j: &serde_json::Value) -> Result<PathBuf, String> {
    let text = format!(
        "# Written by `cargo xtask demo` for the local lab.\n{}",
        cluster_config(j, "trino", "airflow", "FLOE_LAB_AIRFLOW_PASSWORD", "")?
    );
    let path = lab_dir().join("demo.toml");
    std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

/// `cargo xtask demo --all`: every cluster of the lab at once — `lab` (the real Trino and
/// Airflow 3) and `second` (the second cluster, with Airflow 2 when the lab runs it).
fn write_fleet_config(j: &serde_json::Value) -> Result<PathBuf, String> {
    if j["second"].is_null() {
        return Err("the running lab has no second cluster (it was started with --no-second): `cargo xtask lab down` first".into());
    }
    let text = format!(
        "# Written by `cargo xtask demo --all` for the local lab.\nall = true\n{}{}",
        cluster_config(
            j,
            "trino",
            "airflow",
            "FLOE_LAB_AIRFLOW_PASSWORD",
            "profiles.lab."
        )?,
        cluster_config(
            j,
            "second",
            "airflow2",
            "FLOE_LAB_AIRFLOW2_PASSWORD",
            "profiles.second."
        )?,
    );
    let path = lab_dir().join("demo-all.toml");
    std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

/// One cluster's tables: `[{prefix}trino]` from lab.json's `trino_key`, `[{prefix}airflow]`
/// from `airflow_key` when that Airflow runs, and the incident's mapping.
fn cluster_config(
    j: &serde_json::Value,
    trino_key: &str,
    airflow_key: &str,
    password_env: &str,
    prefix: &str,
) -> Result<String, String> {
    let t = &j[trino_key];
    let url = t["url"]
        .as_str()
        .ok_or_else(|| format!("lab.json has no {trino_key}.url"))?;
    // The Iceberg catalog, and the Delta Lake one where this Trino serves it: one Triage
    // over both formats.
    let mut catalog = t["catalog"].as_str().unwrap_or("iceberg").to_string();
    if let Some(delta) = t["delta"]["catalog"].as_str() {
        catalog = format!("{catalog},{delta}");
    }
    let mut text = format!(
        "\n[{prefix}trino]\nurl = {}\nuser = {}\ncatalog = {}\n",
        toml_str(url),
        toml_str(t["user"].as_str().unwrap_or("floe")),
        toml_str(&catalog),
    );
    if let Some(a) = j.get(airflow_key).filter(|a| !a.is_null()) {
        text.push_str(&format!(
            "\n[{prefix}airflow]\nurl = {}\nuser = {}\npassword_env = {}\n",
            toml_str(a["url"].as_str().unwrap_or("")),
            toml_str(a["user"].as_str().unwrap_or("admin")),
            toml_str(password_env),
        ));
        text.push_str(&format!(
            "\n[[{prefix}maintenance]]\ntable = \"iceberg.zoning.documents\"\ndag_id = \"compact_documents\"\n"
        ));
    }
    Ok(text)
}

fn bench(args: &[String]) -> Result<(), String> {
    let extra: Vec<String> = args
        .iter()
        .skip_while(|a| *a != "--")
        .skip(1)
        .cloned()
        .collect();
    let started_here = !lab_running();
    labctl(&["up".into(), "--scale".into(), "--no-airflow".into()])?;
    let scale = lab_json().map(|j| !j["scale"].is_null()).unwrap_or(false);
    let mut benches = vec!["bench", "--bench", "floe", "--bench", "memory"];
    if scale {
        benches.extend(["--bench", "lab", "--bench", "fleet"]);
    } else {
        eprintln!(
            "xtask: the running lab has no scale scenario (`cargo xtask lab down`, then bench again): skipping the lab benchmarks"
        );
    }
    let result = run(
        Command::new(env!("CARGO"))
            .args(&benches)
            .args(if extra.is_empty() {
                vec![]
            } else {
                std::iter::once("--".to_string()).chain(extra).collect()
            })
            .current_dir(root())
            .env("FLOE_LAB_DIR", lab_dir()),
        "benchmarks",
    );
    if started_here {
        let _ = labctl(&["down".into()]);
    }
    result
}
