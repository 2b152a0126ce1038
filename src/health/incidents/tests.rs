use super::*;
use crate::app::testing::dags::{ERROR, failing_facts, ok_facts};
use crate::app::testing::{healthy_stats, incident_stats, t0, tref};
use crate::health::{HealthConfig, Rule, evaluate};

/// A table: its name, stats, verdict, read error and DAG.
type Row = (
    TableRef,
    Option<TableStats>,
    Option<Health>,
    Option<String>,
    Option<String>,
);

/// The lab's story: documents' DAG fails on a dead endpoint, permits' DAG swallows the
/// error, events' DAG is paused, two tables have no DAG, one table only keeps old
/// snapshots, one could not be read; Airflow has an import error and two connections at
/// the dead endpoint.
struct Lab {
    tables: Vec<Row>,
    dags: Vec<DagFacts>,
    findings: Vec<Finding>,
    fixed: BTreeMap<String, DateTime<Utc>>,
}

fn never_compacted(small: u64, days: i64) -> TableStats {
    TableStats {
        data_files: small,
        small_files: small,
        total_bytes: small * 3000,
        partitioned: true,
        partitions: 5,
        small_file_partitions: 5,
        // Partitions holding 100 small files more than their bytes need.
        critical_partitions: if small / 5 >= 100 { 5 } else { 0 },
        snapshots: 20,
        oldest_snapshot: Some(t0() - chrono::Duration::days(days)),
        newest_snapshot: Some(t0() - chrono::Duration::hours(3)),
        last_compaction: None,
        last_write: Some(t0() - chrono::Duration::hours(3)),
        oldest_small_file_at: Some(t0() - chrono::Duration::days(days)),
        ..incident_stats()
    }
}

fn bloat_only() -> TableStats {
    TableStats {
        data_files: 9,
        small_files: 9,
        snapshots: 3,
        oldest_snapshot: Some(t0() - chrono::Duration::days(35)),
        last_compaction: None,
        ..healthy_stats()
    }
}

fn conn(id: &str, failing: bool) -> Finding {
    Finding {
        rule: if failing {
            Rule::AirflowConnectionFailing
        } else {
            Rule::AirflowConnectionElsewhere
        },
        severity: if failing {
            Severity::Critical
        } else {
            Severity::Warning
        },
        message: if failing {
            format!(
                "Airflow connection {id} points at trino-old.internal:8080 and fails its test: failed to execute: HTTPConnectionPool(host='trino-old.internal', port=8080): Max retries exceeded — floe reached 127.0.0.1:8080"
            )
        } else {
            format!(
                "Airflow connection {id} points at trino-old.internal:8080 — floe reached 127.0.0.1:8080"
            )
        },
        penalty: 0,
    }
}

fn lab() -> Lab {
    let cfg = HealthConfig::default();
    let now = t0();
    let mut dags = vec![
        failing_facts(),
        ok_facts("compact_permits"),
        ok_facts("compact_parcels"),
        DagFacts {
            paused: true,
            last_run_state: None,
            active_run: None,
            last_run_at: None,
            last_success_at: None,
            ..ok_facts("expire_snapshots")
        },
    ];
    dags[0].guessed = true;
    let dag = |id: &str| dags.iter().find(|d| d.dag_id == id).cloned();
    let mut tables = Vec::new();
    let mut add = |t: TableRef, st: Option<TableStats>, dag_id: Option<&str>, err: Option<&str>| {
        let facts = dag_id.and_then(dag);
        let h = st.as_ref().map(|s| evaluate(s, facts.as_ref(), &cfg, now));
        let h = match err {
            Some(e) => Some(Health {
                status: Severity::Unknown,
                score: 0,
                findings: vec![Finding {
                    rule: Rule::Unreadable,
                    severity: Severity::Unknown,
                    message: format!("health query failed: {e}"),
                    penalty: 0,
                }],
            }),
            None => h,
        };
        tables.push((
            t,
            st,
            h,
            err.map(str::to_string),
            dag_id.map(str::to_string),
        ));
    };
    add(
        tref("zoning", "documents"),
        Some(incident_stats()),
        Some("compact_documents"),
        None,
    );
    add(
        tref("zoning", "permits"),
        Some(never_compacted(300, 20)),
        Some("compact_permits"),
        None,
    );
    add(
        tref("zoning", "parcels"),
        Some(healthy_stats()),
        Some("compact_parcels"),
        None,
    );
    add(
        tref("audit", "events"),
        Some(never_compacted(360, 60)),
        Some("expire_snapshots"),
        None,
    );
    add(
        tref("finance", "budget"),
        Some(never_compacted(168, 14)),
        None,
        None,
    );
    add(
        tref("zoning", "inspections"),
        Some(never_compacted(40, 10)),
        None,
        None,
    );
    add(tref("finance", "ledger"), Some(bloat_only()), None, None);
    add(
        tref("zoning", "gone"),
        None,
        None,
        Some("TABLE_NOT_FOUND: Table 'iceberg.zoning.gone' does not exist"),
    );
    add(
        tref("zoning", "staging"),
        Some(TableStats::default()),
        None,
        None,
    );
    let findings = vec![
        Finding {
            rule: Rule::DagImportError,
            severity: Severity::Critical,
            message: "import error in broken_dag.py: ModuleNotFoundError: No module named 'lakehouse_maintenance_helpers'".into(),
            penalty: 0,
        },
        conn("trino_documents", true),
        conn("trino_permits", true),
    ];
    Lab {
        tables,
        dags,
        findings,
        fixed: BTreeMap::new(),
    }
}

