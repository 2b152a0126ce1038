//! Typed values decoded from Trino's JSON wire encoding.

use std::sync::Arc;

use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime, TimeZone, Utc};
use serde_json::Value as Json;

use super::types::TrinoType;

/// A value that does not decode as its column's type: the value (as sent) and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// `value`: the JSON as sent.
    #[error("value {value} does not match type {ty:?}")]
    Mismatch { value: String, ty: TrinoType },
    #[error("date {text:?}: {reason}")]
    Date {
        text: String,
        reason: chrono::ParseError,
    },
    #[error("timestamp {0:?} is not yyyy-MM-dd HH:mm:ss[.f]")]
    Timestamp(String),
    #[error("timestamp with time zone {0:?} has no zone")]
    NoZone(String),
    #[error("timestamp {0:?} is not yyyy-MM-dd HH:mm:ss[.f] zone")]
    TimestampTz(String),
    #[error("timestamp {0:?}: invalid local time")]
    InvalidLocalTime(String),
    #[error("timestamp {text:?}: unknown time zone {zone:?}")]
    UnknownZone { text: String, zone: String },
    #[error("timestamp {text:?}: local time does not exist in {zone}")]
    NoSuchLocalTime { text: String, zone: String },
    #[error("row has {values} values for {fields} fields")]
    RowArity { values: usize, fields: usize },
}

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    /// bigint, integer, smallint, tinyint: kept as i64, never through f64.
    Int(i64),
    /// double and real, including NaN and ±Infinity.
    Double(f64),
    /// decimal, exactly as Trino printed it.
    Decimal(String),
    /// varchar, char, json, uuid, time, intervals, unknown types: the text as sent.
    Text(String),
    /// varbinary, still base64 as sent.
    Binary(String),
    Date(NaiveDate),
    Timestamp(NaiveDateTime),
    /// `timestamp with time zone`: the instant, plus the zone text Trino printed.
    TimestampTz(DateTime<Utc>, String),
    Array(Vec<Value>),
    /// Keys decoded from the string keys Trino always sends.
    Map(Vec<(Value, Value)>),
    /// Fields with the names from the type signature.
    Row(Vec<(Option<String>, Value)>),
}

