//! A table's layout as the table itself declares it: the `WITH (…)` clause of Trino's
//! `SHOW CREATE TABLE`, read with a small tokenizer so that string literals (column and
//! table comments, which may hold anything, newlines included) and quoted identifiers
//! can never be mistaken for a property.

use std::fmt;

/// One lexical token of Trino's SQL, as much of it as `SHOW CREATE TABLE` prints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Token {
    /// An unquoted word: a keyword, an identifier or a number.
    Word(String),
    /// A `"quoted"` identifier, unescaped.
    Ident(String),
    /// A `'string'` literal (or `U&'…'`), unescaped.
    Str(String),
    /// Any other single character.
    Punct(char),
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Token::Word(w) => f.write_str(w),
            Token::Ident(s) => f.write_str(&crate::sql::quote_ident(s)),
            Token::Str(s) => f.write_str(&crate::sql::quote_string(s)),
            Token::Punct(c) => write!(f, "{c}"),
        }
    }
}

/// `SHOW CREATE TABLE` text that does not read: where, and what was expected there.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LayoutError {
    /// `what`: a quoted identifier or a string literal; `at`: its opening quote.
    #[error("unterminated {what} at character {at}")]
    Unterminated { what: &'static str, at: usize },
    #[error("unterminated comment")]
    UnterminatedComment,
    #[error("invalid unicode escape \\{0} in U& literal")]
    UnicodeEscape(String),
    /// `found`: the token there, quoted, or `the end`.
    #[error("expected {expected}, found {found}")]
    Expected {
        expected: &'static str,
        found: String,
    },
    #[error("expected '=' after property {key}, found {found}")]
    NoEquals { key: String, found: String },
    #[error("unterminated WITH clause")]
    UnterminatedWith,
    #[error("a property without a value")]
    NoValue,
    #[error("unsupported ARRAY element {0}")]
    ArrayElement(String),
}

/// Split SQL text into tokens. Whitespace and `--` / `/* */` comments are dropped.
pub fn tokenize(text: &str) -> Result<Vec<Token>, LayoutError> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    // A quoted run starting at `start` (the opening quote), `q` doubled to escape itself.
    let quoted = |start: usize, q: char| -> Result<(String, usize), LayoutError> {
        let mut s = String::new();
        let mut j = start + 1;
        loop {
            match chars.get(j) {
                None => {
                    let what = if q == '"' {
                        "quoted identifier"
                    } else {
                        "string literal"
                    };
                    return Err(LayoutError::Unterminated { what, at: start });
                }
                Some(&c) if c == q => {
                    if chars.get(j + 1) == Some(&q) {
                        s.push(q);
                        j += 2;
                    } else {
                        return Ok((s, j + 1));
                    }
                }
                Some(&c) => {
                    s.push(c);
                    j += 1;
                }
            }
        }
    };
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c == '-' && chars.get(i + 1) == Some(&'-') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && chars.get(i + 1) == Some(&'*') {
            i += 2;
            while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                i += 1;
            }
            if i >= chars.len() {
                return Err(LayoutError::UnterminatedComment);
            }
            i += 2;
        } else if (c == 'U' || c == 'u')
            && chars.get(i + 1) == Some(&'&')
            && chars.get(i + 2) == Some(&'\'')
        {
            let (s, next) = quoted(i + 2, '\'')?;
            out.push(Token::Str(unicode_unescape(&s)?));
            i = next;
        } else if c == '\'' {
            let (s, next) = quoted(i, '\'')?;
            out.push(Token::Str(s));
            i = next;
        } else if c == '"' {
            let (s, next) = quoted(i, '"')?;
            out.push(Token::Ident(s));
            i = next;
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len()
                && (chars[i].is_alphanumeric() || matches!(chars[i], '_' | '$' | '@'))
            {
                i += 1;
            }
            out.push(Token::Word(chars[start..i].iter().collect()));
        } else {
            out.push(Token::Punct(c));
            i += 1;
        }
    }
    Ok(out)
}

/// The body of a `U&'…'` literal: `\XXXX`, `\+XXXXXX` and `\\` (Trino's default escape).
fn unicode_unescape(s: &str) -> Result<String, LayoutError> {
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        if it.peek() == Some(&'\\') {
            it.next();
            out.push('\\');
            continue;
        }
        let n = if it.peek() == Some(&'+') {
            it.next();
            6
        } else {
            4
        };
        let hex: String = it.by_ref().take(n).collect();
        let ch = (hex.len() == n)
            .then(|| u32::from_str_radix(&hex, 16).ok())
            .flatten()
            .and_then(char::from_u32)
            .ok_or(LayoutError::UnicodeEscape(hex))?;
        out.push(ch);
    }
    Ok(out)
}

