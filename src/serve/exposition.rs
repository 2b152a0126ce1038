//! What a scrape answers: every family of [`METRICS`] once, its samples from each cluster
//! (the report's as the cluster's last refresh rendered them; the exporter's own computed
//! now, from what the refresh left), in the Prometheus text format or OpenMetrics as the
//! scraper's `Accept` header prefers. Label values were escaped when they were rendered
//! ([`crate::report::prometheus::prom_escape`]: a server's control characters made
//! visible, then `\\`, `"` and newline escaped); nothing here reads a coordinator.

use std::fmt::Write as _;
use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::Published;
use crate::report::metrics::{Kind, METRICS, Metric, Source};

/// The exposition formats a scrape can ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Prometheus' text format 0.0.4.
    Text,
    /// OpenMetrics 1.0.0.
    OpenMetrics,
}

impl Format {
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Text => "text/plain; version=0.0.4; charset=utf-8",
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
        }
    }
}

/// The format an `Accept` header prefers: OpenMetrics when it names
/// `application/openmetrics-text` (of a version floe writes, or none) at least as high as
/// the text format, else the text format (what a missing or unknown header gets).
pub fn negotiate(accept: Option<&str>) -> Format {
    let Some(accept) = accept else {
        return Format::Text;
    };
    let (mut om, mut text) = (0.0f32, 0.0f32);
    for range in accept.split(',') {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or("").to_ascii_lowercase();
        let (mut q, mut version) = (1.0f32, None);
        for p in parts {
            match p.split_once('=').map(|(k, v)| (k.trim(), v.trim())) {
                Some((k, v)) if k.eq_ignore_ascii_case("q") => q = v.parse().unwrap_or(0.0),
                Some((k, v)) if k.eq_ignore_ascii_case("version") => version = Some(v.to_string()),
                _ => {}
            }
        }
        match media.as_str() {
            "application/openmetrics-text"
                if version
                    .as_deref()
                    .is_none_or(|v| v == "1.0.0" || v == "0.0.1") =>
            {
                om = om.max(q)
            }
            "text/plain" | "text/*" | "*/*" => text = text.max(q),
            _ => {}
        }
    }
    if om > 0.0 && om >= text {
        Format::OpenMetrics
    } else {
        Format::Text
    }
}

/// The exposition of `clusters` at `now` in `format`; `reload_ok`: whether the last SIGHUP
/// loaded the config.
pub fn render(
    clusters: &[Arc<Published>],
    format: Format,
    now: DateTime<Utc>,
    reload_ok: bool,
) -> String {
    let size: usize = clusters
        .iter()
        .flat_map(|c| c.families.iter().map(|(_, s)| s.len()))
        .sum();
    let mut out = String::with_capacity(size + 16 * 1024);
    for (index, m) in METRICS.iter().enumerate() {
        match m.source {
            Source::Report => {
                let chunks: Vec<&str> = clusters.iter().filter_map(|c| c.family(index)).collect();
                if chunks.is_empty() {
                    continue;
                }
                header(&mut out, m, format);
                for c in chunks {
                    out.push_str(c);
                }
            }
            Source::Exporter => {
                let samples: Vec<(&str, String)> = clusters
                    .iter()
                    .filter_map(|c| own(m.name, c, now, reload_ok).map(|v| (c.labels.as_str(), v)))
                    .collect();
                if samples.is_empty() {
                    continue;
                }
                header(&mut out, m, format);
                for (labels, value) in samples {
                    let _ = writeln!(out, "{}{labels} {value}", m.name);
                }
            }
        }
    }
    if format == Format::OpenMetrics {
        out.push_str("# EOF\n");
    }
    out
}

/// A family's `HELP` and `TYPE` lines (OpenMetrics names a counter's family without
/// `_total`; the help needs no escaping in either format: `METRICS` holds none to escape).
fn header(out: &mut String, m: &Metric, format: Format) {
    let (name, kind) = match (format, m.kind) {
        (Format::OpenMetrics, _) => (m.family(), m.kind),
        (Format::Text, k) => (m.name, k),
    };
    let kind = match kind {
        Kind::Gauge => "gauge",
        Kind::Counter => "counter",
    };
    let _ = writeln!(out, "# HELP {name} {}\n# TYPE {name} {kind}", m.help);
}

/// The value of the exporter's own family `name` for a cluster at `now` (`None`: no
/// sample, e.g. `floe_up` before the first refresh ended).
fn own(name: &str, c: &Published, now: DateTime<Utc>, reload_ok: bool) -> Option<String> {
    let bool = |b: bool| if b { "1" } else { "0" }.to_string();
    let secs = |ms: u64| format!("{:.3}", ms as f64 / 1000.0);
    Some(match name {
        "floe_up" => bool(c.up?),
        "floe_last_refresh_age_seconds" => {
            let since = c.last_ok.unwrap_or(c.started);
            secs((now - since).num_milliseconds().max(0) as u64)
        }
        "floe_refresh_period_seconds" => secs(c.period.as_millis() as u64),
        "floe_refresh_duration_seconds" => secs(c.duration?.as_millis() as u64),
        "floe_refreshes_total" => c.refreshes.to_string(),
        "floe_refresh_failures_total" => c.failures.to_string(),
        "floe_read_errors" => c.read_errors?.to_string(),
        "floe_airflow_up" => bool(c.airflow_up?),
        "floe_statements_total" => c.cost.statements.to_string(),
        "floe_coordinator_planning_seconds_total" => secs(c.cost.planning_ms),
        "floe_coordinator_cpu_seconds_total" => secs(c.cost.cpu_ms),
        "floe_config_last_reload_successful" => bool(reload_ok),
        other => unreachable!("{other} is not one of the exporter's own metrics"),
    })
}

#[cfg(test)]
mod tests;
