//! `cargo xtask package-check`: the `.deb` installed on this machine as an operator would
//! install it (`dpkg -i`), then what it installed used — the binary, `man floe`, the bash
//! completion, `floe doctor` against the lab — and removed (`dpkg -r`), leaving nothing.
//! It needs root (dpkg) and the lab up, and refuses to touch a floe installed before it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::dist::{GLIBC, package_version, target_dir};
use crate::{lab_dir, lab_json, write_demo_config};

/// What the package puts where an operator's tools look for it.
const INSTALLED: [&str; 6] = [
    "/usr/bin/floe",
    "/usr/share/man/man1/floe.1.gz",
    "/usr/share/bash-completion/completions/floe",
    "/usr/share/zsh/vendor-completions/_floe",
    "/usr/share/fish/vendor_completions.d/floe.fish",
    "/usr/share/doc/floe/config.example.toml",
];

pub fn package_check(args: &[String]) -> Result<(), String> {
    let dir = match args.iter().position(|a| a == "--dir") {
        Some(i) => PathBuf::from(args.get(i + 1).ok_or("--dir needs a directory")?),
        None => target_dir().join("packages"),
    };
    let version = package_version()?;
    let sums = dir.join("SHA256SUMS");
    let checked = output(
        Command::new("sha256sum")
            .arg("-c")
            .arg(&sums)
            .current_dir(&dir),
        "sha256sum -c SHA256SUMS",
    )?;
    eprint!("{}", String::from_utf8_lossy(&checked.stdout));
    let deb = std::fs::read_to_string(&sums)
        .map_err(|e| format!("{}: {e}", sums.display()))?
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1))
        .find(|f| f.ends_with(".deb") && f.starts_with(&format!("floe_{version}-")))
        .map(|f| dir.join(f))
        .ok_or_else(|| format!("{} lists no floe {version} .deb", sums.display()))?;
    if Command::new("dpkg")
        .args(["-s", "floe"])
        .output()
        .is_ok_and(|o| o.status.success())
    {
        return Err("a floe package is installed already: `dpkg -r floe` first (the check installs and removes its own)".into());
    }
    let j = lab_json()?;
    ok(Command::new("dpkg").arg("-i").arg(&deb), "dpkg -i")?;
    let used = use_installed(&version, &j);
    let removed = ok(Command::new("dpkg").args(["-r", "floe"]), "dpkg -r floe");
    used?;
    removed?;
    let left: Vec<&str> = INSTALLED
        .iter()
        .copied()
        .filter(|p| Path::new(p).exists())
        .collect();
    if !left.is_empty() {
        return Err(format!("dpkg -r floe left {}", left.join(", ")));
    }
    eprintln!(
        "xtask: {} installed, used and removed cleanly",
        deb.display()
    );
    Ok(())
}

/// Everything the operator reaches once the package is in.
fn use_installed(version: &str, lab: &serde_json::Value) -> Result<(), String> {
    for p in INSTALLED {
        if !Path::new(p).is_file() {
            return Err(format!("the package did not install {p}"));
        }
    }
    let v = stdout(
        Command::new("/usr/bin/floe").arg("--version"),
        "floe --version",
    )?;
    let glibc = format!("glibc {}.{})", GLIBC.0, GLIBC.1);
    if !v.starts_with(&format!("floe {version} (")) || !v.contains(&glibc) {
        return Err(format!("the installed floe --version says {v:?}"));
    }
    eprintln!("xtask: {}", v.trim());
    let page = stdout(
        Command::new("man")
            .arg("floe")
            .env("MANPAGER", "cat")
            .env("MANWIDTH", "80"),
        "man floe",
    )?;
    if !page.contains("floe") || !page.contains("doctor") {
        return Err(format!(
            "man floe shows no floe page: {:?}",
            first_lines(&page)
        ));
    }
    eprintln!("xtask: man floe: {}", first_lines(&page));
    // The installed completion, as bash-completion loads it on the first tab.
    let words = stdout(
        Command::new("bash").args([
            "--norc",
            "-c",
            "source /usr/share/bash-completion/completions/floe && COMP_WORDS=(floe do) && COMP_CWORD=1 && COMP_LINE='floe do' && COMP_POINT=7 && _floe floe do floe && printf '%s\\n' \"${COMPREPLY[@]}\"",
        ]),
        "the installed bash completion",
    )?;
    if !words.lines().any(|w| w == "doctor") {
        return Err(format!("floe do<tab> completes to {words:?}, not doctor"));
    }
    eprintln!(
        "xtask: floe do<tab> -> {}",
        words.split_whitespace().collect::<Vec<_>>().join(" ")
    );
    let config = write_demo_config(lab)?;
    let doctor = Command::new("/usr/bin/floe")
        .arg("--config")
        .arg(&config)
        .arg("doctor")
        .env(
            "FLOE_LAB_AIRFLOW_PASSWORD",
            lab["airflow"]["password"].as_str().unwrap_or("admin"),
        )
        .env("XDG_STATE_HOME", lab_dir().join("state"))
        .env("XDG_DATA_HOME", lab_dir().join("data"))
        .env("NO_COLOR", "1")
        .output()
        .map_err(|e| format!("floe doctor: {e}"))?;
    let text = String::from_utf8_lossy(&doctor.stdout);
    eprint!("{text}");
    let first = text.lines().next().unwrap_or("");
    if !first.contains(&format!("floe {version} (")) {
        return Err(format!(
            "floe doctor's first line is {first:?}, not the build"
        ));
    }
    if !doctor.status.success() {
        return Err(format!(
            "the installed floe doctor failed against the lab ({}): {}",
            doctor.status,
            String::from_utf8_lossy(&doctor.stderr).trim()
        ));
    }
    Ok(())
}

fn first_lines(s: &str) -> String {
    s.lines()
        .filter(|l| !l.trim().is_empty())
        .take(2)
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" / ")
}

fn output(cmd: &mut Command, what: &str) -> Result<Output, String> {
    let out = cmd.output().map_err(|e| format!("{what}: {e}"))?;
    if out.status.success() {
        Ok(out)
    } else {
        Err(format!(
            "{what} failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout).trim(),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

fn stdout(cmd: &mut Command, what: &str) -> Result<String, String> {
    output(cmd, what).map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
}

fn ok(cmd: &mut Command, what: &str) -> Result<(), String> {
    output(cmd, what).map(|_| ())
}