/// The value of one table property.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PropValue {
    Str(String),
    Array(Vec<PropValue>),
    /// Anything else (numbers, booleans, expressions), as tokens joined by spaces.
    Other(String),
}

/// The properties of the `WITH (…)` clause that follows the column list, in order.
/// Text without such a clause has none.
pub fn with_properties(text: &str) -> Result<Vec<(String, PropValue)>, LayoutError> {
    let toks = tokenize(text)?;
    // The clause is the first `WITH (` outside every bracket: the column list (with its
    // comments and quoted names) is inside `( … )`.
    let mut depth = 0i32;
    let mut start = None;
    for (i, t) in toks.iter().enumerate() {
        match t {
            Token::Punct('(' | '[') => depth += 1,
            Token::Punct(')' | ']') => depth -= 1,
            Token::Word(w)
                if depth == 0
                    && w.eq_ignore_ascii_case("with")
                    && toks.get(i + 1) == Some(&Token::Punct('(')) =>
            {
                start = Some(i + 2);
                break;
            }
            _ => {}
        }
    }
    let Some(mut i) = start else {
        return Ok(Vec::new());
    };
    let mut props = Vec::new();
    if toks.get(i) == Some(&Token::Punct(')')) {
        return Ok(props);
    }
    loop {
        let key = match toks.get(i) {
            Some(Token::Word(w)) => w.to_lowercase(),
            Some(Token::Ident(s)) => s.clone(),
            other => {
                return Err(LayoutError::Expected {
                    expected: "a property name",
                    found: show(other),
                });
            }
        };
        i += 1;
        if toks.get(i) != Some(&Token::Punct('=')) {
            return Err(LayoutError::NoEquals {
                key,
                found: show(toks.get(i)),
            });
        }
        i += 1;
        let (value, next) = prop_value(&toks, i)?;
        props.push((key, value));
        i = next;
        match toks.get(i) {
            Some(Token::Punct(',')) => i += 1,
            Some(Token::Punct(')')) => return Ok(props),
            other => {
                return Err(LayoutError::Expected {
                    expected: "',' or ')' in the WITH clause",
                    found: show(other),
                });
            }
        }
    }
}

fn show(t: Option<&Token>) -> String {
    t.map(|t| format!("{:?}", t.to_string()))
        .unwrap_or_else(|| "the end".into())
}

/// One property value starting at `i`; returns it and the index after it.
fn prop_value(toks: &[Token], i: usize) -> Result<(PropValue, usize), LayoutError> {
    match (toks.get(i), toks.get(i + 1)) {
        (Some(Token::Str(s)), _) => Ok((PropValue::Str(s.clone()), i + 1)),
        (Some(Token::Word(w)), Some(Token::Punct('['))) if w.eq_ignore_ascii_case("array") => {
            let mut items = Vec::new();
            let mut j = i + 2;
            if toks.get(j) == Some(&Token::Punct(']')) {
                return Ok((PropValue::Array(items), j + 1));
            }
            loop {
                let (v, next) = array_item(toks, j)?;
                items.push(v);
                match toks.get(next) {
                    Some(Token::Punct(',')) => j = next + 1,
                    Some(Token::Punct(']')) => return Ok((PropValue::Array(items), next + 1)),
                    other => {
                        return Err(LayoutError::Expected {
                            expected: "',' or ']' in an ARRAY",
                            found: show(other),
                        });
                    }
                }
            }
        }
        _ => {
            // Anything else: up to the next ',' or ')' outside brackets.
            let mut depth = 0i32;
            let mut j = i;
            let mut parts = Vec::new();
            loop {
                match toks.get(j) {
                    None => return Err(LayoutError::UnterminatedWith),
                    Some(Token::Punct(',' | ')')) if depth == 0 => break,
                    Some(t) => {
                        match t {
                            Token::Punct('(' | '[') => depth += 1,
                            Token::Punct(')' | ']') => depth -= 1,
                            _ => {}
                        }
                        parts.push(t.to_string());
                    }
                }
                j += 1;
            }
            if parts.is_empty() {
                return Err(LayoutError::NoValue);
            }
            Ok((PropValue::Other(parts.join(" ")), j))
        }
    }
}

