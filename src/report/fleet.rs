//! `floe check --all` (or a group of profiles): every profile's check at once, each within
//! its own deadline, so an unreachable or slow cluster is UNKNOWN for itself only and never
//! delays the others' verdicts. One block per cluster in text and markdown, one document
//! with every profile's report in JSON, one textfile whose samples carry their `profile`.

use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};

use super::prometheus::Textfile;
use super::{Format, Report, TrinoInfo, worst};
use crate::config::{ConfigError, Settings};
use crate::health::Severity;

/// The reports of several clusters, in the order of their profiles.
#[derive(Clone, Debug)]
pub struct FleetReport {
    pub generated_at: DateTime<Utc>,
    pub reports: Vec<Report>,
}

/// Every profile's check at once ([`super::check::run_cached`] each, with its own timeout).
/// A profile whose settings could not be loaded (its secret's variable unset, a failing
/// `password_command`) is UNKNOWN for its own reason; the others are checked.
pub async fn run(
    fleet: &[(String, Result<Settings, ConfigError>)],
    globs: &[String],
    timeout: Duration,
    cached_max_age: Option<Duration>,
) -> FleetReport {
    let reports = futures::future::join_all(fleet.iter().map(|(name, s)| async move {
        match s {
            Ok(s) => super::check::run_cached(s, globs, timeout, cached_max_age).await,
            Err(e) => unloaded(name, e),
        }
    }))
    .await;
    FleetReport {
        generated_at: Utc::now(),
        reports,
    }
}

/// The report of a check that could not start: the profile's settings (or the whole
/// configuration, `profile` then naming what was asked for) did not load. UNKNOWN, with
/// the reason.
pub fn unloaded(profile: &str, e: &ConfigError) -> Report {
    Report {
        generated_at: Utc::now(),
        profile: profile.to_string(),
        trino: TrinoInfo {
            url: String::new(),
            version: None,
            uptime_seconds: None,
        },
        airflow: None,
        tables: Vec::new(),
        dags: Vec::new(),
        findings: Vec::new(),
        connections: Vec::new(),
        fatal: Some(format!("profile {profile} not loaded: {e}")),
        warnings: Vec::new(),
    }
}

impl FleetReport {
    /// The worst cluster's status (CRITICAL over WARNING over UNKNOWN over OK).
    pub fn status(&self) -> Severity {
        self.reports
            .iter()
            .map(Report::status)
            .fold(Severity::Ok, worst)
    }

    pub fn exit_code(&self) -> i32 {
        self.status().exit_code()
    }

    /// `CRITICAL: 2 clusters: lab CRITICAL, second UNKNOWN`
    pub fn summary_line(&self) -> String {
        let each: Vec<String> = self
            .reports
            .iter()
            .map(|r| format!("{} {}", r.profile, r.status().label()))
            .collect();
        format!(
            "{}: {} clusters: {}",
            self.status().label(),
            self.reports.len(),
            each.join(", ")
        )
    }

    /// As [`Report::render`], every server string made safe the same way.
    pub fn render(&self, format: Format) -> String {
        let out = match format {
            Format::Text => self.blocks(|r| r.text(), |p| format!("== profile {p} ==\n")),
            Format::Markdown => self.blocks(
                |r| r.markdown(),
                |p| format!("# profile {}\n\n", super::markdown_writer::code(p)),
            ),
            Format::Prometheus => {
                let mut t = Textfile::default();
                for r in &self.reports {
                    r.prometheus_into(&mut t);
                }
                t.render()
            }
            Format::Json => {
                let j = serde_json::json!({
                    "status": self.status(),
                    "summary": self.summary_line(),
                    "generated_at": self.generated_at.to_rfc3339_opts(SecondsFormat::Secs, true),
                    "profiles": self.reports.iter().map(Report::json_value).collect::<Vec<_>>(),
                });
                let mut s = serde_json::to_string_pretty(&j).expect("report serializes");
                s.push('\n');
                return crate::text::json_escape_unsafe(&s);
            }
        };
        crate::text::sanitize(&out).into_owned()
    }

