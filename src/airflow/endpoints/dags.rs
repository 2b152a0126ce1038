//! DAGs: listing, reading, pausing, and the files that failed to import.

use reqwest::Method;

use crate::airflow::http::decode_written;
use crate::airflow::model::{ApiVersion, Dag, DagImportError};
use crate::airflow::wire::{WireDag, WireImportError};
use crate::airflow::{AirflowClient, AirflowError, WriteRequest};

impl AirflowClient {
    /// DAGs carrying any of `tags` (OR) plus those named in `ids`; every DAG when both are
    /// empty. Sorted by id. An id the server does not know is left out.
    pub async fn dags(&self, tags: &[String], ids: &[String]) -> Result<Vec<Dag>, AirflowError> {
        let mut out: Vec<Dag> = Vec::new();
        if !tags.is_empty() || ids.is_empty() {
            let mut q: Vec<(&str, String)> = tags.iter().map(|t| ("tags", t.clone())).collect();
            if !tags.is_empty() && self.inner.api == ApiVersion::V2 {
                q.push(("tags_match_mode", "any".into()));
            }
            let wire: Vec<WireDag> = self.list(&["dags"], &q, "dags", None).await?;
            out.extend(wire.into_iter().map(Dag::from));
        }
        for id in ids {
            if out.iter().any(|d| &d.dag_id == id) {
                continue;
            }
            match self.dag(id).await {
                Ok(d) => out.push(d),
                Err(e) if e.is_not_found() => {
                    tracing::warn!(dag_id = %id, "configured DAG not found on the Airflow server");
                }
                Err(e) => return Err(e),
            }
        }
        out.sort_by(|a, b| a.dag_id.cmp(&b.dag_id));
        out.dedup_by(|a, b| a.dag_id == b.dag_id);
        Ok(out)
    }

    /// The DAGs the settings name: `dag_tags` (OR) plus `dag_ids`.
    pub async fn configured_dags(&self) -> Result<Vec<Dag>, AirflowError> {
        self.dags(&self.inner.dag_tags, &self.inner.dag_ids).await
    }

    /// `GET …/dags/{dag_id}`.
    pub async fn dag(&self, dag_id: &str) -> Result<Dag, AirflowError> {
        let url = self.url(&["dags", dag_id], &[])?;
        let w: WireDag = self.get_json(&url).await?;
        Ok(Dag::from(w))
    }

    /// Pause or unpause a DAG; returns the DAG as the server now has it.
    pub async fn set_paused(&self, dag_id: &str, paused: bool) -> Result<Dag, AirflowError> {
        let (url, r) = self
            .send_write(&WriteRequest::set_paused(dag_id, paused))
            .await?;
        let w: WireDag = decode_written(&Method::PATCH, &url, &r.text)?;
        Ok(Dag::from(w))
    }

    /// Files the DAG processor could not import.
    pub async fn import_errors(&self) -> Result<Vec<DagImportError>, AirflowError> {
        let wire: Vec<WireImportError> = self
            .list(&["importErrors"], &[], "import_errors", None)
            .await?;
        Ok(wire.into_iter().map(DagImportError::from).collect())
    }
}