fn array_item(toks: &[Token], i: usize) -> Result<(PropValue, usize), LayoutError> {
    match toks.get(i) {
        Some(Token::Str(s)) => Ok((PropValue::Str(s.clone()), i + 1)),
        Some(Token::Word(w)) if !matches!(toks.get(i + 1), Some(Token::Punct('[' | '('))) => {
            Ok((PropValue::Other(w.clone()), i + 1))
        }
        other => Err(LayoutError::ArrayElement(show(other))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_unescape_strings_and_identifiers() {
        let t = tokenize(
            r#"a "b ""c""" 'it''s' U&'caf\00e9 \+01F980 \\' -- x ' y
            /* 'z */ ("#,
        )
        .unwrap();
        assert_eq!(
            t,
            vec![
                Token::Word("a".into()),
                Token::Ident(r#"b "c""#.into()),
                Token::Str("it's".into()),
                Token::Str("café 🦀 \\".into()),
                Token::Punct('('),
            ]
        );
        assert!(tokenize("'open").is_err());
        assert!(tokenize("\"open").is_err());
        assert!(tokenize("/* open").is_err());
        assert!(tokenize(r"U&'\zz'").is_err());
    }

    #[test]
    fn trinos_show_create_table_text() {
        let text = "CREATE TABLE iceberg.zoning.documents (\n   doc_id bigint,\n   district varchar,\n   filed_at timestamp(6) with time zone\n)\nWITH (\n   format = 'PARQUET',\n   format_version = 2,\n   location = 's3://lake/zoning/documents-1f2e',\n   max_commit_retry = 4,\n   partitioning = ARRAY['district','day(filed_at)','bucket(doc_id, 16)'],\n   sorted_by = ARRAY['doc_id DESC']\n)";
        let p = with_properties(text).unwrap();
        let keys: Vec<&str> = p.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                "format",
                "format_version",
                "location",
                "max_commit_retry",
                "partitioning",
                "sorted_by"
            ]
        );
        assert_eq!(p[0].1, PropValue::Str("PARQUET".into()));
        assert_eq!(p[1].1, PropValue::Other("2".into()));
        assert_eq!(
            p[4].1,
            PropValue::Array(vec![
                PropValue::Str("district".into()),
                PropValue::Str("day(filed_at)".into()),
                PropValue::Str("bucket(doc_id, 16)".into()),
            ])
        );
        assert!(
            with_properties("CREATE TABLE x (a bigint)")
                .unwrap()
                .is_empty()
        );
        assert!(with_properties("WITH ()").unwrap().is_empty());
    }

    #[test]
    fn hostile_comments_and_quoted_names_are_not_properties() {
        // A column comment that looks like a WITH clause, spans lines and has quotes; a
        // quoted column named like a keyword; a table comment with brackets.
        let text = "CREATE TABLE iceberg.finance.budget (\n   \"WITH (partitioning = ARRAY['evil'])\" varchar COMMENT 'x''), partitioning = ARRAY[''amount'']\nWITH (\n   partitioning = ARRAY[''amount''] )',\n   fiscal_year integer COMMENT '-- not a comment /* nor this',\n   \"a \"\"b\"\"\" varchar,\n   region varchar\n)\nCOMMENT 'WITH ( partitioning = ARRAY[''year(ts)''] ) ]]'\nWITH (\n   format = 'PARQUET',\n   partitioning = ARRAY['fiscal_year','region','\"a \"\"b\"\"\"']\n)";
        let p = with_properties(text).unwrap();
        assert_eq!(p.len(), 2, "{p:?}");
        assert_eq!(
            p[1],
            (
                "partitioning".to_string(),
                PropValue::Array(vec![
                    PropValue::Str("fiscal_year".into()),
                    PropValue::Str("region".into()),
                    PropValue::Str(r#""a ""b""""#.into()),
                ])
            )
        );
    }

    #[test]
    fn malformed_clauses_are_errors_not_guesses() {
        assert!(with_properties("WITH (partitioning = ARRAY['a'").is_err());
        assert!(with_properties("WITH (partitioning ARRAY['a'])").is_err());
        assert!(with_properties("WITH (format = 'PARQUET' location = 'x')").is_err());
        assert!(with_properties("WITH (partitioning = ARRAY[ARRAY['a']])").is_err());
    }
}
