//! Type text (`row("a b" map(varchar, array(decimal(10,2))))`) and `typeSignature`
//! documents. Property: a parsed type printed back as text parses to the same type.
#![no_main]

use floe::trino::types::{TrinoType, TypeSignature};
use libfuzzer_sys::fuzz_target;

/// The type as Trino would print it (field names always quoted).
fn print(t: &TrinoType) -> String {
    match t {
        TrinoType::Boolean => "boolean".into(),
        TrinoType::TinyInt => "tinyint".into(),
        TrinoType::SmallInt => "smallint".into(),
        TrinoType::Integer => "integer".into(),
        TrinoType::BigInt => "bigint".into(),
        TrinoType::Real => "real".into(),
        TrinoType::Double => "double".into(),
        TrinoType::Decimal { precision, scale } => format!("decimal({precision},{scale})"),
        TrinoType::Varchar => "varchar".into(),
        TrinoType::Char => "char".into(),
        TrinoType::Varbinary => "varbinary".into(),
        TrinoType::Json => "json".into(),
        TrinoType::Date => "date".into(),
        TrinoType::Time => "time".into(),
        TrinoType::TimeTz => "time with time zone".into(),
        TrinoType::Timestamp { precision } => format!("timestamp({precision})"),
        TrinoType::TimestampTz { precision } => {
            format!("timestamp({precision}) with time zone")
        }
        TrinoType::IntervalDayToSecond => "interval day to second".into(),
        TrinoType::IntervalYearToMonth => "interval year to month".into(),
        TrinoType::Uuid => "uuid".into(),
        TrinoType::Array(t) => format!("array({})", print(t)),
        TrinoType::Map(k, v) => format!("map({}, {})", print(k), print(v)),
        TrinoType::Row(fields) => {
            let f: Vec<String> = fields
                .iter()
                .map(|(name, t)| match name {
                    Some(n) => format!("\"{}\" {}", n.replace('"', "\"\""), print(t)),
                    None => print(t),
                })
                .collect();
            format!("row({})", f.join(", "))
        }
        TrinoType::Other(name) => name.clone(),
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(sig) = serde_json::from_str::<TypeSignature>(text) {
        let _ = TrinoType::from_signature(&sig);
    }
    if let Ok(t) = TrinoType::parse(text) {
        let printed = print(&t);
        match TrinoType::parse(&printed) {
            Ok(again) => assert_eq!(again, t, "{text:?} printed as {printed:?}"),
            Err(e) => panic!("{text:?} parsed as {t:?}, printed as {printed:?}, which fails: {e}"),
        }
    }
});
