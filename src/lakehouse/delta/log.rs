//! What a Delta table's log alone tells of its files: the files its commits removed
//! (what a vacuum deletes once their removal is older than its retention, and what the
//! retention still keeps) and the rows its live files' deletion vectors hide. One
//! statement over `"t$transactions"` (each version's actions as JSON, read from the log's
//! commit files, newest first back to the oldest kept), for the one table an operator
//! acts on: it opens every commit file the table keeps, so no survey reads it.
//!
//! Trino keeps no size on a remove action: a removed file's bytes are its add's, when the
//! versions read hold that add. A file removed in a version older than the oldest
//! commit file kept (its removal in a checkpoint only) is not named at all: what the log
//! tells is what a vacuum deletes at least.

use crate::fmt::{human_bytes, human_duration, thousands};
use crate::lakehouse::model::TableRef;
use crate::trino::Row;

/// The facts of [`log_sql`]'s row.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LogFacts {
    /// The oldest and newest versions read (`None`: no commit file).
    pub versions: Option<(i64, i64)>,
    /// Files removed longer ago than the retention and not added back: what a vacuum of
    /// that retention deletes (beside any file no version names).
    pub freeable_files: u64,
    /// Their bytes, as their adds say.
    pub freeable_bytes: u64,
    /// Of those files, the ones added in a version older than those read: bytes unknown.
    pub freeable_unsized: u64,
    /// Files removed within the retention: kept until their removal is that old.
    pub kept_files: u64,
    pub kept_bytes: u64,
    /// Live files carrying a deletion vector, and the rows those vectors hide.
    pub dv_files: u64,
    pub dv_rows: u64,
}

/// One statement over `t`'s commits: each commit's version from its `commitInfo` (Trino
/// 476's `version` column is one behind the commit it holds for every commit but the
/// newest, which two rows then share; the commit info's version is right, Trino filling
/// it from the commit file's name where a writer leaves it out), each file's last action (an add after a remove of
/// the same path in one commit, as a deletion vector's rewrite writes, leaves it live),
/// the removed files split at `retention_secs` before the coordinator's clock (the clock
/// its vacuum reads), the live files' deletion vectors summed.
pub fn log_sql(t: &TableRef, retention_secs: u64) -> String {
    let line_ms = u128::from(retention_secs) * 1000;
    format!(
        "SELECT min(first_version) AS oldest, max(last_version) AS newest, \
         count_if(kind = 'r' AND removed_ms < line) AS freeable_files, \
         COALESCE(sum(CASE WHEN kind = 'r' AND removed_ms < line THEN size END), 0) AS freeable_bytes, \
         count_if(kind = 'r' AND removed_ms < line AND size IS NULL) AS freeable_unsized, \
         count_if(kind = 'r' AND NOT (removed_ms < line)) AS kept_files, \
         COALESCE(sum(CASE WHEN kind = 'r' AND NOT (removed_ms < line) THEN size END), 0) AS kept_bytes, \
         count_if(kind = 'a' AND dv > 0) AS dv_files, \
         COALESCE(sum(CASE WHEN kind = 'a' THEN dv END), 0) AS dv_rows \
         FROM (SELECT path, max_by(kind, ord) AS kind, max_by(removed_ms, ord) AS removed_ms, \
         max_by(dv, ord) AS dv, max(size) AS size, min(version) AS first_version, max(version) AS last_version, \
         CAST(to_unixtime(current_timestamp) * 1000 AS bigint) - {line_ms} AS line \
         FROM (SELECT version, coalesce(json_extract_scalar(a, '$.add.path'), json_extract_scalar(a, '$.remove.path')) AS path, \
         CASE WHEN json_extract_scalar(a, '$.add.path') IS NOT NULL THEN 'a' \
         WHEN json_extract_scalar(a, '$.remove.path') IS NOT NULL THEN 'r' END AS kind, \
         version * 2 + IF(json_extract_scalar(a, '$.add.path') IS NOT NULL, 1, 0) AS ord, \
         CAST(json_extract_scalar(a, '$.add.size') AS bigint) AS size, \
         CAST(json_extract_scalar(a, '$.remove.deletionTimestamp') AS bigint) AS removed_ms, \
         CAST(json_extract_scalar(a, '$.add.deletionVector.cardinality') AS bigint) AS dv \
         FROM (SELECT COALESCE(array_max(filter(transform(CAST(\"transaction\" AS array(json)), \
         a -> CAST(json_extract_scalar(a, '$.commitInfo.version') AS bigint)), v -> v IS NOT NULL)), version) AS version, \
         CAST(\"transaction\" AS array(json)) AS actions FROM {}) c \
         CROSS JOIN UNNEST(c.actions) AS u(a)) e \
         GROUP BY path) f",
        t.meta("transactions")
    )
}

