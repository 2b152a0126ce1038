//! The operator's extras of the binary: completion scripts (parsed by each shell that is
//! installed), the man page (rendered by `man -l` where it exists), the completion helper.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn floe(args: &[&str], home: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_floe"))
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_STATE_HOME", home.join("state"))
        .env("USER", "floe")
        .output()
        .expect("run floe")
}

fn home(name: &str) -> PathBuf {
    let h = std::env::temp_dir().join(format!("floe-extras-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&h);
    std::fs::create_dir_all(&h).unwrap();
    h
}

fn stdout(o: &Output) -> String {
    assert!(
        o.status.success(),
        "{:?}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout.clone()).expect("utf-8")
}

/// The installed program of that name, if any.
fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join(program))
        .find(|p| p.is_file())
}

/// `shell -n` over the script (syntax only), from stdin.
fn parses(shell: &Path, script: &str) -> Output {
    let mut child = Command::new(shell)
        .arg("-n")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the shell");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn every_shell_gets_a_script_each_installed_shell_parses() {
    let h = home("shells");
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let script = stdout(&floe(&["completions", shell], &h));
        assert!(script.contains("floe"), "{shell}: {script}");
        for sub in ["check", "maintain", "completions"] {
            assert!(script.contains(sub), "{shell} completes {sub}");
        }
        let program = if shell == "powershell" { "pwsh" } else { shell };
        if let Some(sh) = which(program).filter(|_| shell != "powershell" && shell != "elvish") {
            let out = parses(&sh, &script);
            assert!(
                out.status.success(),
                "{shell} -n: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
    assert!(which("bash").is_some(), "bash is needed for this test");
}

#[test]
fn profiles_complete_from_the_config_file() {
    let h = home("profiles");
    let config = h.join("floe.toml");
    std::fs::write(
        &config,
        "[profiles.prod]\nreadonly = true\n[profiles.staging.trino]\nurl = \"http://x:8080\"\n",
    )
    .unwrap();
    let listed = stdout(&floe(
        &[
            "--config",
            config.to_str().unwrap(),
            "__complete",
            "profiles",
        ],
        &h,
    ));
    assert_eq!(listed, "prod\nstaging\n");
    // No config file: nothing, and no error.
    let none = floe(&["__complete", "profiles"], &h);
    assert_eq!(stdout(&none), "");

    // The bash script asks floe for them after --profile (honouring --config).
    let script = h.join("floe.bash");
    std::fs::write(&script, stdout(&floe(&["completions", "bash"], &h))).unwrap();
    let probe = format!(
        "source {script}\nCOMP_WORDS=({bin} --config {config} --profile st)\nCOMP_CWORD=4\n_floe_profiles\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
        script = script.display(),
        bin = env!("CARGO_BIN_EXE_floe"),
        config = config.display(),
    );
    let out = Command::new("bash")
        .args(["--norc", "-c", &probe])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "staging\n",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Elsewhere the generated completion runs: subcommands after `floe`.
    let probe = format!(
        "source {script}\nCOMP_WORDS=(floe mai)\nCOMP_CWORD=1\n_floe_profiles floe mai floe\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
        script = script.display(),
    );
    let out = Command::new("bash")
        .args(["--norc", "-c", &probe])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "maintain\n");

    let zsh = stdout(&floe(&["completions", "zsh"], &h));
    assert!(zsh.contains(":NAME:_floe_profiles'"), "{zsh}");
    assert!(zsh.contains("_floe_profiles() {"));
    let fish = stdout(&floe(&["completions", "fish"], &h));
    assert!(fish.contains("-l profile -x -a '(floe __complete profiles"));
}

#[test]
fn the_man_page_names_every_subcommand_and_renders() {
    let h = home("man");
    let roff = stdout(&floe(&["man"], &h));
    assert!(roff.contains(".TH FLOE 1"), "{roff}");
    for section in [".SH NAME", ".SH SYNOPSIS", ".SH OPTIONS", ".SH COMMANDS"] {
        assert!(roff.contains(section), "{section}");
    }
    for sub in [
        "floe check",
        "floe maintain",
        "floe maintain optimize",
        "floe maintain expire\\-snapshots",
        "floe config",
        "floe completions",
        "floe man",
    ] {
        assert!(roff.contains(&format!(".SS \"{sub}\"")), "{sub}");
    }
    assert!(!roff.contains("__complete"), "the helper stays hidden");
    if let Some(man) = which("man") {
        let page = h.join("floe.1");
        std::fs::write(&page, &roff).unwrap();
        let out = Command::new(man)
            .arg("-l")
            .arg(&page)
            .env("MANPAGER", "cat")
            .env("PAGER", "cat")
            .env("MANWIDTH", "80")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(text.contains("NAME"), "{text}");
        assert!(text.contains("floe maintain optimize"), "{text}");
        assert!(text.contains("--insecure-skip-verify"), "{text}");
    }
}
