//! floe: lakehouse triage in the terminal.
//!
//! Iceberg table health read through Trino, maintenance DAGs read through Airflow, and
//! safe maintenance (`ALTER TABLE … EXECUTE optimize`) on a selection.

pub mod airflow;
pub mod app;
pub mod cache;
pub mod cli;
pub mod config;
pub mod dag_code;
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
pub mod timeline;
pub mod tls;
pub mod trino;
pub mod ui;
pub mod units;

/// floe's modules in layers, from the bottom up: a module uses only modules of its own
/// layer or of the layers below it (its tests excepted). The foundations (text, numbers,
/// SQL quoting, files, TLS, the tab list); the network; the config; the clients of the
/// servers and the lakehouse's reads; the DAG code's parser, then Airflow's client that
/// reads it; the health rules and the timeline; the refresh, the stats cache and the
/// mutations; the reports; the application core; its drawing; the runtime that serves
/// both; the commands. `layers` (a test) reads the sources and fails on an upward
/// `crate::` path.
pub const LAYERS: &[&[&str]] = &[
    &[
        "text", "fmt", "units", "spelled", "sql", "files", "tls", "tab",
    ],
    &["net"],
    &["config"],
    &["trino"],
    &["lakehouse"],
    &["dag_code"],
    &["airflow"],
    &["health", "timeline"],
    &["refresh", "cache", "mutation"],
    &["report"],
    &["app"],
    &["ui"],
    &["runtime"],
    &["serve", "cli", "doctor", "run"],
];

#[cfg(test)]
mod layers;
