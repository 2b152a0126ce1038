use std::sync::Arc;
use std::time::Duration;

use chrono::{TimeZone, Utc};

use super::*;
use crate::report::prometheus::prom_escape;
use crate::trino::Cost;

/// Every server string is hostile: nothing a terminal or a parser acts on gets through.
fn assert_clean(text: &str) {
    for (i, c) in text.char_indices() {
        assert!(
            c == '\n' || !crate::text::is_unsafe(c),
            "a control character {c:?} at {i} in:\n{text}"
        );
    }
}

fn published(profile: &str, families: Vec<(usize, String)>) -> Arc<Published> {
    let at = Utc.with_ymd_and_hms(2026, 3, 1, 12, 0, 0).unwrap();
    Arc::new(Published {
        profile: profile.to_string(),
        labels: format!("{{profile=\"{}\"}}", prom_escape(profile)),
        period: Duration::from_secs(120),
        started: at,
        last_ok: Some(at),
        up: Some(true),
        airflow_up: None,
        refreshes: 7,
        failures: 1,
        read_errors: Some(0),
        duration: Some(Duration::from_millis(1500)),
        cost: Cost {
            statements: 12,
            planning_ms: 300,
            cpu_ms: 2500,
            elapsed_ms: 4000,
        },
        families,
        summary: "OK".into(),
    })
}

fn index(name: &str) -> usize {
    METRICS.iter().position(|m| m.name == name).unwrap()
}

#[test]
fn the_accept_header_chooses_the_format() {
    assert_eq!(negotiate(None), Format::Text);
    assert_eq!(negotiate(Some("text/plain")), Format::Text);
    assert_eq!(negotiate(Some("*/*")), Format::Text);
    assert_eq!(
        negotiate(Some("application/openmetrics-text;version=1.0.0")),
        Format::OpenMetrics
    );
    // Prometheus' own header (2.42).
    assert_eq!(
        negotiate(Some(
            "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
        )),
        Format::OpenMetrics
    );
    assert_eq!(
        negotiate(Some("text/plain;q=1, application/openmetrics-text;q=0.5")),
        Format::Text
    );
    // A version floe does not write, or a refused one.
    assert_eq!(
        negotiate(Some("application/openmetrics-text;version=2.0.0")),
        Format::Text
    );
    assert_eq!(
        negotiate(Some("application/openmetrics-text;q=0")),
        Format::Text
    );
    assert_eq!(negotiate(Some("garbage;;;=,")), Format::Text);
}

#[test]
fn each_family_once_with_every_clusters_samples() {
    let i = index("floe_table_status");
    let a = published(
        "prod",
        vec![(
            i,
            "floe_table_status{profile=\"prod\",catalog=\"c\",schema=\"s\",table=\"t\"} 2\n".into(),
        )],
    );
    let b = published(
        "dr",
        vec![(
            i,
            "floe_table_status{profile=\"dr\",catalog=\"c\",schema=\"s\",table=\"t\"} 0\n".into(),
        )],
    );
    let now = Utc.with_ymd_and_hms(2026, 3, 1, 12, 1, 30).unwrap();
    let text = render(&[a.clone(), b.clone()], Format::Text, now, true);
    assert_eq!(
        text.matches("# TYPE floe_table_status gauge").count(),
        1,
        "{text}"
    );
    assert!(text.contains("profile=\"prod\",catalog=\"c\",schema=\"s\",table=\"t\"} 2\n"));
    assert!(text.contains("profile=\"dr\",catalog=\"c\",schema=\"s\",table=\"t\"} 0\n"));
    // The exporter's own, computed at the scrape: the age counts from the last refresh.
    assert!(
        text.contains("floe_last_refresh_age_seconds{profile=\"prod\"} 90.000\n"),
        "{text}"
    );
    assert!(text.contains("floe_up{profile=\"dr\"} 1\n"));
    assert!(text.contains(
        "# TYPE floe_statements_total counter\nfloe_statements_total{profile=\"prod\"} 12\n"
    ));
    assert!(text.contains("floe_coordinator_cpu_seconds_total{profile=\"prod\"} 2.500\n"));
    assert!(!text.contains("# EOF"));
    // Every sample carries its profile.
    for l in text.lines().filter(|l| !l.starts_with('#')) {
        assert!(l.contains("{profile=\""), "{l}");
    }

    let om = render(&[a, b], Format::OpenMetrics, now, true);
    assert!(om.ends_with("# EOF\n"));
    // OpenMetrics names a counter's family without _total; its samples keep it.
    assert!(
        om.contains("# TYPE floe_statements counter\nfloe_statements_total{profile=\"prod\"} 12\n"),
        "{om}"
    );
}

#[test]
fn a_cluster_before_its_first_refresh_has_no_up_sample() {
    let mut p = (*published("new", vec![])).clone();
    p.up = None;
    p.last_ok = None;
    p.duration = None;
    let text = render(&[Arc::new(p)], Format::Text, Utc::now(), false);
    assert!(!text.contains("floe_up{"), "{text}");
    assert!(text.contains("floe_last_refresh_age_seconds{profile=\"new\"}"));
    assert!(text.contains("floe_config_last_reload_successful{profile=\"new\"} 0\n"));
}

#[test]
fn a_hostile_label_value_cannot_break_the_exposition() {
    let hostile = "pr\"od\\\n\r\u{1b}[2J\u{7}\u{0}\u{9b}31m\u{202e}x";
    let e = prom_escape(hostile);
    assert_clean(&e);
    assert!(!e.contains('\n') && !e.contains('\r'));
    // Every quote inside is escaped: the value cannot end early.
    let unescaped_quote = e
        .char_indices()
        .any(|(i, c)| c == '"' && !e[..i].ends_with('\\'));
    assert!(!unescaped_quote, "{e}");
    let text = render(
        &[published(hostile, vec![])],
        Format::OpenMetrics,
        Utc::now(),
        true,
    );
    assert_clean(&text);
    for l in text.lines().filter(|l| !l.starts_with('#')) {
        assert!(
            l.starts_with("floe_") && l.contains("{profile=\"pr\\\"od\\\\"),
            "{l}"
        );
    }
}