    /// The summary line, then each cluster's report under its heading.
    fn blocks(&self, body: impl Fn(&Report) -> String, heading: impl Fn(&str) -> String) -> String {
        let mut out = self.summary_line();
        out.push('\n');
        for r in &self.reports {
            out.push('\n');
            out.push_str(&heading(&r.profile));
            out.push_str(&body(r));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::report as sample;

    fn unreachable(profile: &str) -> Report {
        Report {
            profile: profile.into(),
            trino: TrinoInfo {
                url: "http://127.0.0.1:9/".into(),
                version: None,
                uptime_seconds: None,
            },
            tables: Vec::new(),
            dags: Vec::new(),
            findings: Vec::new(),
            fatal: Some(
                "cannot connect to Trino at http://127.0.0.1:9/: connection refused".into(),
            ),
            ..sample()
        }
    }

    fn fleet(reports: Vec<Report>) -> FleetReport {
        FleetReport {
            generated_at: reports[0].generated_at,
            reports,
        }
    }

    #[test]
    fn the_worst_cluster_decides_and_an_unreachable_one_is_unknown_for_itself() {
        let mut crit = sample();
        crit.profile = "prod-eu".into();
        assert_eq!(crit.status(), Severity::Critical);
        let f = fleet(vec![crit.clone(), unreachable("prod-us")]);
        assert_eq!(f.exit_code(), 2);
        assert_eq!(
            f.summary_line(),
            "CRITICAL: 2 clusters: prod-eu CRITICAL, prod-us UNKNOWN"
        );
        // Alone, the unreachable cluster is UNKNOWN (3); OK beside it stays UNKNOWN.
        assert_eq!(fleet(vec![unreachable("prod-us")]).exit_code(), 3);
        let mut ok = unreachable("staging");
        ok.fatal = None;
        assert_eq!(ok.status(), Severity::Ok);
        assert_eq!(fleet(vec![ok.clone(), unreachable("x")]).exit_code(), 3);
        assert_eq!(fleet(vec![ok]).exit_code(), 0);
    }

    #[test]
    fn text_has_one_block_per_cluster_and_json_one_report_per_profile() {
        let mut a = sample();
        a.profile = "prod-eu".into();
        let f = fleet(vec![a, unreachable("prod-us")]);
        let text = f.render(Format::Text);
        assert!(text.starts_with("CRITICAL: 2 clusters: prod-eu CRITICAL, prod-us UNKNOWN\n"));
        let eu = text
            .find("== profile prod-eu ==\nCRITICAL: ")
            .expect("eu block");
        let us = text
            .find("== profile prod-us ==\nUNKNOWN: cannot connect to Trino at http://127.0.0.1:9/")
            .expect("us block");
        assert!(eu < us, "{text}");

        let j: serde_json::Value = serde_json::from_str(&f.render(Format::Json)).unwrap();
        assert_eq!(j["status"], "CRITICAL");
        let p = j["profiles"].as_array().unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!(p[0]["profile"], "prod-eu");
        assert_eq!(p[0]["status"], "CRITICAL");
        assert!(!p[0]["tables"].as_array().unwrap().is_empty());
        assert_eq!(p[1]["profile"], "prod-us");
        assert_eq!(p[1]["status"], "UNKNOWN");
        assert!(
            p[1]["error"]
                .as_str()
                .unwrap()
                .contains("connection refused")
        );
    }

    #[test]
    fn the_textfile_has_each_family_once_and_every_sample_its_profile() {
        let mut a = sample();
        a.profile = "prod-eu".into();
        let mut b = sample();
        b.profile = "prod-\"us\"\n".into();
        let p = fleet(vec![a, b, unreachable("dr")]).render(Format::Prometheus);
        for family in ["floe_check_success", "floe_table_status"] {
            assert_eq!(
                p.matches(&format!("# TYPE {family} gauge\n")).count(),
                1,
                "{family}: {p}"
            );
        }
        assert!(
            p.contains("floe_check_success{profile=\"prod-eu\"} 1\n"),
            "{p}"
        );
        assert!(p.contains("floe_check_success{profile=\"dr\"} 0\n"), "{p}");
        assert!(
            p.contains(r#"floe_table_status{profile="prod-\"us\"\n",catalog="iceberg",schema="zoning",table="broken"} 3"#),
            "{p}"
        );
        for line in p.lines().filter(|l| !l.starts_with('#')) {
            assert!(
                line.contains("{profile=\""),
                "a sample without its profile: {line}"
            );
        }
    }
}
