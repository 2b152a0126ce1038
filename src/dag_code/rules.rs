//! The rules over a read file: handlers that swallow a failure around a call that reaches
//! Trino, Trino tasks without retries, overlapping catch-up compactions, no freshness
//! check, the optimizes the SQL runs and the connection each task uses.

use std::collections::BTreeSet;

use tree_sitter::Node;

use super::scan::{Module, Task};
use super::syntax::{
    Literal, call_text, descendants, kids, kwarg, last_name, line_of, literal, own_nodes,
    positional, root_name, string_words, text,
};
use super::{CodeFinding, CodeRule, Optimize, TaskConnection};

/// Exceptions a handler catches "everything" with.
const BROAD: [&str; 2] = ["Exception", "BaseException"];
/// A logger's methods: a handler that only calls these only logs.
const LOG_METHODS: [&str; 9] = [
    "debug",
    "info",
    "warning",
    "warn",
    "error",
    "exception",
    "critical",
    "fatal",
    "log",
];
/// Trino's metadata tables a freshness check reads.
const FRESHNESS_TABLES: [&str; 6] = [
    "$snapshots",
    "$history",
    "$files",
    "$partitions",
    "$entries",
    "$manifests",
];
/// common-sql's check operators: a check by construction.
const CHECK_OPERATORS: [&str; 6] = [
    "SQLCheckOperator",
    "SQLValueCheckOperator",
    "SQLThresholdCheckOperator",
    "SQLIntervalCheckOperator",
    "SQLColumnCheckOperator",
    "SQLTableCheckOperator",
];
/// The longest code excerpt a finding quotes.
const EXCERPT: usize = 72;

/// Handlers that swallow every error around a call that reaches Trino, in the tasks'
/// callables and the functions they call.
pub fn swallowing(m: &Module) -> Vec<CodeFinding> {
    let mut seen: BTreeSet<usize> = BTreeSet::new();
    let mut out = Vec::new();
    for task in &m.tasks {
        for f in m.scope(task) {
            let Some(body) = m.body(&f) else { continue };
            let handles = m.handles(body);
            for t in own_nodes(body).filter(|n| n.kind() == "try_statement") {
                let Some(call) = t
                    .child_by_field_name("body")
                    .and_then(|b| m.first_trino_call(b, &handles))
                else {
                    continue;
                };
                for clause in kids(t).into_iter().filter(|c| c.kind() == "except_clause") {
                    if !broad(clause, m.src) || !swallows(clause, m.src) {
                        continue;
                    }
                    if !seen.insert(line_of(clause)) {
                        continue;
                    }
                    out.push(CodeFinding {
                        rule: CodeRule::SwallowsErrors,
                        line: line_of(clause),
                        code: handler_text(clause, m.src),
                        around: Some(call_text(call, m.src)),
                        task: Some(task.id.clone()),
                    });
                }
            }
        }
    }
    out
}

/// `except:`, `except Exception`, `except (BaseException, …) as e`.
fn broad(clause: Node, src: &str) -> bool {
    let mut c = clause.walk();
    let values: Vec<Node> = clause.children_by_field_name("value", &mut c).collect();
    values.is_empty()
        || values.iter().any(|v| {
            descendants(*v)
                .filter(|n| n.kind() == "identifier")
                .any(|n| BROAD.contains(&text(n, src)))
        })
}

/// A handler body of only `pass`, `...`, `continue`, a `return` of nothing or a
/// constant, strings, or log calls.
fn swallows(clause: Node, src: &str) -> bool {
    let Some(block) = kids(clause).into_iter().find(|k| k.kind() == "block") else {
        return false;
    };
    let stmts: Vec<Node> = kids(block)
        .into_iter()
        .filter(|s| s.kind() != "comment")
        .collect();
    !stmts.is_empty() && stmts.iter().all(|s| quiet(*s, src))
}

