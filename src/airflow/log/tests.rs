//! Task logs of both APIs, shaped as the lab's Airflow 3.3.2 and 2.10.5 write them for the
//! failing `compact` task of `compact_documents`.

use super::*;

const DEAD: &str = "ConnectionError: optimize of iceberg.zoning.documents failed: could not connect to Trino at trino-old.internal:8080 (connection trino_documents): failed to execute: HTTPConnectionPool(host='trino-old.internal', port=8080): Max retries exceeded with url: /v1/statement (Caused by NameResolutionError(\"<urllib3.connection.HTTPConnection object at 0x7f>: Failed to resolve 'trino-old.internal' ([Errno -2] Name or service not known)\"))";

fn v2_doc() -> Value {
    serde_json::json!({
        "content": [
            {"timestamp": null, "event": "::group::Log message source details", "sources": ["/home/logs/dag_id=compact_documents/run_id=scheduled__2026-11-29T00:00:00+00:00/task_id=compact/attempt=1.log"]},
            {"timestamp": null, "event": "::endgroup::"},
            {"timestamp": "2026-11-29T00:00:09.101Z", "event": "DAG bundles loaded: dags-folder", "level": "info", "logger": "airflow.dag_processing.bundles.manager.DagBundlesManager", "filename": "manager.py", "lineno": 179},
            {"timestamp": "2026-11-29T00:00:09.512Z", "event": "running on trino-old.internal:8080: ALTER TABLE iceberg.zoning.documents EXECUTE optimize(file_size_threshold => '96MB')", "level": "info", "logger": "airflow.task", "filename": "compact_documents.py", "lineno": 61},
            {"timestamp": "2026-11-29T00:00:10.002Z", "event": "Task failed with exception", "level": "error", "logger": "task",
             "error_detail": [
                {"exc_type": "ConnectionError",
                 "exc_value": "optimize of iceberg.zoning.documents failed: could not connect to Trino at trino-old.internal:8080 (connection trino_documents): failed to execute: HTTPConnectionPool(host='trino-old.internal', port=8080): Max retries exceeded with url: /v1/statement (Caused by NameResolutionError(\"<urllib3.connection.HTTPConnection object at 0x7f>: Failed to resolve 'trino-old.internal' ([Errno -2] Name or service not known)\"))",
                 "exc_notes": [], "syntax_error": null, "is_cause": false,
                 "frames": [
                    {"filename": "/venv/lib/python3.11/site-packages/airflow/sdk/execution_time/task_runner.py", "lineno": 920, "name": "run"},
                    {"filename": "/repo/tests/lab/airflow/dags/compact_documents.py", "lineno": 66, "name": "compact"}
                 ],
                 "is_group": false, "exceptions": []},
                {"exc_type": "TrinoConnectionError",
                 "exc_value": "failed to execute: HTTPConnectionPool(host='trino-old.internal', port=8080): Max retries exceeded",
                 "exc_notes": [], "syntax_error": null, "is_cause": true,
                 "frames": [{"filename": "/venv/lib/python3.11/site-packages/trino/client.py", "lineno": 900, "name": "execute"}],
                 "is_group": false, "exceptions": []}
             ]},
            {"timestamp": "2026-11-29T00:00:10.120Z", "event": "::group::Post Execute", "level": "info"},
            {"timestamp": "2026-11-29T00:00:10.121Z", "event": "::endgroup::", "level": "info"}
        ],
        "continuation_token": null
    })
}

#[test]
fn v2_renders_events_and_error_detail() {
    let log = parse_v2(&v2_doc());
    let texts: Vec<&str> = log.lines.iter().map(|l| l.text.as_str()).collect();
    assert!(
        !texts
            .iter()
            .any(|t| t.contains("::group::") || t.contains("::endgroup::")),
        "{texts:#?}"
    );
    assert_eq!(texts[0], "DAG bundles loaded: dags-folder");
    let failed = texts
        .iter()
        .position(|t| *t == "Task failed with exception")
        .unwrap();
    assert!(texts[failed + 1].starts_with("ConnectionError: optimize of iceberg.zoning.documents"));
    assert_eq!(
        texts[failed + 2],
        "  /venv/lib/python3.11/site-packages/airflow/sdk/execution_time/task_runner.py:920 in run"
    );
    assert_eq!(
        texts[failed + 3],
        "  /repo/tests/lab/airflow/dags/compact_documents.py:66 in compact"
    );
    assert!(texts[failed + 4].starts_with("caused by TrinoConnectionError: failed to execute"));
    assert!(log.lines[failed..].iter().all(|l| l.error));
    assert!(!log.lines[0].error);
    assert_eq!(log.lines[failed].level.as_deref(), Some("error"));
    assert_eq!(
        log.lines[failed].timestamp,
        parse_time("2026-11-29T00:00:10.002Z")
    );
    assert_eq!(log.error_line.as_deref(), Some(DEAD));
    assert_eq!(log.continuation_token, None);
    assert_eq!(log.tail(2).len(), 2);
}