impl Lab {
    fn facts(&self) -> Facts<'_> {
        Facts {
            tables: self
                .tables
                .iter()
                .map(|(t, st, h, e, d)| TableFacts {
                    table: t,
                    stats: st.as_ref(),
                    health: h.as_ref(),
                    error: e.as_deref(),
                    dag_id: d.as_deref(),
                    suffered: None,
                    running: None,
                })
                .collect(),
            dags: self.dags.iter().collect(),
            findings: self.findings.iter().collect(),
            airflow: true,
            fixed: self.fixed.clone(),
        }
    }
}

fn tables_of(i: &Incident) -> Vec<&str> {
    i.tables.iter().map(|a| a.table.table.as_str()).collect()
}

#[test]
fn the_dead_endpoint_is_one_incident_first() {
    let lab = lab();
    let v = incidents(&lab.facts(), t0());
    let first = &v[0];
    assert_eq!(first.kind, Kind::Endpoint);
    assert_eq!(first.severity, Severity::Critical);
    assert_eq!(first.dags, vec!["compact_documents"]);
    assert_eq!(tables_of(first), vec!["documents"]);
    assert_eq!(
        first.summary(),
        "DAG compact_documents failing 14 runs (connection trino_documents → \
         trino-old.internal:8080, fails its test) → documents: 2,016 small files, waiting 15d"
    );
    // Both connections at the endpoint are its evidence, and no incident of their own.
    assert!(first.evidence.iter().any(|e| e.contains("trino_permits")));
    assert!(first.evidence.iter().any(|e| e.contains(ERROR)));
    assert!(
        !v.iter().any(|i| i.kind == Kind::Connection),
        "{:#?}",
        v.iter().map(|i| i.summary()).collect::<Vec<_>>()
    );
    assert_eq!(
        first.next,
        vec![
            Next::FixConnection {
                connections: vec!["trino_documents".into()],
                endpoint: Some("trino-old.internal:8080".into()),
            },
            Next::Trigger {
                dag_id: "compact_documents".into(),
                after_fix: true
            },
            Next::Optimize {
                table: tref("zoning", "documents")
            },
        ]
    );
    assert_eq!(
        first.jump,
        Jump::DagFailure {
            dag_id: "compact_documents".into()
        }
    );
    // Every table appears in one incident at most.
    let mut seen = BTreeSet::new();
    for i in &v {
        for t in &i.tables {
            assert!(seen.insert(t.table.clone()), "{} twice", t.table);
        }
    }
}

#[test]
fn every_cause_has_its_kind_in_rank_order() {
    let lab = lab();
    let v = incidents(&lab.facts(), t0());
    let kinds: Vec<(Kind, Severity, Vec<&str>)> = v
        .iter()
        .map(|i| (i.kind, i.severity, tables_of(i)))
        .collect();
    assert_eq!(
        kinds,
        // Only documents' 2,016 small files cost a reader enough to be CRITICAL; the
        // DAG causes of tables of a few hundred small files are as severe as those tables.
        vec![
            (Kind::Endpoint, Severity::Critical, vec!["documents"]),
            (Kind::ImportError, Severity::Critical, vec![]),
            (Kind::Unreadable, Severity::Unknown, vec!["gone"]),
            (Kind::DagSucceedsStale, Severity::Warning, vec!["permits"]),
            (Kind::DagPaused, Severity::Warning, vec!["events"]),
            (
                Kind::Unmaintained,
                Severity::Warning,
                vec!["budget", "inspections"]
            ),
            (Kind::SnapshotBloat, Severity::Warning, vec!["ledger"]),
        ]
    );
    let permits = &v[3];
    assert!(
        permits
            .cause
            .starts_with("DAG compact_permits reports success (8h ago) but"),
        "{}",
        permits.cause
    );
    assert_eq!(
        v[5].cause,
        "2 tables wait for compaction and no DAG maintains them"
    );
}