fn quiet(stmt: Node, src: &str) -> bool {
    match stmt.kind() {
        "pass_statement" | "continue_statement" => true,
        "return_statement" => kids(stmt).first().is_none_or(|v| constant(*v)),
        "expression_statement" => kids(stmt).first().is_some_and(|e| match e.kind() {
            "ellipsis" | "string" | "concatenated_string" => true,
            "call" => logs(*e, src),
            _ => false,
        }),
        _ => false,
    }
}

fn constant(v: Node) -> bool {
    match v.kind() {
        "none" | "true" | "false" | "integer" | "float" | "string" => true,
        "unary_operator" => kids(v).first().is_some_and(|k| constant(*k)),
        _ => false,
    }
}

/// `log.warning(...)`, `logging.exception(...)`, `self.log.info(...)`, `print(...)`,
/// `traceback.print_exc()`.
fn logs(call: Node, src: &str) -> bool {
    let Some(f) = call.child_by_field_name("function") else {
        return false;
    };
    let last = last_name(f, src).unwrap_or("");
    match f.kind() {
        "identifier" => last == "print",
        "attribute" => {
            let recv = f
                .child_by_field_name("object")
                .map(|o| text(o, src).to_lowercase())
                .unwrap_or_default();
            (LOG_METHODS.contains(&last) && recv.contains("log"))
                || (recv == "traceback" && last.starts_with("print_"))
        }
        _ => false,
    }
}

/// `except Exception as exc: log.warning(...)`: the clause's head and its statements,
/// calls shortened, on one line.
fn handler_text(clause: Node, src: &str) -> String {
    let block = kids(clause).into_iter().find(|k| k.kind() == "block");
    // The head ends at its own `:` (a comment may stand between it and the body).
    let colon = (0..clause.child_count())
        .filter_map(|i| clause.child(i))
        .find(|c| c.kind() == ":");
    let head_end = colon.map_or(clause.start_byte(), |c| c.start_byte());
    let head = src
        .get(clause.start_byte()..head_end)
        .unwrap_or("except")
        .trim();
    let body: Vec<String> = block
        .map(kids)
        .unwrap_or_default()
        .into_iter()
        .filter(|s| s.kind() != "comment")
        .map(|s| match kids(s).first() {
            Some(e) if s.kind() == "expression_statement" && e.kind() == "call" => {
                call_text(*e, src)
            }
            _ => one_line(text(s, src)),
        })
        .collect();
    clip(&format!("{}: {}", one_line(head), body.join("; ")))
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn clip(s: &str) -> String {
    if s.chars().count() <= EXCERPT {
        s.to_string()
    } else {
        let cut: String = s.chars().take(EXCERPT - 1).collect();
        format!("{cut}…")
    }
}

/// The DAG's own call (`DAG(...)`, `@dag(...)`): the one whose id is `dag_id`, else the
/// first.
pub fn dag_call<'t>(m: &Module<'t, '_>, dag_id: &str) -> Option<Node<'t>> {
    let calls: Vec<Node> = descendants(m.root)
        .filter(|n| n.kind() == "call")
        .filter(|c| {
            c.child_by_field_name("function")
                .and_then(|f| last_name(f, m.src))
                .is_some_and(|l| l == "DAG" || l == "dag")
        })
        .collect();
    let id_of = |c: &Node| {
        kwarg(*c, "dag_id", m.src)
            .or_else(|| positional(*c).into_iter().next())
            .and_then(|v| literal(v, m.src, &m.consts))
    };
    calls
        .iter()
        .find(|c| id_of(c) == Some(Literal::Str(dag_id.to_string())))
        .or(calls.first())
        .copied()
}

/// Tasks that reach Trino with no retries: `retries` of the task, else of the DAG's
/// `default_args`, is 0 or set nowhere (Airflow's default is 0).
pub fn retries(m: &Module, dag: Option<Node>) -> Vec<CodeFinding> {
    let default = dag.and_then(|d| default_arg(m, d, "retries"));
    let mut out = Vec::new();
    for task in m.tasks.iter().filter(|t| m.trino_task(t)) {
        let own = task.call.and_then(|c| kwarg(c, "retries", m.src));
        let (value, whose) = match (own, default) {
            (Some(v), _) => (Some(v), "the task"),
            (None, Some(v)) => (Some(v), "default_args"),
            (None, None) => (None, ""),
        };
        let (line, code, why) = match value.map(|v| (v, literal(v, m.src, &m.consts))) {
            Some((v, Some(Literal::Int(0)))) => (
                line_of(v),
                one_line(text(v.parent().unwrap_or(v), m.src)),
                format!("retries 0 in {whose}"),
            ),
            None => (task.line, task_head(m, task), "no retries set".to_string()),
            _ => continue,
        };
        out.push(CodeFinding {
            rule: CodeRule::NoRetries,
            line,
            code: clip(&code),
            around: Some(format!("task {} reaches Trino; {why}", task.id)),
            task: Some(task.id.clone()),
        });
    }
    out
}

/// How a task starts, for a finding at its line: `@task`, `SQLExecuteQueryOperator(`.
fn task_head(m: &Module, task: &Task) -> String {
    let line = m.src.lines().nth(task.line.saturating_sub(1)).unwrap_or("");
    one_line(line)
}

/// A key of the DAG call's `default_args` (a dict, or a module-level name bound to one).
fn default_arg<'t>(m: &Module<'t, '_>, dag: Node<'t>, key: &str) -> Option<Node<'t>> {
    let mut d = kwarg(dag, "default_args", m.src)?;
    if d.kind() == "identifier" {
        let name = text(d, m.src);
        d = descendants(m.root)
            .filter(|n| n.kind() == "assignment")
            .filter(|a| {
                a.child_by_field_name("left")
                    .is_some_and(|l| text(l, m.src) == name)
            })
            .find_map(|a| a.child_by_field_name("right"))?;
    }
    match d.kind() {
        "dictionary" => kids(d)
            .into_iter()
            .filter(|p| p.kind() == "pair")
            .find(|p| {
                p.child_by_field_name("key")
                    .and_then(|k| literal(k, m.src, &m.consts))
                    == Some(Literal::Str(key.to_string()))
            })
            .and_then(|p| p.child_by_field_name("value")),
        "call" => kwarg(d, key, m.src),
        _ => None,
    }
}

