//! The lakehouse as floe sees it through Trino: tables, stats, partitions, snapshots, and
//! the SQL that reads and maintains them.

pub mod maintenance;
pub mod model;
pub mod queries;
pub mod sql;
