//! The parse of a DAG file and the small reading helpers the rules share: a node's text,
//! its named children, dotted names of callees, keyword arguments, the file's string
//! constants. Every walk is iterative (an explicit stack): a hostile file nested thousands
//! deep costs time, never the stack.

use std::collections::BTreeMap;

use tree_sitter::{Node, Parser, Tree};

/// How deep a constant's definition may refer to other constants before it is unknown.
const MAX_CONSTANT_PASSES: usize = 8;

/// Why a file gives no findings: it does not parse as Python.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unparsed {
    /// 1-based line of the first error.
    pub line: usize,
    pub message: String,
}

/// The parse of a file, or where it fails.
pub fn parse(source: &str) -> Result<Tree, Unparsed> {
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_python::LANGUAGE.into())
        .map_err(|e| Unparsed {
            line: 0,
            message: format!("the Python grammar cannot be loaded: {e}"),
        })?;
    let tree = parser.parse(source, None).ok_or_else(|| Unparsed {
        line: 0,
        message: "the parser gave up".into(),
    })?;
    let root = tree.root_node();
    if root.has_error() {
        // The innermost error: tree-sitter's recovery may wrap a whole module in one.
        let bad = descendants(root)
            .find(|n| (n.is_error() || n.is_missing()) && !kids(*n).iter().any(|k| k.has_error()));
        let line = bad.map_or(1, |n| line_of(n));
        return Err(Unparsed {
            line,
            message: format!("does not parse as Python (near line {line})"),
        });
    }
    Ok(tree)
}

/// 1-based line a node starts on.
pub fn line_of(n: Node) -> usize {
    n.start_position().row + 1
}

/// The node's source text ("" where the bytes are not UTF-8, which a `&str` source
/// never has).
pub fn text<'s>(n: Node, src: &'s str) -> &'s str {
    n.utf8_text(src.as_bytes()).unwrap_or("")
}

/// The named children, in order.
pub fn kids<'t>(n: Node<'t>) -> Vec<Node<'t>> {
    (0..n.named_child_count())
        .filter_map(|i| n.named_child(i as u32))
        .collect()
}

/// Every node under `n` (itself first), depth first, in source order.
pub fn descendants<'t>(n: Node<'t>) -> impl Iterator<Item = Node<'t>> {
    let mut stack = vec![n];
    std::iter::from_fn(move || {
        let next = stack.pop()?;
        let mut ks = kids(next);
        ks.reverse();
        stack.extend(ks);
        Some(next)
    })
}

/// Every node under `n` (itself first), without descending into nested function or
/// class definitions or lambdas: what runs when `n` runs.
pub fn own_nodes<'t>(n: Node<'t>) -> impl Iterator<Item = Node<'t>> {
    let root = n.id();
    let mut stack = vec![n];
    std::iter::from_fn(move || {
        let next = stack.pop()?;
        let nested = next.id() != root
            && matches!(
                next.kind(),
                "function_definition" | "class_definition" | "lambda" | "decorated_definition"
            );
        if !nested {
            let mut ks = kids(next);
            ks.reverse();
            stack.extend(ks);
        }
        Some(next)
    })
    .filter(move |x| {
        x.id() == root
            || !matches!(
                x.kind(),
                "function_definition" | "class_definition" | "lambda" | "decorated_definition"
            )
    })
}

/// `a.b.c` of an identifier or attribute chain; `None` for anything else (a call, a
/// subscript) in the chain.
pub fn dotted(n: Node, src: &str) -> Option<String> {
    match n.kind() {
        "identifier" => Some(text(n, src).to_string()),
        "attribute" => {
            let obj = dotted(n.child_by_field_name("object")?, src)?;
            let attr = text(n.child_by_field_name("attribute")?, src);
            Some(format!("{obj}.{attr}"))
        }
        _ => None,
    }
}

/// The last name of a callee: `run` of `hook.run`, `TrinoHook` of `TrinoHook`.
pub fn last_name<'s>(callee: Node, src: &'s str) -> Option<&'s str> {
    match callee.kind() {
        "identifier" => Some(text(callee, src)),
        "attribute" => callee
            .child_by_field_name("attribute")
            .map(|a| text(a, src)),
        _ => None,
    }
}

/// The receiver of a method call's callee (`hook` of `hook.run`), when it is one.
pub fn receiver(callee: Node) -> Option<Node> {
    (callee.kind() == "attribute")
        .then(|| callee.child_by_field_name("object"))
        .flatten()
}

/// The identifier a receiver chain starts from (`self` of `self.hook.run`), when it
/// starts from one.
pub fn root_name<'s>(mut n: Node, src: &'s str) -> Option<&'s str> {
    loop {
        match n.kind() {
            "identifier" => return Some(text(n, src)),
            "attribute" => n = n.child_by_field_name("object")?,
            "call" => n = n.child_by_field_name("function")?,
            _ => return None,
        }
    }
}

/// A keyword argument's value of a call: `conn_id` of `X(conn_id=CONN)`.
pub fn kwarg<'t>(call: Node<'t>, name: &str, src: &str) -> Option<Node<'t>> {
    let args = call.child_by_field_name("arguments")?;
    kids(args).into_iter().find_map(|a| {
        (a.kind() == "keyword_argument"
            && a.child_by_field_name("name").map(|k| text(k, src)) == Some(name))
        .then(|| a.child_by_field_name("value"))
        .flatten()
    })
}

