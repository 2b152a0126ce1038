//! The writes the coordinator ran recently, from its own record of them
//! (`system.runtime.queries`): which tables a refresh must look at first. A write through
//! this coordinator (an `INSERT`, `MERGE`, `UPDATE`, `DELETE`, `ALTER TABLE … EXECUTE`, a
//! `CREATE TABLE … AS`) names its table in its text; floe reads the finished ones since
//! its last look, takes the name each one writes and probes the listed tables it names.
//! A name is matched loosely (the session's catalog and schema are not in the record): a
//! table of that name in any schema is probed, which costs a probe, never a verdict.
//! Writes by other engines (Spark, Flink, pyiceberg) are not here: the refresh's rotation
//! sees them. Pure but for [`super::queries::Lakehouse::recent_writes`].

use chrono::{DateTime, Utc};

use super::model::TableRef;

/// What one read of the coordinator's record found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RecentWrites {
    /// The tables the writes name, each as the parts of its name.
    pub names: Vec<Vec<String>>,
    /// When the last of them ended (the coordinator's clock): the next read starts there.
    pub newest: Option<DateTime<Utc>>,
    /// Of those, the tables a `CREATE TABLE` made (the listing may lack them), those the
    /// profile's globs leave out already dropped (see [`in_globs`]).
    pub created: Vec<Vec<String>>,
}

/// Whether a statement creates a table (`CREATE [OR REPLACE] TABLE`, with `AS` or not).
pub fn creates_table(sql: &str) -> bool {
    let mut words = Words::new(sql);
    words.keyword().is_some_and(|k| k == "create") && written_target(sql).is_some()
}

/// Whether a table named `parts` may be one the profile's globs (over `schema.table` or
/// `table`, none: every table) list.
pub fn in_globs(parts: &[String], globs: &[String]) -> bool {
    let Some(table) = parts.last() else {
        return false;
    };
    let schema = parts.len().checked_sub(2).map(|i| &parts[i]);
    globs.is_empty()
        || globs.iter().any(|g| {
            crate::lakehouse::statements::glob_match(g, table)
                || schema.is_some_and(|s| {
                    crate::lakehouse::statements::glob_match(g, &format!("{s}.{table}"))
                })
                // A bare name may be any schema's.
                || (schema.is_none() && g.contains('.'))
        })
}

/// A regular expression (for `regexp_like`, already a valid SQL literal's content) matching
/// the text of a statement that writes: floe's own reads of the record start with SELECT.
pub const WRITE_STATEMENT: &str =
    "^\\s*(?i)(insert|merge|update|delete|alter|create|truncate|drop|call)\\b";

/// The statement reading the writes that finished after `since` (the coordinator's
/// clock): the text of each and when it ended.
pub fn recent_writes_sql(since: DateTime<Utc>) -> String {
    format!(
        "SELECT query, to_unixtime(\"end\") AS ended FROM system.runtime.queries \
         WHERE state = 'FINISHED' AND \"end\" > from_unixtime({:.3}) \
         AND regexp_like(query, '{WRITE_STATEMENT}')",
        since.timestamp_millis() as f64 / 1000.0
    )
}

/// Whether a statement is a write as [`WRITE_STATEMENT`] picks them (its first keyword).
pub fn is_write(sql: &str) -> bool {
    Words::new(sql).keyword().is_some_and(|k| {
        matches!(
            k.as_str(),
            "insert"
                | "merge"
                | "update"
                | "delete"
                | "alter"
                | "create"
                | "truncate"
                | "drop"
                | "call"
        )
    })
}

/// What the writes among `queries` (each a statement's text and when it ended) name:
/// the tables they write, those a `CREATE TABLE` made, and when the last write ended (a
/// read's end says nothing of the writes). A write of no table (a `CREATE SCHEMA`, a
/// `CALL`) names none; its end still counts.
pub fn of_queries<'a>(
    queries: impl IntoIterator<Item = (&'a str, Option<DateTime<Utc>>)>,
) -> RecentWrites {
    let (mut names, mut created, mut newest) = (Vec::new(), Vec::new(), None);
    for (q, ended) in queries.into_iter().filter(|(q, _)| is_write(q)) {
        newest = newest.max(ended);
        let Some(target) = written_target(q) else {
            continue;
        };
        if creates_table(q) {
            created.push(target.clone());
        }
        names.push(target);
    }
    for list in [&mut names, &mut created] {
        list.sort();
        list.dedup();
    }
    RecentWrites {
        names,
        newest,
        created,
    }
}

