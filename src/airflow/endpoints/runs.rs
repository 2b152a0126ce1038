//! DAG runs: listing and reading them, triggering one, clearing one. The writes return
//! what the server says; confirmation, read-only checks and the audit log are the caller's.

use reqwest::Method;
use serde_json::{Value, json};

use crate::airflow::http::{JSON, Payload, decode, decode_written};
use crate::airflow::model::{ApiVersion, ClearOutcome, ClearScope, ClearedTask, DagRun};
use crate::airflow::wire::{WireRun, WireTaskRef};
use crate::airflow::{AirflowClient, AirflowError, WriteRequest};

impl AirflowClient {
    /// The newest `limit` runs of a DAG, newest first (`order_by=-run_after` on v2,
    /// `-execution_date` on v1).
    pub async fn runs(&self, dag_id: &str, limit: usize) -> Result<Vec<DagRun>, AirflowError> {
        let order = match self.inner.api {
            ApiVersion::V2 => "-run_after",
            ApiVersion::V1 => "-execution_date",
        };
        let wire: Vec<WireRun> = self
            .list(
                &["dags", dag_id, "dagRuns"],
                &[("order_by", order.into())],
                "dag_runs",
                Some(limit.max(1)),
            )
            .await?;
        Ok(wire.into_iter().map(DagRun::from).collect())
    }

    /// `GET …/dags/{dag_id}/dagRuns/{run_id}`.
    pub async fn run(&self, dag_id: &str, run_id: &str) -> Result<DagRun, AirflowError> {
        let url = self.url(&["dags", dag_id, "dagRuns", run_id], &[])?;
        let w: WireRun = self.get_json(&url).await?;
        Ok(DagRun::from(w))
    }

    /// Create a manual run now (`{"logical_date": null}` on v2, `{}` on v1). On a paused
    /// DAG the run is created `queued` and waits for the DAG to be unpaused.
    pub async fn trigger(&self, dag_id: &str) -> Result<DagRun, AirflowError> {
        let (url, r) = self
            .send_write(&WriteRequest::trigger(self.inner.api, dag_id))
            .await?;
        let w: WireRun = decode_written(&Method::POST, &url, &r.text)?;
        Ok(DagRun::from(w))
    }

    /// Clear a run so its tasks run again (or, with `dry_run`, list what would be cleared).
    /// v2 honours `only_failed`; v1's run-clear endpoint has no such option and clears every
    /// task of the run, which the outcome's [`ClearScope::AllTasks`] says.
    pub async fn clear_run(
        &self,
        dag_id: &str,
        run_id: &str,
        dry_run: bool,
        only_failed: bool,
    ) -> Result<ClearOutcome, AirflowError> {
        let url = self.url(&["dags", dag_id, "dagRuns", run_id, "clear"], &[])?;
        let (body, scope) = match self.inner.api {
            ApiVersion::V2 => (
                json!({"dry_run": dry_run, "only_failed": only_failed}),
                if only_failed {
                    ClearScope::OnlyFailed
                } else {
                    ClearScope::AllTasks
                },
            ),
            ApiVersion::V1 => (json!({"dry_run": dry_run}), ClearScope::AllTasks),
        };
        let r = self
            .call(Method::POST, &url, Payload::Json(&body), JSON)
            .await?;
        let mut v: Value = if dry_run {
            decode(&url, &r.text)?
        } else {
            decode_written(&Method::POST, &url, &r.text)?
        };
        let mut outcome = ClearOutcome {
            dry_run,
            scope,
            tasks: Vec::new(),
            run: None,
        };
        if let Some(list) = v.get_mut("task_instances") {
            let refs: Vec<WireTaskRef> =
                serde_json::from_value(list.take()).map_err(|e| AirflowError::Malformed {
                    url: url.to_string(),
                    message: format!("task_instances: {e}"),
                })?;
            outcome.tasks = refs.into_iter().map(ClearedTask::from).collect();
        } else if v.get("dag_run_id").is_some() {
            let w: WireRun = serde_json::from_value(v).map_err(|e| AirflowError::Malformed {
                url: url.to_string(),
                message: format!("not a DAG run: {e}"),
            })?;
            outcome.run = Some(DagRun::from(w));
        } else {
            return Err(AirflowError::Malformed {
                url: url.to_string(),
                message: "neither task_instances nor a DAG run in the clear result".into(),
            });
        }
        Ok(outcome)
    }
}
