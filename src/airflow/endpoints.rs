//! The REST endpoints floe uses, one module per resource, each an `impl AirflowClient`.

pub mod connections;
mod dags;
mod runs;
mod server;
pub mod sources;
mod tasks;
