//! Project tasks: `cargo xtask lab up|down|status`, `cargo xtask test`, `cargo xtask demo`,
//! `cargo xtask bench`, `cargo xtask fuzz`, `cargo xtask dist`.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace")
        .to_path_buf()
}

fn lab_dir() -> PathBuf {
    std::env::var_os("FLOE_LAB_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join(".lab"))
}

fn cache_dir() -> PathBuf {
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

  lab up [--scale] [--airflow2] [--no-airflow] [--full]
                 start the lab (Trino-protocol server over an Iceberg warehouse, Airflow)
  lab down       stop every process the lab started
  lab status     show what runs
  test [--keep-lab] [--no-fuzz] [-- CARGO_TEST_ARGS]
                 the whole suite: the lab's own tests, then floe's unit, snapshot and
                 integration tests against the lab (brought up and down as needed),
                 then a 20 s smoke of every fuzz target (--no-fuzz skips it)
  demo [--keep-lab]
                 bring the lab up and open floe on the seed incident
  bench [-- CRITERION_ARGS]
                 benchmarks (the scale scenario is brought up for the Trino ones)
  fuzz [SECS] [TARGET...]
                 run every fuzz target (or the ones named) SECS seconds each (default 60)
                 with cargo-fuzz on the nightly toolchain, both installed when missing;
                 fails when a target crashes, times out or runs out of memory
  dist [--out DIR]
                 the release artifact: floe-<version>-<target>.tar.gz (binary built with
                 the dist profile, completions, man page, example config, README, LICENSE)
                 and its .sha256, in DIR (default <target dir>/packages)";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("lab") => lab(&args[1..]).map(|_| ()),
        Some("test") => test(&args[1..]),
        Some("demo") => demo(&args[1..]),
        Some("bench") => bench(&args[1..]),
        Some("fuzz") => fuzz(&args[1..]),
        Some("dist") => dist(&args[1..]),
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

fn lab_json() -> Result<serde_json::Value, String> {
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

fn run(cmd: &mut Command, what: &str) -> Result<(), String> {
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

fn test(args: &[String]) -> Result<(), String> {
    let keep = args.iter().any(|a| a == "--keep-lab");
    let no_fuzz = args.iter().any(|a| a == "--no-fuzz");
    let cargo_args: Vec<String> = args
        .iter()
        .skip_while(|a| *a != "--")
        .skip(1)
        .cloned()
        .collect();
    let started_here = !lab_running();
    labctl(&["up".into(), "--airflow2".into()])?;
    let result = (|| {
        let mut failures = Vec::new();
        let py = lab_python()?;
        if let Err(e) = run(
            Command::new(&py)
                .args([
                    "-m",
                    "pytest",
                    "-q",
                    "-p",
                    "no:cacheprovider",
                    "tests/lab/tests",
                ])
                .current_dir(root())
                .env("FLOE_LAB_DIR", lab_dir()),
            "the lab's own tests (pytest)",
        ) {
            failures.push(e);
        }
        if let Err(e) = run(
            Command::new(env!("CARGO"))
                // Every test binary runs even when one fails: one run names every failure.
                .args(["test", "--workspace", "--all-targets", "--no-fail-fast"])
                .args(&cargo_args)
                .current_dir(root())
                .env("FLOE_LAB_DIR", lab_dir())
                .env("CI", std::env::var("CI").unwrap_or_else(|_| "true".into())),
            "floe's tests (cargo test)",
        ) {
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
        if !no_fuzz && let Err(e) = fuzz(&["20".to_string()]) {
            failures.push(format!("fuzz smoke: {e}"));
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
    let started_here = !lab_running();
    labctl(&["up".into()])?;
    let result = (|| {
        let j = lab_json()?;
        let config = write_demo_config(&j)?;
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
        let airflow_password = j["airflow"]["password"]
            .as_str()
            .unwrap_or("admin")
            .to_string();
        let status = Command::new(&bin)
            .arg("--config")
            .arg(&config)
            .env("FLOE_LAB_AIRFLOW_PASSWORD", airflow_password)
            .env("XDG_STATE_HOME", lab_dir().join("state"))
            .env("XDG_DATA_HOME", lab_dir().join("data"))
            .stdin(Stdio::inherit())
            .stdout(Stdio::inherit())
            .stderr(Stdio::inherit())
            .status()
            .map_err(|e| format!("{}: {e}", bin.display()))?;
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

fn toml_str(s: &str) -> String {
    serde_json::to_string(s).expect("strings serialize")
}

/// A config file for the lab: its Trino, its Airflow, and the table→DAG mapping of the
/// incident (the other DAGs are matched by their tags and shown as guessed).
fn write_demo_config(j: &serde_json::Value) -> Result<PathBuf, String> {
    let t = &j["trino"];
    let url = t["url"].as_str().ok_or("lab.json has no trino.url")?;
    let mut text = format!(
        "# Written by `cargo xtask demo` for the local lab.\n[trino]\nurl = {}\nuser = {}\ncatalog = {}\n",
        toml_str(url),
        toml_str(t["user"].as_str().unwrap_or("floe")),
        toml_str(t["catalog"].as_str().unwrap_or("iceberg")),
    );
    if let Some(a) = j.get("airflow").filter(|a| !a.is_null()) {
        text.push_str(&format!(
            "\n[airflow]\nurl = {}\nuser = {}\npassword_env = \"FLOE_LAB_AIRFLOW_PASSWORD\"\n",
            toml_str(a["url"].as_str().unwrap_or("")),
            toml_str(a["user"].as_str().unwrap_or("admin")),
        ));
        text.push_str("\n[[maintenance]]\ntable = \"iceberg.zoning.documents\"\ndag_id = \"compact_documents\"\n");
    }
    let path = lab_dir().join("demo.toml");
    std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
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

/// The toolchain the fuzz targets build with (`FLOE_FUZZ_TOOLCHAIN` overrides it).
fn fuzz_toolchain() -> String {
    std::env::var("FLOE_FUZZ_TOOLCHAIN").unwrap_or_else(|_| "nightly".into())
}

/// `cargo` through rustup's proxy (the `+toolchain` selector needs it), not the cargo that
/// runs xtask.
fn rustup_cargo(toolchain: &str) -> Command {
    let mut c = Command::new("cargo");
    c.arg(format!("+{toolchain}"))
        .env_remove("RUSTUP_TOOLCHAIN")
        .env_remove("RUSTC")
        .env_remove("RUSTDOC")
        .env_remove("CARGO");
    c
}

/// The nightly toolchain and cargo-fuzz, installed when missing.
fn fuzz_prerequisites(toolchain: &str) -> Result<(), String> {
    let have_toolchain = Command::new("rustup")
        .args(["run", toolchain, "rustc", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !have_toolchain {
        run(
            Command::new("rustup").args([
                "toolchain",
                "install",
                toolchain,
                "--profile",
                "minimal",
            ]),
            &format!("installing the {toolchain} toolchain"),
        )?;
    }
    let have_fuzz = rustup_cargo(toolchain)
        .args(["fuzz", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !have_fuzz {
        run(
            Command::new(env!("CARGO")).args(["install", "cargo-fuzz", "--locked"]),
            "installing cargo-fuzz",
        )?;
    }
    Ok(())
}

/// The targets declared in fuzz/Cargo.toml (`[[bin]] name = "…"`).
fn fuzz_targets() -> Result<Vec<String>, String> {
    let manifest = root().join("fuzz/Cargo.toml");
    let text =
        std::fs::read_to_string(&manifest).map_err(|e| format!("{}: {e}", manifest.display()))?;
    let mut in_bin = false;
    let mut targets = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            in_bin = line == "[[bin]]";
        } else if in_bin
            && let Some(v) = line.strip_prefix("name").map(str::trim_start)
            && let Some(v) = v.strip_prefix('=')
        {
            targets.push(v.trim().trim_matches('"').to_string());
        }
    }
    Ok(targets)
}

/// The last libFuzzer status line (`#N DONE cov: … exec/s: …`) of a run's output.
fn fuzz_summary(log: &str) -> String {
    log.lines()
        .rev()
        .find(|l| l.starts_with('#') && l.contains("cov:"))
        .unwrap_or("(no libFuzzer status line)")
        .to_string()
}

/// `cargo xtask fuzz [SECS] [TARGET...]`: build the targets once, then run each for SECS
/// seconds from its seed corpus (fuzz/corpus/<target>, read only) and a working corpus kept
/// in the cache. A crash, a timeout (10 s for one input) or 2 GB of memory fails the task;
/// the input is left under fuzz/artifacts/<target>/.
fn fuzz(args: &[String]) -> Result<(), String> {
    let (secs, names): (u64, &[String]) = match args.first().map(|a| a.parse::<u64>()) {
        Some(Ok(n)) => (n, &args[1..]),
        _ => (60, args),
    };
    let all = fuzz_targets()?;
    let targets: Vec<String> = if names.is_empty() {
        all
    } else {
        for n in names {
            if !all.contains(n) {
                return Err(format!(
                    "no fuzz target {n:?} (targets: {})",
                    all.join(", ")
                ));
            }
        }
        names.to_vec()
    };
    let toolchain = fuzz_toolchain();
    fuzz_prerequisites(&toolchain)?;
    let work = std::env::var_os("FLOE_FUZZ_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| cache_dir().join("fuzz"));
    let target_dir = std::env::var_os("FLOE_FUZZ_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| work.join("target"));
    // Release with debug assertions (overflow checks on); no sanitizer: the library is safe
    // Rust, and an uninstrumented build runs about twice as many inputs.
    let flags = ["--sanitizer", "none", "--debug-assertions"];
    run(
        rustup_cargo(&toolchain)
            .args(["fuzz", "build"])
            .args(flags)
            .arg("--target-dir")
            .arg(&target_dir)
            .current_dir(root()),
        "building the fuzz targets",
    )?;
    let mut failures = Vec::new();
    for t in &targets {
        let corpus = work.join("corpus").join(t);
        let logs = work.join("logs");
        std::fs::create_dir_all(&corpus).map_err(|e| format!("{}: {e}", corpus.display()))?;
        std::fs::create_dir_all(&logs).map_err(|e| format!("{}: {e}", logs.display()))?;
        let log_path = logs.join(format!("{t}.log"));
        let log =
            std::fs::File::create(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
        let started = Instant::now();
        eprintln!("xtask: fuzzing {t} for {secs}s");
        let status = rustup_cargo(&toolchain)
            .args(["fuzz", "run"])
            .args(flags)
            .arg("--target-dir")
            .arg(&target_dir)
            .arg(t)
            .arg(&corpus)
            .arg(root().join("fuzz/corpus").join(t))
            .arg("--")
            .arg(format!("-max_total_time={secs}"))
            .args(["-rss_limit_mb=2048", "-timeout=10", "-print_final_stats=1"])
            .current_dir(root())
            .stdout(log.try_clone().map_err(|e| e.to_string())?)
            .stderr(log)
            .status()
            .map_err(|e| format!("cargo fuzz run {t}: {e}"))?;
        let text = std::fs::read_to_string(&log_path).unwrap_or_default();
        let execs = text
            .lines()
            .find_map(|l| l.strip_prefix("stat::number_of_executed_units:"))
            .map(str::trim)
            .unwrap_or("?");
        eprintln!(
            "xtask: {t}: {} after {:.0}s, {execs} inputs: {}",
            if status.success() { "clean" } else { "FAILED" },
            started.elapsed().as_secs_f64(),
            fuzz_summary(&text)
        );
        if !status.success() {
            let tail: Vec<&str> = text.lines().rev().take(40).collect();
            for l in tail.into_iter().rev() {
                eprintln!("    {l}");
            }
            eprintln!("xtask: the whole output is in {}", log_path.display());
            failures.push(t.clone());
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(format!("fuzz targets failed: {}", failures.join(", ")))
    }
}

/// `cargo xtask dist`: build with `[profile.dist]`, then pack the binary with what an
/// operator installs beside it, and write the archive's SHA-256.
fn dist(args: &[String]) -> Result<(), String> {
    let out_dir = match args.iter().position(|a| a == "--out") {
        Some(i) => PathBuf::from(args.get(i + 1).ok_or("--out needs a directory")?),
        None => target_dir().join("packages"),
    };
    run(
        Command::new(env!("CARGO"))
            .args(["build", "--profile", "dist", "--locked", "--bin", "floe"])
            .current_dir(root()),
        "building floe (profile dist)",
    )?;
    let bin = target_dir().join("dist/floe");
    let version = package_version()?;
    let target = host_target()?;
    let name = format!("floe-{version}-{target}");
    let stage_root = target_dir().join("dist-stage");
    let stage = stage_root.join(&name);
    let _ = std::fs::remove_dir_all(&stage_root);
    for d in ["", "completions", "man", "assets"] {
        std::fs::create_dir_all(stage.join(d)).map_err(|e| format!("{}: {e}", stage.display()))?;
    }
    let copy = |from: &Path, to: &Path| {
        std::fs::copy(from, to)
            .map(|_| ())
            .map_err(|e| format!("copy {} to {}: {e}", from.display(), to.display()))
    };
    copy(&bin, &stage.join("floe"))?;
    for f in [
        "config.example.toml",
        "README.md",
        "LICENSE",
        "assets/config.schema.json",
    ] {
        copy(&root().join(f), &stage.join(f))?;
    }
    // What the binary itself generates: it is the one being shipped.
    let generated: [(&[&str], &str); 6] = [
        (&["completions", "bash"], "completions/floe.bash"),
        (&["completions", "zsh"], "completions/_floe"),
        (&["completions", "fish"], "completions/floe.fish"),
        (&["completions", "elvish"], "completions/floe.elv"),
        (&["completions", "powershell"], "completions/_floe.ps1"),
        (&["man"], "man/floe.1"),
    ];
    for (args, file) in generated {
        let out = Command::new(&bin)
            .args(args)
            .output()
            .map_err(|e| format!("{}: {e}", bin.display()))?;
        if !out.status.success() {
            return Err(format!("floe {} failed ({})", args.join(" "), out.status));
        }
        std::fs::write(stage.join(file), &out.stdout).map_err(|e| format!("{file}: {e}"))?;
    }
    let v = Command::new(stage.join("floe"))
        .arg("--version")
        .output()
        .map_err(|e| format!("floe --version: {e}"))?;
    let v = String::from_utf8_lossy(&v.stdout).trim().to_string();
    if !v.starts_with(&format!("floe {version} (")) {
        return Err(format!("floe --version says {v:?}"));
    }
    std::fs::create_dir_all(&out_dir).map_err(|e| format!("{}: {e}", out_dir.display()))?;
    let archive = out_dir.join(format!("{name}.tar.gz"));
    let mut tar = Command::new("tar");
    tar.args(["--sort=name", "--owner=0", "--group=0", "--numeric-owner"]);
    if let Ok(epoch) = std::env::var("SOURCE_DATE_EPOCH") {
        tar.arg(format!("--mtime=@{epoch}"));
    }
    tar.arg("-czf")
        .arg(&archive)
        .arg("-C")
        .arg(&stage_root)
        .arg(&name);
    run(&mut tar, &format!("packing {}", archive.display()))?;
    let sum = Command::new("sha256sum")
        .arg(format!("{name}.tar.gz"))
        .current_dir(&out_dir)
        .output()
        .map_err(|e| format!("sha256sum: {e}"))?;
    if !sum.status.success() {
        return Err(format!("sha256sum failed ({})", sum.status));
    }
    let sum_file = out_dir.join(format!("{name}.tar.gz.sha256"));
    std::fs::write(&sum_file, &sum.stdout).map_err(|e| format!("{}: {e}", sum_file.display()))?;
    let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    eprintln!(
        "xtask: {v}\nxtask: binary {} bytes, archive {} bytes\n{}\n{}",
        size(&bin),
        size(&archive),
        archive.display(),
        sum_file.display()
    );
    Ok(())
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target"))
}

/// `version` of `[package]` in the root Cargo.toml.
fn package_version() -> Result<String, String> {
    let text = std::fs::read_to_string(root().join("Cargo.toml"))
        .map_err(|e| format!("Cargo.toml: {e}"))?;
    let mut in_package = false;
    for line in text.lines() {
        let l = line.trim();
        if l.starts_with('[') {
            in_package = l == "[package]";
        } else if in_package
            && let Some(v) = l.strip_prefix("version")
            && let Some(v) = v.trim_start().strip_prefix('=')
        {
            return Ok(v.trim().trim_matches('"').to_string());
        }
    }
    Err("no version in [package] of Cargo.toml".into())
}

/// The host's target triple, from `rustc -vV`.
fn host_target() -> Result<String, String> {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = Command::new(rustc)
        .arg("-vV")
        .output()
        .map_err(|e| format!("rustc -vV: {e}"))?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_string))
        .ok_or_else(|| "rustc -vV names no host".into())
}
