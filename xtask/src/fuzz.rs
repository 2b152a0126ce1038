//! `cargo xtask fuzz`: the fuzz targets of `fuzz/`, on the nightly toolchain with
//! cargo-fuzz (both installed when missing).

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::{cache_dir, root, run};

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

/// Where the fuzz builds and corpora live (kept in the cache between runs).
fn fuzz_dirs() -> (PathBuf, PathBuf) {
    let work = std::env::var_os("FLOE_FUZZ_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| cache_dir().join("fuzz"));
    let target_dir = std::env::var_os("FLOE_FUZZ_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| work.join("target"));
    (work, target_dir)
}

/// Whether every fuzz target is already built in the cache: then a smoke run costs its
/// seconds, not the nightly install and the ~5-8 min release build of a first run.
pub fn fuzz_built() -> bool {
    let (_, target_dir) = fuzz_dirs();
    let Ok(targets) = fuzz_targets() else {
        return false;
    };
    let bin = target_dir.join("x86_64-unknown-linux-gnu/release");
    !targets.is_empty() && targets.iter().all(|t| bin.join(t).is_file())
}

/// `cargo xtask fuzz [SECS] [TARGET...]`: build the targets once, then run each for SECS
/// seconds from its seed corpus (fuzz/corpus/<target>, read only) and a working corpus kept
/// in the cache. A crash, a timeout (10 s for one input) or 2 GB of memory fails the task;
/// the input is left under fuzz/artifacts/<target>/.
pub fn fuzz(args: &[String]) -> Result<(), String> {
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
    let (work, target_dir) = fuzz_dirs();
    // Release with debug assertions (overflow checks on); no sanitizer: the library is safe
    // Rust, and an uninstrumented build runs about twice as many inputs. Not `--dev`: on
    // 2 cores a cold dev build takes 137 s against 280 s, but runs ~22x fewer inputs
    // (trino_page: 42 k against 951 k in 20 s), and the target dir is kept in the cache, so
    // the build is paid once and the inputs on every run.
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
    let bin_dir = target_dir.join("x86_64-unknown-linux-gnu/release");
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
        // The binary the build above made, run as `cargo fuzz run` would run it: that
        // command builds the target again first, twice over for the first target after a
        // change (about 3.5 min of release builds on 2 cores for nothing).
        let artifacts = root().join("fuzz/artifacts").join(t);
        std::fs::create_dir_all(&artifacts).map_err(|e| format!("{}: {e}", artifacts.display()))?;
        let status = Command::new(bin_dir.join(t))
            .arg(format!("-artifact_prefix={}/", artifacts.display()))
            .arg(format!("-max_total_time={secs}"))
            .args(["-rss_limit_mb=2048", "-timeout=10", "-print_final_stats=1"])
            .arg(&corpus)
            .arg(root().join("fuzz/corpus").join(t))
            .current_dir(root())
            .stdout(log.try_clone().map_err(|e| e.to_string())?)
            .stderr(log)
            .status()
            .map_err(|e| format!("{}: {e}", bin_dir.join(t).display()))?;
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
