//! The key syntax of `[keys]` (`q`, `ctrl-s`, `<Ctrl-d>`, `shift-tab`, `F5`): a [`Key`]
//! parsed from its text, read from a terminal event, and written back.

use std::fmt;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// A key as the keymap knows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    pub code: KeyCodeOrd,
    pub ctrl: bool,
    pub alt: bool,
}

/// `KeyCode` subset with a total order (for maps).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum KeyCodeOrd {
    Char(char),
    F(u8),
    Enter,
    Esc,
    Tab,
    BackTab,
    Backspace,
    Up,
    Down,
    Left,
    Right,
    PageUp,
    PageDown,
    Home,
    End,
    Insert,
    Delete,
}

/// A key spec that does not read (as written).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid key {0:?}")]
pub struct InvalidKey(pub String);

impl Key {
    pub fn from_event(ev: &KeyEvent) -> Option<Key> {
        let code = match ev.code {
            KeyCode::Char(c) => KeyCodeOrd::Char(c),
            KeyCode::F(n) => KeyCodeOrd::F(n),
            KeyCode::Enter => KeyCodeOrd::Enter,
            KeyCode::Esc => KeyCodeOrd::Esc,
            KeyCode::Tab => KeyCodeOrd::Tab,
            KeyCode::BackTab => KeyCodeOrd::BackTab,
            KeyCode::Backspace => KeyCodeOrd::Backspace,
            KeyCode::Up => KeyCodeOrd::Up,
            KeyCode::Down => KeyCodeOrd::Down,
            KeyCode::Left => KeyCodeOrd::Left,
            KeyCode::Right => KeyCodeOrd::Right,
            KeyCode::PageUp => KeyCodeOrd::PageUp,
            KeyCode::PageDown => KeyCodeOrd::PageDown,
            KeyCode::Home => KeyCodeOrd::Home,
            KeyCode::End => KeyCodeOrd::End,
            KeyCode::Insert => KeyCodeOrd::Insert,
            KeyCode::Delete => KeyCodeOrd::Delete,
            _ => return None,
        };
        let ctrl = ev.modifiers.contains(KeyModifiers::CONTROL);
        let alt = ev.modifiers.contains(KeyModifiers::ALT);
        // Terminals report ctrl-\ as ctrl-4 in some modes and as FS (0x1c) in others.
        let code = match code {
            KeyCodeOrd::Char('4') if ctrl => KeyCodeOrd::Char('\\'),
            KeyCodeOrd::Char('\u{1c}') => {
                return Some(Key {
                    code: KeyCodeOrd::Char('\\'),
                    ctrl: true,
                    alt,
                });
            }
            c => c,
        };
        Some(Key { code, ctrl, alt })
    }

