//! A `QueryResults` page, decoded as the client decodes every page it follows: columns
//! (types from the signature or the text) and rows, each value typed.
#![no_main]

use floe::trino::client::decode_page;
use floe::trino::wire::{ServerInfo, parse_airlift_duration};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match decode_page(text) {
        Ok((columns, rows)) => {
            for row in &rows {
                assert_eq!(row.values.len(), columns.len());
                for (c, v) in columns.iter().zip(&row.values) {
                    let _ = v.display();
                    let _ = v.as_datetime();
                    let _ = v.as_i64();
                    let _ = v.as_f64();
                    assert!(row.get(&c.name).is_some());
                }
            }
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
    // The other document of the protocol: `GET /v1/info`.
    if let Ok(info) = serde_json::from_str::<ServerInfo>(text) {
        let _ = info.version_number();
        let _ = info.uptime_secs();
    }
    let _ = parse_airlift_duration(text);
});
