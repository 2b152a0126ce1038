//! What runs beside the suite: the test build while the lab starts, and commands whose
//! output is kept in a log of their own (the suite speaks on the terminal meanwhile) and
//! printed when they end. Each is killed if it is never waited for.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Instant, SystemTime};

use crate::{cache_dir, root};

pub struct Background {
    what: String,
    child: Option<Child>,
    log: PathBuf,
    started: SystemTime,
}

impl Background {
    /// Start `cmd`, its stdout and stderr in a log named after `name` in the temp dir.
    pub fn start(cmd: &mut Command, what: &str, name: &str) -> Result<Background, String> {
        let log = std::env::temp_dir().join(format!("floe-{name}-{}.log", std::process::id()));
        let file = std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
        let err = file
            .try_clone()
            .map_err(|e| format!("{}: {e}", log.display()))?;
        eprintln!("xtask: {what}, beside (log: {})", log.display());
        let child = cmd
            .stdout(file)
            .stderr(err)
            .spawn()
            .map_err(|e| format!("{what}: {e}"))?;
        Ok(Background {
            what: what.to_string(),
            child: Some(child),
            log,
            started: SystemTime::now(),
        })
    }

    /// Wait for it, print its output and say how it went and how long it took: until its
    /// last output (its log's modification time), since it may have ended long before it
    /// was waited for. The log is kept when it failed.
    pub fn wait(mut self) -> Result<(), String> {
        let status = self.child.take().map(|mut c| c.wait());
        eprint!("{}", std::fs::read_to_string(&self.log).unwrap_or_default());
        let ok = matches!(&status, Some(Ok(s)) if s.success());
        let took = std::fs::metadata(&self.log)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|end| end.duration_since(self.started).ok())
            .map_or_else(|| "?".to_string(), |d| format!("{:.0}s", d.as_secs_f64()));
        eprintln!(
            "xtask: {}: {} in {took} (its last output)",
            self.what,
            if ok { "ok" } else { "FAILED" },
        );
        if ok {
            let _ = std::fs::remove_file(&self.log);
            Ok(())
        } else {
            Err(format!(
                "{} failed ({status:?}; log: {})",
                self.what,
                self.log.display()
            ))
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        stop(self.child.take());
    }
}

/// Kill a run that was never waited for, and reap it.
fn stop(child: Option<Child>) {
    if let Some(mut child) = child {
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// `cargo test --no-run` in the background, its output in a log of its own (the lab's
/// start-up speaks on the terminal meanwhile). Only for a run with no cargo arguments of
/// its own, which could change what is built; killed if the run ends before it does.
pub struct TestBuild {
    child: Option<std::process::Child>,
    log: PathBuf,
    started: Instant,
}

impl TestBuild {
    pub fn start(cargo_args: &[String]) -> Self {
        let log = cache_dir().join("test-build.log");
        let started = Instant::now();
        let child = if cargo_args.is_empty() {
            let _ = std::fs::create_dir_all(cache_dir());
            std::fs::File::create(&log).ok().and_then(|f| {
                let err = f.try_clone().ok()?;
                eprintln!(
                    "xtask: building the tests while the lab starts (log: {})",
                    log.display()
                );
                Command::new(env!("CARGO"))
                    .args(["test", "--workspace", "--all-targets", "--no-run"])
                    .current_dir(root())
                    .stdin(Stdio::null())
                    .stdout(f)
                    .stderr(err)
                    .spawn()
                    .ok()
            })
        } else {
            None
        };
        TestBuild {
            child,
            log,
            started,
        }
    }

    /// Waits for the build and says how it went and how long it took: cargo's own figure
    /// (a build that ended while the lab was still starting did not take until now), and
    /// how long the suite waited for it.
    pub fn wait(&mut self) {
        if let Some(mut child) = self.child.take() {
            let ok = child.wait().is_ok_and(|s| s.success());
            let took = std::fs::read_to_string(&self.log)
                .ok()
                .and_then(|log| {
                    log.lines()
                        .rev()
                        .find_map(|l| l.trim().strip_prefix("Finished "))
                        .and_then(|l| l.rsplit_once(" in "))
                        .map(|(_, t)| t.trim().to_string())
                })
                .unwrap_or_else(|| "?".into());
            eprintln!(
                "xtask: the test build beside the lab: {}, built in {took} (the suite came to it {:.0}s after its start){}",
                if ok { "ok" } else { "FAILED" },
                self.started.elapsed().as_secs_f64(),
                if ok {
                    String::new()
                } else {
                    format!(
                        " (log: {}; cargo test builds again below)",
                        self.log.display()
                    )
                }
            );
        }
    }
}

impl Drop for TestBuild {
    fn drop(&mut self) {
        stop(self.child.take());
    }
}
