//! Task logs: v1 text and v2 JSON documents (objects, bare lists, NDJSON). Properties: a
//! displayed line is one line, the error line is one capped line, and every line made
//! inert by `text::sanitize` / `text::one_line` holds no control character.
#![no_main]

use floe::airflow::TaskLog;
use floe::airflow::log::{parse_v1, parse_v2};
use floe::text::{csv_cell, is_inert, json_escape_unsafe, one_line, sanitize};
use libfuzzer_sys::fuzz_target;

fn check(log: &TaskLog) {
    for line in &log.lines {
        assert!(
            !line.text.contains('\n'),
            "a line holds a newline: {:?}",
            line.text
        );
        assert!(is_inert(&sanitize(&line.text)));
        assert!(is_inert(&one_line(&line.text)));
        assert!(is_inert(&csv_cell(&line.text)));
        let json = serde_json::to_string(&line.text).unwrap();
        let inert = json_escape_unsafe(&json);
        assert!(is_inert(&inert));
        assert_eq!(serde_json::from_str::<String>(&inert).unwrap(), line.text);
    }
    if let Some(e) = &log.error_line {
        assert!(!e.contains('\n'), "the error line holds a newline: {e:?}");
        assert!(e.chars().count() <= 1001, "the error line is not capped");
    }
    let _ = log.tail(20);
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    check(&parse_v1(text));
    if let Ok(doc) = serde_json::from_str::<serde_json::Value>(text) {
        check(&parse_v2(&doc));
    }
});