/// `catchup=True` with `max_active_runs` > 1 on a DAG that compacts.
pub fn catchup(m: &Module, dag: Option<Node>, optimizes: &[Optimize]) -> Vec<CodeFinding> {
    let Some(dag) = dag else { return Vec::new() };
    if optimizes.is_empty() {
        return Vec::new();
    }
    let catchup = kwarg(dag, "catchup", m.src);
    let runs = kwarg(dag, "max_active_runs", m.src);
    match (
        catchup.map(|c| (c, literal(c, m.src, &m.consts))),
        runs.and_then(|r| literal(r, m.src, &m.consts)),
    ) {
        (Some((c, Some(Literal::Bool(true)))), Some(Literal::Int(n))) if n > 1 => {
            vec![CodeFinding {
                rule: CodeRule::CatchupOverlap,
                line: line_of(c),
                code: format!("catchup=True, max_active_runs={n}"),
                around: Some(format!(
                    "up to {n} catch-up runs optimize the same table at once"
                )),
                task: None,
            }]
        }
        _ => Vec::new(),
    }
}

/// Every `ALTER TABLE … EXECUTE optimize` the file's strings hold, with its table and
/// whether a `WHERE` bounds it.
pub fn optimizes(m: &Module) -> Vec<Optimize> {
    let mut out: Vec<Optimize> = Vec::new();
    for s in descendants(m.root).filter(|n| is_outer_string(*n)) {
        let words: Vec<String> = string_words(s, m.src, &m.consts)
            .split_whitespace()
            .map(str::to_string)
            .collect();
        let lower: Vec<String> = words.iter().map(|w| w.to_lowercase()).collect();
        for i in 0..lower.len() {
            let opt = lower.get(i + 4).is_some_and(|w| w.starts_with("optimize"));
            if lower[i] == "alter"
                && lower.get(i + 1).map(String::as_str) == Some("table")
                && lower.get(i + 3).map(String::as_str) == Some("execute")
                && opt
            {
                let table = words[i + 2].replace('"', "").to_lowercase();
                let whole = !lower[i + 4..].iter().any(|w| w == "where");
                let line = line_of(s);
                if !out.iter().any(|o| o.table == table && o.line == line) {
                    out.push(Optimize { table, whole, line });
                }
            }
        }
    }
    out
}

