//! The rules a finding is of. Each has an id that never changes (`as_str()`): the
//! reports (JSON, Markdown, Prometheus labels) and the scripts reading them key on it.

use std::fmt;

use serde::{Serialize, Serializer};

macro_rules! rules {
    ($($(#[$meta:meta])* $var:ident = $id:literal,)*) => {
        /// The rule a finding is of.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Rule {
            $($(#[$meta])* $var,)*
        }

        impl Rule {
            /// Every rule, in declaration order.
            pub const ALL: &'static [Rule] = &[$(Rule::$var,)*];

            /// The rule's id, as the reports spell it.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Rule::$var => $id,)*
                }
            }
        }
    };
}

rules! {
    // Tables.
    /// Snapshots past retention.
    SnapshotBloat = "snapshot_bloat",
    /// A table without data files.
    Empty = "empty",
    /// Small data files a compaction would merge.
    SmallFiles = "small_files",
    /// Small files and no compaction in the table's history.
    NeverCompacted = "never_compacted",
    /// The last compaction is older than the limit.
    CompactionStale = "compaction_stale",
    /// When the table was last compacted cannot be told.
    CompactionAgeUnknown = "compaction_age_unknown",
    /// Delete files per data file over the limit.
    DeleteFiles = "delete_files",
    /// Too many manifests.
    Manifests = "manifests",
    /// Too many metadata files.
    MetadataFiles = "metadata_files",
    /// Data files far over the target size.
    LargeFiles = "large_files",
    // A table's compaction correlated with its maintenance DAG.
    /// Stale compaction and the DAG does not import.
    StaleDagBroken = "stale_dag_broken",
    /// Stale compaction and the DAG is paused.
    StaleDagPaused = "stale_dag_paused",
    /// Stale compaction and the DAG is failing.
    StaleDagFailing = "stale_dag_failing",
    /// Stale compaction though the DAG reports success.
    StaleDagSucceeds = "stale_dag_succeeds",
    // DAGs.
    /// The DAG's file does not import.
    DagImportError = "dag_import_error",
    /// The DAG is paused.
    DagPaused = "dag_paused",
    /// The DAG's last run failed.
    DagFailing = "dag_failing",
    /// No success within the expected interval.
    DagNoSuccess = "dag_no_success",
    /// The DAG has never run.
    DagNeverRan = "dag_never_ran",
    /// The DAG could not be read.
    DagUnreadable = "dag_unreadable",
    /// A configured DAG Airflow does not have.
    DagMissing = "dag_missing",
    // Airflow and the check itself.
    /// Airflow could not be reached.
    AirflowUnreachable = "airflow_unreachable",
    /// Airflow reports a component unhealthy.
    AirflowUnhealthy = "airflow_unhealthy",
    /// An Airflow connection to Trino fails its test.
    AirflowConnectionFailing = "airflow_connection_failing",
    /// An Airflow connection points at a Trino other than the one floe reached.
    AirflowConnectionElsewhere = "airflow_connection_elsewhere",
    /// An Airflow connection to Trino passes its test (an INFO: what a failing DAG's
    /// error may name after the connection was fixed).
    AirflowConnectionWorks = "airflow_connection_works",
    /// An Airflow connection to the Trino floe reached, untested (Airflow tests nothing,
    /// or its test is no verdict): an INFO, what a failing DAG's error may still name.
    AirflowConnectionUntested = "airflow_connection_untested",
    /// No table matched.
    NoTables = "no_tables",
    /// A table could not be read.
    Unreadable = "unreadable",
}

impl Rule {
    /// Rules whose finding says the table waits for compaction.
    pub const COMPACTION: [Rule; 3] = [
        Rule::SmallFiles,
        Rule::CompactionStale,
        Rule::NeverCompacted,
    ];

    /// The finding says the table waits for compaction.
    pub fn waits_for_compaction(self) -> bool {
        Rule::COMPACTION.contains(&self)
    }

    /// A table's staleness correlated with its maintenance DAG: the DAG's incident says
    /// it, so a table's evidence leaves it out.
    pub fn is_dag_correlation(self) -> bool {
        matches!(
            self,
            Rule::StaleDagBroken
                | Rule::StaleDagPaused
                | Rule::StaleDagFailing
                | Rule::StaleDagSucceeds
        )
    }

    /// A finding about one of Airflow's connections to Trino.
    pub fn is_airflow_connection(self) -> bool {
        matches!(
            self,
            Rule::AirflowConnectionFailing
                | Rule::AirflowConnectionElsewhere
                | Rule::AirflowConnectionWorks
                | Rule::AirflowConnectionUntested
        )
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Rule {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}
