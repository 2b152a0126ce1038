//! Airflow responses (v1 and v2): collections and single documents of DAGs, runs, task
//! instances, import errors and connections, version and health, into their models and on
//! into the facts the health rules read.
#![no_main]

use std::time::Duration;

use floe::airflow::facts::{latest_failed, newest_first};
use floe::airflow::wire::decode_documents;
use floe::airflow::{dag_facts, failing_task, import_error_for, schedule_interval};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(d) = decode_documents(text) else {
        return;
    };
    let failing = failing_task(&d.tasks).map(|t| t.task_id.clone());
    let _ = latest_failed(&d.runs);
    let _ = newest_first(&d.runs);
    for r in &d.runs {
        let _ = r.sort_time();
        let _ = r.last_activity();
        let _ = r.state.is_finished();
    }
    for dag in &d.dags {
        if let Some(s) = &dag.schedule {
            let _ = schedule_interval(s);
        }
        let import_error = import_error_for(dag, &d.import_errors).map(|e| e.stack_trace.as_str());
        let facts = dag_facts(
            dag,
            &d.runs,
            None,
            import_error,
            Duration::from_secs(86_400),
        );
        let _ = (facts, &failing);
    }
    if let Some(v) = &d.version {
        let _ = v.major();
    }
});
