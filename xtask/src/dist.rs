//! `cargo xtask dist`: the release for the bastions operators have. The binary is built for
//! glibc 2.17 (RHEL/CentOS 7 and later, Amazon Linux 2, Ubuntu 14.04+, Debian 8+) through
//! cargo-zigbuild, checked for what it asks of its host, and packed as a tarball, a `.deb`
//! and an `.rpm`, with `SHA256SUMS` for all three.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{elf, root, rpm, run, tools};

/// The oldest glibc the release starts on: CentOS 7's.
pub const GLIBC: (u32, u32) = (2, 17);
/// The largest binary the release ships: 11 MB. It was 10 MB until the DAGs' code was
/// parsed: tree-sitter and its Python grammar weigh about 0.52 MB in a stripped fat-LTO
/// `opt-level = "z"` build (measured alone), on a release of 9.66 MB; then 10.5 MB until
/// `floe serve` (hyper's HTTP/1 server, its TLS acceptor, the exposition): the release
/// measured 10,846,488 bytes with it, and 11,005,480 once Delta Lake was read. rustls' crypto
/// from ring rather than aws-lc-rs took 754,328 bytes off: 10,251,152.
const MAX_BINARY_BYTES: u64 = 11_000_000;

/// `cargo xtask dist`: build, check, stage, pack.
pub fn dist(args: &[String]) -> Result<(), String> {
    let out_dir = match args.iter().position(|a| a == "--out") {
        Some(i) => PathBuf::from(args.get(i + 1).ok_or("--out needs a directory")?),
        None => target_dir().join("packages"),
    };
    let version = package_version()?;
    let target = host_target()?;
    if !target.ends_with("-linux-gnu") {
        return Err(format!(
            "the release is built for glibc on Linux; this host is {target}"
        ));
    }
    let glibc = format!("{}.{}", GLIBC.0, GLIBC.1);
    run(
        tools::zigbuild()?
            .args(["--profile", "dist", "--locked", "--bin", "floe", "--target"])
            .arg(format!("{target}.{glibc}"))
            .env("FLOE_BUILD_GLIBC", &glibc)
            .current_dir(root()),
        &format!("building floe for {target} and glibc {glibc} (cargo zigbuild, profile dist)"),
    )?;
    // cargo-zigbuild builds into the target's plain name.
    let built = target_dir().join(&target).join("dist");
    let bin = built.join("floe");
    let version_line = check_binary(&bin, &version, &glibc)?;

    let name = format!("floe-{version}-{target}");
    let stage_root = target_dir().join("dist-stage");
    let stage = stage_root.join(&name);
    let _ = std::fs::remove_dir_all(&stage_root);
    // What the packages take, where their `target/release/pkg/` paths lead.
    let pkg = built.join("pkg");
    let _ = std::fs::remove_dir_all(&pkg);
    for d in [
        stage.clone(),
        stage.join("completions"),
        stage.join("man"),
        stage.join("assets"),
        pkg.clone(),
    ] {
        std::fs::create_dir_all(&d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
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
    let generated: [(&[&str], &str, Option<&str>); 6] = [
        (
            &["completions", "bash"],
            "completions/floe.bash",
            Some("floe.bash"),
        ),
        (&["completions", "zsh"], "completions/_floe", Some("_floe")),
        (
            &["completions", "fish"],
            "completions/floe.fish",
            Some("floe.fish"),
        ),
        (&["completions", "elvish"], "completions/floe.elv", None),
        (
            &["completions", "powershell"],
            "completions/_floe.ps1",
            None,
        ),
        (&["man"], "man/floe.1", None),
    ];
    for (args, file, in_pkg) in generated {
        let out = Command::new(&bin)
            .args(args)
            .output()
            .map_err(|e| format!("{}: {e}", bin.display()))?;
        if !out.status.success() {
            return Err(format!("floe {} failed ({})", args.join(" "), out.status));
        }
        std::fs::write(stage.join(file), &out.stdout).map_err(|e| format!("{file}: {e}"))?;
        if let Some(p) = in_pkg {
            std::fs::write(pkg.join(p), &out.stdout).map_err(|e| format!("{p}: {e}"))?;
        }
    }
    // Both package formats expect man pages compressed; -n keeps the output reproducible.
    let man_gz =
        std::fs::File::create(pkg.join("floe.1.gz")).map_err(|e| format!("floe.1.gz: {e}"))?;
    run(
        Command::new("gzip")
            .args(["-9n", "--stdout"])
            .arg(stage.join("man/floe.1"))
            .stdout(man_gz),
        "compressing the man page",
    )?;

    std::fs::create_dir_all(&out_dir).map_err(|e| format!("{}: {e}", out_dir.display()))?;
    let tarball = format!("{name}.tar.gz");
    let mut tar = Command::new("tar");
    tar.args(["--sort=name", "--owner=0", "--group=0", "--numeric-owner"]);
    if let Ok(epoch) = std::env::var("SOURCE_DATE_EPOCH") {
        tar.arg(format!("--mtime=@{epoch}"));
    }
    tar.arg("-czf")
        .arg(out_dir.join(&tarball))
        .arg("-C")
        .arg(&stage_root)
        .arg(&name);
    run(&mut tar, &format!("packing {tarball}"))?;

    let deb = format!("floe_{version}-1_{}.deb", deb_arch(&target)?);
    run(
        Command::new(tools::cargo_tool("cargo-deb", tools::DEB)?)
            .args([
                "--no-build",
                "--no-strip",
                "--quiet",
                "--profile",
                "dist",
                "--target",
            ])
            .arg(&target)
            .arg("--output")
            .arg(out_dir.join(&deb))
            .current_dir(root()),
        &format!("packing {deb} (cargo-deb)"),
    )?;
    let arch = target.split('-').next().unwrap_or("x86_64");
    let rpm = format!("floe-{version}-1.{arch}.rpm");
    run(
        Command::new(tools::cargo_tool("cargo-generate-rpm", tools::RPM)?)
            // rpm before 4.14 (RHEL/CentOS 7) reads xz payloads, not zstd ones.
            .args(["--profile", "dist", "--payload-compress", "xz", "--target"])
            .arg(&target)
            .arg("--output")
            .arg(out_dir.join(&rpm))
            .current_dir(root()),
        &format!("packing {rpm} (cargo-generate-rpm)"),
    )?;

    check_rpm(&out_dir.join(&rpm), &version)?;

    let artefacts = [tarball.as_str(), deb.as_str(), rpm.as_str()];
    let sums = Command::new("sha256sum")
        .args(artefacts)
        .current_dir(&out_dir)
        .output()
        .map_err(|e| format!("sha256sum: {e}"))?;
    if !sums.status.success() {
        return Err(format!("sha256sum failed ({})", sums.status));
    }
    let sums_file = out_dir.join("SHA256SUMS");
    std::fs::write(&sums_file, &sums.stdout)
        .map_err(|e| format!("{}: {e}", sums_file.display()))?;
    eprintln!("xtask: {version_line}\nxtask: binary {} bytes", size(&bin));
    for a in artefacts {
        eprintln!(
            "xtask: {} ({} bytes)",
            out_dir.join(a).display(),
            size(&out_dir.join(a))
        );
    }
    eprintln!("xtask: {}", sums_file.display());
    Ok(())
}

/// Where the `.rpm` installs what (RPM-based systems' places), and no requirement newer
/// than glibc 2.17 or a payload rpm 4.11 (RHEL/CentOS 7) cannot read.
fn check_rpm(path: &Path, version: &str) -> Result<(), String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let p = rpm::read(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut bad = Vec::new();
    if (p.name.as_str(), p.version.as_str()) != ("floe", version) {
        bad.push(format!("it is {} {}", p.name, p.version));
    }
    if p.compressor != "xz" {
        bad.push(format!("its payload is {}", p.compressor));
    }
    for f in [
        "/usr/bin/floe",
        "/usr/share/man/man1/floe.1.gz",
        "/usr/share/bash-completion/completions/floe",
        "/usr/share/zsh/site-functions/_floe",
        "/usr/share/fish/vendor_completions.d/floe.fish",
        "/usr/share/doc/floe/config.example.toml",
        "/usr/share/licenses/floe/LICENSE",
    ] {
        if !p.files.iter().any(|x| x == f) {
            bad.push(format!("it has no {f}"));
        }
    }
    for r in &p.requires {
        let v = r.split(['(', ')']).find_map(elf::glibc_version);
        if v.is_some_and(|v| v > GLIBC) {
            bad.push(format!("it requires {r}"));
        }
    }
    if !bad.is_empty() {
        return Err(format!("{}: {}", path.display(), bad.join("; ")));
    }
    eprintln!(
        "xtask: {}: {} files, payload {}, requires {}",
        path.display(),
        p.files.len(),
        p.compressor,
        p.requires.join(", ")
    );
    Ok(())
}

fn copy(from: &Path, to: &Path) -> Result<(), String> {
    std::fs::copy(from, to)
        .map(|_| ())
        .map_err(|e| format!("copy {} to {}: {e}", from.display(), to.display()))
}

fn size(p: &Path) -> u64 {
    std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)
}

/// Debian's name for the target's architecture.
fn deb_arch(target: &str) -> Result<&'static str, String> {
    match target.split('-').next() {
        Some("x86_64") => Ok("amd64"),
        Some("aarch64") => Ok("arm64"),
        _ => Err(format!("no Debian architecture known for {target}")),
    }
}

