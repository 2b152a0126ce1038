//! The terminals bastions have, end to end: the real binary in an 80x24 pseudo-terminal
//! against the lab (real Trino and Airflow 3). With a locale that is not UTF-8 floe writes
//! no byte above 0x7f, whatever the tab (borders, the snapshots chart, ✓ ✗ ‖ ◆, a
//! partition value like `Zürich-東京`); on a Linux console (`TERM=linux`) its colours are
//! the 16 ANSI ones, never 38;5 or 38;2; with `NO_COLOR` no colour at all.

use crate::common;
use crate::common::pty::Pty;

use std::time::Duration;

use common::lab;

/// floe against the lab's real Trino (the seed schemas) and its Airflow 3.
fn spawn(env: &[(&str, &str)], extra: &[&str]) -> Pty {
    let url = lab().trino_url();
    let a = &lab().v["airflow"];
    let af = a["url"].as_str().unwrap().to_string();
    let user = a["user"].as_str().unwrap().to_string();
    let pw = a["password"].as_str().unwrap().to_string();
    let mut args = vec![
        "--trino",
        &url,
        "--user",
        "floe",
        "--airflow",
        &af,
        "--airflow-user",
        &user,
        "--schema",
        "zoning",
        "--schema",
        "finance",
    ];
    args.extend_from_slice(extra);
    let mut env = env.to_vec();
    env.push(("FLOE_AIRFLOW_PASSWORD", pw.as_str()));
    Pty::spawn_env(&args, &env, 80, 24)
}

/// Every tab once, the snapshots chart of documents and the partitions of
/// finance.budget (whose values hold quotes, `Zürich-東京`, escapes); then quit.
fn walk_every_tab(pty: &mut Pty, ascii: bool) {
    pty.wait_for("documents CRITICAL", Duration::from_secs(90), |s| {
        s.lines()
            .any(|l| l.contains("zoning.documents") && l.contains("CRIT"))
    });
    pty.send(b"/documents\r");
    pty.send(b"\r");
    pty.wait_for("partitions of documents", Duration::from_secs(30), |s| {
        s.contains("district=")
    });
    pty.send(b"3");
    pty.wait_for("the chart of documents", Duration::from_secs(30), |s| {
        s.contains("since the last compaction") && s.contains("runs of compact_documents")
    });
    pty.send(b"4");
    pty.wait_for("the DAGs", Duration::from_secs(60), |s| {
        s.contains("compact_documents") && s.contains("failed")
    });
    pty.send(b"0");
    pty.wait_for("the incidents", Duration::from_secs(90), |s| {
        s.contains("DAG compact_documents failing")
    });
    pty.send(b"1");
    // The filter prompt opens on the last filter (`documents`): rubbed out, then budget.
    pty.send(b"/\x7f\x7f\x7f\x7f\x7f\x7f\x7f\x7f\x7fbudget\r");
    pty.send(b"\r");
    let s = pty.wait_for("partitions of budget", Duration::from_secs(30), |s| {
        s.contains("Partitions: budget") && s.contains("north")
    });
    if ascii {
        // A server's non-ASCII keeps its columns as `?`: ü one, each of 東京 two.
        assert!(s.contains("Z?rich-????"), "{s}");
    } else {
        assert!(s.contains("Zürich-東京"), "{s}");
    }
    pty.send(b"q");
    let status = pty.wait_exit(Duration::from_secs(10));
    assert!(status.success(), "{status:?}");
    pty.assert_restored();
}

/// The parameters of every SGR (`ESC [ … m`) in `raw`.
fn sgr_params(raw: &[u8]) -> Vec<Vec<u32>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i + 1 < raw.len() {
        if raw[i] == 0x1b && raw[i + 1] == b'[' {
            let mut j = i + 2;
            while j < raw.len() && (0x20..=0x3f).contains(&raw[j]) {
                j += 1;
            }
            if j < raw.len() && raw[j] == b'm' {
                let p = String::from_utf8_lossy(&raw[i + 2..j]);
                out.push(
                    p.split([';', ':'])
                        .map(|n| n.parse().unwrap_or(0))
                        .collect(),
                );
            }
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

fn is_colour(p: u32) -> bool {
    matches!(p, 30..=38 | 40..=48 | 90..=97 | 100..=107)
}

#[test]
fn a_c_locale_gets_ascii_on_every_tab() {
    // LC_ALL over the UTF-8 LANG the terminal helper sets: the C library's order.
    let mut pty = spawn(&[("LC_ALL", "C")], &[]);
    walk_every_tab(&mut pty, true);
    let raw = pty.raw.lock().unwrap().clone();
    let bad: Vec<(usize, u8)> = raw
        .iter()
        .copied()
        .enumerate()
        .filter(|(_, b)| *b > 0x7f)
        .take(5)
        .collect();
    assert!(
        bad.is_empty(),
        "non-ASCII bytes at {bad:?} of {}; around the first: {:?}",
        raw.len(),
        String::from_utf8_lossy(&raw[bad[0].0.saturating_sub(40)..(bad[0].0 + 40).min(raw.len())])
    );
}

#[test]
fn ascii_by_the_flag_under_a_utf8_locale() {
    let mut pty = spawn(&[], &["--ascii"]);
    pty.wait_for("the first frame", Duration::from_secs(60), |s| {
        s.contains("0 Triage")
    });
    pty.send(b"q");
    pty.wait_exit(Duration::from_secs(10));
    let raw = pty.raw.lock().unwrap().clone();
    assert!(raw.is_ascii(), "{}", String::from_utf8_lossy(&raw));
}

#[test]
fn a_linux_console_gets_the_16_ansi_colours_only() {
    // NO_COLOR empty is unset (no-color.org): colours on.
    let mut pty = spawn(&[("TERM", "linux"), ("NO_COLOR", "")], &[]);
    walk_every_tab(&mut pty, false);
    let raw = pty.raw.lock().unwrap().clone();
    let sgrs = sgr_params(&raw);
    let extended: Vec<&Vec<u32>> = sgrs
        .iter()
        .filter(|p| p.contains(&38) || p.contains(&48))
        .collect();
    assert!(extended.is_empty(), "256-colour or RGB SGRs: {extended:?}");
    // The colours are there: CRIT in red, the chart line in yellow.
    assert!(
        sgrs.iter().flatten().any(|&p| p == 31 || p == 91),
        "{sgrs:?}"
    );
    assert!(
        sgrs.iter().flatten().any(|&p| p == 33 || p == 93),
        "{sgrs:?}"
    );
}

#[test]
fn no_color_writes_no_colour_sgr() {
    let mut pty = spawn(&[("TERM", "xterm-256color"), ("NO_COLOR", "1")], &[]);
    walk_every_tab(&mut pty, false);
    let raw = pty.raw.lock().unwrap().clone();
    let sgrs = sgr_params(&raw);
    let coloured: Vec<&Vec<u32>> = sgrs
        .iter()
        .filter(|p| p.iter().any(|&c| is_colour(c)))
        .collect();
    assert!(
        coloured.is_empty(),
        "colour SGRs under NO_COLOR: {coloured:?}"
    );
    // Emphasis still is: bold and reverse video carry severity and the selection.
    assert!(sgrs.iter().flatten().any(|&p| p == 7), "{sgrs:?}");
}
