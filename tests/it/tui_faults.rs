//! The terminal and configuration rows of the fault matrix: the real binary in a
//! pseudo-terminal (against the lab where a server is involved). Each test ends with the
//! terminal given back: cooked mode, the main screen, the cursor shown.

use crate::common;
use crate::common::pty;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::{lab, user};
use pty::Pty;

fn row_with<'a>(screen: &'a str, needle: &str) -> Option<&'a str> {
    screen.lines().find(|l| l.contains(needle))
}

/// The lab's seed schemas only: other tests' scratch tables come and go.
fn lab_args<'a>(url: &'a str, user: &'a str) -> [&'a str; 8] {
    [
        "--trino", url, "--user", user, "--schema", "zoning", "--schema", "audit",
    ]
}

/// A directory of this test's own (config files).
fn scratch(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("floe-faults-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn alive(pty: &mut Pty) {
    assert!(
        pty.child.try_wait().unwrap().is_none(),
        "floe exited; screen:\n{}",
        pty.screen()
    );
}

fn table_list(pty: &Pty) -> String {
    pty.wait_for(
        "documents loaded in the table list",
        Duration::from_secs(60),
        |s| row_with(s, "zoning.documents").is_some_and(|r| r.contains("CRIT") && !r.contains('~')),
    )
}

fn quit_restored(mut pty: Pty) {
    pty.send(b"q");
    let status = pty.wait_exit(Duration::from_secs(10));
    assert!(status.success(), "{status:?}");
    pty.assert_restored();
}

/// Every popup and prompt, opened at a normal size, survives the terminal shrinking to
/// 20x5 (something drawn, no panic) and is still there when it grows back. The confirm
/// popup is declined: nothing runs on Trino.
#[test]
fn every_popup_open_at_20x5() {
    let u = user("tiny");
    let url = lab().trino_url();
    let mut pty = Pty::spawn(&lab_args(&url, &u), 100, 30);
    table_list(&pty);
    // Every row loaded, so the order no longer changes under the selection.
    let s = pty.wait_for("every table loaded", Duration::from_secs(60), |s| {
        !s.lines()
            .skip(3)
            .any(|l| l.contains('~') || l.trim_start().starts_with('…'))
    });
    // Select documents (the optimize plan needs a table with small files).
    let rows: Vec<&str> = s.lines().skip(3).collect();
    let pos = rows
        .iter()
        .position(|l| l.contains("zoning.documents"))
        .unwrap();
    for _ in 0..pos {
        pty.send(b"j");
    }
    let popups: [(&str, &[u8], &str, &[u8]); 6] = [
        ("help", b"?", "help — esc closes", b"\x1b"),
        ("health breakdown", b"i", "health breakdown", b"\x1b"),
        ("queue", b"Q", "no maintenance has run", b"\x1b"),
        ("confirm", b"o", "confirm optimize", b"n"),
        ("command line", b":refres", ":refres", b"\x1b"),
        ("filter", b"/doc", "/doc", b"\x1b"),
    ];
    for (name, open, shown, close) in popups {
        pty.send(open);
        pty.wait_for(name, Duration::from_secs(30), |s| s.contains(shown));
        pty.resize(20, 5);
        std::thread::sleep(Duration::from_millis(400));
        alive(&mut pty);
        let tiny = pty.screen();
        assert!(
            tiny.chars().filter(|c| !c.is_whitespace()).count() >= 10,
            "{name} at 20x5 drew next to nothing:\n{tiny}"
        );
        assert!(tiny.lines().count() <= 5, "{tiny}");
        pty.resize(100, 30);
        // Wait for floe's own frame at the new size (the footer on the last row, which
        // the 20x5 screen did not have), not for what the emulator kept of the old one:
        // a key written while the SIGWINCH is still unread can stay unread until the
        // next key (crossterm returns the resize and drops the terminal's readiness of
        // the same poll; mio's polling is edge-triggered).
        pty.wait_for(
            &format!("{name} again at 100x30"),
            Duration::from_secs(10),
            // (a tall popup may cover the footer's right part: its first key stays)
            |s| s.contains(shown) && s.lines().nth(29).is_some_and(|l| l.starts_with("? ")),
        );
        pty.send(close);
        pty.wait_for(&format!("{name} closed"), Duration::from_secs(10), |s| {
            !s.contains(shown) && s.contains("zoning.documents")
        });
    }
    quit_restored(pty);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let queries = rt.block_on(lab().real_queries_of(&u));
    assert!(!queries.is_empty(), "the lab saw this user's queries");
    for q in &queries {
        let sql = q.to_string().to_lowercase();
        assert!(
            !sql.contains("execute optimize"),
            "a declined plan ran: {q}"
        );
    }
}

/// Hundreds of size changes (each a SIGWINCH) in about a second, down to 1x1 and up to
/// 300 columns; then a normal size gets a normal screen.
#[test]
fn a_resize_storm_then_a_normal_screen() {
    let url = lab().trino_url();
    let mut pty = Pty::spawn(&lab_args(&url, "floe"), 100, 30);
    table_list(&pty);
    let sizes: [(u16, u16); 10] = [
        (20, 5),
        (1, 1),
        (300, 100),
        (37, 9),
        (80, 24),
        (2, 40),
        (160, 3),
        (19, 4),
        (120, 50),
        (5, 5),
    ];
    // The storm's pace is the test's own (a loaded machine stretches it); what is tested
    // is what floe does under it, not how fast the test sends it.
    for i in 0..400 {
        let (w, h) = sizes[i % sizes.len()];
        pty.resize(w, h);
        std::thread::sleep(Duration::from_micros(2500));
    }
    alive(&mut pty);
    pty.resize(100, 30);
    let s = pty.wait_for("a normal screen", Duration::from_secs(10), |s| {
        s.lines().next().is_some_and(|l| l.contains("floe"))
            && row_with(s, "zoning.documents").is_some_and(|r| r.contains("CRIT"))
            && s.contains("? help")
    });
    assert_eq!(s.lines().count(), 30, "{s}");
    quit_restored(pty);
}

/// ctrl-z stops floe as a shell job with the terminal given back while it is stopped;
/// SIGCONT (what `fg` sends) takes it again and redraws the whole screen. The same for a
/// SIGTSTP sent by someone else.
#[test]
fn ctrl_z_suspends_with_the_terminal_restored_and_fg_redraws() {
    let url = lab().trino_url();
    let mut pty = Pty::spawn_job(&lab_args(&url, "floe"), &[], 100, 30);
    table_list(&pty);
    assert!(pty.is_raw());
    for how in ["ctrl-z", "SIGTSTP"] {
        let before = pty.output().len();
        if how == "ctrl-z" {
            pty.send(b"\x1a");
        } else {
            pty.signal(libc::SIGTSTP);
        }
        pty.wait_stopped(Duration::from_secs(10));
        // While stopped: cooked mode, main screen, cursor shown.
        pty.assert_cooked();
        pty.wait_output(
            &format!("{how}: the screen left"),
            Duration::from_secs(10),
            |o| o[before..].contains("\x1b[?1049l"),
        );
        pty.assert_restored();
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(pty.proc_state(), 'T', "{how}: still stopped");
        // fg.
        pty.signal(libc::SIGCONT);
        let s = pty.wait_for(
            &format!("the whole screen redrawn after {how}"),
            Duration::from_secs(10),
            |s| {
                s.lines().next().is_some_and(|l| l.contains("floe"))
                    && row_with(s, "zoning.documents").is_some()
                    && s.contains("? help")
            },
        );
        assert!(pty.is_raw(), "{how}: raw mode again");
        assert!(
            pty.parser.lock().unwrap().screen().alternate_screen(),
            "{how}: on the alternate screen again:\n{s}"
        );
        // Still usable: a key works.
        pty.send(b"?");
        pty.wait_for("help after fg", Duration::from_secs(10), |s| {
            s.contains("help — esc closes")
        });
        pty.send(b"\x1b");
        pty.wait_for("help closed", Duration::from_secs(10), |s| {
            !s.contains("help — esc closes")
        });
    }
    quit_restored(pty);
}

/// SIGINT and SIGQUIT from outside (in raw mode ctrl-c and ctrl-\ are keys, `kill` is not)
/// end floe with the terminal restored.
#[test]
fn external_sigint_and_sigquit_restore_the_terminal() {
    for sig in [libc::SIGINT, libc::SIGQUIT] {
        let url = lab().trino_url();
        let mut pty = Pty::spawn(&lab_args(&url, "floe"), 80, 24);
        pty.wait_for("the table list", Duration::from_secs(60), |s| {
            s.contains("zoning.documents")
        });
        pty.signal(sig);
        let status = pty.wait_exit(Duration::from_secs(10));
        assert!(status.code().is_some(), "signal {sig}: {status:?}");
        pty.assert_restored();
    }
}

/// A panic of the event loop (FLOE_TEST_PANIC=frame, a test-only switch) with
/// `mouse = true`: the terminal is restored, mouse capture off, the report printed after.
#[test]
fn a_panic_restores_the_terminal_and_mouse_capture() {
    let dir = scratch("panic");
    let config = dir.join("config.toml");
    std::fs::write(&config, "mouse = true\n").unwrap();
    let mut pty = Pty::spawn_env(
        &[
            "--config",
            config.to_str().unwrap(),
            "--trino",
            "http://127.0.0.1:9",
            "--user",
            "floe",
        ],
        &[("FLOE_TEST_PANIC", "frame")],
        80,
        24,
    );
    let status = pty.wait_exit(Duration::from_secs(20));
    assert!(!status.success(), "{status:?}");
    // The report comes last, after the terminal was given back.
    let out = pty.wait_output("the panic's report", Duration::from_secs(10), |o| {
        o.contains("a deliberate panic after the first frame")
    });
    assert!(out.contains("\x1b[?1000h"), "mouse capture was on: {out:?}");
    let report = out.find("a deliberate panic").unwrap();
    assert!(
        out[..report].contains("\x1b[?1049l"),
        "the screen was left before the report: {out:?}"
    );
    pty.assert_restored();
    pty.assert_no_mouse_capture();
}

/// A panic inside an effect (FLOE_TEST_PANIC=effect makes the first table-stats or
/// file read panic): an error on that row and in the status line, the refresh ends, floe goes on.
#[test]
fn a_panicking_effect_is_an_error_on_its_row() {
    let url = lab().trino_url();
    let mut pty = Pty::spawn_env(
        &lab_args(&url, "floe"),
        &[("FLOE_TEST_PANIC", "effect")],
        120,
        30,
    );
    let s = pty.wait_for(
        "the refresh to end with the panic as an error",
        Duration::from_secs(60),
        |s| s.contains("internal error") && !s.contains("refreshing"),
    );
    assert!(s.contains("FLOE_TEST_PANIC"), "{s}");
    let on_rows = |s: &str| {
        s.lines()
            .skip(3)
            // A table whose file read panicked keeps what its survey read: "re-read
            // failed"; one with nothing read yet says the error itself.
            .any(|l| {
                !l.starts_with("ERROR")
                    && (l.contains("! internal error") || l.contains("! re-read fail"))
            })
    };
    assert!(on_rows(&s), "the failed row shows the error:\n{s}");
    assert!(
        s.lines()
            .any(|l| l.starts_with("ERROR") && l.contains("internal error")),
        "the status line shows it:\n{s}"
    );
    alive(&mut pty);
    assert!(pty.is_raw(), "the terminal stays floe's");
    assert!(
        !pty.output().contains("\x1b[?1049l"),
        "the screen was not left"
    );
    // The next refresh loads that table again.
    pty.send(b"r");
    pty.wait_for("the table again after r", Duration::from_secs(60), |s| {
        !s.contains("refreshing") && !on_rows(s)
    });
    quit_restored(pty);
}

/// A configuration error: floe exits 1 before taking the terminal, naming the key and
/// the file.
fn config_error(test: &str, toml: &str, needles: &[&str], within: Duration) {
    let dir = scratch(test);
    let config = dir.join("config.toml");
    std::fs::write(&config, toml).unwrap();
    let path = config.to_str().unwrap();
    let mut pty = Pty::spawn(&["--config", path], 80, 24);
    let status = pty.wait_exit(within);
    assert_eq!(status.code(), Some(1), "{status:?}: {}", pty.output());
    std::thread::sleep(Duration::from_millis(200));
    let out = pty.output();
    for n in needles.iter().chain([&path]) {
        assert!(out.contains(n), "{test}: no {n:?} in {out:?}");
    }
    pty.assert_never_raw();
}

#[test]
fn config_unknown_key_names_the_key_and_the_file() {
    config_error(
        "unknown",
        "[trino]\nurl = \"http://127.0.0.1:9\"\nuserr = \"floe\"\n",
        &["userr"],
        Duration::from_secs(10),
    );
}

#[test]
fn config_bad_type_names_the_key_and_the_file() {
    config_error(
        "badtype",
        "mouse = \"yes\"\n[trino]\nurl = \"http://127.0.0.1:9\"\n",
        &["mouse"],
        Duration::from_secs(10),
    );
}

/// A password_command that never answers (a vault waiting for a login) is killed at its
/// timeout, with an error naming it.
#[test]
fn config_hung_password_command_times_out_naming_the_key() {
    let start = Instant::now();
    config_error(
        "hung",
        "[trino]\nurl = \"https://127.0.0.1:9\"\npassword_command = \"sleep 600\"\n",
        &["trino.password_command", "did not finish"],
        Duration::from_secs(60),
    );
    assert!(start.elapsed() < Duration::from_secs(45));
}