#[test]
fn an_unpaused_dag_that_never_ran_is_the_cause_of_its_tables_wait() {
    let mut lab = lab();
    // compact_permits: unpaused, no run at all (a start_date ahead, no schedule).
    let d = lab
        .dags
        .iter_mut()
        .find(|d| d.dag_id == "compact_permits")
        .unwrap();
    d.last_run_state = None;
    d.last_run_at = None;
    d.last_success_at = None;
    let never = d.clone();
    let cfg = HealthConfig::default();
    for (t, st, h, _, dag) in &mut lab.tables {
        if dag.as_deref() == Some("compact_permits") {
            *h = st.as_ref().map(|s| evaluate(s, Some(&never), &cfg, t0()));
            assert_eq!(t.table, "permits");
        }
    }
    let v = incidents(&lab.facts(), t0());
    let i = v
        .iter()
        .find(|i| i.dags == vec!["compact_permits".to_string()])
        .unwrap_or_else(|| panic!("{v:#?}"));
    assert!(
        i.cause
            .contains("compact_permits is unpaused and has never run"),
        "{}",
        i.cause
    );
    assert_eq!(tables_of(i), vec!["permits"]);
    assert!(
        !v.iter().any(|i| i.cause.contains("reports nothing wrong")),
        "{v:#?}"
    );
}

#[test]
fn several_dags_on_one_endpoint_are_one_incident() {
    let mut lab = lab();
    // compact_permits now fails too, on the same endpoint (its own connection).
    let mut f = failing_facts();
    f.dag_id = "compact_permits".into();
    f.failed_runs = 3;
    f.error_line =
        Some("could not connect to trino-old.internal:8080 (connection trino_permits)".into());
    lab.dags[1] = f;
    for t in &mut lab.tables {
        if t.0.table == "permits" {
            let st = t.1.clone().unwrap();
            t.2 = Some(evaluate(
                &st,
                Some(&lab.dags[1]),
                &HealthConfig::default(),
                t0(),
            ));
        }
    }
    let v = incidents(&lab.facts(), t0());
    let first = &v[0];
    assert_eq!(first.dags, vec!["compact_documents", "compact_permits"]);
    assert_eq!(tables_of(first), vec!["documents", "permits"]);
    assert!(
        first.cause.starts_with(
            "DAGs compact_documents, compact_permits failing (17 failed runs) (connections \
             trino_documents, trino_permits → trino-old.internal:8080, fail their test)"
        ),
        "{}",
        first.cause
    );
    assert_eq!(v.iter().filter(|i| i.kind == Kind::Endpoint).count(), 1);
}

#[test]
fn without_a_connection_finding_the_error_names_the_endpoint() {
    let mut lab = lab();
    lab.findings.retain(|f| !f.rule.is_airflow_connection());
    let v = incidents(&lab.facts(), t0());
    assert_eq!(
        v[0].cause,
        "DAG compact_documents failing 14 runs (its error names trino-old.internal:8080)"
    );
    // A connection no failing DAG names is an incident of its own.
    let mut lab2 = self::lab();
    lab2.dags[0].error_line = Some("ValueError: boom".into());
    let v = incidents(&lab2.facts(), t0());
    assert_eq!(v[0].kind, Kind::DagFailing);
    assert_eq!(
        v[0].cause,
        "DAG compact_documents failing 14 runs (task compact: ValueError: boom)"
    );
    let c: Vec<&Incident> = v.iter().filter(|i| i.kind == Kind::Connection).collect();
    assert_eq!(c.len(), 1);
    assert_eq!(
        c[0].cause,
        "Airflow connections trino_documents, trino_permits → trino-old.internal:8080 fail their test"
    );
}

#[test]
fn endpoints_are_read_from_what_the_server_said() {
    assert_eq!(endpoints(ERROR), vec!["trino-old.internal:8080"]);
    assert_eq!(
        endpoints("HTTPConnectionPool(host='trino-old.internal', port=8080): Max retries"),
        vec!["trino-old.internal:8080"]
    );
    assert_eq!(
        endpoints("GET http://10.0.0.7:8443/v1/statement failed at 2026-11-30T10:00:00Z"),
        vec!["10.0.0.7:8443"]
    );
    for none in [
        "line 1:15: Table 'x' does not exist",
        "at 12:30 the run failed",
        "2026-11-30T10:00:00.123+0000 ERROR",
        "ValueError: boom",
        "host:99999",
        "ns:a:80:90",
    ] {
        assert_eq!(endpoints(none), Vec::<String>::new(), "{none}");
    }
}