/// What a bastion needs of the binary: small enough, nothing newer than glibc 2.17 and no
/// library beyond glibc's own, and that it runs and says what it was built for. Returns its
/// `--version` line.
pub fn check_binary(bin: &Path, version: &str, glibc: &str) -> Result<String, String> {
    let bytes = std::fs::read(bin).map_err(|e| format!("{}: {e}", bin.display()))?;
    if bytes.len() as u64 > MAX_BINARY_BYTES {
        return Err(format!(
            "{} is {} bytes, over the {MAX_BINARY_BYTES} a release may weigh",
            bin.display(),
            bytes.len()
        ));
    }
    let needs = elf::read(&bytes).map_err(|e| format!("{}: {e}", bin.display()))?;
    let bad = elf::violations(&needs, GLIBC);
    if !bad.is_empty() {
        return Err(format!(
            "{} would not start on glibc {glibc}: {}",
            bin.display(),
            bad.join("; ")
        ));
    }
    let newest = needs
        .versions
        .iter()
        .filter_map(|(_, v)| elf::glibc_version(v))
        .max()
        .map(|(a, b)| format!("GLIBC_{a}.{b}"))
        .unwrap_or_else(|| "none".into());
    eprintln!(
        "xtask: {} needs {} (newest symbol version {newest}), interpreter {}",
        bin.display(),
        needs.libraries.join(", "),
        needs.interpreter.as_deref().unwrap_or("none")
    );
    let out = Command::new(bin)
        .arg("--version")
        .output()
        .map_err(|e| format!("{} --version: {e}", bin.display()))?;
    let line = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success()
        || !line.starts_with(&format!("floe {version} ("))
        || !line.contains(&format!("glibc {glibc})"))
    {
        return Err(format!(
            "{} --version says {line:?} ({})",
            bin.display(),
            out.status
        ));
    }
    Ok(line)
}

pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target"))
}

/// `version` of `[package]` in the root Cargo.toml.
pub fn package_version() -> Result<String, String> {
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
