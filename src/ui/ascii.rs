//! ASCII mode: the screen for a terminal whose locale is not UTF-8 (an SSH session with
//! `LANG=C`, a serial console). Pure: the one place every non-ASCII character floe draws
//! passes, applied to the finished frame, so no widget, rule text or server string can
//! slip past it. Each cell keeps its width: a glyph becomes one ASCII character (a box
//! corner `+`, a braille dot pattern the line character at its height, `✓` `+`, `✗` `x`),
//! and what has no ASCII likeness (a server's `Zürich-東京`) becomes `?`, one per column.

use ratatui::buffer::Buffer;
use unicode_width::UnicodeWidthStr;

/// The ASCII character drawn for one cell's symbol; `None` when it is ASCII already.
pub fn cell(symbol: &str) -> Option<char> {
    if symbol.is_ascii() {
        return None;
    }
    let mut chars = symbol.chars();
    let c = chars.next()?;
    // A base character with combining marks after it (e + U+0301) is one symbol: the
    // base decides.
    Some(glyph(c))
}

/// The ASCII likeness of one character.
pub fn glyph(c: char) -> char {
    match c {
        c if c.is_ascii() => c,
        '\u{2800}'..='\u{28ff}' => braille(c as u32 - 0x2800),
        '─' | '━' | '┄' | '┅' | '┈' | '┉' | '╌' | '╍' | '╴' | '╶' | '╸' | '╺' | '╼' | '╾' => {
            '-'
        }
        '═' => '=',
        '│' | '┃' | '┆' | '┇' | '┊' | '┋' | '╎' | '╏' | '║' | '╵' | '╷' | '╹' | '╻' | '╽' | '╿' => {
            '|'
        }
        '\u{2500}'..='\u{257f}' => '+',
        '▁' | '▂' | '▃' => '_',
        '▄' | '▅' | '▆' | '▇' => '=',
        '░' => '-',
        '▒' => ':',
        '▀' | '▔' => '"',
        '\u{2580}'..='\u{259f}' => '#',
        '✓' | '✔' => '+',
        '✗' | '✘' | '×' => 'x',
        '‖' => 'P',
        '◆' | '●' | '•' | '★' => '*',
        '→' | '▶' | '►' | '›' | '»' | '⟶' => '>',
        '←' | '◀' | '‹' | '«' => '<',
        '↑' | '▲' => '^',
        '↓' | '▼' => 'v',
        '↔' => '-',
        '…' | '⋯' | '·' => '.',
        '—' | '–' | '−' | '‐' | '‑' => '-',
        '⊘' => '/',
        '≥' => '>',
        '≤' => '<',
        '≈' | '∼' => '~',
        '±' => '+',
        '⌈' | '⌊' => '[',
        '⌉' | '⌋' => ']',
        '§' => 'S',
        '‘' | '’' | '′' => '\'',
        '“' | '”' | '″' => '"',
        '\u{a0}' | '\u{2000}'..='\u{200a}' | '\u{202f}' | '\u{3000}' => ' ',
        _ => '?',
    }
}

/// A braille cell of a chart (dots 1-8 as bits 0-7) as the line character at the height
/// of its dots: `'` high, `-` middle, `.` low, `|` when they span the cell.
fn braille(bits: u32) -> char {
    // Rows from the top: dots 1+4, 2+5, 3+6, 7+8.
    let rows = [bits & 0x09, bits & 0x12, bits & 0x24, bits & 0xc0].map(|r| r != 0);
    let (Some(top), Some(bottom)) = (rows.iter().position(|&r| r), rows.iter().rposition(|&r| r))
    else {
        return ' ';
    };
    match (top, bottom) {
        (t, b) if b - t >= 2 => '|',
        (0, _) => '\'',
        (3, _) | (2, 3) => '.',
        _ => '-',
    }
}

/// Every cell of the frame made ASCII. A wide character (2 columns) and the cell it
/// covers both become `?`, so what follows stays in its column.
pub fn fold(buf: &mut Buffer) {
    let width = buf.area.width as usize;
    let mut covered = false;
    for (i, c) in buf.content.iter_mut().enumerate() {
        if i % width.max(1) == 0 {
            covered = false;
        }
        if covered {
            covered = false;
            c.set_symbol("?");
            continue;
        }
        let sym = c.symbol();
        let Some(a) = cell(sym) else {
            continue;
        };
        covered = sym.width() > 1;
        let mut b = [0u8; 4];
        c.set_symbol(a.encode_utf8(&mut b));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::layout::Rect;

    #[test]
    fn every_glyph_floe_draws_has_an_ascii_likeness() {
        for (g, a) in [
            ("─", '-'),
            ("│", '|'),
            ("┌", '+'),
            ("└", '+'),
            ("┼", '+'),
            ("█", '#'),
            ("░", '-'),
            ("✓", '+'),
            ("✗", 'x'),
            ("‖", 'P'),
            ("◆", '*'),
            ("→", '>'),
            ("…", '.'),
            ("·", '.'),
            ("—", '-'),
            ("▶", '>'),
            ("⊘", '/'),
        ] {
            assert_eq!(cell(g), Some(a), "{g}");
        }
        assert_eq!(cell("a"), None);
        assert_eq!(cell("é"), Some('?'));
        assert_eq!(cell("e\u{301}"), Some('e'));
    }

    #[test]
    fn braille_becomes_a_line_at_its_height() {
        assert_eq!(glyph('\u{2800}'), ' ');
        assert_eq!(glyph('⠉'), '\'');
        assert_eq!(glyph('⠒'), '-');
        assert_eq!(glyph('⣀'), '.');
        assert_eq!(glyph('⡇'), '|');
        assert_eq!(glyph('⠤'), '-');
        for b in 0x2800..=0x28ffu32 {
            assert!(glyph(char::from_u32(b).unwrap()).is_ascii());
        }
    }

    #[test]
    fn a_wide_character_keeps_its_two_columns() {
        let mut buf = Buffer::empty(Rect::new(0, 0, 12, 2));
        buf.set_string(0, 0, "Zürich-東京|", ratatui::style::Style::default());
        buf.set_string(0, 1, "┌─✓ ok", ratatui::style::Style::default());
        fold(&mut buf);
        let row =
            |y: u16| -> String { (0..12).map(|x| buf[(x, y)].symbol().to_string()).collect() };
        assert_eq!(row(0), "Z?rich-????|");
        assert_eq!(row(1), "+-+ ok      ");
    }
}
