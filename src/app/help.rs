//! The help popup (`?`): every binding of the keymap, scrolled where it does not fit
//! (80x24); the view clamps the offset to what is hidden.

use super::keymap::Command;
use super::state::{Popup, State};

/// Open the help at its top.
pub fn open(s: &mut State) {
    s.help_scroll = 0;
    s.popup = Some(Popup::Help);
}

/// Scroll the open help by a moving command; `false` for a command that does not scroll.
pub fn scroll(s: &mut State, cmd: Command) -> bool {
    let max = s.keymap.help().len() + 16;
    s.help_scroll = match cmd {
        Command::Down => s.help_scroll + 1,
        Command::Up => s.help_scroll.saturating_sub(1),
        Command::PageDown | Command::HalfDown => s.help_scroll + 8,
        Command::PageUp | Command::HalfUp => s.help_scroll.saturating_sub(8),
        Command::Top => 0,
        Command::Bottom => max,
        _ => return false,
    }
    .min(max);
    true
}
