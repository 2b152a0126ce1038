//! SQL text built safely: identifiers quoted with `"` doubling, literals escaped and typed
//! by the column's Trino type. Nothing from data or user input is spliced raw.

/// `"name"`, with embedded double quotes doubled.
pub fn quote_ident(name: &str) -> String {
    let mut s = String::with_capacity(name.len() + 2);
    s.push('"');
    for c in name.chars() {
        if c == '"' {
            s.push('"');
        }
        s.push(c);
    }
    s.push('"');
    s
}

/// `'text'`, with embedded single quotes doubled. Trino string literals have no other
/// escapes: backslashes and newlines are literal characters.
pub fn quote_string(text: &str) -> String {
    let mut s = String::with_capacity(text.len() + 2);
    s.push('\'');
    for c in text.chars() {
        if c == '\'' {
            s.push('\'');
        }
        s.push(c);
    }
    s.push('\'');
    s
}

/// Split `catalog.schema."odd.name"` into its parts, honouring double quotes.
pub fn split_table_name(text: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut chars = text.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            '.' if !quoted => parts.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    parts.push(cur);
    parts
}

/// A value that cannot be a literal: it does not fit its type, or the type has no
/// literal a partition predicate may use.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LiteralError {
    /// `ty`: the type as a predicate names it (lower case).
    #[error("{value:?} is not a valid {ty}")]
    Invalid { value: String, ty: String },
    #[error("{0:?} is not a valid date (yyyy-mm-dd)")]
    Date(String),
    #[error("values of type {0} cannot be used in a partition predicate")]
    Unsupported(String),
}

/// A literal of the given Trino type for a value shown as text, validated so that a value
/// that does not fit the type is an error rather than SQL.
pub fn typed_literal(trino_type: &str, value: &str) -> Result<String, LiteralError> {
    let ty = trino_type.trim().to_ascii_lowercase();
    let base = ty.split('(').next().unwrap_or("").trim();
    let invalid = |ty: &str| LiteralError::Invalid {
        value: value.to_string(),
        ty: ty.to_string(),
    };
    match base {
        "varchar" | "char" => Ok(quote_string(value)),
        "bigint" | "integer" | "int" | "smallint" | "tinyint" => {
            let v = value.trim();
            v.parse::<i64>()
                .map(|n| n.to_string())
                .map_err(|_| invalid(&ty))
        }
        "boolean" => match value.trim().to_ascii_lowercase().as_str() {
            "true" => Ok("true".into()),
            "false" => Ok("false".into()),
            _ => Err(invalid("boolean")),
        },
        "date" => {
            chrono::NaiveDate::parse_from_str(value.trim(), "%Y-%m-%d")
                .map_err(|_| LiteralError::Date(value.to_string()))?;
            Ok(format!("DATE {}", quote_string(value.trim())))
        }
        "decimal" => {
            let v = value.trim();
            let ok = !v.is_empty()
                && v.trim_start_matches(['-', '+'])
                    .chars()
                    .all(|c| c.is_ascii_digit() || c == '.')
                && v.matches('.').count() <= 1
                && v.chars().any(|c| c.is_ascii_digit());
            if !ok {
                return Err(invalid(&ty));
            }
            Ok(format!("DECIMAL {}", quote_string(v)))
        }
        "double" | "real" => {
            let v = value.trim();
            v.parse::<f64>().map_err(|_| invalid(&ty))?;
            Ok(format!("{} {}", base.to_ascii_uppercase(), quote_string(v)))
        }
        "timestamp" => {
            let with_zone = ty.contains("with time zone");
            let v = value.trim();
            // Validate the date-time part; a zone may follow for timestamp with time zone.
            let (dt, zone) = match v.rsplit_once(' ') {
                Some((a, z)) if with_zone && (!z.contains(':') || z.starts_with(['+', '-'])) => {
                    (a, Some(z))
                }
                _ => (v, None),
            };
            let ok = ["%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d"]
                .iter()
                .any(|f| chrono::NaiveDateTime::parse_from_str(dt, f).is_ok())
                || chrono::NaiveDate::parse_from_str(dt, "%Y-%m-%d").is_ok();
            if !ok {
                return Err(invalid(&ty));
            }
            let text = match (with_zone, zone) {
                (true, None) => format!("{dt} UTC"),
                _ => v.to_string(),
            };
            Ok(format!("TIMESTAMP {}", quote_string(&text)))
        }
        "uuid" => {
            let v = value.trim();
            let ok = v.len() == 36 && v.chars().all(|c| c.is_ascii_hexdigit() || c == '-');
            if !ok {
                return Err(invalid("uuid"));
            }
            Ok(format!("UUID {}", quote_string(v)))
        }
        _ => Err(LiteralError::Unsupported(ty)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_double_their_quotes() {
        assert_eq!(quote_ident("documents"), r#""documents""#);
        assert_eq!(
            quote_ident(r#"ledger "q3" it's-odd"#),
            r#""ledger ""q3"" it's-odd""#
        );
        assert_eq!(quote_ident(""), r#""""#);
        assert_eq!(quote_ident("ünïcødé"), "\"ünïcødé\"");
    }

    #[test]
    fn strings_double_single_quotes_only() {
        assert_eq!(quote_string("north"), "'north'");
        assert_eq!(quote_string("o'brien"), "'o''brien'");
        assert_eq!(quote_string(r"back\slash"), r"'back\slash'");
        assert_eq!(
            quote_string("'; DROP TABLE x; --"),
            "'''; DROP TABLE x; --'"
        );
    }

    #[test]
    fn typed_literals() {
        assert_eq!(typed_literal("varchar", "it's").unwrap(), "'it''s'");
        assert_eq!(typed_literal("varchar(20)", "x").unwrap(), "'x'");
        assert_eq!(typed_literal("bigint", " 42 ").unwrap(), "42");
        assert!(typed_literal("integer", "1; drop").is_err());
        assert_eq!(
            typed_literal("date", "2026-03-02").unwrap(),
            "DATE '2026-03-02'"
        );
        assert!(typed_literal("date", "2026-02-30").is_err());
        assert!(typed_literal("date", "2026-03-02' OR 1=1 --").is_err());
        assert_eq!(typed_literal("boolean", "TRUE").unwrap(), "true");
        assert_eq!(
            typed_literal("decimal(10,2)", "8.60").unwrap(),
            "DECIMAL '8.60'"
        );
        assert!(typed_literal("decimal(10,2)", "8.6.0").is_err());
        assert_eq!(typed_literal("double", "1.5E3").unwrap(), "DOUBLE '1.5E3'");
        assert_eq!(
            typed_literal("timestamp(6)", "2026-03-02 00:00:00").unwrap(),
            "TIMESTAMP '2026-03-02 00:00:00'"
        );
        assert_eq!(
            typed_literal("timestamp(6) with time zone", "2026-03-02 00:00:00").unwrap(),
            "TIMESTAMP '2026-03-02 00:00:00 UTC'"
        );
        assert_eq!(
            typed_literal(
                "timestamp(3) with time zone",
                "2026-03-02 00:00:00.000 Europe/Vienna"
            )
            .unwrap(),
            "TIMESTAMP '2026-03-02 00:00:00.000 Europe/Vienna'"
        );
        assert!(typed_literal("array(bigint)", "[1]").is_err());
        assert!(typed_literal("uuid", "not-a-uuid").is_err());
    }
}
