//! `floe doctor`: what is on this machine (the audit log, the terminal).

use super::*;

impl Doctor<'_> {
    /// The audit log can take a record: its directory exists or can be made, the file
    /// opens for appending and is private. Nothing is written.
    pub(super) fn audit_log(&mut self, path: &Path) {
        let name = "audit log";
        if path.exists() {
            match std::fs::OpenOptions::new().append(true).open(path) {
                Ok(f) => {
                    use std::os::unix::fs::PermissionsExt;
                    let mode = f
                        .metadata()
                        .map(|m| m.permissions().mode() & 0o777)
                        .unwrap_or(0);
                    if mode & 0o077 != 0 {
                        self.report(Check::fail(
                            name,
                            format!("{} is appendable but mode {mode:03o}", path.display()),
                            format!("chmod 600 {}: it records who changed what", path.display()),
                        ));
                    } else {
                        self.report(Check::pass(
                            name,
                            format!("{} appendable, mode {mode:03o}", path.display()),
                        ));
                    }
                }
                Err(e) => {
                    self.report(Check::fail(
                        name,
                        format!("{}: {e}", path.display()),
                        "make it writable by this user, or point audit_log elsewhere",
                    ));
                }
            }
            return;
        }
        // The nearest existing directory decides whether floe can create the rest.
        let mut dir = path.parent();
        while let Some(d) = dir {
            if d.as_os_str().is_empty() {
                dir = Some(Path::new("."));
                break;
            }
            if d.exists() {
                break;
            }
            dir = d.parent();
        }
        let dir = dir.unwrap_or(Path::new("/"));
        if writable(dir) {
            self.report(Check::pass(
                name,
                format!(
                    "{} will be created (mode 600) on the first mutation",
                    path.display()
                ),
            ));
        } else {
            self.report(Check::fail(
                name,
                format!(
                    "{} cannot be created: {} is not writable",
                    path.display(),
                    dir.display()
                ),
                "create the directory for this user, or point audit_log elsewhere",
            ));
        }
    }

    pub(super) fn terminal(&mut self) {
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let tty = std::io::stdout().is_terminal();
        match crossterm::terminal::size() {
            Ok((w, h)) if tty => {
                if w < 80 || h < 20 {
                    self.report(Check::fail(
                        "terminal size",
                        format!("{w}x{h}"),
                        "floe needs at least 80x20: enlarge the window",
                    ));
                } else {
                    self.report(Check::pass("terminal size", format!("{w}x{h}")));
                }
            }
            _ => {
                self.report(Check::skip("terminal size", "stdout is not a terminal"));
            }
        }
        let locale = |k: &str| std::env::var(k).ok();
        let charset = match crate::ui::caps::ctype_locale(&locale) {
            Some((k, v)) if crate::ui::caps::utf8_locale(&locale) => format!("UTF-8 ({k}={v})"),
            Some((k, v)) => format!(
                "ASCII: {k}={v} is not UTF-8, so floe draws ASCII (LANG=C.UTF-8 for box drawing)"
            ),
            None => "ASCII: no LC_ALL, LC_CTYPE or LANG (the C locale), so floe draws ASCII".into(),
        };
        self.report(Check::pass("terminal charset", charset));
        let term = env("TERM");
        let colours = if env("NO_COLOR").is_some() {
            "NO_COLOR is set: no colours, severity shown as text".to_string()
        } else if env("COLORTERM").is_some_and(|c| c == "truecolor" || c == "24bit") {
            "24-bit (COLORTERM)".to_string()
        } else if term.as_deref().is_some_and(|t| t.contains("256")) {
            "256 colours".to_string()
        } else {
            "16 colours".to_string()
        };
        let figure = format!("TERM={}, {colours}", term.as_deref().unwrap_or("(unset)"));
        match term.as_deref() {
            None | Some("dumb") if tty => {
                self.report(Check::fail(
                    "terminal colours",
                    figure,
                    "set TERM to your terminal's type (e.g. export TERM=xterm-256color)",
                ));
            }
            _ => {
                self.report(Check::pass("terminal colours", figure));
            }
        }
        if env("TMUX").is_none() {
            self.report(Check::skip("tmux clipboard", "not inside tmux"));
            return;
        }
        match std::process::Command::new("tmux")
            .args(["show", "-s", "set-clipboard"])
            .output()
        {
            Ok(o) if o.status.success() => {
                let text = String::from_utf8_lossy(&o.stdout);
                let value = text.split_whitespace().nth(1).unwrap_or("").to_string();
                if value == "off" || value.is_empty() {
                    self.report(Check::fail(
                        "tmux clipboard",
                        format!("set-clipboard {}", if value.is_empty() { "?" } else { &value }),
                        "tmux set -s set-clipboard on (in ~/.tmux.conf): floe copies through the terminal (OSC 52)",
                    ));
                } else {
                    self.report(Check::pass(
                        "tmux clipboard",
                        format!("set-clipboard {value}"),
                    ));
                }
            }
            Ok(o) => {
                self.report(Check::skip(
                    "tmux clipboard",
                    format!(
                        "tmux show -s set-clipboard: {}",
                        String::from_utf8_lossy(&o.stderr).trim()
                    ),
                ));
            }
            Err(e) => {
                self.report(Check::skip(
                    "tmux clipboard",
                    format!("cannot run tmux: {e}"),
                ));
            }
        }
    }
}
