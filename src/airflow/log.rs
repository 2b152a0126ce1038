//! Task logs as floe shows them: one line per entry, error lines marked, and **the error
//! line** — the raised exception an operator needs (`ConnectionError: optimize of … failed:
//! could not connect to Trino at trino-old.internal:8080 …`).
//!
//! v2 (Airflow 3) sends structured JSON messages: the text is `event`, and a failure carries
//! the exception only in `error_detail[]` (`exc_type`, `exc_value`, `frames`), never in
//! `event`. `::group::`/`::endgroup::` events are UI fold markers and are skipped.
//! v1 (Airflow 2) sends plain text: `[ts] {file.py:N} LEVEL - message` lines with Python
//! tracebacks in between.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;

use super::wire::parse_time;

/// The longest error line kept (exception messages can embed whole HTTP error pages).
const MAX_ERROR_LINE: usize = 1000;

/// A task's log for one try.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TaskLog {
    pub lines: Vec<LogLine>,
    /// The raised exception of the try (`Type: message`, on one line), else the last
    /// error-level message; `None` when the log shows no error.
    pub error_line: Option<String>,
    /// v2: set while the task still runs (pass it back to read only what is new).
    pub continuation_token: Option<String>,
}

/// One displayed line.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LogLine {
    pub timestamp: Option<DateTime<Utc>>,
    /// Lower case (`info`, `error`, …) when the log says.
    pub level: Option<String>,
    pub text: String,
    /// An error-level message or part of a traceback.
    pub error: bool,
}

impl TaskLog {
    /// The last `n` lines (the DAGs tab shows the tail).
    pub fn tail(&self, n: usize) -> &[LogLine] {
        &self.lines[self.lines.len().saturating_sub(n)..]
    }
}

fn is_error_level(level: &str) -> bool {
    matches!(
        level.to_ascii_lowercase().as_str(),
        "error" | "critical" | "fatal" | "exception"
    )
}

fn is_fold_marker(text: &str) -> bool {
    let t = text.trim_start();
    t.starts_with("::group::") || t.starts_with("::endgroup::")
}

/// One line, whitespace collapsed, capped. The text stays the server's (a JSON report
/// keeps it); every output sanitises it (crate::text).
fn one_line(text: &str) -> String {
    crate::text::clip(&crate::text::fold_whitespace(text), MAX_ERROR_LINE).into_owned()
}

