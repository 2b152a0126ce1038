//! What a DAG file holds, read from its parse: its functions, which of them reach Trino
//! (directly, through a hook or connection bound to a name, or through another function of
//! the file), its tasks (`@task` functions, operators and their `python_callable`) and the
//! functions each task runs.

use std::collections::{BTreeMap, BTreeSet};

use tree_sitter::Node;

use super::syntax::{
    Constants, Literal, constants, descendants, dotted, kids, kwarg, last_name, line_of, literal,
    own_nodes, receiver, root_name, text,
};

/// Classes and functions that are Trino by name.
const TRINO_NAMES: [&str; 3] = ["TrinoHook", "TrinoOperator", "TrinoToMySqlOperator"];
/// A hook's methods that send SQL (`hook.run(...)`).
const HOOK_METHODS: [&str; 7] = [
    "run",
    "get_records",
    "get_first",
    "get_pandas_df",
    "get_df",
    "insert_rows",
    "execute",
];
/// Operators that run SQL on whatever connection `conn_id` names: Trino's when it does.
const SQL_OPERATORS: [&str; 2] = ["SQLExecuteQueryOperator", "SqlExecuteQueryOperator"];

/// A task of the file: a `@task` function or an operator.
#[derive(Clone, Debug)]
pub struct Task<'t> {
    pub id: String,
    pub line: usize,
    /// The decorator's call (`@task(retries=3)`) or the operator's call, where its
    /// keyword arguments are.
    pub call: Option<Node<'t>>,
    /// The function it runs: the decorated one, or `python_callable`.
    pub callable: Option<String>,
}

/// The file as the rules read it.
pub struct Module<'t, 's> {
    pub src: &'s str,
    pub root: Node<'t>,
    pub consts: Constants,
    /// Every function of the file by name (the first of a name).
    pub functions: BTreeMap<String, Node<'t>>,
    /// Names imported from a `trino` module (`from trino.dbapi import connect`).
    trino_imports: BTreeSet<String>,
    /// Module-level names bound to something that reaches Trino.
    module_handles: BTreeSet<String>,
    /// Functions that reach Trino, themselves or through the file's other functions.
    pub reaching: BTreeSet<String>,
    pub tasks: Vec<Task<'t>>,
}

impl<'t, 's> Module<'t, 's> {
    pub fn read(root: Node<'t>, src: &'s str) -> Module<'t, 's> {
        let mut functions = BTreeMap::new();
        for n in descendants(root).filter(|n| n.kind() == "function_definition") {
            if let Some(name) = n.child_by_field_name("name") {
                functions.entry(text(name, src).to_string()).or_insert(n);
            }
        }
        let mut m = Module {
            src,
            root,
            consts: constants(root, src),
            functions,
            trino_imports: trino_imports(root, src),
            module_handles: BTreeSet::new(),
            reaching: BTreeSet::new(),
            tasks: Vec::new(),
        };
        m.module_handles = m.handles(root);
        m.reaching = m.reaching_functions();
        m.tasks = m.find_tasks();
        m
    }

