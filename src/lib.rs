//! floe: lakehouse triage in the terminal.