/// The `host:port: reason` shape of Python's socket errors and Go's dial errors names the
/// endpoint, whatever punctuation follows the port; a clock time still names none.
#[test]
fn an_endpoint_is_read_whatever_punctuation_follows_its_port() {
    let host = "trino-legacy.corp.example:8080";
    for text in [
        "could not connect to trino-legacy.corp.example:8080: Name or service not known",
        "dial tcp trino-legacy.corp.example:8080: connect: connection refused",
        "cannot reach trino-legacy.corp.example:8080; giving up",
        "cannot reach trino-legacy.corp.example:8080, giving up",
        "cannot reach trino-legacy.corp.example:8080.",
        "cannot reach trino-legacy.corp.example:8080. Retrying",
        "(trino-legacy.corp.example:8080)",
        "[trino-legacy.corp.example:8080]",
        "'trino-legacy.corp.example:8080'",
        "trino-legacy.corp.example:8080:",
        "trino-legacy.corp.example:8080/v1/statement",
    ] {
        assert_eq!(endpoints(text), vec![host], "{text}");
    }
    assert_eq!(
        endpoints("dial tcp 10.0.0.5:8443: i/o timeout"),
        vec!["10.0.0.5:8443"]
    );
    for none in [
        "failed at 10:00:00: retrying",
        "2026-11-30T10:00:00Z: run failed",
        "2026-11-30T10:30 the run failed",
        "2026-11-30t9:30: the run failed",
        "version 1:2.3.4",
    ] {
        assert_eq!(endpoints(none), Vec::<String>::new(), "{none}");
    }
}

/// One dead connection, its DAG and its table are one incident when the task's error has
/// the `host:port: reason` shape: the connection at that endpoint is the suspect, `F`
/// offered, and no incident of its own.
#[test]
fn a_socket_errors_endpoint_ties_the_dag_to_the_connection_holding_it() {
    let mut lab = lab();
    lab.dags[0].error_line = Some(
        "ConnectionError: could not connect to trino-legacy.corp.example:8080: Name or service not known"
            .into(),
    );
    lab.findings.retain(|f| !f.rule.is_airflow_connection());
    lab.findings.push(Finding {
        rule: Rule::AirflowConnectionFailing,
        severity: Severity::Critical,
        message: "Airflow connection trino_orders points at trino-legacy.corp.example:8080 and fails its test: failed to resolve trino-legacy.corp.example".into(),
        penalty: 0,
    });
    let v = incidents(&lab.facts(), t0());
    let first = &v[0];
    assert_eq!(first.kind, Kind::Endpoint, "{:#?}", v);
    assert_eq!(first.dags, vec!["compact_documents"]);
    assert_eq!(tables_of(first), vec!["documents"]);
    assert_eq!(
        first.next[0],
        Next::FixConnection {
            connections: vec!["trino_orders".into()],
            endpoint: Some("trino-legacy.corp.example:8080".into()),
        }
    );
    assert!(
        !v.iter().any(|i| i.kind == Kind::Connection),
        "{:#?}",
        v.iter().map(|i| i.summary()).collect::<Vec<_>>()
    );
}

#[test]
fn a_healthy_lakehouse_has_no_incident() {
    let cfg = HealthConfig::default();
    let t = tref("zoning", "parcels");
    let st = healthy_stats();
    let h = evaluate(&st, None, &cfg, t0());
    let facts = Facts {
        tables: vec![TableFacts {
            table: &t,
            stats: Some(&st),
            health: Some(&h),
            error: None,
            dag_id: None,
            suffered: None,
            running: None,
        }],
        dags: Vec::new(),
        findings: Vec::new(),
        airflow: false,
        fixed: Default::default(),
    };
    assert!(incidents(&facts, t0()).is_empty());
}

#[test]
fn same_names_in_two_schemas_are_told_apart() {
    let cfg = HealthConfig::default();
    let (a, b) = (tref("a", "events"), tref("b", "events"));
    let st = never_compacted(50, 9);
    let h = evaluate(&st, None, &cfg, t0());
    let facts = Facts {
        tables: vec![
            TableFacts {
                table: &a,
                stats: Some(&st),
                health: Some(&h),
                error: None,
                dag_id: None,
                suffered: None,
                running: None,
            },
            TableFacts {
                table: &b,
                stats: Some(&st),
                health: Some(&h),
                error: None,
                dag_id: None,
                suffered: None,
                running: None,
            },
        ],
        dags: Vec::new(),
        findings: Vec::new(),
        airflow: false,
        fixed: Default::default(),
    };
    let v = incidents(&facts, t0());
    assert_eq!(v.len(), 1);
    assert_eq!(
        v[0].summary(),
        "2 tables wait for compaction (Airflow not configured) → a.events: 50 small files, \
         waiting 9d; b.events: 50 small files, waiting 9d"
    );
}