/// [`log_sql`]'s row. The versions count every commit read, the file facts the paths
/// alone (a commit of no file, `CREATE TABLE`'s, groups as no path).
pub fn parse_log(rows: &[Row]) -> LogFacts {
    let Some(r) = rows.first() else {
        return LogFacts::default();
    };
    let n = |k: &str| r.u64(k).unwrap_or(0);
    LogFacts {
        versions: r.i64("oldest").zip(r.i64("newest")),
        freeable_files: n("freeable_files"),
        freeable_bytes: n("freeable_bytes"),
        freeable_unsized: n("freeable_unsized"),
        kept_files: n("kept_files"),
        kept_bytes: n("kept_bytes"),
        dv_files: n("dv_files"),
        dv_rows: n("dv_rows"),
    }
}

impl LogFacts {
    /// What a vacuum of `retention_secs` deletes and what deletion vectors hide, in a
    /// clause for the Snapshots tab's sentence.
    pub fn summary(&self, retention_secs: u64) -> String {
        let age = human_duration(retention_secs as i64);
        let Some((oldest, newest)) = self.versions else {
            return "the table's log keeps no commit file".to_string();
        };
        let mut out = format!(
            "a vacuum at {age} deletes {} file{} ({}) the log (versions {oldest}-{newest}) removed",
            thousands(self.freeable_files),
            if self.freeable_files == 1 { "" } else { "s" },
            human_bytes(self.freeable_bytes)
        );
        if self.freeable_unsized > 0 || oldest > 0 {
            out.push_str(" at least");
        }
        if self.kept_files > 0 {
            out.push_str(&format!(
                ", keeps {} removed since ({})",
                thousands(self.kept_files),
                human_bytes(self.kept_bytes)
            ));
        }
        if self.dv_files > 0 {
            out.push_str(&format!(
                "; deletion vectors hide {} row{} in {} live file{}",
                thousands(self.dv_rows),
                if self.dv_rows == 1 { "" } else { "s" },
                thousands(self.dv_files),
                if self.dv_files == 1 { "" } else { "s" },
            ));
        }
        out
    }

