//! The terminal UI.

use crate::config::Settings;

pub fn run(_settings: Settings) -> color_eyre::Result<()> {
    Err(color_eyre::eyre::eyre!("the terminal UI is not built yet; use `floe check`"))
}
