//! The application core: keymap, state, actions, effects, `update`, runtime.

pub mod action;
pub mod dags;
pub mod grid;
pub mod jobs;
pub mod keymap;
pub mod runtime;
pub mod state;
pub mod update;
