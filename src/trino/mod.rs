//! A hand-written client for Trino's client REST protocol (direct protocol, no spooling).

pub mod client;
pub mod error;
pub mod types;
pub mod value;
pub mod wire;

pub use client::{Client, ClientConfig, QueryOptions, QueryOutput, QueryProgress, RetryPolicy};
pub use error::TrinoError;
pub use types::TrinoType;
pub use value::{Column, Row, Value};
pub use wire::ServerInfo;