#[test]
fn a_schemas_table_in_two_catalogs_is_named_with_its_catalog() {
    let cfg = HealthConfig::default();
    let a = TableRef::new("iceberg", "sales", "orders");
    let b = TableRef::new("delta", "sales", "orders");
    let st = never_compacted(50, 9);
    let h = evaluate(&st, None, &cfg, t0());
    let fact = |t| TableFacts {
        table: t,
        stats: Some(&st),
        health: Some(&h),
        error: None,
        dag_id: None,
        suffered: None,
        running: None,
    };
    let facts = Facts {
        tables: vec![fact(&a), fact(&b)],
        dags: Vec::new(),
        findings: Vec::new(),
        airflow: false,
        fixed: Default::default(),
    };
    let v = incidents(&facts, t0());
    assert_eq!(
        v[0].summary(),
        "2 tables wait for compaction (Airflow not configured) → delta.sales.orders: 50 small \
         files, waiting 9d; iceberg.sales.orders: 50 small files, waiting 9d"
    );
}

#[test]
fn a_failing_dag_that_is_also_paused_says_so() {
    let mut lab = lab();
    lab.dags[0].paused = true;
    let v = incidents(&lab.facts(), t0());
    assert!(
        v[0].cause
            .starts_with("DAG compact_documents (paused) failing 14 runs"),
        "{}",
        v[0].cause
    );
    assert_eq!(
        v[0].next[1],
        Next::Unpause {
            dag_id: "compact_documents".into()
        }
    );
}

#[test]
fn the_next_action_is_one_floe_carries_out() {
    let mut lab = lab();
    // budget and inspections wait for compaction with no DAG. Spread one small file a
    // partition, budget has nothing optimize can merge: its next action is the findings.
    for t in &mut lab.tables {
        if let Some(st) = t.1.as_mut() {
            st.max_partition_small_files = Some(if t.0.table == "budget" { 1 } else { 8 });
        }
    }
    // Worst first by small files: budget (168) leads the unmaintained incident.
    let v = incidents(&lab.facts(), t0());
    let un = v.iter().find(|i| i.kind == Kind::Unmaintained).unwrap();
    assert_eq!(un.worst_table(), Some(&tref("finance", "budget")));
    assert_eq!(un.next[0], Next::Inspect, "{:?}", un.next);
    // With partitions holding several small files, `o` is the action.
    for t in &mut lab.tables {
        if let Some(st) = t.1.as_mut() {
            st.max_partition_small_files = Some(14);
        }
    }
    let v = incidents(&lab.facts(), t0());
    let un = v.iter().find(|i| i.kind == Kind::Unmaintained).unwrap();
    assert_eq!(
        un.next[0],
        Next::Optimize {
            table: tref("finance", "budget")
        }
    );
    // Unknown (an older reader of the facts): optimize, as before.
    let fresh = self::lab();
    let first = &incidents(&fresh.facts(), t0())[0];
    assert!(first.next.contains(&Next::Optimize {
        table: tref("zoning", "documents")
    }));
}

#[test]
fn what_the_queries_suffered_is_told_with_the_tables_incident() {
    let lab = lab();
    let line = "the dashboard query on documents took 4m12s reading 18,000 splits; \
                its median over the last 1d (12 runs) 18s";
    let mut facts = lab.facts();
    for t in &mut facts.tables {
        if t.table.table == "documents" {
            t.suffered = Some(line);
        }
    }
    let v = incidents(&facts, t0());
    let first = &v[0];
    assert_eq!(tables_of(first), vec!["documents"]);
    assert_eq!(first.tables[0].suffered.as_deref(), Some(line));
    // Only the incident that holds the table says it.
    assert_eq!(
        v.iter()
            .flat_map(|i| &i.tables)
            .filter(|t| t.suffered.is_some())
            .count(),
        1
    );
}

