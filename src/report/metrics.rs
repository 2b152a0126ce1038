//! Every metric floe writes, in one place: the families of `floe check --format
//! prometheus`'s textfile (which `floe serve` serves too, per cluster) and the exporter's own
//! health. The writers look a family's type and help up here by name, so a metric cannot be
//! written without being listed, and what reads the names — the shipped alert rules, their
//! `promtool` unit tests, the Grafana dashboard — is checked against this list: a renamed
//! metric fails those checks instead of silencing an alert.

/// How a family's samples behave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Gauge,
    /// A sample that only grows (its name ends in `_total`).
    Counter,
}

/// Who writes a family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// A check's report: the textfile, and `floe serve` from each cluster's last refresh.
    Report,
    /// `floe serve` alone: its own health and cost, per cluster.
    Exporter,
}

/// One family: its sample name, type, writer, labels (in the order written) and help.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Metric {
    pub name: &'static str,
    pub kind: Kind,
    pub source: Source,
    pub labels: &'static [&'static str],
    pub help: &'static str,
}

impl Metric {
    /// The family's name in OpenMetrics (a counter's without its `_total`).
    pub fn family(&self) -> &'static str {
        match self.kind {
            Kind::Counter => self.name.strip_suffix("_total").unwrap_or(self.name),
            Kind::Gauge => self.name,
        }
    }
}

const P: &[&str] = &["profile"];
const TABLE: &[&str] = &["profile", "catalog", "schema", "table"];
const DAG: &[&str] = &["profile", "dag_id"];

const fn gauge(name: &'static str, labels: &'static [&'static str], help: &'static str) -> Metric {
    Metric {
        name,
        kind: Kind::Gauge,
        source: Source::Report,
        labels,
        help,
    }
}

const fn own(
    name: &'static str,
    kind: Kind,
    labels: &'static [&'static str],
    help: &'static str,
) -> Metric {
    Metric {
        name,
        kind,
        source: Source::Exporter,
        labels,
        help,
    }
}

/// Every family, in the order they are written.
pub const METRICS: &[Metric] = &[
    gauge(
        "floe_check_success",
        P,
        "1 when floe reached Trino and evaluated the tables, 0 otherwise.",
    ),
    gauge(
        "floe_check_timestamp_seconds",
        P,
        "When this report was generated (Unix time).",
    ),
    gauge(
        "floe_table_format",
        &["profile", "catalog", "schema", "table", "format"],
        "Always 1: the table's format (iceberg, delta) as a label, to join on.",
    ),
    gauge(
        "floe_table_status",
        TABLE,
        "Health status: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.",
    ),
    gauge(
        "floe_table_health_score",
        TABLE,
        "Health score 0-100 (100 minus the penalties of the findings).",
    ),
    gauge(
        "floe_table_data_files",
        TABLE,
        "Data files in the current snapshot.",
    ),
    gauge(
        "floe_table_small_files",
        TABLE,
        "Data files below small_file_ratio x the table's target file size.",
    ),
    gauge(
        "floe_table_total_bytes",
        TABLE,
        "Bytes of data files in the current snapshot.",
    ),
    gauge(
        "floe_table_records",
        TABLE,
        "Records in data files (before deletes).",
    ),
    gauge(
        "floe_table_partitions",
        TABLE,
        "Partitions holding data files.",
    ),
    gauge(
        "floe_table_small_file_partitions",
        TABLE,
        "Partitions holding at least min_small_files small files.",
    ),
    gauge(
        "floe_table_delete_files",
        TABLE,
        "Delete files (merge-on-read).",
    ),
    gauge(
        "floe_table_snapshots",
        TABLE,
        "Snapshots in the table's metadata.",
    ),
    gauge(
        "floe_table_last_compaction_age_hours",
        TABLE,
        "Hours since the last compaction (a replace snapshot that rewrote data files); +Inf when a table with data was never compacted.",
    ),
    gauge(
        "floe_table_small_files_waiting_hours",
        TABLE,
        "Hours the oldest live small data file has waited for compaction (0 when the verdict says no compaction waits: none is small, or none could be merged). A partial optimize resets last_compaction_age_hours but not this: alert on this one.",
    ),
    gauge(
        "floe_table_last_write_age_hours",
        TABLE,
        "Hours since the last snapshot that added or removed data.",
    ),
    gauge(
        "floe_table_finding",
        &["profile", "catalog", "schema", "table", "rule"],
        "A finding of the table's verdict, by its rule's id (the ids of floe check --format json): its severity, 0 OK or INFO, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.",
    ),
    gauge(
        "floe_table_maintenance_dag",
        &["profile", "catalog", "schema", "table", "dag_id"],
        "1 for the Airflow DAG that maintains the table (configured, or found by its tags).",
    ),
    gauge(
        "floe_dag_status",
        DAG,
        "Maintenance DAG status: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.",
    ),
    gauge(
        "floe_dag_last_success_age_hours",
        DAG,
        "Hours since the DAG's last successful run; +Inf when none in the window.",
    ),
    gauge(
        "floe_dag_failed_runs",
        DAG,
        "Failed runs among the runs floe read.",
    ),
    gauge(
        "floe_dag_finding",
        &["profile", "dag_id", "rule"],
        "A finding of the DAG's verdict, by its rule's id: its severity, 0 OK or INFO, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.",
    ),
    gauge(
        "floe_airflow_connection_test_success",
        &["profile", "connection", "endpoint"],
        "Airflow's test of its Trino connection: 1 passed, 0 failed (absent when Airflow does not test it).",
    ),
    own(
        "floe_up",
        Kind::Gauge,
        P,
        "1 when floe's last refresh of the cluster listed its tables, 0 when it could not (Trino unreachable, refused, or the listing failed).",
    ),
    own(
        "floe_last_refresh_age_seconds",
        Kind::Gauge,
        P,
        "Seconds since the cluster's last refresh that listed its tables ended (since floe serve started, before the first).",
    ),
    own(
        "floe_refresh_period_seconds",
        Kind::Gauge,
        P,
        "How often floe serve refreshes the cluster (the config's refresh).",
    ),
    own(
        "floe_refresh_duration_seconds",
        Kind::Gauge,
        P,
        "How long the cluster's last refresh took (Trino and Airflow).",
    ),
    own(
        "floe_refreshes_total",
        Kind::Counter,
        P,
        "Refreshes of the cluster that ended, failed or not.",
    ),
    own(
        "floe_refresh_failures_total",
        Kind::Counter,
        P,
        "Refreshes of the cluster that could not list its tables.",
    ),
    own(
        "floe_read_errors",
        Kind::Gauge,
        P,
        "Tables whose last read failed (their last good verdict is served).",
    ),
    own(
        "floe_airflow_up",
        Kind::Gauge,
        P,
        "1 when the last refresh read the cluster's Airflow, 0 when it could not (absent without Airflow).",
    ),
    own(
        "floe_statements_total",
        Kind::Counter,
        P,
        "Statements floe serve sent the cluster's coordinator.",
    ),
    own(
        "floe_coordinator_planning_seconds_total",
        Kind::Counter,
        P,
        "Planning time of floe serve's statements, as the coordinator reports it.",
    ),
    own(
        "floe_coordinator_cpu_seconds_total",
        Kind::Counter,
        P,
        "Task CPU time of floe serve's statements, as the coordinator reports it.",
    ),
    own(
        "floe_config_last_reload_successful",
        Kind::Gauge,
        P,
        "0 when the last SIGHUP could not load the config (the one before is still served), else 1.",
    ),
];