/// The table a statement writes, as the parts of its name (`[t]`, `[s, t]` or
/// `[c, s, t]`), unquoted names folded to lower case as Trino folds them; `None` for a
/// statement that writes no table (a `CREATE SCHEMA`, a `CALL`, a view).
pub fn written_target(sql: &str) -> Option<Vec<String>> {
    let mut words = Words::new(sql);
    let first = words.keyword()?;
    let expect = |w: &mut Words, k: &str| w.keyword().is_some_and(|x| x == k);
    match first.as_str() {
        "insert" | "merge" => {
            if !expect(&mut words, "into") {
                return None;
            }
        }
        "delete" => {
            if !expect(&mut words, "from") {
                return None;
            }
        }
        "update" => {}
        "alter" | "truncate" => {
            if !expect(&mut words, "table") {
                return None;
            }
        }
        "create" => {
            let mut k = words.keyword()?;
            if k == "or" {
                if !expect(&mut words, "replace") {
                    return None;
                }
                k = words.keyword()?;
            }
            if k != "table" {
                return None;
            }
            words.skip_if_exists();
        }
        "drop" => {
            if !expect(&mut words, "table") {
                return None;
            }
            words.skip_if_exists();
        }
        _ => return None,
    }
    words.name()
}

/// Whether the name `parts` can be `t`'s.
pub fn names_table(parts: &[String], t: &TableRef) -> bool {
    match parts {
        [tab] => tab == &t.table,
        [s, tab] => s == &t.schema && tab == &t.table,
        [c, s, tab] => c == &t.catalog && s == &t.schema && tab == &t.table,
        _ => false,
    }
}

/// A cursor over the start of a statement: keywords, then one (possibly quoted) name.
struct Words<'a> {
    rest: &'a str,
}

