//! floe: lakehouse triage in the terminal.
//!
//! Iceberg table health read through Trino, maintenance DAGs read through Airflow, and
//! safe maintenance (`ALTER TABLE … EXECUTE optimize`) on a selection.

pub mod airflow;
pub mod app;
pub mod cache;
pub mod cli;
pub mod config;
pub mod doctor;
pub mod files;
pub mod fmt;
pub mod health;
pub mod lakehouse;
pub mod mutation;
pub mod net;
pub mod refresh;
pub mod report;
pub mod run;
pub mod runtime;
pub mod serve;
pub mod spelled;
pub mod sql;
pub mod tab;
pub mod text;
pub mod tls;
pub mod trino;
pub mod ui;
pub mod units;
