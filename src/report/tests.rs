use super::*;
use crate::health::{HealthConfig, Rule, evaluate};
use chrono::TimeZone;

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 29, 12, 0, 0).unwrap()
}

fn stale_stats() -> TableStats {
    TableStats {
        target_file_size: 128 << 20,
        data_files: 2000,
        small_files: 2000,
        total_bytes: 2000 * 4096,
        records: 100_000,
        partitioned: true,
        partitions: 140,
        small_file_partitions: 70,
        // 14 files a partition: none holds 100 more than its bytes need.
        critical_partitions: 0,
        snapshots: 16,
        oldest_snapshot: Some(now() - chrono::Duration::days(16)),
        newest_snapshot: Some(now() - chrono::Duration::hours(3)),
        last_compaction: Some(now() - chrono::Duration::days(15)),
        last_write: Some(now() - chrono::Duration::hours(3)),
        writes_since_compaction: 15,
        files_after_compaction: Some(140),
        trend: vec![],
        ..Default::default()
    }
}

pub(crate) fn report() -> Report {
    let cfg = HealthConfig::default();
    let docs = stale_stats();
    let ok = TableStats {
        target_file_size: 128 << 20,
        snapshots: 1,
        oldest_snapshot: Some(now()),
        ..Default::default()
    };
    let odd = TableRef::new("iceberg", "finance", "ledger \"q3\" it's-odd");
    Report {
        generated_at: now(),
        profile: "lab".into(),
        trino: TrinoInfo {
            url: "http://127.0.0.1:8080/".into(),
            version: Some("480".into()),
            uptime_seconds: Some(7200.0),
        },
        airflow: None,
        tables: vec![
            TableReport {
                table: TableRef::new("iceberg", "zoning", "documents"),
                health: evaluate(&docs, None, &cfg, now()),
                stats: Some(docs),
                error: None,
                dag: None,
                format: None,
            },
            TableReport {
                table: odd.clone(),
                health: evaluate(&ok, None, &cfg, now()),
                stats: Some(ok),
                error: None,
                dag: None,
                format: None,
            },
            TableReport {
                table: TableRef::new("iceberg", "zoning", "broken"),
                stats: None,
                health: Health {
                    status: Severity::Unknown,
                    score: 0,
                    findings: vec![],
                },
                error: Some(
                    "TABLE_NOT_FOUND: line 1:15: Table 'iceberg.zoning.broken' does not exist"
                        .into(),
                ),
                dag: None,
                format: None,
            },
        ],
        dags: vec![],
        findings: vec![],
        connections: vec![],
        fatal: None,
        warnings: vec![],
    }
}

#[test]
fn status_is_nagios_style() {
    let r = report();
    assert_eq!(r.status(), Severity::Critical);
    assert_eq!(r.exit_code(), 2);
    let mut r2 = report();
    r2.tables.remove(0);
    assert_eq!(
        r2.status(),
        Severity::Unknown,
        "an unreadable table makes an otherwise OK run UNKNOWN"
    );
    r2.tables.pop();
    assert_eq!(r2.status(), Severity::Ok);
    let mut r3 = report();
    r3.fatal = Some("cannot reach Trino at http://x/v1/info: connection refused".into());
    assert_eq!(r3.exit_code(), 3);
    assert!(
        r3.render(Format::Text)
            .starts_with("UNKNOWN: cannot reach Trino")
    );
}

#[test]
fn text_lists_worst_first_with_findings() {
    let t = report().render(Format::Text);
    let first_line = t.lines().next().unwrap();
    assert_eq!(
        first_line,
        "CRITICAL: 3 tables: 1 critical, 0 warning, 1 unknown, 1 ok"
    );
    let docs = t.find("iceberg.zoning.documents").unwrap();
    let odd = t
        .find("iceberg.finance.\"ledger \"\"q3\"\" it's-odd\"")
        .unwrap();
    assert!(docs < odd, "{t}");
    assert!(t.contains("15d"), "{t}");
    assert!(t.contains("[CRITICAL] compaction_stale"), "{t}");
    assert!(t.contains("TABLE_NOT_FOUND"), "{t}");
}