fn json_str(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

/// Decode a v2 log document: `{"content": [message…], "continuation_token": …}`.
/// Also accepts a bare list of messages and NDJSON text (one message per line).
pub fn parse_v2(doc: &Value) -> TaskLog {
    let none = Vec::new();
    let (messages, token) = match doc {
        Value::Array(a) => (a, None),
        Value::Object(_) => (
            doc["content"].as_array().unwrap_or(&none),
            doc["continuation_token"].as_str().map(str::to_string),
        ),
        _ => (&none, None),
    };
    let mut log = TaskLog {
        continuation_token: token,
        ..TaskLog::default()
    };
    let mut exception_line: Option<String> = None;
    let mut last_error_event: Option<String> = None;
    for m in messages {
        let (event, ts, level) = match m {
            Value::String(s) => (s.clone(), None, None),
            Value::Object(_) => (
                json_str(&m["event"]).unwrap_or_default(),
                m["timestamp"].as_str().and_then(parse_time),
                m["level"].as_str().map(|l| l.to_ascii_lowercase()),
            ),
            _ => continue,
        };
        if is_fold_marker(&event) {
            continue;
        }
        let error = level.as_deref().is_some_and(is_error_level);
        let details = m["error_detail"].as_array().filter(|a| !a.is_empty());
        if !event.is_empty() || details.is_none() {
            for (i, text) in event.split('\n').enumerate() {
                if i > 0 && text.trim().is_empty() {
                    continue;
                }
                log.lines.push(LogLine {
                    timestamp: ts,
                    level: level.clone(),
                    text: text.trim_end().to_string(),
                    error,
                });
            }
        }
        if error && !event.trim().is_empty() && !is_generic(&event) {
            last_error_event = Some(one_line(&event));
        }
        if let Some(details) = details {
            let mut first = None;
            render_exceptions(details, ts, &level, &mut log.lines, &mut first, 0);
            if first.is_some() {
                exception_line = first;
            }
        }
    }
    log.error_line = exception_line.or(last_error_event);
    log
}

/// The message Airflow logs next to every failure; it names no cause.
fn is_generic(event: &str) -> bool {
    matches!(
        event.trim(),
        "Task failed with exception" | "Task failed" | "Failure caused by"
    )
}

/// `error_detail[]` entries as lines: `Type: message`, its notes, then its frames
/// `file:line in name`; chained exceptions follow, as structlog lists them (the raised one
/// first, then its causes); members of an exception group are indented under it.
fn render_exceptions(
    details: &[Value],
    ts: Option<DateTime<Utc>>,
    level: &Option<String>,
    out: &mut Vec<LogLine>,
    first: &mut Option<String>,
    depth: usize,
) {
    let indent = "  ".repeat(depth);
    let err_line = |text: String| LogLine {
        timestamp: ts,
        level: level.clone(),
        text,
        error: true,
    };
    for (i, d) in details.iter().enumerate() {
        let ty = d["exc_type"].as_str().unwrap_or("Exception");
        let value = json_str(&d["exc_value"]).unwrap_or_default();
        let head = if value.trim().is_empty() {
            ty.to_string()
        } else {
            format!("{ty}: {value}")
        };
        if first.is_none() {
            *first = Some(one_line(&head));
        }
        let prefix = if i == 0 || depth > 0 {
            ""
        } else if d["is_cause"].as_bool().unwrap_or(false) {
            "caused by "
        } else {
            "during handling of "
        };
        for (j, l) in head.split('\n').enumerate() {
            if j == 0 {
                out.push(err_line(format!("{indent}{prefix}{}", l.trim_end())));
            } else if !l.trim().is_empty() {
                out.push(err_line(format!("{indent}  {}", l.trim_end())));
            }
        }
        for note in d["exc_notes"].as_array().into_iter().flatten() {
            if let Some(n) = note.as_str() {
                out.push(err_line(format!("{indent}  note: {n}")));
            }
        }
        for f in d["frames"].as_array().into_iter().flatten() {
            let file = f["filename"].as_str().unwrap_or("?");
            let line = f["lineno"]
                .as_i64()
                .map(|n| n.to_string())
                .unwrap_or_else(|| "?".into());
            let name = f["name"].as_str().unwrap_or("?");
            out.push(err_line(format!("{indent}  {file}:{line} in {name}")));
        }
        if let Some(group) = d["exceptions"].as_array().filter(|a| !a.is_empty()) {
            render_exceptions(group, ts, level, out, first, depth + 1);
        }
    }
}

/// Decode a v1 plain-text log.
pub fn parse_v1(text: &str) -> TaskLog {
    let mut log = TaskLog::default();
    let mut in_traceback = false;
    // The exception line of the last traceback seen (the raised one: Python prints the
    // causes first and the exception that was raised last).
    let mut exception_line: Option<String> = None;
    let mut last_error_message: Option<String> = None;
    let mut current_ts: Option<DateTime<Utc>> = None;
    for raw in text.lines() {
        let line = raw.trim_end();
        if let Some((ts, level, message)) = v1_header(line) {
            in_traceback = false;
            current_ts = ts;
            if is_fold_marker(message) {
                continue;
            }
            let error = is_error_level(level);
            if error && !is_generic(message) && !message.trim().is_empty() {
                last_error_message = Some(one_line(message));
            }
            log.lines.push(LogLine {
                timestamp: ts,
                level: Some(level.to_ascii_lowercase()),
                text: line.to_string(),
                error,
            });
            continue;
        }
        if is_fold_marker(line) || bare_level(line).is_some_and(|(_, m)| is_fold_marker(m)) {
            continue;
        }
        let starts_trace = line.starts_with("Traceback (most recent call last):");
        let chain = line.starts_with("The above exception was the direct cause")
            || line.starts_with("During handling of the above exception");
        if starts_trace {
            in_traceback = true;
        } else if in_traceback
            && !chain
            && !line.is_empty()
            && !line.starts_with(char::is_whitespace)
            && let Some(exc) = exception_header(line)
        {
            exception_line = Some(one_line(&exc));
            in_traceback = false;
            log.lines.push(LogLine {
                timestamp: current_ts,
                level: None,
                text: line.to_string(),
                error: true,
            });
            continue;
        }
        let error = starts_trace || chain || in_traceback;
        log.lines.push(LogLine {
            timestamp: current_ts,
            level: None,
            text: line.to_string(),
            error,
        });
    }
    while log.lines.last().is_some_and(|l| l.text.trim().is_empty()) {
        log.lines.pop();
    }
    log.error_line = exception_line.or(last_error_message);
    log
}

/// `[2026-11-29T17:30:54.461+0000] {taskinstance.py:2614} INFO - message`
/// → (timestamp, level, message).
fn v1_header(line: &str) -> Option<(Option<DateTime<Utc>>, &str, &str)> {
    let rest = line.strip_prefix('[')?;
    let (ts_text, rest) = rest.split_once(']')?;
    let rest = rest.trim_start();
    let rest = if rest.starts_with('{') {
        rest.split_once('}')?.1.trim_start()
    } else {
        rest
    };
    let (level, message) = rest.split_once(" - ")?;
    let level = level.trim();
    if level.is_empty() || !level.chars().all(|c| c.is_ascii_alphabetic()) {
        return None;
    }
    let ts = parse_time(ts_text).or_else(|| {
        DateTime::parse_from_str(ts_text.trim(), "%Y-%m-%dT%H:%M:%S%.f%z")
            .or_else(|_| DateTime::parse_from_str(ts_text.trim(), "%Y-%m-%d %H:%M:%S%.f%z"))
            .ok()
            .map(|d| d.with_timezone(&Utc))
    });
    Some((ts, level, message))
}

/// ` INFO - message` without timestamp (the header Airflow 2 puts before the file's lines).
fn bare_level(line: &str) -> Option<(&str, &str)> {
    let (level, message) = line.trim_start().split_once(" - ")?;
    (!level.is_empty() && level.chars().all(|c| c.is_ascii_uppercase())).then_some((level, message))
}

/// The line that ends a Python traceback: `module.Type: message` or a bare `Type`.
fn exception_header(line: &str) -> Option<String> {
    let (ty, _) = line.split_once(':').unwrap_or((line, ""));
    let ty = ty.trim();
    let ok = !ty.is_empty()
        && ty
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '.')
        && ty
            .chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_');
    ok.then(|| line.trim().to_string())
}

#[cfg(test)]
mod tests;
