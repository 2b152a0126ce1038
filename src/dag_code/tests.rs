//! The detector over a corpus of small DAG files (`tests/fixtures/dag_code/`) and the
//! lab's own DAGs, including files that do not parse.

use super::*;

macro_rules! corpus {
    ($name:literal) => {
        include_str!(concat!("../../tests/fixtures/dag_code/", $name))
    };
}

macro_rules! lab_dag {
    ($name:literal) => {
        include_str!(concat!("../../tests/lab/airflow/dags/", $name))
    };
}

fn rules(c: &DagCode) -> Vec<(CodeRule, usize)> {
    c.findings.iter().map(|f| (f.rule, f.line)).collect()
}

fn swallow_lines(c: &DagCode) -> Vec<usize> {
    c.findings
        .iter()
        .filter(|f| f.rule == CodeRule::SwallowsErrors)
        .map(|f| f.line)
        .collect()
}

#[test]
fn the_seeds_bare_except_is_found_at_its_line_around_the_hook() {
    let c = inspect(
        lab_dag!("compact_permits.py"),
        "compact_permits.py",
        "compact_permits",
    );
    assert_eq!(c.unparsed, None);
    let f = c.swallowing().expect("the bare except is found");
    assert_eq!(f.line, 56);
    assert_eq!(f.code, "except: pass");
    assert_eq!(f.around.as_deref(), Some("TrinoHook(...).run(...)"));
    assert_eq!(f.task.as_deref(), Some("compact"));
    assert_eq!(
        f.text("compact_permits.py"),
        "may hide failures: compact_permits.py:56 `except: pass` around `TrinoHook(...).run(...)`"
    );
    assert_eq!(c.connection_ids(), vec!["trino_permits"]);
    assert_eq!(
        c.optimizes,
        vec![Optimize {
            table: "iceberg.zoning.permits".into(),
            whole: true,
            line: 25
        }]
    );
}

#[test]
fn a_handler_that_only_logs_around_a_hook_bound_to_a_name_swallows() {
    let c = inspect(
        corpus!("hook_logs_only.py"),
        "hook_logs_only.py",
        "compact_budget",
    );
    assert_eq!(rules(&c), vec![(CodeRule::SwallowsErrors, 21)]);
    let f = &c.findings[0];
    assert_eq!(f.code, "except Exception as exc: log.warning(...)");
    assert_eq!(f.around.as_deref(), Some("hook.run(...)"));
    let conns: Vec<(&str, &str)> = c
        .connections
        .iter()
        .map(|t| (t.task.as_str(), t.conn_id.as_str()))
        .collect();
    assert_eq!(
        conns,
        vec![("compact", "trino_budget"), ("check", "trino_budget")]
    );
    // Bounded by a WHERE: never a whole-table optimize, whatever the table's size.
    assert!(c.optimizes.iter().all(|o| !o.whole));
    assert!(
        c.advice(&|_| Some(1 << 40))
            .iter()
            .all(|f| f.rule != CodeRule::WholeTableOptimize)
    );
}

#[test]
fn an_operator_executed_in_a_python_callable_is_that_tasks_work() {
    let c = inspect(
        corpus!("operator_callable.py"),
        "operator_callable.py",
        "compact_inspections",
    );
    assert_eq!(
        rules(&c),
        vec![
            (CodeRule::NoFreshnessCheck, 14),
            (CodeRule::SwallowsErrors, 19),
            (CodeRule::NoRetries, 24),
        ]
    );
    assert_eq!(c.findings[1].code, "except BaseException: return None");
    assert_eq!(c.findings[1].around.as_deref(), Some("op.execute(...)"));
    assert_eq!(c.findings[1].task.as_deref(), Some("compact"));
    assert_eq!(
        c.findings[2].around.as_deref(),
        Some("task compact reaches Trino; no retries set")
    );
    assert_eq!(c.connection_ids(), vec!["trino_inspections"]);
}