    /// Parse `q`, `G`, `ctrl-s`, `<Ctrl-d>`, `shift-tab`, `alt-x`, `enter`, `space`, `F5`.
    pub fn parse(text: &str) -> Result<Key, InvalidKey> {
        let bad = || InvalidKey(text.to_string());
        let t = text.trim();
        let t = t
            .strip_prefix('<')
            .and_then(|x| x.strip_suffix('>'))
            .unwrap_or(t);
        if t.is_empty() {
            return Err(bad());
        }
        let (mut ctrl, mut alt, mut shift) = (false, false, false);
        let mut rest = t;
        // Modifiers are `word-` prefixes; a lone `-` is the minus key.
        while let Some(pos) = rest.find('-') {
            if pos == 0 || rest.len() == 1 {
                break;
            }
            let (m, tail) = rest.split_at(pos);
            match m.to_ascii_lowercase().as_str() {
                "ctrl" | "c" | "control" => ctrl = true,
                "alt" | "a" | "m" | "meta" => alt = true,
                "shift" | "s" => shift = true,
                _ => return Err(bad()),
            }
            rest = &tail[1..];
            if rest.is_empty() {
                return Err(bad());
            }
        }
        let lower = rest.to_ascii_lowercase();
        let code = match lower.as_str() {
            "enter" | "return" | "cr" => KeyCodeOrd::Enter,
            "esc" | "escape" => KeyCodeOrd::Esc,
            "tab" if shift => KeyCodeOrd::BackTab,
            "tab" => KeyCodeOrd::Tab,
            "backtab" => KeyCodeOrd::BackTab,
            "backspace" | "bs" => KeyCodeOrd::Backspace,
            "space" => KeyCodeOrd::Char(' '),
            "up" => KeyCodeOrd::Up,
            "down" => KeyCodeOrd::Down,
            "left" => KeyCodeOrd::Left,
            "right" => KeyCodeOrd::Right,
            "pageup" | "pgup" => KeyCodeOrd::PageUp,
            "pagedown" | "pgdn" | "pgdown" => KeyCodeOrd::PageDown,
            "home" => KeyCodeOrd::Home,
            "end" => KeyCodeOrd::End,
            "insert" | "ins" => KeyCodeOrd::Insert,
            "delete" | "del" => KeyCodeOrd::Delete,
            f if f.len() >= 2
                && f.starts_with('f')
                && f[1..].chars().all(|c| c.is_ascii_digit()) =>
            {
                let n: u8 = f[1..].parse().map_err(|_| bad())?;
                if !(1..=12).contains(&n) {
                    return Err(bad());
                }
                KeyCodeOrd::F(n)
            }
            _ => {
                let mut chars = rest.chars();
                let c = chars.next().ok_or_else(bad)?;
                if chars.next().is_some() {
                    return Err(bad());
                }
                let c = if shift && c.is_ascii_lowercase() {
                    c.to_ascii_uppercase()
                } else {
                    c
                };
                let c = if ctrl { c.to_ascii_lowercase() } else { c };
                KeyCodeOrd::Char(c)
            }
        };
        Ok(Key { code, ctrl, alt })
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.ctrl {
            f.write_str("ctrl-")?;
        }
        if self.alt {
            f.write_str("alt-")?;
        }
        match self.code {
            KeyCodeOrd::Char(' ') => f.write_str("space"),
            KeyCodeOrd::Char(c) => write!(f, "{c}"),
            KeyCodeOrd::F(n) => write!(f, "F{n}"),
            KeyCodeOrd::Enter => f.write_str("enter"),
            KeyCodeOrd::Esc => f.write_str("esc"),
            KeyCodeOrd::Tab => f.write_str("tab"),
            KeyCodeOrd::BackTab => f.write_str("shift-tab"),
            KeyCodeOrd::Backspace => f.write_str("backspace"),
            KeyCodeOrd::Up => f.write_str("↑"),
            KeyCodeOrd::Down => f.write_str("↓"),
            KeyCodeOrd::Left => f.write_str("←"),
            KeyCodeOrd::Right => f.write_str("→"),
            KeyCodeOrd::PageUp => f.write_str("pgup"),
            KeyCodeOrd::PageDown => f.write_str("pgdn"),
            KeyCodeOrd::Home => f.write_str("home"),
            KeyCodeOrd::End => f.write_str("end"),
            KeyCodeOrd::Insert => f.write_str("ins"),
            KeyCodeOrd::Delete => f.write_str("del"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_key_strings() {
        assert_eq!(
            Key::parse("q").unwrap(),
            Key {
                code: KeyCodeOrd::Char('q'),
                ctrl: false,
                alt: false
            }
        );
        assert_eq!(
            Key::parse("ctrl-s").unwrap(),
            Key {
                code: KeyCodeOrd::Char('s'),
                ctrl: true,
                alt: false
            }
        );
        assert_eq!(
            Key::parse("<Ctrl-d>").unwrap(),
            Key::parse("ctrl-d").unwrap()
        );
        assert_eq!(Key::parse("shift-tab").unwrap().code, KeyCodeOrd::BackTab);
        assert_eq!(Key::parse("F5").unwrap().code, KeyCodeOrd::F(5));
        assert_eq!(Key::parse("space").unwrap().code, KeyCodeOrd::Char(' '));
        assert_eq!(Key::parse("-").unwrap().code, KeyCodeOrd::Char('-'));
        assert_eq!(Key::parse("ctrl-\\").unwrap().code, KeyCodeOrd::Char('\\'));
        assert_eq!(Key::parse("shift-g").unwrap().code, KeyCodeOrd::Char('G'));
        for bad in ["", "ctrl-bogus-key", "hyper-x", "F13", "ctrl-", "qq"] {
            assert!(Key::parse(bad).is_err(), "{bad:?} should not parse");
        }
    }
}
