//! The lakehouse as floe sees it through Trino: tables, stats, partitions, snapshots, and
//! the SQL that reads and maintains them. A table's layout comes from its
//! own declared spec, never from the names of its fields.

pub mod budget;
pub mod dating;
pub mod delta;
pub mod fallbacks;
pub mod layout;
pub mod model;
pub mod plan;
pub mod probe;
pub mod queries;
pub mod query_history;
pub mod recent_writes;
pub mod scan;
pub mod statements;
pub mod summary;
