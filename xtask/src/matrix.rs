//! The version-sensitive integration subjects on every other real Trino of the lab, run
//! beside the main suite instead of after it: each reads only its own coordinator, so the
//! two share nothing but the machine (on a 2-core machine the main suite waits on its
//! servers more than it computes). The integration binary is run directly (cargo would
//! hold its build lock while the main `cargo test` runs), its output kept in a log of its
//! own and printed when it ends.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use crate::background::Background;
use crate::{MATRIX_SUBJECTS, WAITING_SUBJECTS, lab_dir, root};

pub struct Matrix(Vec<Background>);

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

/// The integration binary run against the lab, as `cargo test` runs it.
fn it_command(bin: &std::path::Path) -> Command {
    let mut cmd = Command::new(bin);
    cmd.current_dir(root())
        .env("FLOE_LAB_DIR", lab_dir())
        .env("CI", std::env::var("CI").unwrap_or_else(|_| "true".into()));
    cmd
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
            runs.push(Background::start(
                it_command(&bin)
                    .args(MATRIX_SUBJECTS)
                    .env("FLOE_LAB_TRINO", version),
                &format!("floe's version-sensitive subjects on Trino {version}"),
                &format!("matrix-{version}"),
            )?);
        }
        Ok(Matrix(runs))
    }

    /// Wait for each, print its output, and name those that failed.
    pub fn wait(self) -> Vec<String> {
        self.0.into_iter().filter_map(|r| r.wait().err()).collect()
    }
}

/// The subjects that mostly wait, one after the other on the primary Trino, beside the rest
/// of the suite (which skips them).
pub fn waiting() -> Result<Background, String> {
    let bin = it_binary(&[])?;
    Background::start(
        it_command(&bin)
            .args(WAITING_SUBJECTS)
            .args(["--exact", "--test-threads", "1"]),
        "floe's subjects that mostly wait",
        "waiting",
    )
}

#[cfg(test)]
mod tests {
    use crate::{MATRIX_SUBJECTS, WAITING_SUBJECTS, root};

    /// A renamed subject would run in neither place's way: the waiting run would find no
    /// test of that name (and pass), the suite would run it in its own order again.
    #[test]
    fn every_waiting_subject_is_a_test_of_the_integration_suite() {
        for name in WAITING_SUBJECTS {
            let (module, test) = name.split_once("::").expect("module::test");
            let path = root().join(format!("tests/it/{module}.rs"));
            let source = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert!(
                source.contains(&format!("fn {test}(")),
                "{name}: no such test in {}",
                path.display()
            );
            assert!(
                !MATRIX_SUBJECTS.iter().any(|m| name.starts_with(m)),
                "{name} also runs in the version matrix"
            );
        }
    }
}
