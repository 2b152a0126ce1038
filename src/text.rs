//! Text from servers is hostile until it is sanitised here, at the output boundary.
//!
//! A DAG author can raise an exception whose message carries `ESC ]52;…BEL` (a clipboard
//! write through SSH) or `ESC [2J`; a table or partition value can hold a bidi override that
//! makes a line read backwards. Every string that came from Trino, Airflow or a table goes
//! through [`sanitize`] (or [`one_line`]) before it reaches a terminal, a file or the
//! clipboard. JSON output keeps the real string: serde escapes control characters itself.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether `c` must not reach an output raw: C0 controls (but newline and tab), DEL, C1
/// controls (U+0080–U+009F) and the bidi embedding, override and isolate controls.
pub fn is_unsafe(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || ('\u{202a}'..='\u{202e}').contains(&c)
        || ('\u{2066}'..='\u{2069}').contains(&c)
}

fn escape_into(out: &mut String, c: char) {
    let n = c as u32;
    if n < 0x80 {
        let _ = write!(out, "\\x{n:02x}");
    } else {
        let _ = write!(out, "\\u{{{n:x}}}");
    }
}

/// `s` with every unsafe character replaced by a visible escape (`\x1b`, `\u{202e}`).
/// Newlines and tabs stay. Borrows when there is nothing to replace.
pub fn sanitize(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_unsafe) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if is_unsafe(c) {
            escape_into(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `s` on one line: runs of whitespace (newlines and tabs included) become one space, and
/// the ends are trimmed. Nothing else changes: the text stays the server's.
pub fn fold_whitespace(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// [`sanitize`] for one line: [`fold_whitespace`], then every unsafe character escaped.
pub fn one_line(s: &str) -> String {
    sanitize(&fold_whitespace(s)).into_owned()
}

/// At most `max` characters of `s` (an ellipsis marks a cut), never splitting a character.
pub fn clip(s: &str, max: usize) -> Cow<'_, str> {
    match s.char_indices().nth(max) {
        None => Cow::Borrowed(s),
        Some((i, _)) => Cow::Owned(format!("{}…", &s[..i])),
    }
}

/// A CSV cell that a spreadsheet will not run: sanitised, and a leading `=`, `+`, `-` or
/// `@` (a formula) is prefixed with `'` as OWASP recommends — except a plain number such
/// as `-2`, which a spreadsheet reads as the number it is. Quoting is the writer's job.
pub fn csv_cell(s: &str) -> Cow<'_, str> {
    let clean = sanitize(s);
    let formula = matches!(clean.chars().next(), Some('=' | '+' | '-' | '@'))
        && clean.len() > 1
        && clean.parse::<f64>().is_err();
    if formula {
        Cow::Owned(format!("'{clean}"))
    } else {
        clean
    }
}

/// Serialised JSON with every unsafe character that serde leaves raw (DEL, C1 controls,
/// bidi controls) written as a `\uXXXX` escape: the same JSON value, inert on a terminal.
/// Such characters can only stand inside string literals, where the escape is valid.
pub fn json_escape_unsafe(json: &str) -> String {
    if is_inert(json) {
        return json.to_string();
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if is_unsafe(c) {
            let mut buf = [0u16; 2];
            for unit in c.encode_utf16(&mut buf) {
                let _ = write!(out, "\\u{unit:04x}");
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// True when `s` holds no byte a terminal would act on (what every output test asserts).
pub fn is_inert(s: &str) -> bool {
    !s.chars().any(is_unsafe)
}

/// A string holding every character [`sanitize`] must neutralise, plus an OSC 52 clipboard
/// write and a clear-screen: what the output tests feed to every boundary.
#[doc(hidden)]
pub fn hostile_sample() -> String {
    let mut s = String::from("a\u{1b}]52;c;ZXZpbA==\u{7}b\u{1b}[2Jc\rd\u{8}e\u{7f}f");
    for c in (0u32..0x20).chain(0x7f..0xa0) {
        s.extend(char::from_u32(c));
    }
    for c in (0x202a..=0x202e).chain(0x2066..=0x2069) {
        s.extend(char::from_u32(c));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_control_becomes_visible() {
        let out = sanitize(&hostile_sample()).into_owned();
        assert!(is_inert(&out), "{out:?}");
        assert!(out.contains("\\x1b]52;c;ZXZpbA==\\x07b\\x1b[2Jc\\x0dd\\x08e\\x7ff"));
        assert!(out.contains("\\u{9b}"));
        assert!(out.contains("\\u{202e}"));
        assert!(out.contains("\\u{2069}"));
        // newline and tab stay in multi-line text
        assert_eq!(sanitize("a\nb\tc"), "a\nb\tc");
    }

    #[test]
    fn clean_text_is_borrowed() {
        assert!(matches!(
            sanitize("zoning.documents ünïcode ✓"),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn one_line_folds_whitespace_and_escapes() {
        assert_eq!(one_line("  a\n\n b\t\u{1b}[31mc  "), "a b \\x1b[31mc");
        assert!(is_inert(&one_line(&hostile_sample())));
        assert!(!one_line(&hostile_sample()).contains('\n'));
    }

    #[test]
    fn clip_counts_characters() {
        assert_eq!(clip("ééé", 2), "éé…");
        assert_eq!(clip("ab", 2), "ab");
    }

    #[test]
    fn csv_formulas_are_neutralised() {
        assert_eq!(csv_cell("=HYPERLINK(\"x\")"), "'=HYPERLINK(\"x\")");
        assert_eq!(csv_cell("+cmd|' /C calc'!A0"), "'+cmd|' /C calc'!A0");
        assert_eq!(csv_cell("-2+3"), "'-2+3");
        assert_eq!(csv_cell("-2"), "-2");
        assert_eq!(csv_cell("-"), "-");
        assert_eq!(csv_cell("@SUM(A1)"), "'@SUM(A1)");
        assert_eq!(csv_cell("documents"), "documents");
        assert!(is_inert(&csv_cell(&hostile_sample())));
    }
}
