//! The version-sensitive integration subjects on every other real Trino of the lab, run
//! beside the main suite instead of after it: each reads only its own coordinator, so the
//! two share nothing but the machine (on a 2-core machine the main suite waits on its
//! servers more than it computes). The integration binary is run directly (cargo would
//! hold its build lock while the main `cargo test` runs), its output kept in a log of its
//! own and printed when it ends.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use crate::{MATRIX_SUBJECTS, lab_dir, root};

struct Run {
    version: String,
    child: Child,
    log: PathBuf,
    started: Instant,
}

pub struct Matrix(Vec<Run>);

/// The integration binary `cargo test --test it` builds, built (a no-op after the test
/// build).
fn it_binary(cargo_args: &[String]) -> Result<PathBuf, String> {
    let out = Command::new(env!("CARGO"))
        .args(["test", "--test", "it", "--no-run", "--message-format=json"])
        .args(cargo_args)
        .current_dir(root())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cargo test --no-run: {e}"))?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["target"]["name"] == "it")
        .find_map(|v| v["executable"].as_str().map(PathBuf::from))
        .ok_or_else(|| "cargo test --no-run named no integration binary".to_string())
}

impl Matrix {
    /// Start the subjects on each of `versions`.
    pub fn start(versions: &[String]) -> Result<Matrix, String> {
        if versions.is_empty() {
            return Ok(Matrix(Vec::new()));
        }
        let bin = it_binary(&[])?;
        let mut runs = Vec::new();
        for version in versions {
            let log = std::env::temp_dir()
                .join(format!("floe-matrix-{version}-{}.log", std::process::id()));
            let file =
                std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
            let err = file.try_clone().map_err(|e| e.to_string())?;
            eprintln!(
                "xtask: floe's version-sensitive subjects on Trino {version}, beside the suite (log: {})",
                log.display()
            );
            let child = Command::new(&bin)
                .args(MATRIX_SUBJECTS)
                .current_dir(root())
                .env("FLOE_LAB_DIR", lab_dir())
                .env("FLOE_LAB_TRINO", version)
                .env("CI", std::env::var("CI").unwrap_or_else(|_| "true".into()))
                .stdout(file)
                .stderr(err)
                .spawn()
                .map_err(|e| format!("{}: {e}", bin.display()))?;
            runs.push(Run {
                version: version.clone(),
                child,
                log,
                started: Instant::now(),
            });
        }
        Ok(Matrix(runs))
    }

    /// Wait for each, print its output, and name those that failed.
    pub fn wait(self) -> Vec<String> {
        let mut failures = Vec::new();
        for mut r in self.0 {
            let status = r.child.wait();
            let what = format!("floe's version-sensitive subjects on Trino {}", r.version);
            eprint!("{}", std::fs::read_to_string(&r.log).unwrap_or_default());
            let ok = status.as_ref().is_ok_and(|s| s.success());
            eprintln!(
                "xtask: {what}: {} in {:.0}s",
                if ok { "ok" } else { "FAILED" },
                r.started.elapsed().as_secs_f64()
            );
            if ok {
                let _ = std::fs::remove_file(&r.log);
            } else {
                failures.push(format!("{what} failed ({status:?})"));
            }
        }
        failures
    }
}