    /// What a vacuum of `retention_secs` deletes, as the log tells it, in a sentence for
    /// its confirmation.
    pub fn vacuum_note(&self, retention_secs: u64) -> String {
        let age = human_duration(retention_secs as i64);
        let Some((oldest, newest)) = self.versions else {
            return "the table's log keeps no commit file: what this vacuum deletes is not known"
                .to_string();
        };
        let files = |n: u64, bytes: u64| {
            format!(
                "{} file{} ({})",
                thousands(n),
                if n == 1 { "" } else { "s" },
                human_bytes(bytes)
            )
        };
        let mut out = if self.freeable_files == 0 {
            format!(
                "the log (versions {oldest}-{newest}) names no file removed more than {age} ago: \
                 this vacuum deletes only files in the table's location no version names"
            )
        } else {
            let mut out = format!(
                "the log (versions {oldest}-{newest}) names {} removed more than {age} ago: this vacuum deletes them",
                files(self.freeable_files, self.freeable_bytes)
            );
            if self.freeable_unsized > 0 {
                out.push_str(&format!(
                    " ({} of them added before version {oldest}: their bytes not counted)",
                    thousands(self.freeable_unsized)
                ));
            }
            out.push_str(", with any file in the table's location no version names");
            out
        };
        if self.kept_files > 0 {
            out.push_str(&format!(
                "; {} removed since stay until their removal is {age} old",
                files(self.kept_files, self.kept_bytes)
            ));
        }
        if oldest > 0 {
            out.push_str(&format!(
                "; files removed before version {oldest} (in a checkpoint only) are not counted"
            ));
        }
        if self.dv_files > 0 {
            out.push_str(&format!(
                "; {} live file{} hide{} {} deleted row{} in deletion vectors: a vacuum keeps them, an OPTIMIZE rewrites them",
                thousands(self.dv_files),
                if self.dv_files == 1 { "" } else { "s" },
                if self.dv_files == 1 { "s" } else { "" },
                thousands(self.dv_rows),
                if self.dv_rows == 1 { "" } else { "s" },
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> LogFacts {
        LogFacts {
            versions: Some((0, 48)),
            freeable_files: 20,
            freeable_bytes: 40 << 20,
            freeable_unsized: 0,
            kept_files: 3,
            kept_bytes: 3 << 20,
            dv_files: 0,
            dv_rows: 0,
        }
    }

    #[test]
    fn the_log_is_read_in_one_statement_over_the_tables_commits() {
        let t = TableRef::new("delta", "sales", "orders");
        let sql = log_sql(&t, 7 * 86_400);
        assert!(
            sql.contains("\"delta\".\"sales\".\"orders$transactions\""),
            "{sql}"
        );
        assert!(
            sql.contains("- 604800000 AS line"),
            "the retention in ms: {sql}"
        );
        // An add after a remove in one commit (a deletion vector's rewrite) wins.
        assert!(sql.contains("version * 2 + IF("), "{sql}");
        assert_eq!(
            sql.matches("$transactions").count(),
            1,
            "one read of the log"
        );
    }

    #[test]
    fn a_vacuums_note_says_what_it_deletes_and_what_the_retention_keeps() {
        let n = facts().vacuum_note(7 * 86_400);
        assert!(
            n.starts_with(
                "the log (versions 0-48) names 20 files (40 MB) removed more than 7d ago: this vacuum deletes them"
            ),
            "{n}"
        );
        assert!(
            n.contains("3 files (3.0 MB) removed since stay until their removal is 7d old"),
            "{n}"
        );
        assert!(
            !n.contains("checkpoint") && !n.contains("deletion vectors"),
            "{n}"
        );
    }

    #[test]
    fn what_the_log_cannot_tell_is_said_not_guessed() {
        let f = LogFacts {
            versions: Some((31, 48)),
            freeable_unsized: 2,
            kept_files: 0,
            dv_files: 1,
            dv_rows: 1_204,
            ..facts()
        };
        let n = f.vacuum_note(86_400);
        assert!(
            n.contains("(2 of them added before version 31: their bytes not counted)"),
            "{n}"
        );
        assert!(
            n.contains("files removed before version 31 (in a checkpoint only) are not counted"),
            "{n}"
        );
        assert!(
            n.contains("1 live file hides 1,204 deleted rows in deletion vectors"),
            "{n}"
        );
        assert!(!n.contains("stay until"), "{n}");
        let nothing = LogFacts {
            freeable_files: 0,
            freeable_bytes: 0,
            ..facts()
        }
        .vacuum_note(86_400);
        assert!(
            nothing.starts_with(
                "the log (versions 0-48) names no file removed more than 1d ago: this vacuum deletes only files"
            ),
            "{nothing}"
        );
        assert_eq!(
            f.summary(86_400),
            "a vacuum at 1d deletes 20 files (40 MB) the log (versions 31-48) removed at least; \
             deletion vectors hide 1,204 rows in 1 live file"
        );
        assert_eq!(
            facts().summary(7 * 86_400),
            "a vacuum at 7d deletes 20 files (40 MB) the log (versions 0-48) removed, keeps 3 removed since (3.0 MB)"
        );
        let none = LogFacts::default().vacuum_note(86_400);
        assert!(none.contains("keeps no commit file"), "{none}");
        assert_eq!(parse_log(&[]), LogFacts::default());
    }
}