/// The positional arguments of a call.
pub fn positional<'t>(call: Node<'t>) -> Vec<Node<'t>> {
    call.child_by_field_name("arguments")
        .map(kids)
        .unwrap_or_default()
        .into_iter()
        .filter(|a| {
            !matches!(
                a.kind(),
                "keyword_argument" | "list_splat" | "dictionary_splat" | "comment"
            )
        })
        .collect()
}

/// A call shown short: `hook.run(...)`, `TrinoHook(...).run(...)`.
pub fn call_text(call: Node, src: &str) -> String {
    fn callee(n: Node, src: &str, depth: usize) -> String {
        if depth > 8 {
            return "…".into();
        }
        match n.kind() {
            "identifier" => text(n, src).to_string(),
            "attribute" => {
                let obj = n
                    .child_by_field_name("object")
                    .map(|o| callee(o, src, depth + 1))
                    .unwrap_or_default();
                let attr = n
                    .child_by_field_name("attribute")
                    .map(|a| text(a, src))
                    .unwrap_or_default();
                format!("{obj}.{attr}")
            }
            "call" => {
                let f = n
                    .child_by_field_name("function")
                    .map(|f| callee(f, src, depth + 1))
                    .unwrap_or_default();
                format!("{f}(...)")
            }
            _ => "…".into(),
        }
    }
    callee(call, src, 0)
}

/// A Python literal's truth, integer or string, as far as it is a literal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Literal {
    Bool(bool),
    Int(i64),
    Str(String),
    None,
}

/// The literal `n` is, resolving names through `consts` (the file's string constants).
pub fn literal(n: Node, src: &str, consts: &Constants) -> Option<Literal> {
    match n.kind() {
        "true" => Some(Literal::Bool(true)),
        "false" => Some(Literal::Bool(false)),
        "none" => Some(Literal::None),
        "integer" => text(n, src).replace('_', "").parse().ok().map(Literal::Int),
        "string" | "concatenated_string" => string_value(n, src, consts).map(Literal::Str),
        "identifier" => consts.get(text(n, src)).cloned().map(Literal::Str),
        "parenthesized_expression" => kids(n).first().and_then(|k| literal(*k, src, consts)),
        _ => None,
    }
}

/// The file's module-level string constants (`TABLE = "iceberg.zoning.permits"`, and
/// f-strings of them), by name.
pub type Constants = BTreeMap<String, String>;

/// The module-level string constants of the file, each resolved through the ones
/// before it (a few passes, for constants defined out of order).
pub fn constants(root: Node, src: &str) -> Constants {
    let assigns: Vec<(String, Node)> = kids(root)
        .into_iter()
        .filter(|s| s.kind() == "expression_statement")
        .filter_map(|s| kids(s).into_iter().next())
        .filter(|a| a.kind() == "assignment")
        .filter_map(|a| {
            let left = a.child_by_field_name("left")?;
            let right = a.child_by_field_name("right")?;
            (left.kind() == "identifier").then(|| (text(left, src).to_string(), right))
        })
        .collect();
    let mut out = Constants::new();
    for _ in 0..MAX_CONSTANT_PASSES {
        let before = out.len();
        for (name, value) in &assigns {
            if out.contains_key(name) {
                continue;
            }
            if let Some(s) = string_value(*value, src, &out) {
                out.insert(name.clone(), s);
            }
        }
        if out.len() == before {
            break;
        }
    }
    out
}

/// The value of a string literal (an f-string's fields resolved through `consts`);
/// `None` when a field names no known constant.
pub fn string_value(n: Node, src: &str, consts: &Constants) -> Option<String> {
    match n.kind() {
        "concatenated_string" => kids(n)
            .into_iter()
            .map(|p| string_value(p, src, consts))
            .collect(),
        "string" => {
            let mut out = String::new();
            for part in kids(n) {
                match part.kind() {
                    "string_content" => out.push_str(text(part, src)),
                    "interpolation" => {
                        let e = part.child_by_field_name("expression")?;
                        if e.kind() != "identifier" {
                            return None;
                        }
                        out.push_str(consts.get(text(e, src))?);
                    }
                    _ => {}
                }
            }
            Some(out)
        }
        "identifier" => consts.get(text(n, src)).cloned(),
        _ => None,
    }
}

/// A string literal's text with every field it cannot resolve left as `{…}`: what the
/// SQL rules read (they need the words, not every value).
pub fn string_words(n: Node, src: &str, consts: &Constants) -> String {
    let mut out = String::new();
    for part in kids(n) {
        match part.kind() {
            "string_content" => out.push_str(text(part, src)),
            "interpolation" => {
                let known = part
                    .child_by_field_name("expression")
                    .filter(|e| e.kind() == "identifier")
                    .and_then(|e| consts.get(text(e, src)));
                out.push_str(known.map_or("{…}", String::as_str));
            }
            "string" => out.push_str(&string_words(part, src, consts)),
            _ => {}
        }
    }
    out
}
