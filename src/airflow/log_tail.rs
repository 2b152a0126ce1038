//! Task logs read only to their end: a log longer than `airflow.max_log_size` keeps its last
//! bytes (the error is at the end), after a line saying how much of the start was cut.

use serde_json::{Value, json};

use super::log::{LogLine, TaskLog};
use crate::fmt::fmt_size;

/// The line that stands for the cut start of a log.
pub(super) fn cut_marker(cut: u64, limit: u64) -> LogLine {
    LogLine {
        timestamp: None,
        level: None,
        text: format!(
            "[… the first {} of this log are not shown: floe keeps its last {} (airflow.max_log_size) …]",
            fmt_size(cut),
            fmt_size(limit)
        ),
        error: false,
    }
}

/// Put the marker of a cut start before the lines that were kept.
pub(super) fn mark_cut(log: &mut TaskLog, cut: u64, limit: u64) {
    log.lines.insert(0, cut_marker(cut, limit));
}

/// A v1 text log whose start was cut: the first, partial line is dropped.
pub(super) fn v1_tail(text: &str) -> &str {
    match text.find('\n') {
        Some(i) => &text[i + 1..],
        None => "",
    }
}

/// A v2 log document (`{"content": [message, …], …}`) whose start was cut: every complete
/// message after the cut, as a document [`parse_v2`](super::log::parse_v2) reads.
pub(super) fn v2_tail(text: &str) -> Value {
    let bytes = text.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if b != b',' && b != b'[' {
            continue;
        }
        let rest = text[i + 1..].trim_start();
        if !(rest.starts_with('{') || rest.starts_with('"')) {
            continue;
        }
        if let Some(items) = elements(rest) {
            return json!({ "content": items });
        }
    }
    json!({ "content": [] })
}

/// `a, b, c]…` as values, when the text up to the closing bracket is such a list.
fn elements(mut rest: &str) -> Option<Vec<Value>> {
    let mut items = Vec::new();
    loop {
        let mut values = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
        let v = values.next()?.ok()?;
        let used = values.byte_offset();
        if !(v.is_object() || v.is_string()) {
            return None;
        }
        items.push(v);
        rest = rest[used..].trim_start();
        if let Some(r) = rest.strip_prefix(',') {
            rest = r.trim_start();
        } else if rest.starts_with(']') {
            return Some(items);
        } else {
            return None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::airflow::log::{parse_v1, parse_v2};

    #[test]
    fn a_cut_v2_document_keeps_its_complete_messages() {
        let doc = r#"{"content":[{"event":"one, {two}","level":"info"},{"event":"three","level":"info"},{"event":"ValueError: boom","level":"error"}],"continuation_token":null}"#;
        for start in 0..doc.len() {
            if !doc.is_char_boundary(start) {
                continue;
            }
            let v = v2_tail(&doc[start..]);
            let log = parse_v2(&v);
            let texts: Vec<&str> = log.lines.iter().map(|l| l.text.as_str()).collect();
            assert!(texts.len() <= 3, "{start}: {texts:?}");
            if start < doc.find("ValueError").unwrap() - 10 {
                assert_eq!(texts.last(), Some(&"ValueError: boom"), "{start}");
                assert_eq!(log.error_line.as_deref(), Some("ValueError: boom"));
            }
        }
    }

    #[test]
    fn a_cut_v1_log_drops_its_partial_first_line() {
        let text = "ial line\n[2026-11-30T10:00:00.000+0000] {x.py:1} ERROR - boom\n";
        let mut log = parse_v1(v1_tail(text));
        mark_cut(&mut log, 9 * 1024 * 1024, 8 * 1024 * 1024);
        assert!(log.lines[0].text.contains("9 MiB"), "{:?}", log.lines[0]);
        assert!(log.lines[0].text.contains("airflow.max_log_size"));
        assert!(!log.lines.iter().any(|l| l.text.contains("ial line")));
        assert_eq!(log.error_line.as_deref(), Some("boom"));
    }
}
