//! The maintenance DAG's own code, read for what hides a failure: a handler that swallows
//! every error around a call that reaches Trino (`except Exception: pass`, a handler that
//! only logs), a Trino task without retries, catch-up runs of a compaction that overlap, a
//! compaction nothing checks, an optimize of a large table without a `WHERE`; and the
//! Trino connection each task uses.
//!
//! Pure: from the file's text to [`DagCode`], through a real Python parse (tree-sitter's
//! Python grammar); a file that does not parse gives no finding and says where it fails.
//! What is found is advice, never a verdict on the table: a DAG with such a handler may
//! not be the cause, and one without may be ("may hide failures").

use serde::Serialize;

mod rules;
mod scan;
mod syntax;
#[cfg(test)]
mod tests;

use scan::Module;

/// What one rule over the code found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CodeRule {
    /// `except Exception: pass` (or only logging) around a call that reaches Trino.
    SwallowsErrors,
    /// A task that reaches Trino runs once: `retries` is 0 or set nowhere.
    NoRetries,
    /// `catchup=True` with `max_active_runs` > 1 on a compaction.
    CatchupOverlap,
    /// A compaction and nothing that reads the table's state after it.
    NoFreshnessCheck,
    /// An optimize without `WHERE` on a table floe knows is large.
    WholeTableOptimize,
}

impl CodeRule {
    /// The advice's head, as a finding's line starts.
    pub fn headline(self) -> &'static str {
        match self {
            CodeRule::SwallowsErrors => "may hide failures",
            CodeRule::NoRetries => "no retries",
            CodeRule::CatchupOverlap => "catch-up runs overlap",
            CodeRule::NoFreshnessCheck => "no freshness check",
            CodeRule::WholeTableOptimize => "whole-table optimize",
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            CodeRule::SwallowsErrors => "swallows_errors",
            CodeRule::NoRetries => "no_retries",
            CodeRule::CatchupOverlap => "catchup_overlap",
            CodeRule::NoFreshnessCheck => "no_freshness_check",
            CodeRule::WholeTableOptimize => "whole_table_optimize",
        }
    }
}

/// One finding in the code, at its line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CodeFinding {
    pub rule: CodeRule,
    /// 1-based line in the DAG's file.
    pub line: usize,
    /// The code there, on one line and short: `except Exception: pass`.
    pub code: String,
    /// What it is around (the call that reaches Trino) or why it matters.
    pub around: Option<String>,
    /// The task it is in, when it is in one.
    pub task: Option<String>,
}

impl CodeFinding {
    /// `may hide failures: compact_permits.py:56 `except: pass` around `hook.run(...)``.
    pub fn text(&self, file: &str) -> String {
        let head = format!(
            "{}: {file}:{} `{}`",
            self.rule.headline(),
            self.line,
            self.code
        );
        match (&self.around, self.rule) {
            (Some(a), CodeRule::SwallowsErrors) => format!("{head} around `{a}`"),
            (Some(a), _) => format!("{head} ({a})"),
            (None, _) => head,
        }
    }
}

/// The Trino connection a task uses, where the code names it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TaskConnection {
    pub task: String,
    pub conn_id: String,
    pub line: usize,
}

/// An `ALTER TABLE … EXECUTE optimize` in the code.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Optimize {
    /// The table as the SQL names it, lower-cased, quotes removed.
    pub table: String,
    /// No `WHERE`: the whole table is rewritten in one statement.
    pub whole: bool,
    pub line: usize,
}

/// Where a file fails to parse.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Unparsed {
    pub line: usize,
    pub message: String,
}

/// What the code of one DAG file says.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DagCode {
    /// The file's name as Airflow has it (`compact_permits.py`).
    pub file: String,
    /// Set when the file does not parse: then nothing else is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unparsed: Option<Unparsed>,
    /// The findings that need nothing but the code, by line.
    pub findings: Vec<CodeFinding>,
    pub connections: Vec<TaskConnection>,
    pub optimizes: Vec<Optimize>,
}

impl DagCode {
    /// Every finding, by line: the code's own and, for each optimize without `WHERE` of a
    /// table `size` says is large (its bytes), the whole-table one.
    pub fn advice(&self, size: &dyn Fn(&str) -> Option<u64>) -> Vec<CodeFinding> {
        let mut out = self.findings.clone();
        for o in self.optimizes.iter().filter(|o| o.whole) {
            if let Some(bytes) = size(&o.table) {
                out.push(CodeFinding {
                    rule: CodeRule::WholeTableOptimize,
                    line: o.line,
                    code: format!("ALTER TABLE {} EXECUTE optimize", o.table),
                    around: Some(format!(
                        "no WHERE: {} rewritten in one statement",
                        bytesize::ByteSize::b(bytes).display().si()
                    )),
                    task: None,
                });
            }
        }
        out.sort_by_key(|f| (f.line, f.rule));
        out
    }

    /// The first handler that swallows errors, the finding triage names.
    pub fn swallowing(&self) -> Option<&CodeFinding> {
        self.findings
            .iter()
            .find(|f| f.rule == CodeRule::SwallowsErrors)
    }