impl<'a> Words<'a> {
    fn new(sql: &'a str) -> Words<'a> {
        Words { rest: sql }
    }

    fn skip_space(&mut self) {
        loop {
            self.rest = self.rest.trim_start();
            if let Some(r) = self.rest.strip_prefix("--") {
                self.rest = r.find('\n').map_or("", |i| &r[i + 1..]);
            } else if let Some(r) = self.rest.strip_prefix("/*") {
                self.rest = r.find("*/").map_or("", |i| &r[i + 2..]);
            } else {
                return;
            }
        }
    }

    fn keyword(&mut self) -> Option<String> {
        self.skip_space();
        let end = self
            .rest
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(self.rest.len());
        if end == 0 {
            return None;
        }
        let (w, r) = self.rest.split_at(end);
        self.rest = r;
        Some(w.to_ascii_lowercase())
    }

    fn skip_if_exists(&mut self) {
        let save = self.rest;
        let ok = self.keyword().is_some_and(|k| k == "if")
            && self.keyword().is_some_and(|k| k == "not" || k == "exists");
        if !ok {
            self.rest = save;
            return;
        }
        // `IF NOT EXISTS`: one more word.
        let save = self.rest;
        if self.keyword().is_none_or(|k| k != "exists") {
            self.rest = save;
        }
    }

    /// `a.b.c`, each part bare (folded to lower case) or `"quoted"` (`""` an escaped quote).
    fn name(&mut self) -> Option<Vec<String>> {
        let mut parts = Vec::new();
        loop {
            self.skip_space();
            if let Some(r) = self.rest.strip_prefix('"') {
                let mut out = String::new();
                let mut chars = r.char_indices();
                let mut end = None;
                while let Some((i, c)) = chars.next() {
                    if c == '"' {
                        if r[i + 1..].starts_with('"') {
                            out.push('"');
                            chars.next();
                        } else {
                            end = Some(i + 1);
                            break;
                        }
                    } else {
                        out.push(c);
                    }
                }
                self.rest = &r[end?..];
                parts.push(out);
            } else {
                let end = self
                    .rest
                    .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
                    .unwrap_or(self.rest.len());
                if end == 0 {
                    return None;
                }
                let (w, r) = self.rest.split_at(end);
                self.rest = r;
                parts.push(w.to_lowercase());
            }
            self.skip_space();
            match self.rest.strip_prefix('.') {
                Some(r) => self.rest = r,
                None => break,
            }
        }
        (1..=3).contains(&parts.len()).then_some(parts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(sql: &str) -> Option<Vec<String>> {
        written_target(sql)
    }

    fn parts(p: &[&str]) -> Option<Vec<String>> {
        Some(p.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn a_create_is_told_from_other_writes_and_kept_by_the_globs() {
        assert!(creates_table("CREATE TABLE s.t AS SELECT 1 x"));
        assert!(creates_table(
            "/* etl */ create or replace table t (id int)"
        ));
        assert!(!creates_table("CREATE SCHEMA s"));
        assert!(!creates_table("INSERT INTO s.t VALUES (1)"));
        let n = |p: &[&str]| p.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let globs = vec!["zoning.*".to_string(), "events_?".to_string()];
        assert!(in_globs(&n(&["zoning", "parcels"]), &globs));
        assert!(in_globs(&n(&["c", "zoning", "parcels"]), &globs));
        assert!(in_globs(&n(&["audit", "events_1"]), &globs));
        assert!(!in_globs(&n(&["audit", "logins"]), &globs));
        assert!(
            in_globs(&n(&["logins"]), &globs),
            "a bare name may be zoning's"
        );
        assert!(!in_globs(&n(&["logins"]), &["events_?".to_string()]));
        assert!(in_globs(&n(&["anything"]), &[]));
    }

    #[test]
    fn the_writes_among_a_coordinators_queries_name_their_tables_and_the_newest_end() {
        let at = |s: i64| DateTime::from_timestamp(1_800_000_000 + s, 0);
        let w = of_queries([
            ("SELECT * FROM s.read_only", at(50)),
            ("/* dbt */ INSERT INTO s.a SELECT 1", at(10)),
            ("CREATE TABLE s.b AS SELECT 1 x", at(20)),
            ("insert into s.a values (2)", at(5)),
            ("CREATE SCHEMA s2", at(30)),
            ("DELETE FROM s.c", None),
        ]);
        assert_eq!(
            w.names,
            vec![
                vec!["s".to_string(), "a".to_string()],
                vec!["s".to_string(), "b".to_string()],
                vec!["s".to_string(), "c".to_string()],
            ]
        );
        assert_eq!(w.created, vec![vec!["s".to_string(), "b".to_string()]]);
        assert_eq!(
            w.newest,
            at(30),
            "a write of no table counts, a read does not"
        );
        assert!(is_write(
            "  call iceberg.system.rollback_to_snapshot('s', 't', 1)"
        ));
        assert!(!is_write("WITH x AS (SELECT 1) SELECT * FROM x"));
        assert_eq!(of_queries([]), RecentWrites::default());
    }

    #[test]
    fn each_kind_of_write_names_its_table() {
        assert_eq!(
            target("INSERT INTO zoning.documents VALUES (1)"),
            parts(&["zoning", "documents"])
        );
        assert_eq!(
            target("  insert into Documents SELECT 1"),
            parts(&["documents"])
        );
        assert_eq!(
            target("MERGE INTO iceberg.\"Zoning\".\"we\"\"ird\" t USING s ON true"),
            parts(&["iceberg", "Zoning", "we\"ird"])
        );
        assert_eq!(
            target("UPDATE audit.events SET a = 1"),
            parts(&["audit", "events"])
        );
        assert_eq!(
            target("DELETE FROM audit.events WHERE x"),
            parts(&["audit", "events"])
        );
        assert_eq!(
            target("ALTER TABLE iceberg.zoning.documents EXECUTE optimize"),
            parts(&["iceberg", "zoning", "documents"])
        );
        assert_eq!(
            target("CREATE TABLE IF NOT EXISTS a.b AS SELECT 1"),
            parts(&["a", "b"])
        );
        assert_eq!(
            target("CREATE OR REPLACE TABLE a.b AS SELECT 1"),
            parts(&["a", "b"])
        );
        assert_eq!(target("DROP TABLE IF EXISTS a.b"), parts(&["a", "b"]));
        assert_eq!(
            target("/* floe */ -- x\nTRUNCATE TABLE a.b"),
            parts(&["a", "b"])
        );
    }

    #[test]
    fn what_writes_no_table_names_none() {
        for sql in [
            "SELECT 1",
            "CREATE SCHEMA a",
            "CREATE VIEW v AS SELECT 1",
            "CALL system.sync_partition_metadata('a', 'b', 'ADD')",
            "INSERT",
            "DELETE x",
            "INSERT INTO \"unterminated",
            "",
        ] {
            assert_eq!(target(sql), None, "{sql}");
        }
    }

    #[test]
    fn a_name_matches_the_tables_it_can_be() {
        let t = TableRef::new("iceberg", "zoning", "documents");
        let p = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert!(names_table(&p(&["documents"]), &t));
        assert!(names_table(&p(&["zoning", "documents"]), &t));
        assert!(names_table(&p(&["iceberg", "zoning", "documents"]), &t));
        assert!(!names_table(&p(&["audit", "documents"]), &t));
        assert!(!names_table(&p(&["other", "zoning", "documents"]), &t));
    }

    #[test]
    fn the_statement_reads_only_finished_writes_since_the_last_look() {
        let since = DateTime::from_timestamp(1_700_000_000, 0).unwrap();
        let sql = recent_writes_sql(since);
        assert!(sql.contains("from_unixtime(1700000000.000)"), "{sql}");
        assert!(sql.contains("state = 'FINISHED'"));
    }
}
