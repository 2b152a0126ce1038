//! Trino types, from a column's `typeSignature` (both the current spelling and the
//! Presto-era one) or, failing that, from its `type` text.

use serde::Deserialize;
use serde_json::Value as Json;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TrinoType {
    Boolean,
    TinyInt,
    SmallInt,
    Integer,
    BigInt,
    Real,
    Double,
    Decimal {
        precision: u32,
        scale: u32,
    },
    Varchar,
    Char,
    Varbinary,
    Json,
    Date,
    Time,
    TimeTz,
    Timestamp {
        precision: u32,
    },
    TimestampTz {
        precision: u32,
    },
    IntervalDayToSecond,
    IntervalYearToMonth,
    Uuid,
    Array(Box<TrinoType>),
    Map(Box<TrinoType>, Box<TrinoType>),
    Row(Vec<(Option<String>, TrinoType)>),
    /// Anything else (ipaddress, hyperloglog, geometry, number…), kept by name.
    Other(String),
}

/// A type that does not read: a signature's missing part, or the type text and where in
/// it the parse stopped.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TypeError {
    #[error("bad type argument: {0}")]
    Argument(String),
    #[error("bad row field: {0}")]
    RowField(String),
    /// A parametric type without the part it needs (`array without element type`).
    #[error("{0}")]
    Missing(&'static str),
    #[error("unexpected text after type in {0:?}")]
    Trailing(String),
    #[error("expected a number in {0:?}")]
    Number(String),
    #[error("unterminated quote in {0:?}")]
    Quote(String),
    /// The text, clipped.
    #[error("type nested deeper than {MAX_TYPE_DEPTH} levels in {0:?}")]
    TooDeep(String),
    #[error("expected a type in {0:?}")]
    NoType(String),
    #[error("unbalanced parentheses in {0:?}")]
    Unbalanced(String),
    #[error("expected '{expected}' at {at} in {text:?}")]
    Expected {
        expected: char,
        at: usize,
        text: String,
    },
}

/// `typeSignature` as sent on the wire.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TypeSignature {
    pub raw_type: String,
    #[serde(default)]
    pub arguments: Vec<TypeArgument>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct TypeArgument {
    pub kind: String,
    #[serde(default)]
    pub value: Json,
}

impl TrinoType {
    /// Decode a `typeSignature`. Accepts `LONG`/`TYPE`/`NAMED_TYPE` and the older
    /// `LONG_LITERAL`/`TYPE_SIGNATURE`/`NAMED_TYPE_SIGNATURE`.
    pub fn from_signature(sig: &TypeSignature) -> Result<TrinoType, TypeError> {
        let longs = || -> Vec<u32> {
            sig.arguments
                .iter()
                .filter(|a| matches!(a.kind.as_str(), "LONG" | "LONG_LITERAL"))
                .filter_map(|a| a.value.as_u64().map(|v| v as u32))
                .collect()
        };
        let nested = |a: &TypeArgument| -> Result<TrinoType, TypeError> {
            match &a.value {
                Json::String(s) => TrinoType::parse(s),
                v => {
                    let s: TypeSignature = serde_json::from_value(v.clone())
                        .map_err(|e| TypeError::Argument(e.to_string()))?;
                    TrinoType::from_signature(&s)
                }
            }
        };
        let types = || -> Result<Vec<TrinoType>, TypeError> {
            sig.arguments
                .iter()
                .filter(|a| matches!(a.kind.as_str(), "TYPE" | "TYPE_SIGNATURE"))
                .map(nested)
                .collect()
        };
        let raw = sig.raw_type.to_ascii_lowercase();
        Ok(match raw.as_str() {
            "array" => {
                let t = types()?;
                TrinoType::Array(Box::new(
                    t.into_iter()
                        .next()
                        .ok_or(TypeError::Missing("array without element type"))?,
                ))
            }
            "map" => {
                let mut t = types()?.into_iter();
                let k = t.next().ok_or(TypeError::Missing("map without key type"))?;
                let v = t
                    .next()
                    .ok_or(TypeError::Missing("map without value type"))?;
                TrinoType::Map(Box::new(k), Box::new(v))
            }
            "row" => {
                let mut fields = Vec::new();
                for a in &sig.arguments {
                    match a.kind.as_str() {
                        "NAMED_TYPE" | "NAMED_TYPE_SIGNATURE" => {
                            let name = a
                                .value
                                .get("fieldName")
                                .and_then(|f| f.get("name"))
                                .and_then(|n| n.as_str())
                                .map(str::to_string);
                            let ts = a
                                .value
                                .get("typeSignature")
                                .ok_or(TypeError::Missing("row field without typeSignature"))?;
                            let ty = match ts {
                                Json::String(s) => TrinoType::parse(s)?,
                                v => TrinoType::from_signature(
                                    &serde_json::from_value(v.clone())
                                        .map_err(|e| TypeError::RowField(e.to_string()))?,
                                )?,
                            };
                            fields.push((name, ty));
                        }
                        "TYPE" | "TYPE_SIGNATURE" => fields.push((None, nested(a)?)),
                        _ => {}
                    }
                }
                TrinoType::Row(fields)
            }
            "decimal" => {
                let l = longs();
                TrinoType::Decimal {
                    precision: l.first().copied().unwrap_or(38),
                    scale: l.get(1).copied().unwrap_or(0),
                }
            }
            "timestamp" => TrinoType::Timestamp {
                precision: longs().first().copied().unwrap_or(3),
            },
            "timestamp with time zone" => TrinoType::TimestampTz {
                precision: longs().first().copied().unwrap_or(3),
            },
            other => TrinoType::simple(other),
        })
    }