impl Value {
    pub fn decode(ty: &TrinoType, v: &Json) -> Result<Value, DecodeError> {
        if v.is_null() {
            return Ok(Value::Null);
        }
        let mismatch = || DecodeError::Mismatch {
            value: v.to_string(),
            ty: ty.clone(),
        };
        Ok(match ty {
            TrinoType::Boolean => Value::Bool(v.as_bool().ok_or_else(mismatch)?),
            TrinoType::TinyInt | TrinoType::SmallInt | TrinoType::Integer | TrinoType::BigInt => {
                match v {
                    Json::Number(n) => Value::Int(n.as_i64().ok_or_else(mismatch)?),
                    Json::String(s) => Value::Int(s.trim().parse().map_err(|_| mismatch())?),
                    _ => return Err(mismatch()),
                }
            }
            TrinoType::Real | TrinoType::Double => match v {
                Json::Number(n) => Value::Double(n.as_f64().ok_or_else(mismatch)?),
                Json::String(s) => Value::Double(match s.as_str() {
                    "NaN" => f64::NAN,
                    "Infinity" => f64::INFINITY,
                    "-Infinity" => f64::NEG_INFINITY,
                    other => other.parse().map_err(|_| mismatch())?,
                }),
                _ => return Err(mismatch()),
            },
            TrinoType::Decimal { .. } => match v {
                Json::String(s) => Value::Decimal(s.clone()),
                Json::Number(n) => Value::Decimal(n.to_string()),
                _ => return Err(mismatch()),
            },
            TrinoType::Varbinary => Value::Binary(v.as_str().ok_or_else(mismatch)?.to_string()),
            TrinoType::Date => {
                let s = v.as_str().ok_or_else(mismatch)?;
                Value::Date(NaiveDate::parse_from_str(s, "%Y-%m-%d").map_err(|reason| {
                    DecodeError::Date {
                        text: s.to_string(),
                        reason,
                    }
                })?)
            }
            TrinoType::Timestamp { .. } => {
                let s = v.as_str().ok_or_else(mismatch)?;
                Value::Timestamp(
                    parse_local(s).ok_or_else(|| DecodeError::Timestamp(s.to_string()))?,
                )
            }
            TrinoType::TimestampTz { .. } => {
                let s = v.as_str().ok_or_else(mismatch)?;
                let (utc, zone) = parse_timestamp_tz(s)?;
                Value::TimestampTz(utc, zone)
            }
            TrinoType::Array(inner) => {
                let items = v.as_array().ok_or_else(mismatch)?;
                Value::Array(
                    items
                        .iter()
                        .map(|x| Value::decode(inner, x))
                        .collect::<Result<_, _>>()?,
                )
            }
            TrinoType::Map(k, val) => {
                let obj = v.as_object().ok_or_else(mismatch)?;
                let mut out = Vec::with_capacity(obj.len());
                for (key, x) in obj {
                    let kv = Value::decode_key(k, key)?;
                    out.push((kv, Value::decode(val, x)?));
                }
                Value::Map(out)
            }
            TrinoType::Row(fields) => {
                let items = v.as_array().ok_or_else(mismatch)?;
                if items.len() != fields.len() {
                    return Err(DecodeError::RowArity {
                        values: items.len(),
                        fields: fields.len(),
                    });
                }
                Value::Row(
                    fields
                        .iter()
                        .zip(items)
                        .map(|((name, t), x)| Ok((name.clone(), Value::decode(t, x)?)))
                        .collect::<Result<_, DecodeError>>()?,
                )
            }
            TrinoType::Json => match v {
                Json::String(s) => Value::Text(s.clone()),
                other => Value::Text(other.to_string()),
            },
            _ => match v {
                Json::String(s) => Value::Text(s.clone()),
                Json::Bool(b) => Value::Bool(*b),
                Json::Number(n) => match n.as_i64() {
                    Some(i) => Value::Int(i),
                    None => Value::Double(n.as_f64().unwrap_or(f64::NAN)),
                },
                other => Value::Text(other.to_string()),
            },
        })
    }

    fn decode_key(ty: &TrinoType, key: &str) -> Result<Value, DecodeError> {
        // Map keys are always strings on the wire; re-read them as their type.
        match ty {
            TrinoType::Varchar | TrinoType::Char | TrinoType::Json | TrinoType::Other(_) => {
                Ok(Value::Text(key.to_string()))
            }
            TrinoType::Boolean => Ok(Value::Bool(key == "true")),
            _ => {
                let as_json = match ty {
                    TrinoType::TinyInt
                    | TrinoType::SmallInt
                    | TrinoType::Integer
                    | TrinoType::BigInt => Json::String(key.to_string()),
                    _ => Json::String(key.to_string()),
                };
                Value::decode(ty, &as_json)
            }
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            Value::Double(d) if d.fract() == 0.0 && d.is_finite() => Some(*d as i64),
            Value::Decimal(s) | Value::Text(s) => s.trim().parse().ok(),
            _ => None,
        }
    }