#[test]
fn connections_that_point_elsewhere_are_worded_alike_in_both_passes() {
    // Named by the failing DAG: the endpoint incident says it.
    let mut lab = lab();
    lab.findings.retain(|f| !f.rule.is_airflow_connection());
    lab.findings.push(conn("trino_documents", false));
    let v = incidents(&lab.facts(), t0());
    assert_eq!(v[0].kind, Kind::Endpoint);
    assert!(
        v[0].cause.ends_with(
            "(connection trino_documents → trino-old.internal:8080, the host the failing task could not reach; not tested)"
        ),
        "{}",
        v[0].cause
    );
    // Named by no failure: the connection incident says the same.
    lab.dags[0].error_line = Some("ValueError: boom".into());
    let v = incidents(&lab.facts(), t0());
    let c: Vec<&Incident> = v.iter().filter(|i| i.kind == Kind::Connection).collect();
    assert_eq!(
        c[0].cause,
        "Airflow connection trino_documents → trino-old.internal:8080 is not the Trino floe reached"
    );
    assert_eq!(c[0].severity, Severity::Warning);
}

#[test]
fn a_connection_whose_test_passes_is_no_incident_and_offers_no_fix() {
    // floe opened with --trino http://localhost:PORT against Airflow connections that say
    // 127.0.0.1:PORT and pass their test.
    let mut lab = lab();
    lab.findings.retain(|f| !f.rule.is_airflow_connection());
    let trino = url::Url::parse("http://localhost:35019").unwrap();
    let passed = crate::airflow::ConnectionTest::Passed(String::new());
    for id in ["trino_default", "trino_parcels"] {
        lab.findings
            .extend(crate::health::airflow::connection_finding(
                id,
                "127.0.0.1:35019",
                &trino,
                Some(&passed),
            ));
    }
    assert_eq!(
        lab.findings
            .iter()
            .filter(|f| f.rule.is_airflow_connection())
            .count(),
        2
    );
    lab.dags[0].error_line = Some("ValueError: boom".into());
    let v = incidents(&lab.facts(), t0());
    for i in &v {
        assert!(
            !i.cause.contains("trino_default") && !i.cause.contains("trino_parcels"),
            "{}",
            i.cause
        );
        assert!(
            !i.next
                .iter()
                .any(|n| matches!(n, Next::FixConnection { connections, .. }
                if connections.iter().any(|c| c == "trino_default" || c == "trino_parcels"))),
            "{i:?}"
        );
    }
}

/// After `F enter y` on trino_documents: its finding is a working one, trino_permits
/// still fails at the dead endpoint, and the DAG's last run (failed) came before the fix.
fn fixed_documents(fixed_at: Option<DateTime<Utc>>) -> Lab {
    let mut lab = lab();
    lab.findings
        .retain(|f| !f.message.starts_with("Airflow connection trino_documents "));
    lab.findings.push(Finding {
        rule: Rule::AirflowConnectionWorks,
        severity: Severity::Info,
        message: "Airflow connection trino_documents points at 127.0.0.1:35019 and its test passes"
            .into(),
        penalty: 0,
    });
    if let Some(t) = fixed_at {
        lab.fixed.insert("trino_documents".into(), t);
    }
    lab
}

#[test]
fn a_failure_stays_with_the_connection_its_error_names_once_that_one_is_fixed() {
    let lab = fixed_documents(Some(t0()));
    assert!(ERROR.contains("trino_documents"), "{ERROR}");
    let v = incidents(&lab.facts(), t0() + chrono::Duration::minutes(1));
    let doc = v
        .iter()
        .find(|i| i.dags.iter().any(|d| d == "compact_documents"))
        .expect("the DAG's incident");
    assert!(
        doc.cause
            .contains("connection trino_documents → 127.0.0.1:35019, fixed ")
            && doc
                .cause
                .contains("its test passes; the last run failed before the fix: t trigger"),
        "{}",
        doc.cause
    );
    assert!(!doc.cause.contains("trino_permits"), "{}", doc.cause);
    assert!(
        !doc.next
            .iter()
            .any(|n| matches!(n, Next::FixConnection { .. })),
        "{:?}",
        doc.next
    );
    assert!(
        doc.next.iter().any(|n| matches!(n, Next::Trigger { dag_id, after_fix: false } if dag_id == "compact_documents")),
        "{:?}",
        doc.next
    );
    // trino_permits is its own incident, with its own fix.
    assert!(
        v.iter()
            .any(|i| i.kind == Kind::Connection && i.cause.contains("trino_permits")),
        "{v:#?}"
    );
}

#[test]
fn a_run_after_the_fix_that_still_fails_names_a_shadowing_definition() {
    // Fixed before the DAG's last run, which still failed on the old endpoint.
    let lab = fixed_documents(Some(t0() - chrono::Duration::days(1)));
    let v = incidents(&lab.facts(), t0());
    let doc = v
        .iter()
        .find(|i| i.dags.iter().any(|d| d == "compact_documents"))
        .unwrap();
    assert_eq!(doc.severity, Severity::Critical);
    assert!(
        doc.cause
            .contains("AIRFLOW_CONN_ variable or a secrets backend"),
        "{}",
        doc.cause
    );
}

