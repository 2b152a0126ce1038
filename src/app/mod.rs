//! The application core: keymap, state, actions, effects, `update`, runtime.

pub mod keymap;
