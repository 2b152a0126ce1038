//! floe's integration tests: one binary, a module per subject (as `src/` is cut). Most
//! talk to the lab (`tests/lab`, started by `cargo xtask test`): the real Trino 476 over a
//! real Iceberg warehouse, real Airflow 3 and 2, and the Trino stand-in and fault proxies
//! for what a real server cannot do on demand. Tests that share a lab resource scope it
//! to themselves (a user of their own, a copy of a seed table, a connection of their own)
//! or take its lock (the Airflow fault proxy).

mod common;

mod airflow_client;
mod audit_append;
mod bastion_pty;
mod bounded_reads;
mod check;
mod check_all;
mod cli_extras;
mod connection_fix;
mod connection_tests;
mod contention;
mod dag_code;
mod dag_watch;
mod delta;
mod delta_jobs;
mod doctor;
mod faults_airflow;
mod faults_trino;
mod fleet;
mod fleet_pty;
mod hostile;
mod jobs;
mod loop_lab;
mod loop_pty;
mod maintenance;
mod noise;
mod oauth2;
mod optimize_eta;
mod parity;
mod plan_reads;
mod query_history;
mod real_optimize;
mod refresh_lab;
mod report;
mod scans;
mod serve;
mod servers;
mod sql_quoting;
mod staleness;
mod survey;
mod triage;
mod triage_pty;
mod trino_client;
mod trino_tls;
mod tui_faults;
mod tui_pty;
mod wrong_target;