    /// The connections the code says its tasks use, each once.
    pub fn connection_ids(&self) -> Vec<&str> {
        let mut ids: Vec<&str> = self
            .connections
            .iter()
            .map(|c| c.conn_id.as_str())
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }
}

/// Read the code of `dag_id`'s file `file` (its name, for the findings' lines).
pub fn inspect(source: &str, file: &str, dag_id: &str) -> DagCode {
    let mut code = DagCode {
        file: file.to_string(),
        ..DagCode::default()
    };
    let tree = match syntax::parse(source) {
        Ok(t) => t,
        Err(e) => {
            code.unparsed = Some(Unparsed {
                line: e.line,
                message: e.message,
            });
            return code;
        }
    };
    let m = Module::read(tree.root_node(), source);
    let dag = rules::dag_call(&m, dag_id);
    code.optimizes = rules::optimizes(&m);
    let mut findings = rules::swallowing(&m);
    findings.extend(rules::retries(&m, dag));
    findings.extend(rules::catchup(&m, dag, &code.optimizes));
    findings.extend(rules::freshness(&m, &code.optimizes));
    findings.sort_by_key(|f| (f.line, f.rule));
    code.findings = findings;
    code.connections = rules::connections(&m);
    code
}

/// A table is large for the whole-table rule from this many target files' worth of bytes.
pub const LARGE_TABLE_TARGET_FILES: u64 = 100;

/// What floe knows of a maintenance DAG's code: its file, read (and parsed, or where it
/// does not parse), or what Airflow answered instead of it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "source", rename_all = "snake_case")]
pub enum CodeFacts {
    Read(DagCode),
    /// Airflow refused (403), could not find (404) or could not give the source.
    Unread {
        status: Option<u16>,
        /// What failed and where (the HTTP status and URL).
        error: String,
    },
}

impl CodeFacts {
    /// What a DAG's row says when its code could not be read: `source refused: HTTP
    /// 403`, `no source: HTTP 404`, `source does not parse`.
    pub fn row_note(&self) -> Option<String> {
        match self {
            CodeFacts::Unread { status, .. } => Some(match status {
                Some(s @ (401 | 403)) => format!("source refused: HTTP {s}"),
                Some(404) => "no source: HTTP 404".into(),
                Some(s) => format!("source unreadable: HTTP {s}"),
                None => "source unreadable".into(),
            }),
            CodeFacts::Read(c) if c.unparsed.is_some() => Some("source does not parse".into()),
            CodeFacts::Read(_) => None,
        }
    }

    /// The code, when it was read.
    pub fn code(&self) -> Option<&DagCode> {
        match self {
            CodeFacts::Read(c) => Some(c),
            CodeFacts::Unread { .. } => None,
        }
    }

    /// `may hide failures: compact_permits.py:56 …`: the swallowing handler, in words.
    pub fn swallowing_text(&self) -> Option<String> {
        let c = self.code()?;
        c.swallowing().map(|f| f.text(&c.file))
    }

    /// The code's findings and state as evidence lines (`code: …`), with `size` telling
    /// the bytes of the tables floe knows are large.
    pub fn evidence(&self, size: &dyn Fn(&str) -> Option<u64>) -> Vec<String> {
        match self {
            CodeFacts::Unread { error, .. } => {
                vec![format!("code: cannot read the source: {error}")]
            }
            CodeFacts::Read(c) => match &c.unparsed {
                Some(u) => vec![format!("code: {} {}", c.file, u.message)],
                None => {
                    let mut out: Vec<String> = c
                        .advice(size)
                        .iter()
                        .map(|f| format!("code: {}", f.text(&c.file)))
                        .collect();
                    out.extend(c.connections.iter().map(|t| {
                        format!(
                            "code: task {} uses connection {} ({}:{})",
                            t.task, t.conn_id, c.file, t.line
                        )
                    }));
                    out
                }
            },
        }
    }
}

/// The bytes of a table large enough for the whole-table rule: at least
/// [`LARGE_TABLE_TARGET_FILES`] target files' worth.
pub fn large(stats: &crate::lakehouse::model::TableStats) -> Option<u64> {
    let line = LARGE_TABLE_TARGET_FILES.saturating_mul(stats.target_file_size.max(1));
    (stats.total_bytes >= line).then_some(stats.total_bytes)
}

/// Whether the name an SQL statement gives (`iceberg.zoning.permits`, `zoning.permits`,
/// `permits`; lower-cased by the reader) is `t`'s.
pub fn names_table(sql_name: &str, t: &crate::lakehouse::model::TableRef) -> bool {
    let parts: Vec<&str> = sql_name.split('.').collect();
    let full = [t.catalog.as_str(), t.schema.as_str(), t.table.as_str()];
    !parts.is_empty()
        && parts.len() <= 3
        && parts
            .iter()
            .rev()
            .zip(full.iter().rev())
            .all(|(a, b)| a.eq_ignore_ascii_case(b))
}