#[test]
fn v2_without_exception_uses_the_last_error_event() {
    let doc = serde_json::json!({
        "content": [
            {"timestamp": "2026-11-29T00:00:09Z", "event": "starting", "level": "info"},
            {"timestamp": "2026-11-29T00:00:10Z", "event": "Could not read served logs: HTTPConnectionPool(host='vm', port=8793)", "level": "error"},
            {"timestamp": "2026-11-29T00:00:11Z", "event": "Task failed with exception", "level": "error"}
        ],
        "continuation_token": "eyJlbmRfb2ZfbG9nIjpmYWxzZSwibG9nX3BvcyI6OX0"
    });
    let log = parse_v2(&doc);
    assert_eq!(
        log.error_line.as_deref(),
        Some("Could not read served logs: HTTPConnectionPool(host='vm', port=8793)"),
        "the generic failure message names no cause"
    );
    assert_eq!(
        log.continuation_token.as_deref(),
        Some("eyJlbmRfb2ZfbG9nIjpmYWxzZSwibG9nX3BvcyI6OX0")
    );

    let quiet = serde_json::json!({"content": [
        {"timestamp": "2026-11-29T00:00:09Z", "event": "compaction step finished", "level": "info"}
    ], "continuation_token": null});
    assert_eq!(
        parse_v2(&quiet).error_line,
        None,
        "a swallowed error leaves nothing"
    );
}

#[test]
fn v2_exception_groups_and_multiline_values() {
    let doc = serde_json::json!({"content": [{
        "timestamp": "2026-11-29T00:00:10Z", "event": "", "level": "error",
        "error_detail": [{
            "exc_type": "ExceptionGroup", "exc_value": "two failures (2 sub-exceptions)\nsecond line",
            "exc_notes": ["retry later"], "is_cause": false, "is_group": true, "frames": [],
            "exceptions": [
                {"exc_type": "ValueError", "exc_value": "a", "frames": [], "exceptions": []},
                {"exc_type": "KeyError", "exc_value": "'b'", "frames": [], "exceptions": []}
            ]
        }]
    }]});
    let log = parse_v2(&doc);
    let texts: Vec<&str> = log.lines.iter().map(|l| l.text.as_str()).collect();
    assert_eq!(
        texts,
        vec![
            "ExceptionGroup: two failures (2 sub-exceptions)",
            "  second line",
            "  note: retry later",
            "  ValueError: a",
            "  KeyError: 'b'",
        ]
    );
    assert_eq!(
        log.error_line.as_deref(),
        Some("ExceptionGroup: two failures (2 sub-exceptions) second line")
    );
}

const V1_TEXT: &str = r#"vm
 INFO - ::group::Log message source details
*** Found local files:
***   * /home/logs/dag_id=compact_documents/run_id=scheduled__2026-11-15T00:00:00+00:00/task_id=compact/attempt=1.log
 INFO - ::endgroup::
