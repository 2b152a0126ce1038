//! Task instances and their logs, and the facts the health rules read from them.

use std::time::Duration;

use reqwest::Method;
use serde_json::Value;

use crate::airflow::facts::{
    DagFacts, TaskFailure, dag_facts, failing_task, import_error_for, latest_failed,
};
use crate::airflow::http::{JSON, Payload, decode};
use crate::airflow::log::{TaskLog, parse_v1, parse_v2};
use crate::airflow::log_tail;
use crate::airflow::model::{ApiVersion, Dag, TaskInstance};
use crate::airflow::wire::WireTaskInstance;
use crate::airflow::{AirflowClient, AirflowError};
use crate::net::BodyLimit;

impl AirflowClient {
    /// The task instances of a run.
    pub async fn task_instances(
        &self,
        dag_id: &str,
        run_id: &str,
    ) -> Result<Vec<TaskInstance>, AirflowError> {
        let wire: Vec<WireTaskInstance> = self
            .list(
                &["dags", dag_id, "dagRuns", run_id, "taskInstances"],
                &[],
                "task_instances",
                None,
            )
            .await?;
        Ok(wire.into_iter().map(TaskInstance::from).collect())
    }

    /// The whole log of one try: v2 as JSON (rendering `event` and `error_detail`), v1 as
    /// `text/plain`. A try that does not exist is a 404 on v2; v1 answers 200 with a
    /// "Could not read served logs" text.
    pub async fn task_log(
        &self,
        dag_id: &str,
        run_id: &str,
        task_id: &str,
        try_number: u32,
    ) -> Result<TaskLog, AirflowError> {
        let try_text = try_number.to_string();
        let url = self.url(
            &[
                "dags",
                dag_id,
                "dagRuns",
                run_id,
                "taskInstances",
                task_id,
                "logs",
                &try_text,
            ],
            &[("full_content", "true".into())],
        )?;
        let limit = self.inner.max_log_size;
        let accept = match self.inner.api {
            ApiVersion::V2 => JSON,
            ApiVersion::V1 => "text/plain",
        };
        let r = self
            .call_reading(
                Method::GET,
                &url,
                Payload::None,
                accept,
                BodyLimit::Tail(limit),
            )
            .await?;
        let mut log = match self.inner.api {
            ApiVersion::V2 if r.cut > 0 => parse_v2(&log_tail::v2_tail(&r.text)),
            ApiVersion::V2 => {
                let v: Value = decode(&url, &r.text)?;
                if !v.is_object() && !v.is_array() {
                    return Err(AirflowError::Malformed {
                        url: url.to_string(),
                        message: "the log document is neither an object nor a list".into(),
                    });
                }
                parse_v2(&v)
            }
            ApiVersion::V1 if r.cut > 0 => parse_v1(log_tail::v1_tail(&r.text)),
            ApiVersion::V1 => parse_v1(&r.text),
        };
        if r.cut > 0 {
            tracing::info!(%url, cut = r.cut, "task log longer than airflow.max_log_size; kept its end");
            log_tail::mark_cut(&mut log, r.cut, limit);
        }
        Ok(log)
    }

    /// The failing task of a failed run and the error line of its log. A log that cannot be
    /// read leaves `error_line` empty rather than failing.
    pub async fn failure(
        &self,
        dag_id: &str,
        run_id: &str,
    ) -> Result<Option<TaskFailure>, AirflowError> {
        let tasks = self.task_instances(dag_id, run_id).await?;
        let Some(t) = failing_task(&tasks) else {
            return Ok(None);
        };
        let error_line = if t.try_number == 0 {
            None
        } else {
            match self
                .task_log(dag_id, run_id, &t.task_id, t.try_number)
                .await
            {
                Ok(log) => log.error_line,
                Err(e) => {
                    tracing::warn!(dag_id, run_id, task_id = %t.task_id, error = %e, "cannot read the failing task's log");
                    None
                }
            }
        };
        Ok(Some(TaskFailure {
            run_id: run_id.to_string(),
            task_id: t.task_id.clone(),
            try_number: t.try_number,
            error_line,
        }))
    }

    /// Read what [`dag_facts`] needs for one DAG and build its facts: the runs in the window
    /// (`settings.runs`), the failing task of the newest failed run and its error line, and
    /// the DAG file's import error. Only the runs are required; the rest degrades to
    /// "unknown" when it cannot be read. `default_interval` applies when the schedule says
    /// nothing floe can read.
    pub async fn fetch_facts(
        &self,
        dag: &Dag,
        default_interval: Duration,
    ) -> Result<DagFacts, AirflowError> {
        let runs = self.runs(&dag.dag_id, self.inner.runs_window).await?;
        let failure = match latest_failed(&runs) {
            Some(run) => match self.failure(&dag.dag_id, &run.run_id).await {
                Ok(f) => f,
                Err(e) => {
                    tracing::warn!(dag_id = %dag.dag_id, run_id = %run.run_id, error = %e, "cannot read the failed run's tasks");
                    None
                }
            },
            None => None,
        };
        let import_error = if dag.has_import_errors {
            match self.import_errors().await {
                Ok(errors) => import_error_for(dag, &errors).map(|e| e.summary()),
                Err(e) => {
                    tracing::warn!(dag_id = %dag.dag_id, error = %e, "cannot read import errors");
                    None
                }
            }
        } else {
            None
        };
        Ok(dag_facts(
            dag,
            &runs,
            failure.as_ref(),
            import_error.as_deref(),
            default_interval,
        ))
    }
}