/// After a fix to a wrong address (its test fails), the DAG's failure stays pinned on the
/// connection its error names (`(connection trino_documents)`), not on another that still
/// points at the endpoint in the old error.
#[test]
fn a_failure_is_pinned_on_the_connection_its_error_names() {
    let mut lab = lab();
    lab.findings
        .retain(|f| !f.message.starts_with("Airflow connection trino_documents "));
    lab.findings.push(Finding {
        rule: Rule::AirflowConnectionFailing,
        severity: Severity::Critical,
        message: "Airflow connection trino_documents points at trino-new.internal:8080 and fails its test: failed to resolve 'trino-new.internal' — floe reached 127.0.0.1:8080".into(),
        penalty: 0,
    });
    lab.fixed.insert("trino_documents".into(), t0());
    let v = incidents(&lab.facts(), t0() + chrono::Duration::minutes(1));
    let doc = v
        .iter()
        .find(|i| i.dags.iter().any(|d| d == "compact_documents"))
        .expect("the DAG's incident");
    assert!(
        doc.cause.contains(
            "(connection trino_documents → trino-new.internal:8080, fails its test; its last run failed on trino-old.internal:8080)"
        ),
        "{}",
        doc.cause
    );
    assert!(!doc.cause.contains("trino_permits"), "{}", doc.cause);
    assert_eq!(
        doc.next[0],
        Next::FixConnection {
            connections: vec!["trino_documents".into()],
            endpoint: Some("trino-new.internal:8080".into()),
        }
    );
    assert_eq!(tables_of(doc), vec!["documents"]);
    // trino_permits, still at the old endpoint, is an incident of its own.
    let permits: Vec<&Incident> = v
        .iter()
        .filter(|i| i.kind == Kind::Connection && i.cause.contains("trino_permits"))
        .collect();
    assert_eq!(permits.len(), 1, "{v:#?}");
    assert!(!permits[0].cause.contains("trino_documents"), "{v:#?}");
}

/// The lab's task error, whole: the host it could not resolve and the connection it used.
const RESOLVE_ERROR: &str = "ConnectionError: optimize of iceberg.zoning.documents failed: could not connect to Trino at trino-old.internal:8080 (connection trino_documents): failed to execute: HTTPConnectionPool(host='trino-old.internal', port=8080): Max retries exceeded with url: /v1/statement (Caused by NameResolutionError(\"Failed to resolve 'trino-old.internal' ([Errno -2] Name or service not known)\"))";

/// Airflow as deployed: `[core] test_connection` at its default (disabled, 403), so
/// nothing is tested. The connection holding the endpoint the failing task could not
/// resolve is the suspect and `F` is offered; after floe's fix the DAG's next run proves
/// it, not a test; a run after the fix still failing on the old endpoint is critical.
#[test]
fn without_connection_tests_the_connection_at_the_failing_endpoint_is_the_suspect() {
    use crate::airflow::ConnectionTest;
    use crate::health::airflow::connection_finding;
    let floe = url::Url::parse("http://127.0.0.1:35019").unwrap();
    let disabled = ConnectionTest::NotAllowed(
        "not allowed by the server: Testing connections is disabled in Airflow configuration."
            .into(),
    );
    let with = |documents_at: &str| {
        let mut lab = lab();
        lab.dags[0].error_line = Some(RESOLVE_ERROR.into());
        lab.findings.retain(|f| !f.rule.is_airflow_connection());
        for (id, at) in [
            ("trino_documents", documents_at),
            ("trino_permits", "trino-old.internal:8080"),
            ("trino_default", "127.0.0.1:35019"),
        ] {
            lab.findings
                .extend(connection_finding(id, at, &floe, Some(&disabled)));
        }
        lab
    };
    let lab = with("trino-old.internal:8080");
    let v = incidents(&lab.facts(), t0());
    let first = &v[0];
    assert_eq!(first.kind, Kind::Endpoint, "{v:#?}");
    assert_eq!(first.severity, Severity::Critical);
    assert_eq!(
        first.cause,
        "DAG compact_documents failing 14 runs (connection trino_documents → \
         trino-old.internal:8080, the host the failing task could not resolve; Airflow does \
         not test connections here)"
    );
    assert_eq!(
        first.next[0],
        Next::FixConnection {
            connections: vec!["trino_documents".into()],
            endpoint: Some("trino-old.internal:8080".into()),
        }
    );
    assert!(
        !v.iter().any(|i| i.kind == Kind::Connection),
        "{:#?}",
        v.iter().map(|i| i.summary()).collect::<Vec<_>>()
    );

    // Fixed by floe, untested: the DAG's next run is the proof.
    let mut lab = with("127.0.0.1:35019");
    lab.fixed.insert("trino_documents".into(), t0());
    let v = incidents(&lab.facts(), t0() + chrono::Duration::minutes(1));
    let doc = v
        .iter()
        .find(|i| i.dags.iter().any(|d| d == "compact_documents"))
        .expect("the DAG's incident");
    assert!(
        doc.cause
            .contains("(connection trino_documents → 127.0.0.1:35019, fixed ")
            && doc.cause.contains(
                "Airflow does not test connections here: the DAG's next run proves it (t trigger)"
            ),
        "{}",
        doc.cause
    );
    assert!(
        !doc.next
            .iter()
            .any(|n| matches!(n, Next::FixConnection { .. })),
        "{:?}",
        doc.next
    );
    assert!(
        doc.next.iter().any(
            |n| matches!(n, Next::Trigger { dag_id, after_fix: false } if dag_id == "compact_documents")
        ),
        "{:?}",
        doc.next
    );
    // The run after the fix failed on the old endpoint again: another definition wins.
    lab.fixed
        .insert("trino_documents".into(), t0() - chrono::Duration::days(1));
    let v = incidents(&lab.facts(), t0());
    let doc = v
        .iter()
        .find(|i| i.dags.iter().any(|d| d == "compact_documents"))
        .unwrap();
    assert_eq!(doc.severity, Severity::Critical);
    assert!(
        doc.cause
            .contains("AIRFLOW_CONN_ variable or a secrets backend"),
        "{}",
        doc.cause
    );
}

