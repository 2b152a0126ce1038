//! Airflow's stable REST API, for the maintenance DAGs: `/api/v2` (Airflow 3) and `/api/v1`
//! (Airflow 2), detected when connecting.
//!
//! [`AirflowClient`] reads DAGs, runs, task instances, task logs, import errors and
//! connections, and performs the few writes floe offers (trigger, clear, pause). The models
//! ([`model`]) are one shape for both APIs, decoded from the documents in [`wire`]; [`log`] turns task logs into lines with **the
//! error line** an operator needs; [`facts`] reduces what was read to the
//! [`DagFacts`](facts::DagFacts) the health rules evaluate. Nothing here judges: `health`
//! turns what was read into findings.

mod auth;
pub mod client;
mod detect;
pub mod endpoints;
pub mod error;
pub mod facts;
mod http;
pub mod log;
mod log_tail;
pub mod model;
pub mod scan;
pub mod wire;
pub mod write;

pub use client::{AirflowClient, ClientOptions};
pub use error::AirflowError;
pub use facts::{TaskFailure, dag_facts, failing_task, import_error_for, schedule_interval};
pub use http::{RetryPolicy, encode_segment};
pub use log::{LogLine, TaskLog};
pub use model::{
    AirflowHealth, ApiVersion, ClearOutcome, ClearScope, ClearedTask, ComponentHealth, Connection,
    ConnectionTest, Dag, DagImportError, DagRun, DagRunState, HealthStatus, RunType, ServerVersion,
    TaskInstance, TaskState, TestSite, Tested,
};
pub use write::WriteRequest;