    fn simple(name: &str) -> TrinoType {
        match name {
            "boolean" => TrinoType::Boolean,
            "tinyint" => TrinoType::TinyInt,
            "smallint" => TrinoType::SmallInt,
            "integer" | "int" => TrinoType::Integer,
            "bigint" => TrinoType::BigInt,
            "real" => TrinoType::Real,
            "double" => TrinoType::Double,
            "varchar" => TrinoType::Varchar,
            "char" => TrinoType::Char,
            "varbinary" => TrinoType::Varbinary,
            "json" => TrinoType::Json,
            "date" => TrinoType::Date,
            "time" => TrinoType::Time,
            "time with time zone" => TrinoType::TimeTz,
            "timestamp" => TrinoType::Timestamp { precision: 3 },
            "timestamp with time zone" => TrinoType::TimestampTz { precision: 3 },
            "interval day to second" => TrinoType::IntervalDayToSecond,
            "interval year to month" => TrinoType::IntervalYearToMonth,
            "uuid" => TrinoType::Uuid,
            "decimal" => TrinoType::Decimal {
                precision: 38,
                scale: 0,
            },
            other => TrinoType::Other(other.to_string()),
        }
    }

    /// Parse a `type` text such as `row(district varchar, "filed at" date)`,
    /// `map(varchar, array(bigint))`, `timestamp(3) with time zone`, `decimal(10,2)`.
    pub fn parse(text: &str) -> Result<TrinoType, TypeError> {
        let mut p = Parser {
            s: text.as_bytes(),
            i: 0,
            text,
            depth: 0,
        };
        let t = p.ty()?;
        p.ws();
        if p.i != p.s.len() {
            return Err(TypeError::Trailing(text.to_string()));
        }
        Ok(t)
    }
}

