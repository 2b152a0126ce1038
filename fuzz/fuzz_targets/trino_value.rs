//! One value on the wire decoded by its type: the first line of the input is the type text
//! (so nested ROW/MAP/ARRAY types come from the input too), the rest the JSON value.
#![no_main]

use floe::trino::types::TrinoType;
use floe::trino::value::{Value, parse_timestamp_tz};
use libfuzzer_sys::fuzz_target;

fn exercise(v: &Value) {
    let _ = v.display();
    let _ = v.as_datetime();
    let _ = v.as_i64();
    let _ = v.as_u64();
    let _ = v.as_f64();
    let _ = v.as_str();
    let _ = v.map_get("k");
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (type_text, value_text) = text.split_once('\n').unwrap_or((text, ""));
    // Timestamps with zones are read before anything else can reject the text.
    if let Ok((utc, zone)) = parse_timestamp_tz(value_text) {
        let _ = utc.to_rfc3339();
        assert!(value_text.ends_with(zone.as_str()));
    }
    let Ok(ty) = TrinoType::parse(type_text) else {
        return;
    };
    let Ok(json) = serde_json::from_str::<serde_json::Value>(value_text) else {
        return;
    };
    if let Ok(v) = Value::decode(&ty, &json) {
        exercise(&v);
    }
});