/// The family of `name` (a sample name, `_total` included for a counter).
///
/// # Panics
/// When `name` is not in [`METRICS`]: a family is listed before it is written.
pub fn metric(name: &str) -> &'static Metric {
    METRICS
        .iter()
        .find(|m| m.name == name)
        .unwrap_or_else(|| panic!("metric {name} is not in report::metrics::METRICS"))
}

/// Every metric name in `text` (a rule file, a dashboard, an exposition): the words that
/// start with `floe_`, as written (PromQL's `floe_x{…}`, `rate(floe_y_total[5m])`).
pub fn names_in(text: &str) -> std::collections::BTreeSet<&str> {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out = std::collections::BTreeSet::new();
    let mut rest = text;
    while let Some(i) = rest.find("floe_") {
        let before = rest[..i].chars().next_back();
        let word_end = rest[i..]
            .find(|c: char| !ident(c))
            .map_or(rest.len(), |n| i + n);
        if !before.is_some_and(ident) {
            out.insert(&rest[i..word_end]);
        }
        rest = &rest[word_end..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_fit_both_formats() {
        let mut seen = std::collections::HashSet::new();
        for m in METRICS {
            assert!(seen.insert(m.name), "{} listed twice", m.name);
            assert!(m.name.starts_with("floe_"), "{}", m.name);
            assert!(
                m.labels.first() == Some(&"profile"),
                "{}: no profile",
                m.name
            );
            // OpenMetrics reserves these suffixes for the samples of other types.
            let reserved = ["_count", "_sum", "_bucket", "_created", "_info"];
            assert!(
                !reserved.iter().any(|s| m.name.ends_with(s)),
                "{}: a suffix OpenMetrics reserves",
                m.name
            );
            assert_eq!(
                m.name.ends_with("_total"),
                m.kind == Kind::Counter,
                "{}: a counter's name ends in _total, and only a counter's",
                m.name
            );
            // Help goes out unescaped in both formats: nothing in it may need escaping.
            assert!(
                !m.help.contains(['\\', '"', '\n']) && !m.help.is_empty(),
                "{}",
                m.name
            );
        }
        assert_eq!(metric("floe_statements_total").family(), "floe_statements");
        assert_eq!(metric("floe_up").family(), "floe_up");
    }

    #[test]
    fn names_in_finds_metric_words_only() {
        let expr = "rate(floe_statements_total[5m]) * on(profile) group_left floe_up{profile=\"a\"} + my_floe_x";
        let names: Vec<&str> = names_in(expr).into_iter().collect();
        assert_eq!(names, vec!["floe_statements_total", "floe_up"]);
    }
}
