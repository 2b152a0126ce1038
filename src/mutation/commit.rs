//! What a failed commit of a maintenance statement means for the table. Trino's Iceberg
//! connector reports every failed commit as `ICEBERG_COMMIT_ERROR`, for two different
//! outcomes: another writer committed first and this statement's commit was refused (its
//! validation found the files it rewrote removed or given new deletes: nothing of it is in
//! the table), or the catalog did not answer and nobody knows whether it committed
//! (Iceberg's `CommitStateUnknownException`). The operator is told which, because the
//! next step differs: plan again, or look at the snapshots before running anything.

use crate::trino::TrinoError;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommitFailure {
    /// Refused: the table changed under the statement; nothing of it was committed.
    Conflict,
    /// The commit's outcome is unknown: it may be in the table.
    Unknown,
}

/// Iceberg's own sentence in a `CommitStateUnknownException`.
const UNKNOWN: &str = "cannot determine whether the commit was successful";

/// Iceberg's words for a refused commit (validation against the newer snapshot, or a
/// catalog refusing an out-of-date base), as Trino passes them on.
const REFUSED: [&str; 4] = [
    "missing required files to delete",
    "found new delete",
    "found new position delete",
    "found conflicting files",
];

impl CommitFailure {
    pub fn of(e: &TrinoError) -> Option<CommitFailure> {
        let TrinoError::Query {
            error_name,
            message,
            ..
        } = e
        else {
            return None;
        };
        let text = message.to_lowercase();
        if text.contains(UNKNOWN) {
            return Some(CommitFailure::Unknown);
        }
        let refused = REFUSED.iter().any(|w| text.contains(w));
        (error_name == "ICEBERG_COMMIT_ERROR" || refused).then_some(CommitFailure::Conflict)
    }

    /// What it means, said after Trino's own error.
    pub fn meaning(self) -> &'static str {
        match self {
            CommitFailure::Conflict => {
                "the table changed while the statement ran (another writer committed first); \
                 Iceberg committed nothing of it: plan it again to work on the table as it is now"
            }
            CommitFailure::Unknown => {
                "whether the statement committed is unknown: look at the table's snapshots \
                 before running it again"
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(name: &str, message: &str) -> TrinoError {
        TrinoError::Query {
            query_id: "q1".into(),
            error_name: name.into(),
            error_code: 65536 + 7,
            error_type: "EXTERNAL".into(),
            message: message.into(),
            location: None,
        }
    }

    #[test]
    fn a_refused_commit_is_a_conflict_and_an_unknown_one_is_not() {
        let refused = query(
            "ICEBERG_COMMIT_ERROR",
            "Failed to commit the transaction during optimize: Missing required files to delete: /w/a.parquet",
        );
        assert_eq!(CommitFailure::of(&refused), Some(CommitFailure::Conflict));
        let unknown = query(
            "ICEBERG_COMMIT_ERROR",
            "Failed to commit during optimize: timeout\nCannot determine whether the commit was \
             successful or not, the underlying data files may or may not be needed.",
        );
        assert_eq!(CommitFailure::of(&unknown), Some(CommitFailure::Unknown));
        // Iceberg's validation can also surface under another name.
        let validation = query(
            "GENERIC_INTERNAL_ERROR",
            "Cannot commit, found new position delete for replaced data file: GenericDataFile{…}",
        );
        assert_eq!(
            CommitFailure::of(&validation),
            Some(CommitFailure::Conflict)
        );
    }

    #[test]
    fn other_failures_are_not_commit_failures() {
        for e in [
            query(
                "TABLE_NOT_FOUND",
                "line 1:1: Table 'iceberg.s.t' does not exist",
            ),
            query("NOT_SUPPORTED", "Cannot commit to a materialized view"),
            TrinoError::Cancelled {
                query_id: "q".into(),
            },
        ] {
            assert_eq!(CommitFailure::of(&e), None, "{e}");
        }
    }
}