[2026-11-29T19:16:51.983+0000] {local_task_job_runner.py:123} INFO - ::group::Pre task execution logs
[2026-11-29T19:16:52.058+0000] {taskinstance.py:2867} INFO - Starting attempt 1 of 1
[2026-11-29T19:16:52.557+0000] {taskinstance.py:732} INFO - ::endgroup::
[2026-11-29T19:16:52.569+0000] {compact_documents.py:59} INFO - running on trino-old.internal:8080: ALTER TABLE iceberg.zoning.documents EXECUTE optimize(file_size_threshold => '96MB')
[2026-11-29T19:16:52.620+0000] {sql.py:806} INFO - Running statement: ALTER TABLE iceberg.zoning.documents EXECUTE optimize(file_size_threshold => '96MB'), parameters: None
[2026-11-29T19:16:53.035+0000] {client.py:1184} INFO - failed after 3 attempts
[2026-11-29T19:16:53.036+0000] {taskinstance.py:3313} ERROR - Task failed with exception
Traceback (most recent call last):
  File "/venv/lib/python3.11/site-packages/urllib3/connection.py", line 239, in _new_conn
    sock = connection.create_connection(
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
socket.gaierror: [Errno -2] Name or service not known
The above exception was the direct cause of the following exception:
Traceback (most recent call last):
  File "/venv/lib/python3.11/site-packages/requests/adapters.py", line 729, in send
    raise ConnectionError(e, request=request)
requests.exceptions.ConnectionError: HTTPConnectionPool(host='trino-old.internal', port=8080): Max retries exceeded with url: /v1/statement
During handling of the above exception, another exception occurred:
Traceback (most recent call last):
  File "/venv/lib/python3.11/site-packages/trino/client.py", line 1004, in execute
    raise trino.exceptions.TrinoConnectionError("failed to execute: {}".format(e))
trino.exceptions.TrinoConnectionError: failed to execute: HTTPConnectionPool(host='trino-old.internal', port=8080): Max retries exceeded
The above exception was the direct cause of the following exception:
Traceback (most recent call last):
  File "/repo/tests/lab/airflow/dags/compact_documents.py", line 64, in compact
    raise ConnectionError(
ConnectionError: optimize of iceberg.zoning.documents failed: could not connect to Trino at trino-old.internal:8080 (connection trino_documents): failed to execute: HTTPConnectionPool(host='trino-old.internal', port=8080): Max retries exceeded with url: /v1/statement (Caused by NameResolutionError("<urllib3.connection.HTTPConnection object at 0x7f>: Failed to resolve 'trino-old.internal' ([Errno -2] Name or service not known)"))
[2026-11-29T19:16:53.068+0000] {taskinstance.py:1226} INFO - Marking task as FAILED. dag_id=compact_documents, task_id=compact, run_id=scheduled__2026-11-15T00:00:00+00:00, execution_date=20261115T000000, start_date=20261129T191652, end_date=20261129T191653
[2026-11-29T19:16:53.163+0000] {taskinstance.py:341} INFO - ::group::Post task execution logs
[2026-11-29T19:16:53.164+0000] {standard_task_runner.py:124} ERROR - Failed to execute job 5 for task compact (optimize of iceberg.zoning.documents failed; 17887)
Traceback (most recent call last):
  File "/repo/tests/lab/airflow/dags/compact_documents.py", line 64, in compact
    raise ConnectionError(
ConnectionError: optimize of iceberg.zoning.documents failed: could not connect to Trino at trino-old.internal:8080 (connection trino_documents): failed to execute: HTTPConnectionPool(host='trino-old.internal', port=8080): Max retries exceeded with url: /v1/statement (Caused by NameResolutionError("<urllib3.connection.HTTPConnection object at 0x7f>: Failed to resolve 'trino-old.internal' ([Errno -2] Name or service not known)"))
[2026-11-29T19:16:53.192+0000] {local_task_job_runner.py:266} INFO - Task exited with return code 1
[2026-11-29T19:16:53.295+0000] {local_task_job_runner.py:245} INFO - ::endgroup::
"#;

#[test]
fn v1_text_marks_tracebacks_and_finds_the_raised_exception() {
    let log = parse_v1(V1_TEXT);
    assert_eq!(log.error_line.as_deref(), Some(DEAD));
    let texts: Vec<&str> = log.lines.iter().map(|l| l.text.as_str()).collect();
    assert!(
        !texts
            .iter()
            .any(|t| t.contains("::group::") || t.contains("::endgroup::")),
        "{texts:#?}"
    );
    assert_eq!(texts[0], "vm");
    assert!(texts[1].starts_with("*** Found local files:"));
    let tb = texts
        .iter()
        .position(|t| t.starts_with("Traceback"))
        .unwrap();
    assert!(log.lines[tb - 1].error, "the ERROR line");
    assert_eq!(log.lines[tb - 1].level.as_deref(), Some("error"));
    assert_eq!(
        log.lines[tb - 1].timestamp,
        parse_time("2026-11-29T19:16:53.036Z")
    );
    let exc = texts
        .iter()
        .position(|t| t.starts_with("ConnectionError: "))
        .unwrap();
    assert!(
        log.lines[tb..=exc].iter().all(|l| l.error),
        "the whole chain of tracebacks"
    );
    assert!(
        texts[tb..exc]
            .iter()
            .any(|t| t.starts_with("socket.gaierror"))
    );
    assert!(!log.lines[exc + 1].error, "Marking task as FAILED is info");
    assert!(log.lines.last().is_some_and(|l| !l.error));
    assert_eq!(
        log.lines
            .iter()
            .filter(|l| l.text.starts_with("ConnectionError: "))
            .count(),
        2
    );
    assert!(!log.lines[1].error);
}

#[test]
fn v1_without_traceback_uses_the_last_error_message() {
    let text = "vm\n[2026-11-29T00:00:08.101+0000] {taskinstance.py:1} INFO - start\n\
                [2026-11-29T00:00:09.000+0000] {sql.py:2} ERROR - connection refused by 127.0.0.1:9\n";
    assert_eq!(
        parse_v1(text).error_line.as_deref(),
        Some("connection refused by 127.0.0.1:9")
    );
    let quiet = "vm\n[2026-11-29T00:00:08.101+0000] {compact_permits.py:50} INFO - compaction step finished\n";
    assert_eq!(parse_v1(quiet).error_line, None);
    let missing =
        "vm\n*** Could not read served logs: Invalid URL 'http://:8793/log/…': No host supplied\n";
    let log = parse_v1(missing);
    assert_eq!(log.error_line, None);
    assert_eq!(log.lines.len(), 2);
}