fn is_outer_string(n: Node) -> bool {
    matches!(n.kind(), "string" | "concatenated_string")
        && n.parent().is_none_or(|p| p.kind() != "concatenated_string")
}

/// A compaction with nothing that reads the table's state: no string names a metadata
/// table (`$snapshots`, …) and no check operator runs.
pub fn freshness(m: &Module, optimizes: &[Optimize]) -> Vec<CodeFinding> {
    let Some(first) = optimizes.first() else {
        return Vec::new();
    };
    let mut nodes = descendants(m.root);
    let checked = nodes.any(|n| match n.kind() {
        "string" | "concatenated_string" => {
            let words = string_words(n, m.src, &m.consts).to_lowercase();
            FRESHNESS_TABLES.iter().any(|t| words.contains(t))
        }
        "call" => n
            .child_by_field_name("function")
            .and_then(|f| last_name(f, m.src))
            .is_some_and(|l| CHECK_OPERATORS.contains(&l)),
        _ => false,
    });
    if checked {
        return Vec::new();
    }
    vec![CodeFinding {
        rule: CodeRule::NoFreshnessCheck,
        line: first.line,
        code: format!("ALTER TABLE {} EXECUTE optimize", first.table),
        around: Some("nothing reads the table's $snapshots or $files".into()),
        task: None,
    }]
}

/// The Trino connection each task uses, where the code says it: `trino_conn_id=` /
/// `conn_id=` of a Trino call or operator, `get_connection(…)`, `get_hook(…)`.
pub fn connections(m: &Module) -> Vec<TaskConnection> {
    let mut out: Vec<TaskConnection> = Vec::new();
    for task in &m.tasks {
        let mut calls: Vec<Node> = task.call.into_iter().collect();
        for f in m.scope(task) {
            if let Some(b) = m.body(&f) {
                calls.extend(own_nodes(b).filter(|n| n.kind() == "call"));
            }
        }
        for c in calls {
            for (value, line) in conn_ids(m, c) {
                if !out.iter().any(|x| x.task == task.id && x.conn_id == value) {
                    out.push(TaskConnection {
                        task: task.id.clone(),
                        conn_id: value,
                        line,
                    });
                }
            }
        }
    }
    out
}

fn conn_ids(m: &Module, c: Node) -> Vec<(String, usize)> {
    let last = c
        .child_by_field_name("function")
        .and_then(|f| last_name(f, m.src))
        .unwrap_or("");
    let mut values: Vec<Node> = Vec::new();
    if let Some(v) = kwarg(c, "trino_conn_id", m.src) {
        values.push(v);
    }
    if m.reaches(c, &BTreeSet::new())
        && let Some(v) = kwarg(c, "conn_id", m.src)
    {
        values.push(v);
    }
    let hooked = c
        .child_by_field_name("function")
        .and_then(|f| f.child_by_field_name("object"))
        .and_then(|o| root_name(o, m.src))
        .is_some_and(|r| r.contains("Hook") || r == "trino");
    if hooked && matches!(last, "get_connection" | "get_hook") {
        values.extend(positional(c).into_iter().next());
        values.extend(kwarg(c, "conn_id", m.src));
    }
    values
        .into_iter()
        .filter_map(|v| match literal(v, m.src, &m.consts) {
            Some(Literal::Str(s)) => Some((s, line_of(v))),
            _ => None,
        })
        .collect()
}
