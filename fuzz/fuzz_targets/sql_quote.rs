//! SQL quoting. Properties: every string survives `quote_string` and `quote_ident` (read
//! back by a reference unquoter written from the SQL grammar, and by `split_table_name`),
//! and a typed literal is one token or a type keyword and one quoted string, nothing more.
#![no_main]

use floe::sql::{quote_ident, quote_string, split_table_name, typed_literal};
use libfuzzer_sys::fuzz_target;

/// A token quoted with `q` at the start of `s` (`q` inside doubled): its content and the
/// text after it.
fn unquote(s: &str, q: char) -> Option<(String, &str)> {
    let body = s.strip_prefix(q)?;
    let mut out = String::new();
    let mut it = body.char_indices().peekable();
    while let Some((i, c)) = it.next() {
        if c == q {
            if matches!(it.peek(), Some((_, n)) if *n == q) {
                it.next();
                out.push(q);
            } else {
                return Some((out, &body[i + c.len_utf8()..]));
            }
        } else {
            out.push(c);
        }
    }
    None
}

const TYPES: &[&str] = &[
    "varchar",
    "varchar(20)",
    "char(3)",
    "bigint",
    "integer",
    "smallint",
    "tinyint",
    "boolean",
    "date",
    "decimal(10,2)",
    "double",
    "real",
    "timestamp(6)",
    "timestamp(3) with time zone",
    "uuid",
    "array(bigint)",
];

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    assert_eq!(
        unquote(&quote_string(text), '\''),
        Some((text.to_string(), ""))
    );
    assert_eq!(
        unquote(&quote_ident(text), '"'),
        Some((text.to_string(), ""))
    );
    assert_eq!(split_table_name(&quote_ident(text)), vec![text.to_string()]);
    let (a, b) = text.split_once('\u{1}').unwrap_or((text, "x.y"));
    let qualified = format!("{}.{}", quote_ident(a), quote_ident(b));
    assert_eq!(
        split_table_name(&qualified),
        vec![a.to_string(), b.to_string()]
    );

    let ty = TYPES[data.first().map_or(0, |b| *b as usize) % TYPES.len()];
    if let Ok(lit) = typed_literal(ty, text) {
        let bare = lit == "true"
            || lit == "false"
            || (!lit.is_empty()
                && lit
                    .trim_start_matches('-')
                    .bytes()
                    .all(|b| b.is_ascii_digit()));
        if !bare {
            let quoted = match lit.split_once(' ') {
                Some((kw, rest)) if kw.bytes().all(|b| b.is_ascii_uppercase()) => rest,
                _ => lit.as_str(),
            };
            let (content, after) = unquote(quoted, '\'')
                .unwrap_or_else(|| panic!("{ty} literal {lit:?} is not one quoted string"));
            assert_eq!(after, "", "{ty} literal {lit:?} has text after its string");
            if ty.starts_with("varchar") || ty.starts_with("char") {
                assert_eq!(content, text);
            }
        }
    }
});