/// Types nested deeper than this are refused: a server's type text is not trusted, and
/// recursion without a bound would overflow the stack (real Iceberg types nest a few levels).
const MAX_TYPE_DEPTH: usize = 64;

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    text: &'a str,
    depth: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn word(&mut self) -> String {
        self.ws();
        let start = self.i;
        while let Some(c) = self.peek() {
            if c.is_ascii_alphanumeric() || c == b'_' {
                self.i += 1;
            } else {
                break;
            }
        }
        self.text[start..self.i].to_ascii_lowercase()
    }

    fn number(&mut self) -> Result<u32, TypeError> {
        self.ws();
        let start = self.i;
        while matches!(self.peek(), Some(c) if c.is_ascii_digit()) {
            self.i += 1;
        }
        self.text[start..self.i]
            .parse()
            .map_err(|_| TypeError::Number(self.text.to_string()))
    }

    fn quoted(&mut self) -> Result<String, TypeError> {
        // at '"'
        self.i += 1;
        let mut out = String::new();
        loop {
            match self.peek() {
                None => return Err(TypeError::Quote(self.text.to_string())),
                Some(b'"') if self.s.get(self.i + 1) == Some(&b'"') => {
                    out.push('"');
                    self.i += 2;
                }
                Some(b'"') => {
                    self.i += 1;
                    return Ok(out);
                }
                Some(_) => {
                    let ch = self.text[self.i..].chars().next().unwrap();
                    out.push(ch);
                    self.i += ch.len_utf8();
                }
            }
        }
    }

    fn ty(&mut self) -> Result<TrinoType, TypeError> {
        if self.depth >= MAX_TYPE_DEPTH {
            return Err(TypeError::TooDeep(
                crate::text::clip(self.text, 80).to_string(),
            ));
        }
        self.depth += 1;
        let t = self.ty_at_depth();
        self.depth -= 1;
        t
    }

    /// Words of a multi-word type name (`time with time zone`, `interval day to second`).
    fn ty_at_depth(&mut self) -> Result<TrinoType, TypeError> {
        let name = self.word();
        if name.is_empty() {
            return Err(TypeError::NoType(self.text.to_string()));
        }
        match name.as_str() {
            "array" => {
                self.expect(b'(')?;
                let t = self.ty()?;
                self.expect(b')')?;
                Ok(TrinoType::Array(Box::new(t)))
            }
            "map" => {
                self.expect(b'(')?;
                let k = self.ty()?;
                self.expect(b',')?;
                let v = self.ty()?;
                self.expect(b')')?;
                Ok(TrinoType::Map(Box::new(k), Box::new(v)))
            }
            "row" => {
                self.expect(b'(')?;
                let mut fields = Vec::new();
                loop {
                    self.ws();
                    // A field is `name type`, `"quoted name" type`, or just `type`.
                    let save = self.i;
                    let field = if self.peek() == Some(b'"') {
                        let n = self.quoted()?;
                        (Some(n), self.ty()?)
                    } else {
                        let first = self.word();
                        self.ws();
                        let next_is_type =
                            matches!(self.peek(), Some(c) if c.is_ascii_alphabetic() || c == b'"');
                        if next_is_type && !is_type_continuation(&first, self) {
                            (Some(first), self.ty()?)
                        } else {
                            self.i = save;
                            (None, self.ty()?)
                        }
                    };
                    fields.push(field);
                    if self.eat(b',') {
                        continue;
                    }
                    self.expect(b')')?;
                    break;
                }
                Ok(TrinoType::Row(fields))
            }
            "decimal" => {
                if self.eat(b'(') {
                    let p = self.number()?;
                    let s = if self.eat(b',') { self.number()? } else { 0 };
                    self.expect(b')')?;
                    Ok(TrinoType::Decimal {
                        precision: p,
                        scale: s,
                    })
                } else {
                    Ok(TrinoType::Decimal {
                        precision: 38,
                        scale: 0,
                    })
                }
            }
            "varchar" | "char" | "varbinary" => {
                if self.eat(b'(') {
                    self.number()?;
                    self.expect(b')')?;
                }
                Ok(TrinoType::simple(&name))
            }
            "timestamp" | "time" => {
                let precision = if self.eat(b'(') {
                    let p = self.number()?;
                    self.expect(b')')?;
                    p
                } else {
                    3
                };
                let save = self.i;
                if self.word() == "with" && self.word() == "time" && self.word() == "zone" {
                    return Ok(if name == "time" {
                        TrinoType::TimeTz
                    } else {
                        TrinoType::TimestampTz { precision }
                    });
                }
                self.i = save;
                Ok(if name == "time" {
                    TrinoType::Time
                } else {
                    TrinoType::Timestamp { precision }
                })
            }
            "interval" => {
                let a = self.word();
                let _to = self.word();
                let _b = self.word();
                Ok(if a == "day" {
                    TrinoType::IntervalDayToSecond
                } else {
                    TrinoType::IntervalYearToMonth
                })
            }
            "double" => {
                let save = self.i;
                if self.word() != "precision" {
                    self.i = save;
                }
                Ok(TrinoType::Double)
            }
            other => {
                // Parametric unknown types: skip their parameters.
                if self.eat(b'(') {
                    let mut depth = 1;
                    while depth > 0 {
                        match self.peek() {
                            None => {
                                return Err(TypeError::Unbalanced(self.text.to_string()));
                            }
                            Some(b'(') => depth += 1,
                            Some(b')') => depth -= 1,
                            _ => {}
                        }
                        self.i += 1;
                    }
                }
                Ok(TrinoType::simple(other))
            }
        }
    }

    fn expect(&mut self, c: u8) -> Result<(), TypeError> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(TypeError::Expected {
                expected: c as char,
                at: self.i,
                text: self.text.to_string(),
            })
        }
    }
}

/// After a leading word inside `row(…)`, decide whether that word was a field name or the
/// first word of a multi-word type such as `double precision` or `timestamp with time zone`.
fn is_type_continuation(first: &str, p: &Parser<'_>) -> bool {
    let rest = p.text[p.i..].to_ascii_lowercase();
    matches!(first, "double") && rest.starts_with("precision")
        || matches!(first, "timestamp" | "time") && rest.starts_with("with")
        || first == "interval"
}

#[cfg(test)]
mod tests;