    /// Non-negative counts (negative values read as absent).
    pub fn as_u64(&self) -> Option<u64> {
        self.as_i64().and_then(|i| u64::try_from(i).ok())
    }

    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Int(i) => Some(*i as f64),
            Value::Double(d) => Some(*d),
            Value::Decimal(s) | Value::Text(s) => s.trim().parse().ok(),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Text(s) | Value::Decimal(s) | Value::Binary(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// Instants: `timestamp with time zone`, a `timestamp` read as UTC, or epoch seconds
    /// (as `to_unixtime` returns).
    pub fn as_datetime(&self) -> Option<DateTime<Utc>> {
        match self {
            Value::TimestampTz(t, _) => Some(*t),
            Value::Timestamp(t) => Some(Utc.from_utc_datetime(t)),
            Value::Date(d) => Some(Utc.from_utc_datetime(&d.and_time(NaiveTime::MIN))),
            Value::Double(secs) if secs.is_finite() => {
                DateTime::from_timestamp_millis((secs * 1000.0).round() as i64)
            }
            Value::Int(secs) => DateTime::from_timestamp(*secs, 0),
            _ => None,
        }
    }

    /// The value as an operator reads it (partition values, table cells).
    /// The value as a literal's text, at the precision Trino sent it: what a predicate
    /// or a key is built from. `display` rounds timestamps with a time zone to the
    /// millisecond; this keeps every digit (the instant in UTC).
    pub fn exact(&self) -> String {
        match self {
            Value::TimestampTz(t, _) => t.format("%Y-%m-%d %H:%M:%S%.f UTC").to_string(),
            other => other.display(),
        }
    }

    pub fn display(&self) -> String {
        match self {
            Value::Null => "null".into(),
            Value::Bool(b) => b.to_string(),
            Value::Int(i) => i.to_string(),
            Value::Double(d) if d.is_nan() => "NaN".into(),
            Value::Double(d) => d.to_string(),
            Value::Decimal(s) | Value::Text(s) | Value::Binary(s) => s.clone(),
            Value::Date(d) => d.format("%Y-%m-%d").to_string(),
            Value::Timestamp(t) => t.format("%Y-%m-%d %H:%M:%S%.f").to_string(),
            Value::TimestampTz(t, _) => t.format("%Y-%m-%d %H:%M:%S%.3f UTC").to_string(),
            Value::Array(items) => format!(
                "[{}]",
                items
                    .iter()
                    .map(Value::display)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Value::Map(kv) => format!(
                "{{{}}}",
                kv.iter()
                    .map(|(k, v)| format!("{}={}", k.display(), v.display()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Value::Row(fields) => format!(
                "({})",
                fields
                    .iter()
                    .map(|(n, v)| match n {
                        Some(n) => format!("{n}={}", v.display()),
                        None => v.display(),
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }

    /// A map's value for a string key (`element_at` on the client side).
    pub fn map_get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Map(kv) => kv
                .iter()
                .find(|(k, _)| k.as_str() == Some(key))
                .map(|(_, v)| v),
            _ => None,
        }
    }
}

fn parse_local(s: &str) -> Option<NaiveDateTime> {
    NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S%.f")
        .or_else(|_| NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S"))
        .or_else(|_| NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M"))
        .ok()
}

/// `2026-11-29 17:25:25.672 UTC`, `… Europe/Vienna`, `… +05:30`: the local date-time is
/// everything before the last space, the zone after it.
pub fn parse_timestamp_tz(s: &str) -> Result<(DateTime<Utc>, String), DecodeError> {
    let (local, zone) = s
        .rsplit_once(' ')
        .ok_or_else(|| DecodeError::NoZone(s.to_string()))?;
    let naive = parse_local(local).ok_or_else(|| DecodeError::TimestampTz(s.to_string()))?;
    let utc = if matches!(
        zone,
        "UTC" | "Z" | "GMT" | "Etc/UTC" | "UCT" | "Zulu" | "Etc/GMT"
    ) {
        Utc.from_utc_datetime(&naive)
    } else if let Some(off) = parse_offset(zone) {
        off.from_local_datetime(&naive)
            .single()
            .ok_or_else(|| DecodeError::InvalidLocalTime(s.to_string()))?
            .with_timezone(&Utc)
    } else {
        let tz: chrono_tz::Tz = zone.parse().map_err(|_| DecodeError::UnknownZone {
            text: s.to_string(),
            zone: zone.to_string(),
        })?;
        tz.from_local_datetime(&naive)
            .earliest()
            .ok_or_else(|| DecodeError::NoSuchLocalTime {
                text: s.to_string(),
                zone: zone.to_string(),
            })?
            .with_timezone(&Utc)
    };
    Ok((utc, zone.to_string()))
}

fn parse_offset(zone: &str) -> Option<chrono::FixedOffset> {
    let z = zone
        .strip_prefix("UTC")
        .or_else(|| zone.strip_prefix("GMT"))
        .unwrap_or(zone);
    let (sign, rest) = match z.as_bytes().first()? {
        b'+' => (1, &z[1..]),
        b'-' => (-1, &z[1..]),
        _ => return None,
    };
    // Digits and one colon only: anything else (a multibyte character included) is not
    // an offset, and slicing it by byte positions could cut a character in two.
    if rest.is_empty() || !rest.bytes().all(|b| b.is_ascii_digit() || b == b':') {
        return None;
    }
    let (h, m): (i32, i32) = match rest.split_once(':') {
        Some((h, m)) => (h.parse().ok()?, m.parse().ok()?),
        None if rest.len() == 4 => (rest[..2].parse().ok()?, rest[2..].parse().ok()?),
        None => (rest.parse().ok()?, 0),
    };
    if !(0..=23).contains(&h) || !(0..=59).contains(&m) {
        return None;
    }
    chrono::FixedOffset::east_opt(sign * (h * 3600 + m * 60))
}

/// A result column.
#[derive(Clone, Debug, PartialEq)]
pub struct Column {
    pub name: String,
    /// The `type` text as Trino printed it.
    pub type_text: String,
    pub ty: TrinoType,
}

/// A row without a column its statement selects: the name asked for and the columns the
/// result has.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("result has no column {name:?} (columns: {})", .columns.join(", "))]
pub struct NoColumn {
    pub name: String,
    pub columns: Vec<String>,
}

/// A row with access by column name.
#[derive(Clone, Debug)]
pub struct Row {
    pub columns: Arc<Vec<Column>>,
    pub values: Vec<Value>,
}

impl Row {
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.columns
            .iter()
            .position(|c| c.name == name)
            .and_then(|i| self.values.get(i))
    }

    /// The value of a column that must exist (a missing column is a decoding error).
    pub fn req(&self, name: &str) -> Result<&Value, NoColumn> {
        self.get(name).ok_or_else(|| NoColumn {
            name: name.to_string(),
            columns: self.columns.iter().map(|c| c.name.clone()).collect(),
        })
    }

    pub fn u64(&self, name: &str) -> Option<u64> {
        self.get(name).and_then(Value::as_u64)
    }

    pub fn i64(&self, name: &str) -> Option<i64> {
        self.get(name).and_then(Value::as_i64)
    }

    pub fn str(&self, name: &str) -> Option<&str> {
        self.get(name).and_then(Value::as_str)
    }

    pub fn datetime(&self, name: &str) -> Option<DateTime<Utc>> {
        self.get(name).and_then(Value::as_datetime)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn d(ty: &str, v: Json) -> Value {
        Value::decode(&TrinoType::parse(ty).unwrap(), &v).unwrap()
    }

    #[test]
    fn a_missing_column_is_named_with_the_ones_there() {
        let col = |n: &str| Column {
            name: n.into(),
            type_text: "bigint".into(),
            ty: TrinoType::BigInt,
        };
        let row = Row {
            columns: Arc::new(vec![col("i"), col("files")]),
            values: vec![Value::Int(0), Value::Int(3)],
        };
        assert_eq!(row.req("files"), Ok(&Value::Int(3)));
        let e = row.req("small_files").unwrap_err();
        assert_eq!(
            e,
            NoColumn {
                name: "small_files".into(),
                columns: vec!["i".into(), "files".into()],
            }
        );
        assert_eq!(
            e.to_string(),
            "result has no column \"small_files\" (columns: i, files)"
        );
    }

    #[test]
    fn bigint_is_exact_beyond_f64() {
        let v = d("bigint", json!(8667764846443717831i64));
        assert_eq!(v, Value::Int(8667764846443717831));
        assert_eq!(v.as_i64(), Some(8667764846443717831));
        let big: Json = serde_json::from_str("9223372036854775807").unwrap();
        assert_eq!(d("bigint", big).as_i64(), Some(i64::MAX));
    }

    #[test]
    fn doubles_in_every_spelling() {
        let v: Json = serde_json::from_str("6.4861504E7").unwrap();
        assert_eq!(d("double", v), Value::Double(64_861_504.0));
        assert!(matches!(d("double", json!("NaN")), Value::Double(x) if x.is_nan()));
        assert_eq!(d("real", json!("Infinity")), Value::Double(f64::INFINITY));
        assert_eq!(
            d("double", json!("-Infinity")),
            Value::Double(f64::NEG_INFINITY)
        );
        assert!(Value::decode(&TrinoType::Double, &json!("many")).is_err());
    }

    #[test]
    fn decimals_stay_text() {
        assert_eq!(
            d("decimal(10,2)", json!("8.60")),
            Value::Decimal("8.60".into())
        );
        assert_eq!(d("decimal(10,2)", json!("8.60")).as_f64(), Some(8.6));
    }

    #[test]
    fn hostile_zone_offsets_are_errors_not_panics() {
        // A multibyte character where the offset's digits belong, overflowing hours, and
        // out-of-range minutes: each is refused, none slices a character or overflows.
        for zone in [
            "+1é2",
            "-é",
            "+99999999999",
            "+2147483647",
            "+12:99",
            "+",
            "UTC+",
            "+1:é",
        ] {
            let text = format!("2026-11-29 17:25:25.672 {zone}");
            assert!(
                Value::decode(&TrinoType::TimestampTz { precision: 3 }, &json!(text)).is_err(),
                "{zone:?} should not decode"
            );
        }
        let ok = d(
            "timestamp(3) with time zone",
            json!("2026-11-29 17:25:25.672 -0130"),
        );
        assert!(ok.as_datetime().is_some());
    }

    #[test]
    fn timestamps_with_zone_names_and_offsets() {
        let utc = d(
            "timestamp(3) with time zone",
            json!("2026-11-29 17:25:25.672 UTC"),
        );
        let expect = Utc.with_ymd_and_hms(2026, 11, 29, 17, 25, 25).unwrap()
            + chrono::Duration::milliseconds(672);
        assert_eq!(utc.as_datetime(), Some(expect));
        let vienna = d(
            "timestamp(3) with time zone",
            json!("2026-11-29 18:25:25.672 Europe/Vienna"),
        );
        assert_eq!(vienna.as_datetime(), Some(expect));
        let off = d(
            "timestamp(6) with time zone",
            json!("2026-11-29 22:55:25.672000 +05:30"),
        );
        assert_eq!(off.as_datetime(), Some(expect));
        let t = d("timestamp(3)", json!("2021-03-04 13:00:00.000"));
        assert_eq!(t.display(), "2021-03-04 13:00:00");
        assert!(
            Value::decode(
                &TrinoType::TimestampTz { precision: 3 },
                &json!("2026-11-29 17:25:25 Mars/Olympus")
            )
            .is_err()
        );
    }

    #[test]
    fn rows_maps_arrays() {
        let ty = TrinoType::parse("row(district varchar, filed_at_day date)").unwrap();
        let v = Value::decode(&ty, &json!(["north", "2026-03-02"])).unwrap();
        assert_eq!(
            v,
            Value::Row(vec![
                (Some("district".into()), Value::Text("north".into())),
                (
                    Some("filed_at_day".into()),
                    Value::Date(NaiveDate::from_ymd_opt(2026, 3, 2).unwrap())
                ),
            ])
        );
        let m = d(
            "map(varchar, varchar)",
            json!({"total-records": "1", "operation": "append"}),
        );
        assert_eq!(m.map_get("total-records").and_then(Value::as_u64), Some(1));
        assert_eq!(m.map_get("missing"), None);
        let m = d("map(integer, bigint)", json!({"1": 40, "2": 41}));
        assert_eq!(
            m,
            Value::Map(vec![
                (Value::Int(1), Value::Int(40)),
                (Value::Int(2), Value::Int(41))
            ])
        );
        assert_eq!(
            d("array(bigint)", json!([1, null, 3])),
            Value::Array(vec![Value::Int(1), Value::Null, Value::Int(3)])
        );
        assert!(Value::decode(&ty, &json!(["only one"])).is_err());
    }

    #[test]
    fn epoch_seconds_read_as_instants() {
        let v: Json = serde_json::from_str("1.768503594726E9").unwrap();
        let t = d("double", v).as_datetime().unwrap();
        assert_eq!(t.timestamp_millis(), 1_768_503_594_726);
    }
}