#[test]
fn a_helper_of_the_same_file_is_followed_and_an_unused_one_is_not() {
    let c = inspect(
        corpus!("helper_function.py"),
        "helper_function.py",
        "compact_ledger",
    );
    assert_eq!(swallow_lines(&c), vec![23]);
    let f = c.swallowing().unwrap();
    assert_eq!(f.code, "except (ValueError, Exception): ...");
    assert_eq!(f.around.as_deref(), Some("trino_execute(...)"));
    assert!(rules(&c).contains(&(CodeRule::NoFreshnessCheck, 6)));
    assert!(!rules(&c).iter().any(|r| r.0 == CodeRule::NoRetries));
}

#[test]
fn trino_dbapi_in_a_loop_with_continue_and_a_dag_decorator() {
    let c = inspect(corpus!("dbapi_loop.py"), "dbapi_loop.py", "compact_many");
    assert_eq!(
        rules(&c),
        vec![
            (CodeRule::CatchupOverlap, 8),
            (CodeRule::NoRetries, 10),
            (CodeRule::NoFreshnessCheck, 16),
            (CodeRule::SwallowsErrors, 18),
        ]
    );
    let by = |r: CodeRule| c.findings.iter().find(|f| f.rule == r).unwrap();
    assert_eq!(by(CodeRule::SwallowsErrors).code, "except: continue");
    assert_eq!(
        by(CodeRule::SwallowsErrors).around.as_deref(),
        Some("cur.execute(...)")
    );
    assert_eq!(by(CodeRule::NoRetries).code, "retries=0");
    assert_eq!(
        by(CodeRule::CatchupOverlap).code,
        "catchup=True, max_active_runs=3"
    );
}

#[test]
fn the_clean_dag_has_no_finding() {
    let c = inspect(corpus!("clean.py"), "clean.py", "compact_staging");
    assert_eq!(c.unparsed, None);
    assert_eq!(rules(&c), vec![]);
    assert_eq!(c.advice(&|_| None), vec![]);
    assert_eq!(c.connection_ids(), vec!["trino_default"]);
    // Its optimize has no WHERE: on a table floe knows is large, that alone is advice.
    let large = c.advice(&|t| (t == "iceberg.zoning.staging").then_some(50_000_000_000));
    assert_eq!(large.len(), 1);
    assert_eq!(large[0].rule, CodeRule::WholeTableOptimize);
    assert_eq!(
        large[0].text("clean.py"),
        "whole-table optimize: clean.py:25 `ALTER TABLE iceberg.zoning.staging EXECUTE optimize` (no WHERE: 50.0 GB rewritten in one statement)"
    );
}

#[test]
fn handlers_around_other_calls_or_that_raise_or_set_a_flag_are_not_findings() {
    let c = inspect(corpus!("not_trino.py"), "not_trino.py", "x");
    assert_eq!(rules(&c), vec![]);
}

#[test]
fn the_sql_operator_dag_has_the_checks_its_author_added_later_missing() {
    let c = inspect(
        corpus!("sql_operator.py"),
        "sql_operator.py",
        "compact_parcels",
    );
    assert_eq!(
        rules(&c),
        vec![
            (CodeRule::CatchupOverlap, 11),
            (CodeRule::NoRetries, 14),
            (CodeRule::NoFreshnessCheck, 19),
        ]
    );
    assert_eq!(c.findings[1].code, "\"retries\": 0");
    assert_eq!(
        c.findings[1].around.as_deref(),
        Some("task compact reaches Trino; retries 0 in default_args")
    );
    assert_eq!(c.connection_ids(), vec!["trino_default"]);
}

#[test]
fn files_that_do_not_parse_say_where_and_find_nothing() {
    let c = inspect(corpus!("broken_syntax.py"), "broken_syntax.py", "x");
    let u = c.unparsed.as_ref().expect("does not parse");
    // Where the parser lost its way, near the unclosed call of line 8.
    assert!((7..=12).contains(&u.line), "{u:?}");
    assert!(u.message.contains("does not parse as Python"), "{u:?}");
    assert!(c.findings.is_empty() && c.connections.is_empty());
    let c = inspect(corpus!("stray_except.py"), "stray_except.py", "x");
    assert_eq!(c.unparsed.as_ref().map(|u| u.line), Some(9));
    let c = inspect("def f(:\n", "f.py", "x");
    assert_eq!(c.unparsed.as_ref().map(|u| u.line), Some(1));
    assert!(inspect("", "empty.py", "x").unparsed.is_none());
}

