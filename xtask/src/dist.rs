//! `cargo xtask dist`: the release archive.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{root, run};

/// `cargo xtask dist`: build with `[profile.dist]`, then pack the binary with what an
/// operator installs beside it, and write the archive's SHA-256.
pub fn dist(args: &[String]) -> Result<(), String> {
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
