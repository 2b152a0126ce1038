//! What the maintenance DAGs' own code says, as `floe check`'s reports list it: each
//! finding with its file and line (advice, never the DAG's or the table's status), or why
//! the source could not be read.

use super::Report;
use crate::dag_code::{large, names_table};
use crate::health::DagFacts;

impl Report {
    /// `code: may hide failures: compact_permits.py:56 …` lines of one DAG.
    pub(super) fn code_lines(&self, f: &DagFacts) -> Vec<String> {
        f.code
            .as_ref()
            .map(|c| c.evidence(&|t| self.large_table(t)))
            .unwrap_or_default()
    }

    /// Every finding of one DAG's code, each with its file, as JSON lists them.
    pub(super) fn code_findings(&self, f: &DagFacts) -> Vec<serde_json::Value> {
        let Some(code) = f.code.as_ref().and_then(|c| c.code()) else {
            return Vec::new();
        };
        code.advice(&|t| self.large_table(t))
            .iter()
            .map(|x| {
                let mut v = serde_json::to_value(x).expect("a code finding serializes");
                v["file"] = code.file.clone().into();
                v["text"] = x.text(&code.file).into();
                v
            })
            .collect()
    }

    /// The bytes of the table an SQL name names, when the check read it and it is large.
    fn large_table(&self, name: &str) -> Option<u64> {
        self.tables
            .iter()
            .find(|t| names_table(name, &t.table))
            .and_then(|t| t.stats.as_ref())
            .and_then(large)
    }
}