#[test]
fn hostile_sources_cost_time_never_a_crash() {
    // Nested far deeper than any recursion would survive.
    let deep = format!(
        "from airflow.decorators import task\n@task\ndef t():\n    try:\n        x = {}1{}\n    except:\n        pass\n",
        "(".repeat(20_000),
        ")".repeat(20_000)
    );
    let c = inspect(&deep, "deep.py", "x");
    assert!(c.findings.is_empty());
    let calls = format!(
        "from airflow.decorators import task\n@task\ndef t():\n    try:\n        {}\n    except:\n        pass\n",
        "f(".repeat(5_000) + &")".repeat(5_000)
    );
    inspect(&calls, "calls.py", "x");
    // Control characters and non-UTF-8-looking text are kept as text for the view to clean.
    let c = inspect(
        "from airflow.decorators import task\nfrom airflow.providers.trino.hooks.trino import TrinoHook\n@task(retries=1)\ndef t():\n    try:\n        TrinoHook().run('\u{1b}[2J')\n    except Exception:\n        print('\u{202e}x')\n",
        "evil.py",
        "x",
    );
    assert_eq!(swallow_lines(&c), vec![7]);
    assert_eq!(c.findings[0].code, "except Exception: print(...)");
}

#[test]
fn the_labs_other_dags() {
    let c = inspect(
        lab_dag!("compact_documents.py"),
        "compact_documents.py",
        "compact_documents",
    );
    // Its handler re-raises: no swallowed failure, but the checks it lacks (check_table
    // reads the connection and sends nothing to Trino: no retries are needed there).
    assert_eq!(swallow_lines(&c), Vec::<usize>::new());
    assert_eq!(
        c.findings.iter().map(|f| f.rule).collect::<Vec<_>>(),
        vec![
            CodeRule::NoFreshnessCheck,
            CodeRule::CatchupOverlap,
            CodeRule::NoRetries
        ]
    );
    assert_eq!(c.connection_ids(), vec!["trino_documents"]);
    let c = inspect(
        lab_dag!("compact_parcels.py"),
        "compact_parcels.py",
        "compact_parcels",
    );
    assert_eq!(c.connection_ids(), vec!["trino_tls"]);
    assert_eq!(swallow_lines(&c), Vec::<usize>::new());
    let c = inspect(
        lab_dag!("broken_dag.py"),
        "broken_dag.py",
        "rewrite_manifests",
    );
    assert!(c.unparsed.is_none() && c.findings.is_empty());
}

#[test]
fn the_labs_dag_code_dags_as_operators_write_them() {
    let cases = [
        (
            lab_dag!("dagcode_hook.py"),
            "dagcode_hook",
            vec![39],
            "hook.run(...)",
        ),
        (
            lab_dag!("dagcode_operator.py"),
            "dagcode_operator",
            vec![36],
            "op.execute(...)",
        ),
        (
            lab_dag!("dagcode_helper.py"),
            "dagcode_helper",
            vec![29],
            "trino_execute(...)",
        ),
        (lab_dag!("dagcode_clean.py"), "dagcode_clean", vec![], ""),
    ];
    for (src, dag, lines, around) in cases {
        let c = inspect(src, &format!("{dag}.py"), dag);
        assert_eq!(swallow_lines(&c), lines, "{dag}: {:?}", c.findings);
        if let Some(f) = c.swallowing() {
            assert_eq!(f.around.as_deref(), Some(around), "{dag}");
        }
    }
    let clean = inspect(
        lab_dag!("dagcode_clean.py"),
        "dagcode_clean.py",
        "dagcode_clean",
    );
    assert_eq!(clean.advice(&|_| None), vec![]);
}
