//! The application core, cut by feature: each tab (and maintenance, the prompt, export)
//! owns its view state, its messages and its `update` for them; `update` dispatches;
//! the runtime (`crate::runtime`, beside `app` and `ui`) runs effects and draws. See
//! README.md for how a tab is added (five places, `tabs.rs` says which).

pub mod action;
pub mod command_line;
pub mod connection;
pub mod copy;
pub mod dags;
pub mod detail;
pub mod export;
pub mod fleet;
pub mod grid;
pub mod health;
pub mod help;
pub mod keymap;
pub mod layout;
pub mod maintenance;
pub mod nav;
pub mod partitions;
pub mod prompt;
pub mod query_history;
pub mod snapshots;
pub mod state;
pub mod tables;
pub mod tabs;
pub mod triage;
pub mod update;

#[cfg(test)]
pub(crate) mod testing;
