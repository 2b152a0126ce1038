//! A hand-written client for Trino's client REST protocol (direct protocol, no spooling).

mod cancel;
pub mod client;
pub mod cost;
pub mod error;
pub mod login;
pub mod oauth2;
pub mod output;
mod session;
pub mod types;
pub mod value;
pub mod wire;

pub use client::query_info::{QueryInfo, QueryInput};
pub use client::{Client, ClientConfig, RetryPolicy};
pub use cost::{Cost, CostMeter};
pub use error::TrinoError;
pub use oauth2::{LoginEvent, LoginOutcome, LoginPrompt};
pub use output::{QueryOptions, QueryOutput, QueryProgress};
pub use types::TrinoType;
pub use value::{Column, NoColumn, Row, Value};
pub use wire::ServerInfo;