#[test]
fn json_has_the_documented_fields() {
    let j: serde_json::Value = serde_json::from_str(&report().render(Format::Json)).unwrap();
    assert_eq!(j["status"], "CRITICAL");
    assert_eq!(j["trino"]["version"], "480");
    assert_eq!(j["trino"]["uptime_seconds"], 7200.0);
    let t = &j["tables"][0];
    for k in [
        "catalog",
        "schema",
        "table",
        "status",
        "data_files",
        "small_files",
        "total_bytes",
        "records",
        "partitions",
        "small_file_partitions",
        "snapshots",
        "delete_files",
        "last_compaction_at",
        "last_compaction_age_hours",
        "last_write_at",
        "score",
        "findings",
    ] {
        assert!(t.get(k).is_some(), "missing {k}");
    }
    assert_eq!(t["table"], "documents");
    assert_eq!(t["data_files"], 2000);
    assert_eq!(t["last_compaction_age_hours"], 360.0);
    assert_eq!(t["last_compaction_at"], "2026-11-14T12:00:00.000Z");
    assert_eq!(t["findings"][0]["severity"], "CRITICAL");
    assert!(t["findings"][0]["rule"].is_string() && t["findings"][0]["message"].is_string());
    let broken = j["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["table"] == "broken")
        .unwrap();
    assert!(broken["data_files"].is_null());
    assert_eq!(broken["status"], "UNKNOWN");
}

#[test]
fn prometheus_textfile() {
    let p = report().render(Format::Prometheus);
    for name in [
        "floe_table_last_compaction_age_hours",
        "floe_table_small_files_waiting_hours",
        "floe_table_data_files",
        "floe_table_small_files",
        "floe_table_health_score",
        "floe_table_status",
        "floe_check_success",
    ] {
        assert!(p.contains(&format!("# HELP {name} ")), "{name}");
        assert!(p.contains(&format!("# TYPE {name} gauge")), "{name}");
    }
    assert!(p.contains(r#"floe_table_last_compaction_age_hours{profile="lab",catalog="iceberg",schema="zoning",table="documents"} 360.00"#), "{p}");
    assert!(p.contains(r#"table="ledger \"q3\" it's-odd""#), "{p}");
    assert!(p.contains("floe_check_success{profile=\"lab\"} 1"));
    assert!(
        p.contains(
            r#"floe_table_status{profile="lab",catalog="iceberg",schema="zoning",table="broken"} 3"#
        ),
        "{p}"
    );
    // Every sample line is `name{labels} value` or `name value`.
    for line in p.lines().filter(|l| !l.starts_with('#')) {
        let value = line.rsplit(' ').next().unwrap();
        assert!(
            value == "+Inf" || value.parse::<f64>().is_ok(),
            "bad sample {line}"
        );
    }
}

#[test]
fn a_partial_optimize_does_not_silence_the_waiting_small_files() {
    // Compacted an hour ago (one partition), while small files elsewhere wait for 5 days.
    let mut r = report();
    let t = &mut r.tables[0];
    let st = t.stats.as_mut().unwrap();
    st.last_compaction = Some(now() - chrono::Duration::hours(1));
    st.oldest_small_file_at = Some(now() - chrono::Duration::days(5));
    let (schema, table) = (t.table.schema.clone(), t.table.table.clone());
    let p = r.render(Format::Prometheus);
    let labels =
        format!(r#"{{profile="lab",catalog="iceberg",schema="{schema}",table="{table}"}}"#);
    assert!(
        p.contains(&format!(
            "floe_table_last_compaction_age_hours{labels} 1.00"
        )),
        "{p}"
    );
    assert!(
        p.contains(&format!(
            "floe_table_small_files_waiting_hours{labels} 120.00"
        )),
        "{p}"
    );
}

#[test]
fn the_status_line_of_a_fatal_error_is_one_line() {
    let mut r = report();
    r.fatal = Some("GENERIC_INTERNAL_ERROR: boom\r\nOK: 12 tables: 0 critical".into());
    let line = r.summary_line();
    assert_eq!(
        line,
        "UNKNOWN: GENERIC_INTERNAL_ERROR: boom OK: 12 tables: 0 critical"
    );
    let text = r.render(Format::Text);
    assert!(
        !text.lines().skip(1).any(|l| l.starts_with("OK:")),
        "{text}"
    );
}

#[test]
fn markdown_escapes_pipes() {
    let mut r = report();
    r.tables[1].table.table = "a|b".into();
    let m = r.render(Format::Markdown);
    assert!(m.contains("a\\|b"), "{m}");
    assert!(m.starts_with("## floe check: CRITICAL"));
}

/// A report whose every server-supplied string carries every control character floe must
/// neutralise: table, schema and DAG names, errors, log lines, findings, versions.
fn hostile_report() -> Report {
    let h = crate::text::hostile_sample();
    let mut r = report();
    r.profile = format!("p{h}");
    r.warnings = vec![format!("TLS verification is OFF{h}")];
    r.trino.version = Some(format!("480{h}"));
    r.airflow = Some(AirflowInfo {
        url: "http://127.0.0.1:8080/".into(),
        version: Some(format!("3{h}")),
        api: Some(crate::airflow::ApiVersion::V2),
        error: Some(format!("HTTP 500{h}")),
    });
    let facts = DagFacts {
        dag_id: format!("compact{h}"),
        guessed: false,
        paused: false,
        import_error: Some(format!("broken{h}")),
        last_run_state: Some(crate::airflow::DagRunState::parse(&format!("failed{h}"))),
        active_run: None,
        last_run_at: Some(now()),
        last_success_at: None,
        failed_runs: 14,
        failing_task: Some(format!("compact{h}")),
        error_line: Some(format!("ConnectionError{h}")),
        expected_interval: std::time::Duration::from_secs(86_400),
        code: None,
    };
    for t in &mut r.tables {
        t.table = TableRef::new(format!("ice{h}"), format!("zon{h}"), format!("doc{h}"));
        t.dag = Some(facts.clone());
        t.health.findings.push(Finding {
            rule: Rule::StaleDagFailing,
            severity: Severity::Critical,
            message: format!("its DAG is failing: {h}"),
            penalty: 10,
        });
    }
    r.tables[2].error = Some(format!("TABLE_NOT_FOUND{h}"));
    r.dags.push(DagReport {
        facts: facts.clone(),
        health: Health {
            status: Severity::Critical,
            score: 0,
            findings: vec![Finding {
                rule: Rule::DagFailing,
                severity: Severity::Critical,
                message: format!("failing{h}"),
                penalty: 50,
            }],
        },
        tables: vec![format!("iceberg.zoning.doc{h}")],
    });
    r.findings.push(Finding {
        rule: Rule::DagImportError,
        severity: Severity::Warning,
        message: format!("import error{h}"),
        penalty: 0,
    });
    r
}

#[test]
fn no_control_character_reaches_any_output() {
    let h = crate::text::hostile_sample();
    for fatal in [None, Some(format!("cannot reach Trino{h}"))] {
        let mut r = hostile_report();
        r.fatal = fatal;
        for format in [
            Format::Text,
            Format::Markdown,
            Format::Prometheus,
            Format::Json,
        ] {
            let out = r.render(format);
            assert!(
                crate::text::is_inert(&out),
                "{format:?} lets a control character through: {:?}",
                out.chars()
                    .filter(|c| crate::text::is_unsafe(*c))
                    .collect::<String>()
            );
        }
        assert!(crate::text::is_inert(&r.summary_line()) || r.fatal.is_some());
    }
    // The escapes are visible where an operator reads them.
    let text = hostile_report().render(Format::Text);
    assert!(text.contains("\\x1b]52;"), "{text}");
    assert!(text.contains("\\u{202e}"));
}

#[test]
fn json_keeps_the_real_strings() {
    let h = crate::text::hostile_sample();
    let out = hostile_report().render(Format::Json);
    let v: serde_json::Value = serde_json::from_str(&out).expect("valid JSON");
    let text = v.to_string();
    assert!(text.contains("compact") && serde_json::to_string(&v).is_ok());
    let dag = v["dags"][0]["dag_id"]
        .as_str()
        .or_else(|| v["tables"][0]["maintenance_dag"]["dag_id"].as_str());
    assert_eq!(dag, Some(format!("compact{h}").as_str()), "{out}");
}

#[test]
fn prometheus_labels_stay_parseable() {
    let out = hostile_report().render(Format::Prometheus);
    for line in out.lines().filter(|l| l.contains("table=\"")) {
        // Inside label values only \\, \" and \n are escapes.
        let labels = &line[line.find('{').unwrap() + 1..line.rfind('}').unwrap()];
        let mut chars = labels.chars();
        while let Some(c) = chars.next() {
            if c == '\\' {
                let next = chars.next();
                assert!(
                    matches!(next, Some('\\' | '"' | 'n')),
                    "bad escape in {line}"
                );
            }
        }
    }
}

#[test]
fn connection_warnings_come_right_after_the_summary() {
    let mut r = report();
    r.warnings = vec!["TLS certificate verification is OFF for Trino https://t/".into()];
    let text = r.render(Format::Text);
    assert_eq!(
        text.lines().nth(1),
        Some("WARNING: TLS certificate verification is OFF for Trino https://t/")
    );
    assert!(
        r.render(Format::Markdown)
            .contains("> **Warning:** TLS certificate")
    );
    let v: serde_json::Value = serde_json::from_str(&r.render(Format::Json)).unwrap();
    assert_eq!(
        v["warnings"][0],
        "TLS certificate verification is OFF for Trino https://t/"
    );
    assert!(
        serde_json::from_str::<serde_json::Value>(&report().render(Format::Json)).unwrap()
            ["warnings"]
            .is_null(),
        "no key when there is nothing to warn about"
    );
}

#[test]
fn served_families_of_hostile_names_hold_no_control_bytes() {
    let mut r = report();
    r.profile = "p\u{1b}]0;owned\u{7}".into();
    r.tables[0].table = TableRef::new("ice\"berg", "zo\nning", "doc\u{1b}[31m\\uments");
    for (_, lines) in crate::serve::families(&r) {
        for (i, c) in lines.char_indices() {
            assert!(
                c == '\n' || !crate::text::is_unsafe(c),
                "{c:?} at {i}: {lines}"
            );
        }
        for l in lines.lines() {
            assert!(l.starts_with("floe_") && l.contains("{profile=\"p"), "{l}");
        }
    }
}