    /// The body of a function of the file.
    pub fn body(&self, name: &str) -> Option<Node<'t>> {
        self.functions
            .get(name)
            .and_then(|f| f.child_by_field_name("body"))
    }

    /// Names bound in `scope` (not in nested functions) to a value that reaches Trino:
    /// `hook = TrinoHook(...)`, `conn = hook.get_conn()`, `with … as cur`.
    pub fn handles(&self, scope: Node<'t>) -> BTreeSet<String> {
        let binds: Vec<(String, Node)> = own_nodes(scope)
            .filter_map(|n| match n.kind() {
                "assignment" => {
                    let left = n.child_by_field_name("left")?;
                    let right = n.child_by_field_name("right")?;
                    (left.kind() == "identifier").then(|| (text(left, self.src).into(), right))
                }
                "as_pattern" => {
                    let value = kids(n).into_iter().next()?;
                    let alias = n.child_by_field_name("alias")?;
                    let name = descendants(alias).find(|a| a.kind() == "identifier")?;
                    Some((text(name, self.src).into(), value))
                }
                _ => None,
            })
            .collect();
        let mut set = BTreeSet::new();
        loop {
            let before = set.len();
            for (name, value) in &binds {
                if !set.contains(name) && self.first_trino_call(*value, &set).is_some() {
                    set.insert(name.clone());
                }
            }
            if set.len() == before {
                return set;
            }
        }
    }

    /// The first (outermost) call under `n`, not in a nested function, that reaches
    /// Trino, with `handles` the names bound to Trino in its scope.
    pub fn first_trino_call(&self, n: Node<'t>, handles: &BTreeSet<String>) -> Option<Node<'t>> {
        own_nodes(n).find(|c| c.kind() == "call" && self.reaches(*c, handles))
    }

    /// Whether one call reaches Trino.
    pub fn reaches(&self, call: Node<'t>, handles: &BTreeSet<String>) -> bool {
        let Some(f) = call.child_by_field_name("function") else {
            return false;
        };
        let last = last_name(f, self.src).unwrap_or("");
        if dotted(f, self.src).is_some_and(|d| d == "trino" || d.starts_with("trino."))
            || TRINO_NAMES.contains(&last)
            || self.trino_imports.contains(last)
        {
            return true;
        }
        if f.kind() == "identifier" && self.reaching.contains(last) {
            return true;
        }
        if SQL_OPERATORS.contains(&last)
            && ["conn_id", "trino_conn_id"]
                .iter()
                .filter_map(|k| kwarg(call, k, self.src))
                .any(|v| self.is_trino_conn(v))
        {
            return true;
        }
        if kwarg(call, "trino_conn_id", self.src).is_some() {
            return true;
        }
        let Some(r) = receiver(f) else { return false };
        if root_name(r, self.src)
            .is_some_and(|n| handles.contains(n) || self.module_handles.contains(n))
        {
            return true;
        }
        if HOOK_METHODS.contains(&last) && text(r, self.src).to_lowercase().contains("hook") {
            return true;
        }
        r.kind() == "call" && self.reaches(r, handles)
    }

    /// A connection id that names Trino (`trino_default`, `TRINO_CONN`'s value).
    fn is_trino_conn(&self, v: Node) -> bool {
        match literal(v, self.src, &self.consts) {
            Some(Literal::Str(s)) => s.to_lowercase().contains("trino"),
            _ => text(v, self.src).to_lowercase().contains("trino"),
        }
    }

    /// Functions that reach Trino, to a fixed point (a helper calling a helper).
    fn reaching_functions(&mut self) -> BTreeSet<String> {
        loop {
            let before = self.reaching.len();
            let found: Vec<String> = self
                .functions
                .keys()
                .filter(|name| !self.reaching.contains(*name))
                .filter(|name| {
                    self.body(name).is_some_and(|b| {
                        let h = self.handles(b);
                        self.first_trino_call(b, &h).is_some()
                    })
                })
                .cloned()
                .collect();
            self.reaching.extend(found);
            if self.reaching.len() == before {
                return std::mem::take(&mut self.reaching);
            }
        }
    }

    /// The functions a task runs: its callable and the file's functions it calls, to a
    /// fixed point.
    pub fn scope(&self, task: &Task) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let mut todo: Vec<String> = task.callable.iter().cloned().collect();
        while let Some(name) = todo.pop() {
            if out.contains(&name) || !self.functions.contains_key(&name) {
                continue;
            }
            if let Some(b) = self.body(&name) {
                for c in own_nodes(b).filter(|c| c.kind() == "call") {
                    let callee = c.child_by_field_name("function");
                    if let Some(f) = callee.filter(|f| f.kind() == "identifier") {
                        todo.push(text(f, self.src).to_string());
                    }
                }
            }
            out.push(name);
        }
        out
    }

    /// Whether a task reaches Trino: its operator does, or a function it runs.
    pub fn trino_task(&self, task: &Task<'t>) -> bool {
        let op = task
            .call
            .filter(|c| task.callable.is_none() || !is_decorator_call(*c))
            .is_some_and(|c| self.reaches(c, &BTreeSet::new()));
        op || self.scope(task).iter().any(|f| self.reaching.contains(f))
    }

    /// The file's tasks; an operator made and executed inside a task's own code is that
    /// task's work, not a task of the DAG.
    fn find_tasks(&self) -> Vec<Task<'t>> {
        let mut out = Vec::new();
        for n in descendants(self.root) {
            match n.kind() {
                "decorated_definition" => out.extend(self.decorated_task(n)),
                "call" => out.extend(self.operator_task(n)),
                _ => {}
            }
        }
        let inner: BTreeSet<String> = out.iter().flat_map(|t| self.scope(t)).collect();
        out.retain(|t| {
            t.callable.is_some()
                || !t
                    .call
                    .and_then(|c| enclosing_function(c, self.src))
                    .is_some_and(|f| inner.contains(&f))
        });
        out
    }

    /// `@task` / `@task.python(...)` / `@dag.task` over a function.
    fn decorated_task(&self, n: Node<'t>) -> Option<Task<'t>> {
        let def = n.child_by_field_name("definition")?;
        let name = text(def.child_by_field_name("name")?, self.src).to_string();
        for d in kids(n).into_iter().filter(|d| d.kind() == "decorator") {
            let e = kids(d).into_iter().next()?;
            let (callee, call) = if e.kind() == "call" {
                (e.child_by_field_name("function")?, Some(e))
            } else {
                (e, None)
            };
            let dotted = dotted(callee, self.src).unwrap_or_default();
            if dotted == "task" || dotted.starts_with("task.") || dotted.ends_with(".task") {
                let id = call
                    .and_then(|c| kwarg(c, "task_id", self.src))
                    .and_then(|v| match literal(v, self.src, &self.consts) {
                        Some(Literal::Str(s)) => Some(s),
                        _ => None,
                    })
                    .unwrap_or_else(|| name.clone());
                return Some(Task {
                    id,
                    line: line_of(n),
                    call,
                    callable: Some(name),
                });
            }
        }
        None
    }

    /// `XOperator(task_id="…", …)`, with its `python_callable` when it names a function
    /// of the file.
    fn operator_task(&self, call: Node<'t>) -> Option<Task<'t>> {
        let f = call.child_by_field_name("function")?;
        let last = last_name(f, self.src)?;
        if !(last.ends_with("Operator") || last.ends_with("Sensor")) {
            return None;
        }
        let id = match literal(kwarg(call, "task_id", self.src)?, self.src, &self.consts)? {
            Literal::Str(s) => s,
            _ => return None,
        };
        let callable = kwarg(call, "python_callable", self.src)
            .filter(|v| v.kind() == "identifier")
            .map(|v| text(v, self.src).to_string());
        Some(Task {
            id,
            line: line_of(call),
            call: Some(call),
            callable,
        })
    }
}

/// The name of the function a node is in, when it is in one.
fn enclosing_function(n: Node, src: &str) -> Option<String> {
    let mut p = n.parent();
    while let Some(x) = p {
        if x.kind() == "function_definition" {
            return x
                .child_by_field_name("name")
                .map(|name| text(name, src).to_string());
        }
        p = x.parent();
    }
    None
}

/// A decorator's own call (`task(retries=3)` of `@task(retries=3)`).
fn is_decorator_call(c: Node) -> bool {
    c.parent().is_some_and(|p| p.kind() == "decorator")
}

/// Names imported from a Trino module: `from trino.dbapi import connect`, `from
/// airflow.providers.trino.hooks.trino import TrinoHook as Hook` (`Hook`).
fn trino_imports(root: Node, src: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for n in descendants(root).filter(|n| n.kind() == "import_from_statement") {
        let Some(module) = n.child_by_field_name("module_name") else {
            continue;
        };
        let m = text(module, src);
        if !(m == "trino" || m.starts_with("trino.") || m.contains(".trino")) {
            continue;
        }
        let mut c = n.walk();
        for name in n.children_by_field_name("name", &mut c) {
            let bound = match name.kind() {
                "aliased_import" => name.child_by_field_name("alias"),
                _ => Some(name),
            };
            if let Some(b) = bound {
                let t = text(b, src);
                out.insert(t.rsplit('.').next().unwrap_or(t).to_string());
            }
        }
    }
    out
}