#[test]
fn the_dag_that_reports_success_names_its_swallowing_line_and_enter_goes_there() {
    use crate::dag_code::{CodeFacts, inspect};
    let mut lab = lab();
    let src = include_str!("../../../tests/lab/airflow/dags/compact_permits.py");
    lab.dags
        .iter_mut()
        .find(|d| d.dag_id == "compact_permits")
        .unwrap()
        .code = Some(CodeFacts::Read(inspect(
        src,
        "compact_permits.py",
        "compact_permits",
    )));
    let v = incidents(&lab.facts(), t0());
    let permits = v.iter().find(|i| i.kind == Kind::DagSucceedsStale).unwrap();
    assert_eq!(
        permits.cause,
        "DAG compact_permits reports success (8h ago) but its table's compaction stays stale; may hide failures: compact_permits.py:56 `except: pass` around `TrinoHook(...).run(...)`"
    );
    assert_eq!(
        permits.jump,
        Jump::DagCode {
            dag_id: "compact_permits".into(),
            file: "compact_permits.py".into(),
            line: 56
        }
    );
    // The code's other advice and the connection its task uses are evidence; still
    // WARNING: the code is advice, not a verdict.
    assert_eq!(permits.severity, Severity::Warning);
    assert!(
        permits.evidence.contains(
            &"code: task compact uses connection trino_permits (compact_permits.py:55)".to_string()
        ),
        "{:?}",
        permits.evidence
    );
    assert!(
        permits
            .evidence
            .iter()
            .any(|e| e.starts_with("code: no retries: compact_permits.py:49")),
        "{:?}",
        permits.evidence
    );
    // The connection the code says the task uses fails its test: its finding is evidence
    // and fixing it is a next action (the link from the code, not from a name).
    assert!(
        permits
            .evidence
            .iter()
            .any(|e| e.starts_with("Airflow connection trino_permits points at")),
        "{:?}",
        permits.evidence
    );
    assert!(permits.next.iter().any(|n| matches!(
        n,
        Next::FixConnection { connections, .. } if connections == &vec!["trino_permits".to_string()]
    )));
    // A refused source says so, and Enter goes to the DAG.
    lab.dags
        .iter_mut()
        .find(|d| d.dag_id == "compact_permits")
        .unwrap()
        .code = Some(CodeFacts::Unread {
        status: Some(403),
        error: "permission denied: HTTP 403 from http://af/api/v2/dagSources/compact_permits: Forbidden".into(),
    });
    let v = incidents(&lab.facts(), t0());
    let permits = v.iter().find(|i| i.kind == Kind::DagSucceedsStale).unwrap();
    assert!(!permits.cause.contains("may hide"), "{}", permits.cause);
    assert_eq!(
        permits.jump,
        Jump::Dag {
            dag_id: "compact_permits".into()
        }
    );
    assert!(
        permits.evidence[0]
            .starts_with("code: cannot read the source: permission denied: HTTP 403")
    );
}
